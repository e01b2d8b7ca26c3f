"""The loader on a corpus of malformed tool docs and modes: every problem at once, as ``path:line: message``.

The corpus lives in ``tests/data/malformed/``: ``base/`` is a small valid folder, ``cases/<id>/`` holds the
file(s) a case breaks or adds, and ``cases.yaml`` says which problems (file, line, message substring) the
loader must report for it, no more and no fewer. A case marked ``xfail`` there is a loader bug or weakness
found while building the corpus; its test is ``xfail(strict=True)`` so that a fix turns it red (XPASS).
"""

from __future__ import annotations

import re
import shutil
import string
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_composer.cli import main
from prompt_composer.core.docs import ToolDoc
from prompt_composer.core.registry import Registry, load_registry
from prompt_composer.errors import LoadError, Problem, did_you_mean
from tests.helpers import DATA

pytestmark = pytest.mark.usefixtures("yaml_parser")  # every test under both YAML parsers

DATA = DATA / "malformed"
BASE = DATA / "base"
CASES = DATA / "cases"
PROBLEM_LINE = re.compile(r"^(?P<path>.+):(?P<line>\d+): (?P<message>.+)$")

# Every subcommand, with the arguments it needs to get as far as loading the registry.
COMMANDS = {
    "validate": ["validate"],
    "modes": ["modes"],
    "tools": ["tools"],
    "tools --mode": ["tools", "--mode", "code"],
    "compose": ["compose", "--mode", "code"],
    "compose json": ["compose", "--mode", "code", "--format", "json", "--recent", "list_files"],
    "fetch": ["fetch", "read_file", "--mode", "code"],
    "audit": ["audit"],
    "audit --check": ["audit", "--check", "--format", "json"],
}


@dataclass(frozen=True)
class Expected:
    file: str  # relative to the docs folder, with "/" separators
    line: int | None  # None: any line
    message: str  # a substring of the message

    def matches(self, found: tuple[str, int, str]) -> bool:
        file, line, message = found
        return file == self.file and (self.line is None or line == self.line) and self.message in message


@dataclass(frozen=True)
class Case:
    id: str
    about: str
    problems: tuple[Expected, ...]
    xfail: str | None = None


def read_manifest() -> list[Case]:
    entries: list[dict[str, Any]] = yaml.safe_load((DATA / "cases.yaml").read_text(encoding="utf-8"))
    return [
        Case(
            id=entry["id"],
            about=entry["about"],
            problems=tuple(Expected(str(f), line, msg) for f, line, msg in entry["problems"]),
            xfail=entry.get("xfail"),
        )
        for entry in entries
    ]


MANIFEST = read_manifest()
BY_ID = {case.id: case for case in MANIFEST}


