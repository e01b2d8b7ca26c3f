"""Hostile sizes against the gateway and the importer: how long an answer takes and how long it is, against an
ordinary request measured in the same run.

    python benchmarks/bench_bounds.py [--repeat N]

Starts ``prompt-composer serve`` (the shipped docs plus a discovery mode, so ``tool_search`` is listed) as a real
process over stdio and sends raw JSON-RPC lines: a short unknown tool name (the baseline), a 5 MB tool name (a
direct call and through ``fetch_tool_description``), a 5 MB and a 200,000-word ``tool_search`` query, arguments
nested 1,000 deep and a 10 MB line (over the message limit). Each is timed from the write of the line to the read
of its answer, the median of ``--repeat`` runs. Then ``import mcp`` of a live server whose tool schema nests 300
levels, against the import of the same server with a 10-level schema (``--dry-run``). Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEEP_SERVER = REPO / "tests" / "data" / "mcp" / "deep_schema_server.py"
FIND_MODE = (
    "slug: find\nname: Find\nrole: You find and read code.\ngroups: [read, edit]\npermanent: [read_file]\n"
    "recent_size: 2\nbudget_tokens: 100000\ndiscovery: true\n"
)
BIG = 5_000_000


def call(ident: int, name: str, arguments: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return json.dumps(message).encode()


def cases() -> list[tuple[str, bytes, int]]:
    """(label, message, the row of its baseline: 0 for names and framing, 1 for searches)."""
    deep = "[" * 1000 + "]" * 1000
    return [
        ("a short unknown name (baseline)", call(0, "no_such_tool", {}), 0),
        (
            "a 6-word `tool_search` query (search baseline)",
            call(0, "tool_search", {"query": "find where a function is called"}),
            1,
        ),
        ("a 5 MB tool name, called", call(0, "x" * BIG, {}), 0),
        ("a 5 MB tool name, fetched", call(0, "fetch_tool_description", {"name": "x" * BIG}), 0),
        ("a 5 MB `tool_search` query", call(0, "tool_search", {"query": "config " * (BIG // 7)}), 1),
        ("a 200,000-word `tool_search` query", call(0, "tool_search", {"query": " ".join(["read file"] * 100_000)}), 1),
        ("arguments nested 1,000 deep", call(0, "read_file", {"a": "@"}).replace(b'"@"', deep.encode()), 0),
        ("a 10 MB line (over the 8 MiB limit)", call(0, "x" * (2 * BIG), {}), 0),
    ]


def serve(docs: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "prompt_composer", "--docs", str(docs), "serve", "--mode", "find"]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def ask(process: subprocess.Popen[bytes], raw: bytes, ident: int) -> tuple[float, int]:
    """Seconds from writing the line to reading its answer, and the answer's size in bytes."""
    assert process.stdin is not None and process.stdout is not None
    raw = raw.replace(b'"id": 0', f'"id": {ident}'.encode(), 1)
    start = time.perf_counter()
    process.stdin.write(raw + b"\n")
    process.stdin.flush()
    line = process.stdout.readline()
    seconds = time.perf_counter() - start
    answer = json.loads(line)
    assert answer.get("id") in (ident, None), answer
    # Past the limits an error answer; else a result (a refusal or the hits), never the SDK's complaint.
    assert "result" in answer or answer["error"]["code"] == -32600, answer
    return seconds, len(line)


def gateway_table(repeat: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        shutil.copytree(REPO / "tool_docs", docs)
        (docs / "modes" / "find.yaml").write_text(FIND_MODE, encoding="utf-8")
        process = serve(docs)
        try:
            ident = 1
            hello = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            }
            ask(
                process,
                json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}).encode(),
                ident,
            )
            assert process.stdin is not None
            process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            rows: list[tuple[str, float, int, int]] = []
            for label, raw, base in cases():
                times, size = [], 0
                for _ in range(repeat):
                    ident += 1
                    seconds, size = ask(process, raw, ident)
                    times.append(seconds)
                rows.append((label, statistics.median(times), size, base))
        finally:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=60)
    lines = ["| message (stdio) | answer | × its baseline | answer size |", "|---|---:|---:|---:|"]
    for label, seconds, size, base in rows:
        lines.append(f"| {label} | {seconds * 1000:.0f} ms | {seconds / rows[base][1]:.2f}× | {size:,} B |")
    return lines


def import_seconds(depth: int) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "prompt_composer", "import", "mcp", "--out", str(Path(tmp) / "docs")]
        command += ["--dry-run", "--timeout", "90", "--", sys.executable, str(DEEP_SERVER), str(depth)]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        seconds = time.perf_counter() - start
    last = (done.stderr.strip().splitlines() or [""])[-1]
    shown = last[last.find("failed") :] if "failed" in last else last  # the command line is long: from "failed"
    return seconds, f"exit {done.returncode}" + (f", {shown[:110]}" if done.returncode else "")


def import_table() -> list[str]:
    lines = ["| `import mcp` (`--timeout 90`) | seconds | × baseline | outcome |", "|---|---:|---:|---|"]
    base = 0.0
    for label, depth in (("a 10-level schema (baseline)", 10), ("a 300-level schema", 300)):
        seconds, outcome = import_seconds(depth)
        base = base or seconds
        lines.append(f"| {label} | {seconds:.2f} | {seconds / base:.2f}× | {outcome} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each message (the median is shown)")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("mcp") is None:
        print("skipped: bench_bounds needs the mcp SDK (pip install 'prompt-composer-tooldocs[mcp]')")
        return
    print("\n".join(gateway_table(args.repeat)))
    print()
    print("\n".join(import_table()))


if __name__ == "__main__":
    main()
