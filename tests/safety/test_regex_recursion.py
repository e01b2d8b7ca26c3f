"""search_files against regexes whose memory cannot be bounded: a group call (``(?R)``, ``(?1)``, ``(?&name)`` …)
recurses without end when it consumes nothing, and the regex package's match stack then grows faster than its
timeout stops it. Such patterns are the executors' own ExecutorError before anything is matched, also in a process
whose address space is limited to 700 MB (where matching one would end in MemoryError)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prompt_composer.errors import ExecutorError
from prompt_composer.safety.patterns import compile_regex
from prompt_composer.safety.workspace import Workspace
from tests.helpers import REPO

CALLS = ("(?R)", "(?0)", "((?1))", "(?&word)(?P<word>x)", "(?P<word>x)(?P>word)", "(?P<w>a(?P&w)?b)", "(a)(?-1)")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello world\nabc\n")
    return root


@pytest.mark.parametrize("pattern", CALLS)
def test_a_group_call_is_refused_before_matching(ws: Path, pattern: str) -> None:
    search = Workspace(ws, timeout_s=5).search_files
    with pytest.raises(ExecutorError, match=r"calls a group \(.* recursive patterns .* are refused"):
        search({"path": ".", "regex": pattern})


def test_the_same_text_outside_a_call_is_fine(ws: Path) -> None:
    search = Workspace(ws, timeout_s=5).search_files
    # An escaped parenthesis, a set, a comment group, flags, lookarounds and named groups are no calls.
    for pattern in (r"\(?1\)?", "[(?R)]", "(?#no (?R here)hello", "(?r)abc", "(?-i:abc)", r"(?<=\()x?", "(?P<n>a)b"):
        search({"path": ".", "regex": pattern})
    assert search({"path": ".", "regex": "(?P<w>wor)ld"}) == "a.txt:1: hello world"


def test_a_verbose_call_with_a_comment_inside_is_refused_too() -> None:
    with pytest.raises(ExecutorError, match="calls a group"):
        compile_regex("(?x)(?P  # the call\n  >w)(?P<w>x)")


LIMITED = textwrap.dedent(
    """
    import json, resource, sys
    sys.path.insert(0, sys.argv[1])
    from prompt_composer.errors import ExecutorError
    from prompt_composer.safety.workspace import Workspace
    limit = 700 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    search = Workspace(sys.argv[2], timeout_s=10).search_files
    outcomes = {}
    for pattern in json.loads(sys.argv[3]):
        try:
            outcomes[pattern] = "result: " + search({"path": ".", "regex": pattern})
        except ExecutorError as exc:
            outcomes[pattern] = "ExecutorError: " + str(exc)
        except MemoryError:
            outcomes[pattern] = "MemoryError"
    print(json.dumps(outcomes))
    """
)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux enforces it")
def test_under_700_mb_a_recursive_regex_is_the_executor_error_not_memory_error(ws: Path) -> None:
    patterns = ["(?R)", "(?0)", "((?1))", "hello"]
    proc = subprocess.run(
        [sys.executable, "-c", LIMITED, str(REPO), str(ws), json.dumps(patterns)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    outcomes = json.loads(proc.stdout)
    for pattern in patterns[:3]:
        assert outcomes[pattern].startswith(f"ExecutorError: the regex {pattern!r} calls a group"), outcomes
    assert outcomes["hello"] == "result: a.txt:1: hello world"  # the limit leaves room for an ordinary search


# Pieces a pattern is made of: the tricky ones are where a call's text stands and is no call (escaped, in a set,
# in a comment), and what opens one.
PIECES = st.sampled_from(
    ["(", ")", "(?", "?", "R", "0", "1", "+", "-", "&", "P", ">", "<", "w", "x", "a", "\\", "[", "]", "^", "#", "\n",
     " ", "(?x)", "(?V1)", "(?#", "(?P<w>", "(?<w>", "(?&w)", "(?1)", "(?R)", "(?P>w)", ":", "|", "*", "{2}"]
)  # fmt: skip


@settings(max_examples=400, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=12).map("".join))
def test_no_pattern_the_regex_package_compiles_to_a_group_call_gets_through(pattern: str) -> None:
    """The regex package's own parse (its DEBUG dump names each GROUP_CALL) is the oracle: whatever it reads as a
    call, compile_regex refuses."""
    try:
        compile_regex(pattern)
        refused = False
    except ExecutorError:
        refused = True
    dump = _debug_dump(pattern)
    if dump is not None and "GROUP_CALL" in dump:
        assert refused, (pattern, dump)


def _debug_dump(pattern: str) -> str | None:
    """What ``regex.compile(pattern, DEBUG)`` prints (the parsed pattern), or None when it does not compile."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            regex.compile(pattern, regex.DEBUG)
        except (regex.error, RecursionError, OverflowError, ValueError, IndexError, TypeError):
            return None
    return out.getvalue()