def case_params() -> list[Any]:
    return [
        pytest.param(case, id=case.id, marks=[pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else [])
        for case in MANIFEST
    ]


def build_folder(case_id: str, where: Path) -> Path:
    """A fresh copy of base/ with the case's files laid over it."""
    root = where / "docs"
    shutil.copytree(BASE, root)
    shutil.copytree(CASES / case_id, root, dirs_exist_ok=True)
    return root


def located(problems: tuple[Problem, ...], root: Path) -> list[tuple[str, int, str]]:
    return [(p.path.relative_to(root).as_posix(), p.line, p.message) for p in problems]


@contextmanager
def no_crash() -> Iterator[None]:
    """Turn a crash deep in the loader into a short failure (pytest would format ~1000 frames, slowly)."""
    try:
        yield
    except RecursionError:
        pytest.fail("RecursionError while loading: a crash, not a path:line problem", pytrace=False)


def refusal(root: Path) -> LoadError:
    """Load ``root``, which must fail; return the error (and check no registry came back)."""
    registry: Registry | None = None
    with no_crash(), pytest.raises(LoadError) as info:
        registry = load_registry(root)
    assert registry is None
    return info.value


def assert_reported(found: list[tuple[str, int, str]], expected: tuple[Expected, ...]) -> None:
    """Every expected problem is reported by a distinct problem, and nothing else is."""
    listing = "\n".join(f"  {f}:{line}: {msg}" for f, line, msg in found)
    unmatched = list(found)
    for exp in expected:
        hit = next((item for item in unmatched if exp.matches(item)), None)
        assert hit is not None, f"expected {exp} among the problems reported:\n{listing}"
        unmatched.remove(hit)
    assert not unmatched, f"unexpected extra problems {unmatched}; all reported:\n{listing}"


# --------------------------------------------------------------------------------------------- the corpus


def test_manifest_and_case_folders_agree() -> None:
    folders = {p.name for p in CASES.iterdir() if p.is_dir()}
    ids = [case.id for case in MANIFEST]
    assert len(ids) == len(set(ids)), "duplicate case ids in cases.yaml"
    assert set(ids) == folders
    assert all(case.problems for case in MANIFEST)


def test_corpus_covers_tools_and_modes() -> None:
    real = [case for case in MANIFEST if not case.xfail]
    assert len(real) >= 30
    files = [exp.file for case in real for exp in case.problems]
    assert sum(f.startswith("modes/") for f in files) >= 15
    assert sum(not f.startswith("modes/") for f in files) >= 30


def test_base_folder_is_valid() -> None:
    registry = load_registry(BASE)
    assert sorted(registry.tools) == ["execute_command", "list_files", "read_file", "write_to_file"]
    assert sorted(registry.modes) == ["ask", "code"]
    assert registry.mode("code").allowed[:2] == ("read_file", "write_to_file")


@pytest.mark.parametrize("case", case_params())
def test_malformed_folder_is_refused_with_every_problem(case: Case, tmp_path: Path) -> None:
    root = build_folder(case.id, tmp_path)
    error = refusal(root)
    assert_reported(located(error.problems, root), case.problems)
    assert list(error.problems) == sorted(error.problems), "problems must be sorted by path, then line"
    assert str(error).splitlines() == [str(p) for p in error.problems]


def test_several_bad_files_are_reported_in_path_then_line_order(tmp_path: Path) -> None:
    root = build_folder("several-bad-files", tmp_path)
    found = located(refusal(root).problems, root)
    assert [(f, line) for f, line, _ in found] == [
        ("hollow.yaml", 4),
        ("modes/ask.yaml", 2),
        ("modes/code.yaml", 10),
        ("typo.yaml", 1),
        ("typo.yaml", 3),
    ]


@pytest.mark.parametrize("case_id", ["bad-tool-referenced-by-mode", "bad-tool-referenced-by-mode-include"])
def test_a_broken_tool_is_not_reported_again_by_the_modes_using_it(case_id: str, tmp_path: Path) -> None:
    root = build_folder(case_id, tmp_path)
    found = located(refusal(root).problems, root)
    assert len(found) == 1
    assert not any(f.startswith("modes/") or "unknown tool" in msg for f, _, msg in found)


def test_a_missing_folder_is_one_problem(tmp_path: Path) -> None:
    error = refusal(tmp_path / "nowhere")
    assert [(p.path, p.line) for p in error.problems] == [(tmp_path / "nowhere", 1)]
    assert "does not exist" in error.problems[0].message


# --------------------------------------------------------------------------------------------- the CLI


def stderr_problems(err: str) -> list[str]:
    lines = err.splitlines()
    assert "Traceback" not in err
    for line in lines:
        assert PROBLEM_LINE.match(line), f"not a path:line: message line: {line!r}"
    return lines


@pytest.mark.parametrize("case", case_params())
def test_cli_validate_prints_every_problem(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = build_folder(case.id, tmp_path)
    with no_crash():
        code = main(["--docs", str(root), "validate"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = stderr_problems(err)
    parsed = [PROBLEM_LINE.match(line) for line in lines]
    found = [(str(Path(m["path"]).relative_to(root).as_posix()), int(m["line"]), m["message"]) for m in parsed if m]
    assert_reported(found, case.problems)
    assert lines == [str(p) for p in refusal(root).problems]


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_every_command_refuses_a_bad_folder(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = build_folder("several-bad-files", tmp_path)
    code = main(["--docs", str(root), *argv])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = stderr_problems(err)
    assert len(lines) == len(BY_ID["several-bad-files"].problems)
    assert lines == [str(p) for p in refusal(root).problems]


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_every_command_accepts_the_base_folder(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--docs", str(BASE), *argv])
    out, err = capsys.readouterr()
    if argv[:2] == ["audit", "--check"]:
        # The base folder's modes hold two or three small tools, too few for composing to save anything: the
        # check loads and audits them, then fails on that gate alone (every error line says so).
        assert code == 1, err
        assert err and all("is not smaller than its baseline" in line for line in err.splitlines()), err
    else:
        assert code == 0, err
    assert out
    assert "Traceback" not in err


def test_cli_validate_reports_the_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--docs", str(BASE), "validate"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ok: 4 tools, 2 modes (fingerprint ")
    assert err == ""


def test_cli_refuses_a_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--docs", str(tmp_path / "nowhere"), "validate"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert stderr_problems(err) == [f"{tmp_path / 'nowhere'}:1: tool docs folder does not exist"]


# --------------------------------------------------------------------------------------------- round trip

NAME_ALPHABET = string.ascii_letters + string.digits + "_-"
ABBREVIATIONS = {"etc", "vs", "cf", "approx", "incl"}  # their dot does not end a sentence

words = st.text(string.ascii_letters, min_size=1, max_size=10).filter(lambda w: w.lower() not in ABBREVIATIONS)
sentences = st.builds(
    lambda ws, end: " ".join(ws) + end, st.lists(words, min_size=1, max_size=6), st.sampled_from(".!?")
)
briefs = st.lists(sentences, min_size=1, max_size=5).map(" ".join)
# U+0085 (NEL) is left out: PyYAML's own safe_dump(allow_unicode=True) writes it raw into a single-quoted scalar,
# and safe_load folds it into a space (yaml.safe_load(yaml.safe_dump("0\x850", allow_unicode=True)) == "0 0").
any_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x85"), max_size=80)
non_blank = any_text.filter(lambda s: s.strip() != "")
one_line = st.text(st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=40).filter(
    lambda s: s.strip() != ""
)
parameter_names = st.text(NAME_ALPHABET, min_size=1, max_size=12)
parameter_schemas = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "boolean", "number"]), "description": any_text}
)


@st.composite
def input_schemas(draw: st.DrawFn) -> dict[str, Any]:
    properties = draw(st.dictionaries(parameter_names, parameter_schemas, max_size=4))
    required = draw(st.lists(st.sampled_from(sorted(properties)), unique=True) if properties else st.just([]))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required or draw(st.booleans()):
        schema["required"] = required
    return schema


tool_docs = st.builds(
    ToolDoc,
    name=st.text(NAME_ALPHABET, min_size=1, max_size=64),
    group=st.from_regex(r"[a-z0-9][a-z0-9_-]{0,11}", fullmatch=True),
    brief=briefs,
    full=non_blank,
    input_schema=input_schemas(),
    queries=st.lists(one_line, max_size=3).map(tuple),
    hint=st.none() | one_line,
    brief_source=st.sampled_from(["human", "drafted"]),
)


@settings(max_examples=50, deadline=None)
@given(doc=tool_docs)
def test_any_valid_tool_doc_round_trips_through_yaml(doc: ToolDoc) -> None:
    text = yaml.safe_dump(doc.model_dump(mode="json", exclude_defaults=True), allow_unicode=True, sort_keys=False)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / f"{doc.name}.yaml").write_text(text, encoding="utf-8")
        registry = load_registry(tmp)
    assert dict(registry.tools) == {doc.name: doc}
    assert dict(registry.modes) == {}


@settings(max_examples=30, deadline=None)
@given(doc=tool_docs, key=st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True))
def test_an_unknown_key_is_reported_at_its_line(doc: ToolDoc, key: str) -> None:
    data = doc.model_dump(mode="json", exclude_defaults=True)
    if key in ToolDoc.model_fields:
        key = f"x_{key}"
    # safe_dump quotes keys YAML 1.1 would read as booleans (no, on, y...); unquoted, see bug-yaml11-bool-key.
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False) + yaml.safe_dump({key: "extra"})
    line = text.count("\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{doc.name}.yaml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(LoadError) as info:
            load_registry(tmp)
    hint = did_you_mean(key, list(ToolDoc.model_fields))  # a key close to a known one names it
    message = f"unknown key {key!r}; {hint}" if hint else f"unknown key {key!r}"
    assert [(p.path.name, p.line, p.message) for p in info.value.problems] == [(path.name, line, message)]
