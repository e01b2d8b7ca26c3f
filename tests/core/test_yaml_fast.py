"""The fast path of the YAML reader (libyaml composing in C, one Python pass building data and lines together):
on a clean doc it gives exactly what the bounded composer gives, and it is what real docs take; anything it does
not handle alike (a problem to report, an alias of a collection, a text nested deeply enough to
overflow libyaml's recursive composer) goes to the bounded composer, whose outcome the fast path never changes.
test_yaml_parsers.py compares the libyaml reading (fast path included) with the pure-Python parser on the shipped
docs and the fuzz corpus's mutations."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from benchmarks.corpora import corpus_docs
from benchmarks.doc_mutations import shipped_files
from prompt_composer.importers.yaml_out import doc_yaml
from prompt_composer.shared import yamlparse
from prompt_composer.shared.yamlfile import MAX_YAML_DEPTH

pytestmark = pytest.mark.skipif(yamlparse.CParser is None, reason="PyYAML without libyaml: no fast path")

ROOT = Path(__file__).resolve().parents[2]


def bounded(text: str) -> tuple[Any, Any, list[tuple[int, str]]]:
    """What the bounded composer (the path before the fast one) makes of ``text``: data, line map, problems."""
    loader = yamlparse._loader(text, "libyaml")
    try:
        node = loader.get_single_node()
        assert node is not None
        lines: dict[tuple[str | int, ...], int] = {}
        found: list[tuple[str, int]] = []
        yamlparse._walk(node, (), lines, found)
        data = None if found else loader.construct_document(node)
    finally:
        loader.dispose()
    return data, lines, [(line, message) for message, line in found]


def real_texts() -> list[tuple[str, str]]:
    """The shipped docs and modes, and every tool of the shared corpora's catalogs written as an imported doc."""
    texts = [(path.name, path.read_text()) for path in shipped_files()]
    texts += [(doc.name, doc_yaml(doc)) for doc in corpus_docs()]
    return texts


def test_every_real_doc_takes_the_fast_path_and_reads_as_the_bounded_composer_reads_it() -> None:
    texts = real_texts()
    assert len(texts) > 300
    for name, text in texts:
        fast = yamlparse._fast(text)
        assert fast is not None, f"{name} left the fast path"
        data, lines, problems = bounded(text)
        assert not problems, name
        assert fast[0] == data and repr(fast[0]) == repr(data), name  # types too: 1 vs 1.0 vs True
        assert list(fast[1].items()) == list(lines.items()), name  # same lines, in the same order


CLEAN_BUT_NOT_FAST = {
    "an alias of a mapping": "base: &b {x: 1}\nother: *b\n",
    "too long": "description: " + "word " * 14_000 + "\n",
}
PROBLEMS = {
    "a recursive alias": "a: &a [1, *a]\n",
    "a merge key": "a: 1\n<<: {b: 2}\nc: 3\n",
    "a duplicate key": "name: a\nname: b\n",
    "a key that is not a string": "name: a\n1: b\n",
    "a sequence as a key": "name: a\n? [x]\n: b\n",
    "an integer of 400 digits": "n: " + "9" * 400 + "\n",
    "a lone surrogate escape": 'name: "\\ud800"\n',
    "nested past the depth bound": "a: " + "[" * (MAX_YAML_DEPTH + 5) + "]" * (MAX_YAML_DEPTH + 5) + "\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "an undefined alias": "a: *nowhere\n",
}


@pytest.mark.parametrize(
    "text", [*CLEAN_BUT_NOT_FAST.values(), *PROBLEMS.values()], ids=[*CLEAN_BUT_NOT_FAST, *PROBLEMS]
)
def test_what_the_fast_path_does_not_handle_alike_goes_to_the_bounded_composer(text: str, tmp_path: Path) -> None:
    assert yamlparse._fast(text) is None
    path = tmp_path / "doc.yaml"
    with_fast = yamlparse.parse(text, path, "libyaml")
    python = yamlparse.parse(text, path, "python")
    assert repr(with_fast[0]) == repr(python[0]) and with_fast[1] == python[1]
    assert [(p.line, p.message) for p in with_fast[2]] == [(p.line, p.message) for p in python[2]]
    assert bool(with_fast[2]) == (text in PROBLEMS.values())


def test_a_scalar_alias_and_every_implicit_type_read_alike() -> None:
    text = textwrap.dedent(
        """\
        name: &n tool
        again: *n
        yes_: yes
        off_: off
        none: ~
        int: 0x1F
        float: 1.5e3
        inf: .inf
        date: 2026-11-28
        stamp: 2026-11-28T10:00:00Z
        quoted: "yes"
        block: |
          two
          lines
        items: [1, "2", three]
        """
    )
    fast = yamlparse._fast(text)
    assert fast is not None
    data, lines, _ = bounded(text)
    assert repr(fast[0]) == repr(data) and fast[1] == lines
    assert fast[0]["yes_"] is True and fast[0]["int"] == 31 and fast[0]["again"] == "tool"


@pytest.mark.parametrize("opener", ["[", "{a: ", "- "])
def test_a_text_nested_past_what_libyaml_can_compose_is_a_located_problem_not_a_crash(opener: str) -> None:
    # libyaml's own composer recurses in C: 50,000 levels overflow the stack (a segmentation fault, not an
    # exception), so the fast path must never hand it such a text. Run apart: a crash fails the test, not the run.
    script = textwrap.dedent(
        f"""\
        from pathlib import Path
        from prompt_composer.shared import yamlparse
        text = {opener!r} * 50_000 + "x"
        assert yamlparse._fast(text) is None
        data, lines, problems = yamlparse.parse(text, Path("deep.yaml"), "libyaml")
        assert data is None and problems, problems
        print(problems[0].line, problems[0].message)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "nested" in done.stdout or "invalid YAML" in done.stdout


def test_a_thread_reads_with_the_bounded_composer() -> None:
    # 1,000 levels need more stack than a small thread has (256 KB crashed): off the main thread, the fast path
    # stands aside, and the text reads as the bounded composer reads it. Run apart, with a thread of 256 KB.
    script = textwrap.dedent(
        """\
        import threading
        from pathlib import Path
        from prompt_composer.shared import yamlparse
        text = "a: " + "[" * 999 + "]" * 999 + "\\n"
        clean = "name: x\\nitems: [1, 2]\\n"
        assert yamlparse._fast(clean) is not None
        out = []
        def run():
            read = yamlparse.parse(text, Path("deep.yaml"), "libyaml")
            out.append((yamlparse._fast(text), yamlparse._fast(clean), read))
        threading.stack_size(256 * 1024)
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        fast_deep, fast_clean, (data, lines, problems) = out[0]
        assert fast_deep is None and fast_clean is None
        assert data is None and problems
        print(problems[0].message)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "nested" in done.stdout
