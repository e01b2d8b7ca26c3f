"""Large imports: a real stdio MCP server listing 5,000 tools imports within the timeout; ``--timeout`` bounds the
whole import (drafting, scanning, writing), not only the start and the listing; a 5 MB description is cut, not
drafted for minutes; schemas too deep or too large are refused, naming the tool.

What made large imports slow, each replaced by a linear equivalent that these tests hold to the old behaviour:
the siblings handed to the lint and the drafts (every other name of the server, for every doc and every sentence),
the renaming of mentions (one regex alternation of every renamed name, per text), the sentence splitter (the
whole text before each full stop searched again), and the audit's mention finder (a regex per name and text).
"""

from __future__ import annotations

import json
import random
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_composer.cli import main
from prompt_composer.core import mentions
from prompt_composer.core.mentions import _CODE_SPAN, named_tools
from prompt_composer.core.registry import load_registry
from prompt_composer.errors import ImporterError
from prompt_composer.importers import drafting
from prompt_composer.importers.deadline import Deadline
from prompt_composer.importers.drafting import _distinctive, _Mentions
from prompt_composer.importers.folder import write_files
from prompt_composer.importers.from_json import import_json
from prompt_composer.importers.prose import _ABBREVIATION_END, _SENTENCE_END, sentences
from prompt_composer.importers.siblings import SiblingIndex, text_words
from prompt_composer.importers.tool_list import MAX_DESCRIPTION_CHARS, MAX_SCHEMA_DEPTH, parse_tool_list
from prompt_composer.safety.text import normalise
from tests.helpers import DATA, snapshot, write_json

MANY = DATA / "mcp" / "many_tools_server.py"


# --------------------------------------------------------------------------------------------- a real server

mcp_sdk = pytest.mark.skipif(
    __import__("importlib").util.find_spec("mcp") is None, reason="needs the mcp SDK (the mcp extra)"
)


@pytest.mark.slow
@mcp_sdk
def test_a_server_listing_5000_tools_imports_within_the_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "docs"
    # 30 s (the default) is what the import is measured against (docs/benchmarks.md); the test allows four times
    # that, so a busy machine does not fail it, and checks the import did not stop at its deadline.
    argv = ["import", "mcp", "--out", str(out), "--timeout", "120", "--", sys.executable, str(MANY), "5000"]
    start = time.monotonic()
    code = main(argv)
    took = time.monotonic() - start
    stdout, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    assert stdout.splitlines()[-1] == f"wrote 5001 file(s) to {out}"  # the docs and the server's card
    files = sorted(out.glob("*.yaml"))
    assert len(files) == 5000 and (out / ".import-state.json").is_file()
    registry = load_registry(out)
    assert len(registry.tools) == 5000
    doc = registry.tools["records_get_0"]
    assert doc.origin is not None and doc.origin.server == "many-tools-fixture"
    assert doc.brief.startswith("Gets a record of the tracker (number 0).")
    print(f"5,000 tools imported in {took:.1f} s")  # the figure, for -s


