"""Every outside string is escaped where the command prints it (issue 37, "Forged CI annotations").

A checkout is untrusted: its file names, the staging folders of an interrupted import, the values of its
pyproject and the tool and mode names of an event log can hold a newline, a carriage return, ``%`` or an escape
sequence. The CLI runs in CI, where the GitHub Actions runner reads a workflow command from any line a step
prints, on stdout or stderr (``runner_commands`` reads the output as the runner does: actions/runner's
``ActionCommand.TryParseV2`` and its older ``##[`` syntax). So:

- under ``--format github``, every line the command prints is one of its own escaped annotations; no name makes
  a line of its own, a ``::stop-commands::`` or an annotation on a file it names;
- otherwise no line is a workflow command at all, and no escape character reaches the terminal raw;
- ``stats --format markdown`` keeps a name's ``|``, newline and HTML literal in its cell.

The hostile checkout is built afresh for each command (recovery may change the folder), and the commands are
driven as a CI job would run them, in the checkout's root with settings from its pyproject.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from prompt_composer.cli import main
from prompt_composer.cli.output import MessageStream
from prompt_composer.shared.progress import CLEAR_LINE, Progress
from tests.helpers import DATA, REPO

POISON_DOCS = DATA / "poison" / "docs"
SHIPPED = REPO / "tool_docs"

# What each outside string below carries: a line break that would start a forged annotation (on a file the
# attacker names, and a stop-commands that would hide every real annotation after it), a lone carriage return,
# a `%0A` the runner would unescape, and an escape sequence (clear the screen, then red).
FORGED = "\n::error file=README.md,line=1::FORGED\r::stop-commands::tok%0A\x1b[2J\x1b[31m##[warning]old"
ANNOTATION = re.compile(r"^::(error|warning|notice)( [^:]*)?::")


def runner_commands(text: str) -> list[tuple[str, dict[str, str], str]]:
    """The workflow commands a GitHub Actions runner reads from ``text``: (command, properties, data) per command.
    The runner reads lines ending at ``\\n``, ``\\r`` or ``\\r\\n``; a line that starts with ``::`` after leading
    whitespace is a command up to the next ``::`` (properties after a space, ``,``-separated), and otherwise
    ``##[command]`` anywhere in a line is one in the older syntax. Escapes undone as the runner does."""

    def unescape(value: str, *, prop: bool) -> str:
        pairs = [("%0D", "\r"), ("%0A", "\n")] + ([("%3A", ":"), ("%2C", ",")] if prop else []) + [("%25", "%")]
        for escaped, raw in pairs:
            value = value.replace(escaped, raw)
        return value

    found = []
    for line in re.split(r"\r\n|\r|\n", text):
        trimmed = line.lstrip()
        if trimmed.startswith("::") and (end := trimmed.find("::", 2)) >= 0:
            info, data = trimmed[2:end], trimmed[end + 2 :]
            name, _, props = info.partition(" ")
            properties = dict(p.split("=", 1) for p in props.strip().split(",") if "=" in p)
            found.append((name, {k: unescape(v, prop=True) for k, v in properties.items()}, unescape(data, prop=False)))
        elif "##[" in line and (end := line.find("]", line.index("##["))) >= 0:
            info = line[line.index("##[") + 3 : end]
            found.append((info.split(" ")[0], {}, line[end + 1 :]))
    return found


