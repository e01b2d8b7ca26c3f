"""Run every benchmark (benchmarks/bench_*.py), one after another, printing their Markdown tables.

    python3 benchmarks/run.py [--shared DIR] [NAME ...]

NAME words pick the benchmarks whose file name contains one of them (``compose``, ``replay``, ``search``,
``agent``). Most benchmarks read the real tool catalogs and traces in the ``shared`` folder beside the
repository (``--shared DIR`` or ``$PROMPT_COMPOSER_SHARED`` points elsewhere); ``bench_agent`` also needs the
local model and the BFCL data. A benchmark whose data or model is missing is skipped with a note saying what it
needs, and the last line sums up what was skipped and why. Exit 0 when every benchmark that could run ran, 1
when one of them failed, 2 when no benchmark matches NAME.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import agent_tasks, corpora, search_corpora
from benchmarks.large_catalog import missing_large_files
from prompt_composer.local import weights as localmodel

HERE = Path(__file__).resolve().parent
SHARED_ENV = search_corpora.SHARED_ENV


@dataclass(frozen=True)
class Missing:
    """Something a benchmark needs that is not here: ``short`` for the summary line, ``detail`` for its note."""

    short: str
    detail: str


def _files(short: str, paths: Sequence[Path], shared: Path) -> list[Missing]:
    if not paths:
        return []
    if not shared.is_dir():
        return [Missing(short, f"{short}: the shared folder {shared} does not exist")]
    shown = ", ".join(str(p.relative_to(shared)) if p.is_relative_to(shared) else str(p) for p in paths)
    return [Missing(short, f"{short}: not in {shared}: {shown}")]


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def compose_needs(shared: Path) -> list[Missing]:
    return _files("no tool catalogs", corpora.missing_files(shared / "corpora"), shared)


def startup_needs(shared: Path) -> list[Missing]:
    corpora_dir = shared / "corpora"
    metatool = Path("metatool", "tools.json")
    paths = {*corpora.missing_files(corpora_dir), *missing_large_files(corpora_dir)}
    paths |= set() if (corpora_dir / metatool).is_file() else {corpora_dir / metatool}
    return _files("no tool catalogs", sorted(paths), shared)


def search_needs(shared: Path) -> list[Missing]:
    missing = _files("no MetaTool/LiveMCPBench corpora", search_corpora.missing_files(shared / "corpora"), shared)
    for module, package in (("numpy", "numpy"), ("rank_bm25", "rank-bm25")):
        if not _has_module(module):
            missing.append(Missing(f"no {package}", f"no {package}: pip install '.[dev]'"))
    return missing


def agent_needs(shared: Path) -> list[Missing]:
    missing = []
    if not localmodel.is_set_up():
        missing.append(
            Missing(
                "no local model",
                f"no local model (no verified weights at {localmodel.model_path()}): "
                "python3 -m prompt_composer model setup",
            )
        )
    if not _has_module("xllamacpp"):
        missing.append(Missing("no model runtime", "no local model runtime: pip install '.[local]'"))
    if not agent_tasks.bfcl_data_available():
        missing.append(Missing("no BFCL data", f"no BFCL data: pip install --no-deps {agent_tasks.BFCL_PACKAGE}"))
    metatool = shared / "corpora" / "metatool"
    missing += _files("no MetaTool corpus", agent_tasks.missing_metatool_files(metatool), shared)
    return missing


def session_needs(_shared: Path) -> list[Missing]:
    missing = [m for m in agent_needs(_shared) if m.short in ("no local model", "no model runtime")]
    for module, package in (
        ("mcp", "mcp"),
        ("mcp_server_time", "mcp-server-time"),
        ("mcp_server_git", "mcp-server-git"),
    ):
        if not _has_module(module):
            missing.append(Missing(f"no {package}", f"no {package}: pip install '.[dev]'"))
    return missing


# What each benchmark needs beyond the package (the others need nothing more), and the words its note uses.
NEEDS: dict[str, tuple[str, Callable[[Path], list[Missing]]]] = {
    "bench_agent": ("the local model, the BFCL data and the MetaTool corpus (SHARED/corpora/metatool)", agent_needs),
    "bench_compose": ("the real tool catalogs in SHARED/corpora", compose_needs),
    "bench_search": ("the MetaTool and LiveMCPBench corpora in SHARED/corpora, numpy and rank-bm25", search_needs),
    "bench_session": ("the local model and the real time and git MCP servers", session_needs),
    "bench_startup": ("the real tool catalogs and MetaTool's in SHARED/corpora", startup_needs),
}


def replay_traces() -> Path | None:
    """The SWE-agent traces bench_replay reads (it replays the project's own sequences alone without them)."""
    spec = importlib.util.spec_from_file_location("_bench_replay", HERE / "bench_replay.py")
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    traces = getattr(module, "TRACES", None)
    return traces if isinstance(traces, Path) else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="benchmarks/run.py", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "--shared",
        metavar="DIR",
        type=Path,
        help=f"the folder of real catalogs and traces (default: ${SHARED_ENV}, else ../shared beside the repository)",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="run only benchmarks whose name contains a NAME")
    args = parser.parse_args(argv)
    if args.shared is not None:
        os.environ[SHARED_ENV] = str(args.shared.resolve())  # read by the benchmarks run below
    shared = search_corpora.shared_dir().resolve()

    scripts = [s for s in sorted(HERE.glob("bench_*.py")) if not args.names or any(w in s.stem for w in args.names)]
    if not scripts:
        known = ", ".join(s.stem.removeprefix("bench_") for s in sorted(HERE.glob("bench_*.py")))
        print(f"run.py: no benchmark matches {' '.join(args.names)} (there are: {known})", file=sys.stderr)
        return 2

    skipped: list[str] = []
    partial: list[str] = []
    failed: list[str] = []
    for script in scripts:
        print(f"\n# {script.stem}\n", flush=True)
        what, check = NEEDS.get(script.stem, ("", lambda _: []))
        missing = check(shared)
        if missing:
            print(f"_skipped: {script.stem} needs {what.replace('SHARED', str(shared))}._\n")
            for item in missing:
                print(f"- {item.detail}")
            skipped.append(f"{script.stem} ({', '.join(item.short for item in missing)})")
            continue
        if script.stem == "bench_replay":
            traces = replay_traces()
            if traces is not None and not traces.is_file():
                print(f"_no SWE-agent traces at {traces}: replaying the project's own sequences only._\n", flush=True)
                partial.append(f"bench_replay ran without the SWE-agent traces (not at {traces})")
        code = subprocess.run([sys.executable, str(script)], check=False).returncode
        if code:
            failed.append(f"{script.stem} (exit {code})")

    ran = len(scripts) - len(skipped)
    summary = [f"ran {ran} of {len(scripts)} benchmark{'s' if len(scripts) != 1 else ''}"]
    if skipped:
        summary.append(f"skipped {', '.join(skipped)}")
    summary += partial
    if skipped or partial:
        absent = "" if shared.is_dir() else ", which does not exist"
        summary.append(f"shared folder: {shared}{absent} (--shared DIR or ${SHARED_ENV} to change)")
    if failed:
        summary.append(f"failed: {', '.join(failed)}")
    print("\n" + "; ".join(summary) + ".", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