@pytest.mark.slow
@mcp_sdk
def test_drafting_past_a_tiny_timeout_is_one_line_exit_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing (200 tools, well within the timeout) is fine; the drafting is made slow (0.1 s a tool: 20 s in
    all), so the deadline passes while drafting."""
    real_draft = drafting.draft_brief  # type: ignore[attr-defined]

    def slow_draft(*args: object, **kwargs: object) -> str:
        time.sleep(0.1)
        return real_draft(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(drafting, "draft_brief", slow_draft)
    out = tmp_path / "docs"
    argv = ["import", "mcp", "--out", str(out), "--timeout", "8", "--", sys.executable, str(MANY), "200"]
    assert main(argv) == 2
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert len(err.splitlines()) == 1, err
    assert re.fullmatch(
        r"error: MCP server '.*many_tools_server\.py 200': the import did not finish within 8 s \(--timeout\); it "
        r"stopped while drafting the docs \(\d+ of 200 drafted\); nothing written\n",
        err,
    ), err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no staging folder left either


def test_a_deadline_during_writing_leaves_nothing_half_written(tmp_path: Path) -> None:
    files = {f"t{n}.yaml": f"name: t{n}\n" for n in range(10)}

    def check_after(count: int) -> object:
        calls = iter(range(1000))

        def check(doing: str) -> None:
            if next(calls) >= count:
                raise ImporterError(f"late while {doing}")

        return check

    new = tmp_path / "new"
    for count in (0, 5, 10):  # before any file, halfway, just before the files are moved into place
        with pytest.raises(ImporterError, match="late while"):
            write_files(new, files, check=check_after(count))  # type: ignore[arg-type]
        assert list(tmp_path.iterdir()) == []
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "t0.yaml").write_text("old\n")
    before = snapshot(existing)
    for count in (0, 5, 10):
        with pytest.raises(ImporterError, match="late while"):
            write_files(existing, files, check=check_after(count))  # type: ignore[arg-type]
        assert snapshot(existing) == before and [p.name for p in existing.iterdir()] == ["t0.yaml"]


def test_a_deadline_says_what_the_import_was_doing() -> None:
    deadline = Deadline(0.0, what="MCP server 'x'")
    time.sleep(0.01)
    with pytest.raises(ImporterError) as caught:
        deadline.check("drafting the docs (3 of 9 drafted)")
    assert str(caught.value) == (
        "MCP server 'x': the import did not finish within 0 s (--timeout); it stopped while drafting the docs "
        "(3 of 9 drafted); nothing written"
    )
    Deadline(None).check("anything")  # no deadline: never raises
    assert Deadline(None).remaining() is None and 0 < (Deadline(5).remaining() or 0) <= 5


# --------------------------------------------------------------------------------------------- big inputs


def test_a_5_mb_description_is_cut_with_a_note_and_imported_quickly(tmp_path: Path) -> None:
    description = "Reads a file and returns its text. " * 150_000  # 5.2 MB
    source = write_json(tmp_path / "big.json", {"tools": [{"name": "read_big", "description": description}]})
    plan = import_json(source, tmp_path / "docs")
    doc = load_registry(tmp_path / "docs").tools["read_big"]
    assert len(doc.full) < MAX_DESCRIPTION_CHARS + 1000
    assert f"[cut by the importer: the upstream description has {len(description):,} characters; the first " in doc.full
    assert doc.brief.startswith("Reads a file and returns its text.")
    assert plan.changes[0].action == "add"


def test_a_schema_too_deep_or_too_large_is_refused_naming_the_tool() -> None:
    deep: dict[str, object] = {"type": "string"}
    for _ in range(MAX_SCHEMA_DEPTH):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(ImporterError, match=r"tool #1 \('deep'\): the input schema is nested more than 64 levels"):
        parse_tool_list([{"name": "deep", "input_schema": deep}])
    wide = {"type": "object", "properties": {f"p{n}": {"type": "string", "enum": ["x" * 100] * 20} for n in range(600)}}
    with pytest.raises(ImporterError, match=r"tool #1 \('wide'\): the input schema is [\d,]+ bytes as JSON, over"):
        parse_tool_list([{"name": "wide", "input_schema": wide}])


def test_json_nested_past_the_readers_limit_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"tools": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert main(["import", "json", str(path), "--out", str(tmp_path / "docs")]) == 2
    assert capsys.readouterr().err == f"error: {path}: invalid JSON: nested too deeply to read\n"


# --------------------------------------------------------------------------------------------- same answers


def _old_rename(text: str, renamed: Mapping[str, str]) -> str:
    """The renaming as it was: one regex alternation of every name."""
    if not renamed or not text:
        return text
    alternatives = []
    for original in sorted(renamed, key=len, reverse=True):
        escaped = re.escape(original)
        if _distinctive(original):
            alternatives.append(rf"(?<![\w-]){escaped}(?![\w-]|\.\w)")
        else:
            alternatives.append(rf"(?<=[`'\"]){escaped}(?=[`'\"])")
    return re.sub("|".join(alternatives), lambda m: renamed[m.group()], text)


NAME_CHARS = "ab_-.1A é"
TEXT_CHARS = [*NAME_CHARS, "`", "'", '"', "\n", "x", ":", "/"]
names = st.sets(st.text(NAME_CHARS, min_size=1, max_size=6), min_size=1, max_size=6)


@st.composite
def texts_naming(draw: st.DrawFn, pool: set[str]) -> str:
    text = draw(st.text(st.sampled_from(TEXT_CHARS), max_size=30))
    for name in draw(st.lists(st.sampled_from(sorted(pool)), max_size=3)):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + name + text[at:]
    return text


@settings(max_examples=300, derandomize=True, deadline=None)
@given(data=st.data(), pool=names)
def test_renaming_mentions_gives_what_the_regex_gave(data: st.DataObject, pool: set[str]) -> None:
    renamed = {name: f"<{n}>" for n, name in enumerate(sorted(pool))}
    text = data.draw(texts_naming(pool))
    assert _Mentions(renamed)(text) == _old_rename(text, renamed)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(data=st.data(), pool=names)
def test_the_audit_finds_the_mentions_the_regex_found(data: st.DataObject, pool: set[str]) -> None:
    text = data.draw(texts_naming(pool))
    quoted = {span.strip() for span in _CODE_SPAN.findall(text)}
    old = {
        name
        for name in pool
        if name in quoted or (mentions._distinctive(name) and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text))
    }
    assert named_tools(text, pool) == old


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(["e.g", "i.e", "etc", "vs", "approx", ".", "..", "!", "?", " ", "\n", "a", "E.G"])))
def test_sentences_split_as_before(parts: list[str]) -> None:
    text = "".join(parts)
    out, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if _ABBREVIATION_END.search(text[: match.start() + 1].rstrip(".")) and match.group() == ".":
            continue
        out.append(text[start : match.end()].strip())
        start = match.end()
    if text[start:].strip():
        out.append(text[start:].strip())
    assert sentences(text) == [s for s in out if s]


TOOL_RUN = re.compile(r"[\w.:/-]+")  # what the lint reads as a tool named in an instruction (rules.yaml: tool)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(data=st.data(), pool=names)
def test_the_siblings_a_text_can_name_are_all_handed_over(data: st.DataObject, pool: set[str]) -> None:
    """Every sibling the lint could read out of the text (a run of tool-name characters, stripped as the lint
    strips it, equal to the name case-folded) and every sibling quoted in it is among those handed over."""
    text = data.draw(texts_naming(pool | {"Ａｂ", "a\u200bb"}))
    index = SiblingIndex((name, name) for name in sorted(pool))
    handed = set(index.among(text_words([text]), owner="nobody"))
    readable = {run.strip("`'\".,:;()").casefold() for run in TOOL_RUN.findall(normalise(text)[0])}
    quoted = {q[1:-1] for q in re.findall(r"`[^`]+`|'[^'\s][^']*'|\"[^\"\s][^\"]*\"", text)}
    for name in pool:
        if name.casefold() in readable or name in quoted:
            assert name in handed, (name, text)


def test_siblings_leave_out_the_tool_itself_and_names_the_text_cannot_spell() -> None:
    index = SiblingIndex([("a", "get_file"), ("a", "getFile"), ("b", "list_dirs"), ("c", "--")])
    words = text_words(["Call get_file first, then `list_dirs`."])
    assert index.among(words, owner="a") == ["list_dirs", "--"]  # a wordless name goes to every text
    assert index.among(words, owner="b") == ["get_file", "--"]
    assert index.among(text_words(["nothing here"]), owner="z") == ["--"]


@pytest.mark.slow  # drafts 5,000 tools: a scale check
def test_5000_tools_with_a_prefix_draft_in_linear_time(tmp_path: Path) -> None:
    """--prefix renames every tool, so every mention in every text is looked up: with the old regex alternation
    this took minutes (a quadratic return shows as a CI run that times out; the speed itself is no assertion)."""
    rng = random.Random(5)
    tools = [
        {
            "name": f"tool_{n}",
            "description": f"Reads item {n}; call tool_{rng.randrange(5000)} first.",
            "input_schema": {},
        }
        for n in range(5000)
    ]
    _, upstream = parse_tool_list(tools)
    drafted = drafting.draft_docs(upstream, server="s", prefix="p_")
    assert drafted[0][0].name == "p_tool_0" and "call p_tool_" in drafted[0][0].full
    json.dumps([doc.name for doc, _ in drafted])