def hostile_checkout(root: Path, *, docs_name: str = "tool_docs") -> Path:
    """A repository as a pull request could shape it: a docs folder (named by its pyproject) holding a file whose
    name forges annotations, a committed and an uncommitted staging folder with such names, and a pyproject whose
    overlay and event log values hold them too."""
    root.mkdir(parents=True, exist_ok=True)
    docs = root / docs_name
    shutil.copytree(SHIPPED, docs)
    (docs / f"broken{FORGED}.yaml").write_text("name: [unclosed\n", encoding="utf-8")
    for suffix, committed in ((f"0badc0de{FORGED}", True), (f"x%25{FORGED}", False)):
        staging = docs / f".import-staging-{suffix}"
        (staging / "files").mkdir(parents=True)
        (staging / "files" / "glob.yaml").write_bytes((SHIPPED / "glob.yaml").read_bytes())
        if committed:
            (staging / "COMMITTED").write_text("", encoding="utf-8")
    value = json.dumps(FORGED)[1:-1]  # as a TOML basic string: \n, \r and \u001b escaped the same way
    (root / "pyproject.toml").write_text(
        f'[tool.prompt-composer]\ndocs = "{json.dumps(docs_name)[1:-1]}"\noverlay = "overlay{value}.yaml"\n'
        f'event-log = "events{value}.jsonl"\n',
        encoding="utf-8",
    )
    return root


def poisoned_checkout(root: Path) -> Path:
    """A checkout whose docs folder (named in its pyproject) has a forging name and holds poisoned docs: the
    lint's findings name files in it."""
    root.mkdir(parents=True, exist_ok=True)
    name = f"docs{FORGED}"
    shutil.copytree(POISON_DOCS, root / name, ignore=shutil.ignore_patterns("*.json"))
    (root / "pyproject.toml").write_text(
        f'[tool.prompt-composer]\ndocs = "{json.dumps(name)[1:-1]}"\n', encoding="utf-8"
    )
    return root


