"""libyaml's C parser and PyYAML's pure-Python one read every text alike: the same data, the same line of every
key, the same problems at the same lines, on the shipped docs and on the fuzz corpus's mutations of them
(:mod:`benchmarks.doc_mutations`). The hostile-folder and malformed-corpus suites (test_hostile_docs.py,
test_loading.py) run whole under each parser; this module compares the two outcome by outcome."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.doc_mutations import MUTATIONS, mutate, shipped_files
from prompt_composer.shared import yamlfile, yamlparse
from prompt_composer.shared.yamlfile import MAX_COMPOSE_DEPTH, MAX_YAML_VALUES, read_yaml, yaml_layout
from tests.helpers import mutation_names, within

pytestmark = pytest.mark.skipif(yamlparse.CParser is None, reason="PyYAML without libyaml: one parser only")

SHIPPED = shipped_files()
TARGETS = [p for p in SHIPPED if p.name in ("search_files.yaml", "code.yaml", "read.yaml")]


@contextmanager
def parser(name: str) -> Iterator[None]:
    before = yamlfile.PARSER
    yamlfile.PARSER = name  # type: ignore[assignment]
    try:
        yield
    finally:
        yamlfile.PARSER = before


def outcome(path: Path, name: str) -> tuple[str, Any, list[tuple[int, str]]]:
    """What ``read_yaml`` makes of ``path`` under parser ``name``: the data's repr (NaN equals itself there), the
    line map and the problems."""
    with parser(name):
        data, lines, problems = within(lambda: read_yaml(path), 120.0)
    return repr(data), lines, [(p.line, p.message) for p in problems]


def same_outcome(path: Path) -> tuple[str, Any, list[tuple[int, str]]]:
    fast, slow = outcome(path, "libyaml"), outcome(path, "python")
    assert fast == slow
    return fast


def test_the_default_is_libyaml() -> None:
    assert yamlfile.PARSER == "libyaml"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(p.parents[1]).as_posix())
def test_every_shipped_file_reads_alike(path: Path) -> None:
    _, lines, problems = same_outcome(path)
    assert not problems and lines
    with parser("libyaml"):
        fast = yaml_layout(path.read_text())
    with parser("python"):
        slow = yaml_layout(path.read_text())
    assert fast == slow and fast[1]  # scalar styles too: libyaml's "" for a plain scalar is read as None


@pytest.mark.parametrize("name", mutation_names())
def test_every_mutation_reads_alike(name: str, tmp_path: Path) -> None:
    target = tmp_path / "doc.yaml"
    problems = 0
    for path in TARGETS:
        for seed in range(6):
            target.write_bytes(MUTATIONS[name](path.read_bytes(), random.Random(f"{name}-{seed}"), False))
            problems += bool(same_outcome(target)[2])
    if name in ("deep nesting", "billion laughs", "invalid UTF-8", "control character"):
        assert problems, "a mutation that always breaks a doc broke none"


@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(SHIPPED) - 1), count=st.integers(1, 3), rng=st.randoms(use_true_random=False))
def test_mutated_docs_read_alike(which: int, count: int, rng: random.Random) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "doc.yaml"
        target.write_bytes(mutate(SHIPPED[which].read_bytes(), rng, count=count)[1])
        same_outcome(target)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[" * 20_000 + "x" + "]" * 20_000, f"invalid YAML: nested too deeply (more than {MAX_COMPOSE_DEPTH} levels)"),
        ("[" * 20_000, f"invalid YAML: nested too deeply (more than {MAX_COMPOSE_DEPTH} levels)"),
        pytest.param(
            "[" + "1," * 120_000 + "1]",
            f"invalid YAML: more than {MAX_YAML_VALUES:,} values",
            marks=pytest.mark.slow,  # a scale case: run by CI, not by the quick tier
        ),
    ],
    ids=["deep", "deep-unclosed", "many"],
)
def test_the_bounds_stop_both_parsers_at_the_same_value(tmp_path: Path, value: str, message: str) -> None:
    """libyaml scans 20,000 open brackets in time quadratic in the depth, and its composer recurses in C (a
    million brackets crash the process): the bounded composer stops both parsers at the first value past the
    bound, so neither ever gets that far."""
    target = tmp_path / "doc.yaml"
    target.write_text(f"name: x\nx-value: {value}\n")
    _, _, problems = same_outcome(target)
    [(line, text)] = problems
    assert line == 2 and text.startswith(message)


def test_a_text_libyaml_refuses_carries_the_python_parsers_message(tmp_path: Path) -> None:
    target = tmp_path / "doc.yaml"
    target.write_text('name: x\nnote: "bad \\ud800 escape"\n')  # libyaml refuses the escape with its own words
    _, _, problems = same_outcome(target)
    assert problems == [(2, "invalid YAML: U+D800 is a lone surrogate, not a character (an escape writes it)")]


def test_without_libyaml_the_python_parser_reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(yamlparse, "CParser", None)
    target = tmp_path / "doc.yaml"
    target.write_text("name: x\nitems: [1, 2]\n")
    lines = {(): 1, ("name",): 1, ("items",): 2, ("items", 0): 2, ("items", 1): 2}
    with parser("libyaml"):
        assert read_yaml(target) == ({"name": "x", "items": [1, 2]}, lines, [])
        target.write_text("name: x\nitems: [1, 2\n")
        [problem] = read_yaml(target)[2]
        assert (problem.line, problem.message) == (
            3,
            "invalid YAML: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence at line 2)",
        )


def test_scalars_read_alike_when_their_tags_come_from_the_memo(tmp_path: Path) -> None:
    # The C path keeps the implicit tag of each short plain scalar it has seen; the second read of the same scalars
    # (and the same texts as keys) must build what the pure-Python parser builds, type for type.
    words = ["yes", "No", "on", "~", "null", "0x1F", "0o17", "1_000", "1e3", ".inf", "2026-11-29", "12:30", "str"]
    text = "".join(f"k{i}: {w}\nl{i}: [{w}, '{w}']\n" for i, w in enumerate(words))
    path = tmp_path / "scalars.yaml"
    path.write_text(text, encoding="utf-8")
    first = same_outcome(path)
    assert same_outcome(path) == first
    assert "True" in first[0] and "None" in first[0] and "31" in first[0] and "datetime.date(2026, 11, 29)" in first[0]
