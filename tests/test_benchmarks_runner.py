"""benchmarks/run.py without the shared folder or the local model: it skips what it cannot run, says what that
needs, and exits 0 without a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import run
from benchmarks.search_corpora import SHARED_ENV

ROOT = Path(__file__).resolve().parents[1]
FOUR = ("agent", "compose", "replay", "search")


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty shared folder and an empty model cache (no model is set up there), set in the environment."""
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv(SHARED_ENV, str(shared))
    monkeypatch.setenv("PROMPT_COMPOSER_CACHE", str(tmp_path / "cache"))
    return shared


@pytest.mark.slow
def test_run_py_without_shared_data_or_model_skips_and_exits_0(bare: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", SHARED_ENV)}
    proc = subprocess.run(
        # The four benchmarks of the README's run (the others take minutes when they can run at all).
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--shared", str(bare), *FOUR],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out, shared = proc.stdout, bare.resolve()
    for name in ("bench_agent", "bench_compose", "bench_search"):
        assert f"_skipped: {name} needs " in out
    assert "- no local model (no verified weights at " in out
    assert f"- no tool catalogs: not in {shared}: corpora/github_mcp/tools.json" in out
    assert "# bench_replay" in out
    assert "replayed " in out  # the one benchmark that needs nothing more ran
    last = out.strip().splitlines()[-1]
    assert last.startswith("ran 1 of 4 benchmarks; skipped bench_agent (no local model"), last
    assert "bench_compose (no tool catalogs), bench_search (no MetaTool/LiveMCPBench corpora" in last
    assert f"shared folder: {shared} (--shared DIR or ${SHARED_ENV} to change)" in last


def test_main_reads_the_shared_folder_from_the_environment(bare: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["compose", "search"]) == 0
    out, _ = capsys.readouterr()
    assert f"_skipped: bench_compose needs the real tool catalogs in {bare.resolve()}/corpora._" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("ran 0 of 2 benchmarks; skipped bench_compose (no tool catalogs), bench_search (no "), last
    assert last.endswith(f"; shared folder: {bare.resolve()} (--shared DIR or ${SHARED_ENV} to change)."), last


def test_a_missing_shared_folder_is_named_once(tmp_path: Path) -> None:
    [missing] = run.compose_needs(tmp_path / "nowhere")
    assert missing.detail == f"no tool catalogs: the shared folder {tmp_path / 'nowhere'} does not exist"


def test_only_the_missing_files_are_listed(tmp_path: Path) -> None:
    for name in ("metatool/tools.json", "metatool/dev_queries.jsonl", "livemcpbench/tools.jsonl"):
        (tmp_path / "corpora" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "corpora" / name).write_text("[]")
    details = [m.detail for m in run.search_needs(tmp_path)]
    assert f"no MetaTool/LiveMCPBench corpora: not in {tmp_path}: corpora/livemcpbench/dev_queries.jsonl" in details
    agent = [m.short for m in run.agent_needs(tmp_path)]
    assert "no MetaTool corpus" not in agent


def test_an_unknown_benchmark_name_exits_2(bare: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["nosuch"]) == 2
    err = capsys.readouterr().err
    assert "run.py: no benchmark matches nosuch (there are: agent, bounds, compose, fuzz, replay, replicas," in err


def test_the_startup_benchmark_is_skipped_without_the_catalogs(bare: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["startup"]) == 0
    out, _ = capsys.readouterr()
    assert f"_skipped: bench_startup needs the real tool catalogs and MetaTool's in {bare.resolve()}/corpora._" in out
    assert "corpora/metatool/tools.json" in out and "corpora/github_mcp/tools.json" in out
    assert out.strip().splitlines()[-1].startswith("ran 0 of 1 benchmark; skipped bench_startup (no tool catalogs)")