def run_in(
    root: Path, argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    monkeypatch.chdir(root)
    for name in ("PROMPT_COMPOSER_DOCS", "PROMPT_COMPOSER_OVERLAY", "PROMPT_COMPOSER_EVENT_LOG"):
        monkeypatch.delenv(name, raising=False)
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


CHECKOUTS: dict[str, Callable[[Path], Path]] = {"hostile": hostile_checkout, "poisoned": poisoned_checkout}
GITHUB_RUNS = [
    ("hostile", ["audit", "--security", "--format", "github"]),
    ("hostile", ["audit", "--format", "github"]),  # refused (the format is the lint's): the refusal too
    ("poisoned", ["audit", "--security", "--format", "github"]),
    ("poisoned", ["audit", "--security", "--format", "github", "-v"]),
]
TERMINAL_RUNS = [
    ("hostile", ["validate"]),
    ("hostile", ["audit", "--security"]),
    ("hostile", ["compose", "--mode", "code"]),
    ("hostile", ["stats"]),
    ("poisoned", ["audit", "--security"]),
    ("poisoned", ["audit", "--security", "--format", "markdown"]),
    ("poisoned", ["tools"]),
    ("poisoned", ["validate", "--docs", f"missing{FORGED}"]),
]


@pytest.mark.parametrize(("checkout", "argv"), GITHUB_RUNS, ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_under_format_github_every_line_is_one_of_the_commands_own_escaped_annotations(
    checkout: str,
    argv: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = CHECKOUTS[checkout](tmp_path / "repo")
    code, out, err = run_in(root, argv, capsys, monkeypatch)
    assert code in (1, 2)
    assert "Traceback" not in err
    printed = out + err
    lines = printed.splitlines()
    assert lines, "the command printed nothing"
    for line in lines:  # str.splitlines also splits at \r, \x1c-\x1e, \x85, \u2028: none is left raw
        assert ANNOTATION.match(line), line
    commands = runner_commands(printed)
    assert len(commands) == len(lines)  # one command per line: no name started a line of its own
    for command, properties, data in commands:
        assert command in ("error", "warning", "notice")
        assert properties.get("file") != "README.md" and "FORGED" not in properties.get("file", "").split("::")[0]
        assert "\x1b" not in data and "\x1b" not in properties.get("file", "")  # shown as \x1b
    if argv[:2] == ["audit", "--security"] and checkout == "hostile":
        # the broken doc's load error is an annotation on that file, its name intact once unescaped
        files = [p.get("file", "") for c, p, _ in commands if c == "error"]
        # (or, first, the refusal of the committed staging folder, on that folder's name)
        assert any(
            f.startswith(("tool_docs/broken\n::error file=README.md", "tool_docs/.import-staging-"))
            and "::error file=README.md" in f
            for f in files
        ), files


@pytest.mark.parametrize(("checkout", "argv"), TERMINAL_RUNS, ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_on_a_terminal_names_are_shown_escaped_and_no_line_is_a_workflow_command(
    checkout: str,
    argv: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = CHECKOUTS[checkout](tmp_path / "repo")
    code, out, err = run_in(root, argv, capsys, monkeypatch)
    assert "Traceback" not in err
    if argv[0] == "compose":  # the prompt is the command's output; the folder does not load, so there is none
        assert code == 2 and out == ""
    for stream in (out, err):
        assert "\x1b" not in stream and "\r" not in stream
        assert runner_commands(stream) == []
    assert "FORGED" in out + err or code == 0  # the names are there, shown: \n::error … as text
    if code == 2:
        assert "\\n::error file=README.md,line=1::FORGED\\r" in err.replace("\\x3a", ":")


def test_a_real_process_escapes_its_stderr_too(tmp_path: Path) -> None:
    """The same checkout through ``python -m prompt_composer``: stderr a real file, logging's last-resort handler
    and Python's own stream, not a test's capture."""
    root = hostile_checkout(tmp_path / "repo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROMPT_COMPOSER_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    for argv, github in ((["validate"], False), (["audit", "--security", "--format", "github"], True)):
        done = subprocess.run(
            [sys.executable, "-m", "prompt_composer", *argv], cwd=root, env=env, capture_output=True, timeout=300
        )
        err = done.stderr.decode()
        assert done.returncode == 2 and "Traceback" not in err
        assert b"\x1b" not in done.stderr + done.stdout
        commands = runner_commands(done.stdout.decode() + err)
        if github:
            assert commands and all(c in ("error", "warning", "notice") for c, _, _ in commands)
            assert len(commands) == len((done.stdout.decode() + err).splitlines())
        else:
            assert commands == []


def test_argparse_errors_show_what_was_typed_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["validate", f"extra{FORGED}"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and runner_commands(err) == []
    assert err.splitlines()[-1].startswith("prompt-composer: error: unrecognized arguments: extra\\n::error")


# --- stats: the names of an event log in tables --------------------------------------------------------------

HOSTILE_TOOLS = [
    "a|b",
    "two\nlines",
    "<img src=x onerror=alert(1)>",
    "::error file=README.md::FORGED",
    "\x1b[31mred",
    "back\\|slash",
    "[link](https://example.com)",
    "`code`",
]


def _hostile_log(path: Path) -> Path:
    base = {"v": 1, "ts": 1.0, "task": "t1", "fingerprint": "f", "provider": "anthropic", "iteration": 1}
    lines = []
    for i, tool in enumerate(HOSTILE_TOOLS):
        mode = "code" if i % 2 else "mode|<b>x</b>\n::warning::m"
        lines.append({**base, "ts": 1.0 + i, "mode": mode, "event": "tool_call", "tool": tool, "outcome": "ok"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells as GitHub splits them: at each ``|`` not escaped by a backslash."""
    inner = row.strip()
    assert inner.startswith("|") and inner.endswith("|") and not inner.endswith("\\|"), row
    return re.split(r"(?<!\\)\|", inner[1:-1])


def test_stats_markdown_keeps_each_name_in_its_cell_as_literal_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _hostile_log(tmp_path / "events.jsonl")
    assert main(["stats", str(log), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "<" not in out and ">" not in out and "\x1b" not in out  # no raw HTML, no escape character
    assert runner_commands(out) == []
    table_lines = [line for line in out.splitlines() if line.startswith("|")]
    assert table_lines
    widths = set()
    block: list[str] = []
    for line in [*out.splitlines(), ""]:  # each table: every row as many cells as its header
        if line.startswith("|"):
            block.append(line)
        elif block:
            widths = {len(_cells(row)) for row in block}
            assert len(widths) == 1, block
            block = []
    tools_table = out.split("## Modes")[0]
    rows = [_cells(line) for line in tools_table.splitlines() if line.startswith("|")][2:]
    assert len(rows) == len(HOSTILE_TOOLS)  # one row a tool: no name broke a row in two
    shown = {row[0].strip() for row in rows}
    assert "a\\|b" in shown and "two\\\\nlines" in shown and "&lt;img src=x onerror=alert(1)&gt;" in shown
    assert "back\\\\\\|slash" in shown and "\\[link\\](https://example.com)" in shown and "\\`code\\`" in shown
    assert "\\\\x1b\\[31mred" in shown and "\\\\x3a:error file=README.md::FORGED" in shown


def test_stats_table_shows_names_escaped_on_one_line_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _hostile_log(tmp_path / "events.jsonl")
    assert main(["stats", str(log)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and runner_commands(out) == []
    tools_table = out.split("\nModes")[0].splitlines()
    assert len(tools_table) == 4 + len(HOSTILE_TOOLS)  # heading, blank, header, rule, a line a tool
    assert any(line.startswith("two\\nlines ") for line in tools_table)
    assert any(line.startswith("\\x3a:error file=README.md::FORGED ") for line in tools_table)


# --- one error prefix ---------------------------------------------------------------------------------------

ERRORS = [
    ["fetch", "debug_launch", "--mode", "ask"],  # the model's refusal, said by the command
    ["compose", "--mode", "nope"],
    ["bench", "--results", "/nonexistent/results.json", "--format", "html"],
    ["stats", "--traces", "x.jsonl", "log.jsonl"],
    ["audit", "--format", "sarif"],
]


@pytest.mark.parametrize("argv", ERRORS, ids=" ".join)
def test_every_command_error_starts_with_the_same_prefix(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) in (1, 2)
    err = capsys.readouterr().err
    assert err.startswith("error: "), err
    assert not any(line.startswith("Error") for line in err.splitlines())


# --- the stream itself: what its writers lay out stays laid out ----------------------------------------------


def test_the_stream_keeps_blank_lines_a_progress_bar_and_one_line_a_print() -> None:
    target = io.StringIO()
    stream = MessageStream(target)
    print("\n# mode code: 3 full", file=stream)  # compose's summary, a blank line before it
    with Progress("bench", 2, stream, interactive=True, clock=lambda: 0.0) as progress:
        progress.advance(note=f"task{FORGED}")  # the bar redraws its line; the task's name is shown escaped
    print(f"error: {FORGED}", file=stream)
    text = target.getvalue()
    assert text.startswith("\n# mode code: 3 full\n")
    assert text.count(CLEAR_LINE) >= 1 and text.replace(CLEAR_LINE, "").count("\x1b") == 0
    assert text.endswith(
        "error: \\n::error file=README.md,line=1::FORGED\\r::stop-commands::tok%0A\\x1b[2J\\x1b[31m#\\x23[warning]old\n"
    )
    assert runner_commands(text.replace(CLEAR_LINE, "\n")) == []


def test_under_github_a_print_is_one_annotation_whatever_it_holds() -> None:
    target = io.StringIO()
    stream = MessageStream(target, github=True)
    print(f"error: cannot read {FORGED}", file=stream)
    print("warning:", "two", "parts", file=stream)
    print("# a note", file=stream, flush=True)
    stream.write("a line left open")
    stream.flush()
    commands = runner_commands(target.getvalue())
    assert [c for c, _, _ in commands] == ["error", "warning", "notice", "notice"]
    assert commands[0][2] == f"cannot read {FORGED}".replace("\r", "\\r").replace("\x1b", "\\x1b")
    assert commands[1][2] == "two parts" and commands[3][2] == "a line left open"
    assert len(target.getvalue().splitlines()) == 4
