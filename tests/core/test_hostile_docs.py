"""The registry loader against hostile folders: real tool docs, modes and group docs mutated (bytes inserted,
deleted or flipped, control characters, bad tag values, truncation, deep nesting, huge scalars, aliases …), and
special files named like docs (a FIFO, a 1 GiB sparse file). Loading ends in a complete registry or a LoadError
whose every problem names a file of the folder and a line: never another exception, never a partial registry,
never a hang (each load runs in a thread joined with a generous bound; no test asserts a duration).

The mutations are :mod:`benchmarks.doc_mutations`, which the fuzz benchmark (``benchmarks/bench_fuzz.py``) runs
ten thousand times in child processes under a memory limit.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.doc_mutations import MUTATIONS, SHIPPED, mutate
from prompt_composer.core.live import LiveRegistry
from prompt_composer.core.registry import Registry, load_registry
from prompt_composer.errors import LoadError
from prompt_composer.shared.yamlfile import MAX_YAML_BYTES
from tests.helpers import DATA, T, mutation_names
from tests.helpers import within as _within

pytestmark = pytest.mark.usefixtures("yaml_parser")  # every test under both YAML parsers

BASE = DATA / "malformed" / "base"  # a small valid folder: four tools, two modes
EXTRA = ("search_files.yaml", "browser_action.yaml", "groups/read.yaml")  # shipped docs added to it
BOUND = 120.0  # seconds a load may take before the test calls it stuck; never expected to be reached


def within(call: Callable[[], T], seconds: float = BOUND) -> T:
    return _within(call, seconds)


def build(root: Path) -> list[Path]:
    """The base folder plus the shipped extras, written under ``root``; its YAML files."""
    shutil.copytree(BASE, root, dirs_exist_ok=True)
    for relative in EXTRA:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SHIPPED / relative, root / relative)
    return sorted(p for p in root.rglob("*.yaml"))


def check_outcome(root: Path, load: Callable[[], Registry]) -> Registry | LoadError:
    """Load (within the bound) and check the contract: a complete registry, or problems that each name a file of
    the folder (or the folder) and a line."""
    error: LoadError | None = None
    try:
        registry = within(load)
    except LoadError as exc:
        error = exc
    if error is not None:
        files = {p.resolve() for p in root.rglob("*")} | {root.resolve()}
        assert error.problems, "a LoadError without problems"
        for problem in error.problems:
            assert isinstance(problem.line, int) and problem.line >= 1, problem
            assert problem.path.resolve() in files, problem
        return error
    assert isinstance(registry, Registry)
    stems = {p.stem for p in root.glob("*.y*ml")}
    assert set(registry.tools) == stems, "a registry without every tool doc of the folder"
    assert set(registry.modes) == {p.stem for p in (root / "modes").glob("*.y*ml")}
    assert set(registry.groups) == {p.stem for p in (root / "groups").glob("*.y*ml")}
    return registry


def test_the_unmutated_folder_loads() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        assert isinstance(check_outcome(Path(tmp), lambda: load_registry(tmp)), Registry)


@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, 100), count=st.integers(1, 3), rng=st.randoms(use_true_random=False))
def test_a_mutated_doc_loads_or_is_a_located_load_error(which: int, count: int, rng: random.Random) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = build(root)
        target = files[which % len(files)]
        _, data = mutate(target.read_bytes(), rng, count=count)
        target.write_bytes(data)
        check_outcome(root, lambda: load_registry(root))


@pytest.mark.parametrize("name", mutation_names())
def test_every_mutation_kind_on_every_shipped_kind_of_file(name: str, tmp_path: Path) -> None:
    """Each mutation, several seeds, on a tool doc, a mode and a group doc of the folder."""
    files = build(tmp_path)
    originals = {path: path.read_bytes() for path in files}
    targets = [tmp_path / "search_files.yaml", tmp_path / "modes" / "code.yaml", tmp_path / "groups" / "read.yaml"]
    for seed in range(4):
        for target in targets:
            rng = random.Random(f"{name}-{seed}")
            target.write_bytes(MUTATIONS[name](originals[target], rng, False))
            check_outcome(tmp_path, lambda: load_registry(tmp_path))
            target.write_bytes(originals[target])


def test_a_billion_laughs_doc_is_refused_at_its_line(tmp_path: Path) -> None:
    build(tmp_path)
    lines = ['x-l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"x-l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 10)]
    target = tmp_path / "search_files.yaml"
    target.write_text(target.read_text().replace("input_schema:\n", "input_schema:\n  " + "\n  ".join(lines) + "\n"))
    problems = check_outcome(tmp_path, lambda: load_registry(tmp_path))
    assert isinstance(problems, LoadError)
    [problem] = problems.problems
    assert problem.path == target and "aliases expand to more than 100,000 values" in problem.message
    assert target.read_text().splitlines()[problem.line - 1].lstrip().startswith("x-l")


# --------------------------------------------------------------------------------------------- special files


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("where", ["fifo.yaml", "modes/fifo.yaml", "groups/fifo.yaml"])
def test_a_fifo_named_like_a_doc_is_a_clear_error(tmp_path: Path, where: str) -> None:
    build(tmp_path)
    os.mkfifo(tmp_path / where)
    error = check_outcome(tmp_path, lambda: load_registry(tmp_path))
    assert isinstance(error, LoadError)
    assert [str(p) for p in error.problems] == [
        f"{tmp_path / where}:1: cannot read file: it is a FIFO, not a regular file"
    ]


def test_a_1_gib_sparse_file_named_like_a_doc_is_refused_unread(tmp_path: Path) -> None:
    build(tmp_path)
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as handle:
        handle.write(b"name: huge\n")
    os.truncate(huge, 1 << 30)  # sparse: no disk used, but reading it would mean a GiB of NULs
    error = check_outcome(tmp_path, lambda: load_registry(tmp_path))
    assert isinstance(error, LoadError)
    [problem] = error.problems
    assert problem.path == huge and problem.line == 1
    assert problem.message == f"cannot read file: 1,073,741,824 bytes, over the limit of {MAX_YAML_BYTES:,}"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_live_registry_never_blocks_on_a_fifo(tmp_path: Path) -> None:
    build(tmp_path)
    os.mkfifo(tmp_path / "modes" / "late.yaml")
    with pytest.raises(LoadError, match=r"late\.yaml:1: cannot read file: it is a FIFO"):
        within(lambda: LiveRegistry(tmp_path))  # the first load must succeed: a FIFO fails it
    (tmp_path / "modes" / "late.yaml").unlink()
    live = within(lambda: LiveRegistry(tmp_path))
    os.mkfifo(tmp_path / "later.yaml")  # appears while serving: the reload is refused, the last good one serves
    before = live.current.fingerprint
    outcome = within(live.reload)
    assert not outcome.swapped and [str(p) for p in outcome.problems] == [
        f"{tmp_path / 'later.yaml'}:1: cannot read file: it is a FIFO, not a regular file"
    ]
    assert live.current.fingerprint == before
    assert within(live.poll) is None or live.current.fingerprint == before  # the watcher's step does not block


def test_a_lone_surrogate_escape_and_a_bomb_as_a_key_are_located_problems(tmp_path: Path) -> None:
    """``"\\ud800"`` builds a str no UTF-8 writer takes (the fingerprint raised UnicodeEncodeError); an alias bomb
    used as a key had a repr as large as its expansion. Both are problems at their lines."""
    build(tmp_path)
    target = tmp_path / "search_files.yaml"
    original = target.read_text()
    target.write_text(original.replace("name: search_files\n", 'name: search_files\nx-note: "bad \\ud800 escape"\n'))
    error = check_outcome(tmp_path, lambda: load_registry(tmp_path))
    assert isinstance(error, LoadError)
    assert [(p.line, p.message) for p in error.problems] == [
        (2, "invalid YAML: U+D800 is a lone surrogate, not a character (an escape writes it)")
    ]  # reported before the unknown key: a doc with such a value is not validated
    lines = ['x-l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"x-l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 10)]
    target.write_text("\n".join(lines) + "\n? *l9\n: boom\n" + original)
    error = check_outcome(tmp_path, lambda: load_registry(tmp_path))
    assert isinstance(error, LoadError)
    # at line 10: an alias is the node it names, so it is located at that node's anchor
    assert (10, "a sequence as a key: keys must be strings") in [(p.line, p.message) for p in error.problems]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0x" + "f" * 5000, "invalid YAML: an integer of 5,002 characters"),  # str() of it raised ValueError
        ("!!binary /w==", "invalid YAML: a !!binary value; a doc holds text"),  # bytes that are no UTF-8 text
    ],
)
def test_values_no_writer_can_write_are_located_problems(tmp_path: Path, value: str, message: str) -> None:
    build(tmp_path)
    target = tmp_path / "search_files.yaml"
    target.write_text(target.read_text().replace("  type: object\n", f"  type: object\n  x-value: {value}\n", 1))
    error = check_outcome(tmp_path, lambda: load_registry(tmp_path))
    assert isinstance(error, LoadError)
    [problem] = error.problems
    assert problem.path == target and problem.message == message
    assert target.read_text().splitlines()[problem.line - 1].startswith("  x-value: ")
