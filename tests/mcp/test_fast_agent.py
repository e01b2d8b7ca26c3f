"""A real agent through ``prompt-composer serve``: fast-agent (PyPI ``fast-agent-mcp``), with its generic
OpenAI-compatible provider on the local model (Qwen2.5-Coder-1.5B on llama.cpp's server), completes a task whose
answer needs the imported ``get_current_time`` of the real mcp-server-time, routed by the gateway.

fast-agent needs Python >= 3.12 and pins its own mcp, anthropic and openai, so it lives in a virtual environment
of its own, outside the repository (``$PROMPT_COMPOSER_FAST_AGENT_VENV``, else ``fast-agent-venv`` in the cache
folder of ``prompt-composer model setup``; CONTRIBUTING.md says how to make it, .ci/run makes it). The test runs
fast_agent_driver.py with that environment's Python; fast-agent starts the gateway itself, over stdio, with this
process's Python.

What is asserted holds for any model: fast-agent completed, the gateway's event log shows a ``tools/call`` of
``get_current_time`` routed to the time server and answered, and that answer (a time) is what fast-agent got back.
Never the model's wording. Without the venv or the model weights the test skips, except under CI, where a skip
would hide a failure: there it fails, unless .ci/run said why it could not make the venv
(``$PROMPT_COMPOSER_FAST_AGENT_SKIP``: no Python >= 3.12 on the machine).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prompt_composer import load_registry
from prompt_composer.importers.from_mcp import import_mcp
from prompt_composer.local.server import LocalModelServer
from prompt_composer.local.weights import cache_dir
from tests.helpers import REPO, model_server_threads, require_local_model
from tests.mcp.support import TIME

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "fast_agent_driver.py"
REQUIREMENTS = HERE / "fast-agent-requirements.txt"
PIN = next(line for line in REQUIREMENTS.read_text().splitlines() if line.startswith("fast-agent-mcp=="))
VERSION = PIN.split("==")[1]
MODE = """slug: clock
name: Clock
role: You answer questions about dates and times with the tools of a time server.
include: [get_current_time]
permanent: [get_current_time]
recent_size: 1
budget_tokens: 5000
"""
TASKS = (  # each its own run of fast-agent: a small model sometimes answers the first from memory
    "What time is it in Tokyo? Use the get_current_time tool.",
    'Call the get_current_time tool with {"timezone": "Asia/Tokyo"} and tell me the time it returns.',
)
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")


def unavailable(why: str) -> None:
    """Skip, or fail under CI unless .ci/run said why it made no venv."""
    said = os.environ.get("PROMPT_COMPOSER_FAST_AGENT_SKIP")
    if said:
        pytest.skip(said)
    if os.environ.get("CI"):
        pytest.fail(f"{why} (.ci/run makes it)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def fast_agent_python() -> Path:
    """The Python of fast-agent's virtual environment, with the pinned fast-agent-mcp installed."""
    venv = Path(os.environ.get("PROMPT_COMPOSER_FAST_AGENT_VENV") or cache_dir() / "fast-agent-venv")
    python = venv / "bin" / "python"
    make = f"make it as CONTRIBUTING.md says: python3.12 -m venv {venv} && {python} -m pip install -r {REQUIREMENTS}"
    if not python.is_file():
        unavailable(f"no fast-agent virtual environment at {venv}; {make}")
    probe = "from importlib.metadata import version; import fast_agent; print(version('fast-agent-mcp'))"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    found = done.stdout.strip()
    if done.returncode != 0 or found != VERSION:
        has = f"fast-agent-mcp {found}" if done.returncode == 0 else "no fast-agent"
        unavailable(f"{venv} has {has}, the test needs {PIN}; {make}")
    return python


@pytest.fixture(scope="module")
def base_url(fast_agent_python: Path) -> Iterator[str]:
    """The local model, as tests/agent/test_realmodel.py starts it (after the venv check: it costs a minute)."""
    require_local_model()
    with LocalModelServer(ctx=8192, timeout=300, threads=model_server_threads()) as server:
        yield server.base_url


def events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


@pytest.mark.slow
# On the worker of tests/agent/test_realmodel.py's group: each starts a llama.cpp server that uses every core, and
# two of them generating at once on different workers (as they did) slowed both several times over.
@pytest.mark.xdist_group("local-model")
def test_fast_agent_completes_a_task_through_serve_with_a_routed_upstream_call(
    fast_agent_python: Path, base_url: str, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    (docs / "modes").mkdir(parents=True)
    import_mcp(TIME, docs, server="time")
    (docs / "modes" / "clock.yaml").write_text(MODE, encoding="utf-8")
    load_registry(docs)  # the folder loads
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"time": {"command": TIME[0], "args": TIME[1:]}}}), encoding="utf-8")
    driver_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}

    routed: list[dict[str, Any]] = []
    seen: dict[str, Any] = {}
    log = tmp_path / "none.jsonl"
    for index, task in enumerate(TASKS):
        run = tmp_path / f"run{index}"
        run.mkdir()
        log, out = run / "gateway.jsonl", run / "fast-agent.json"
        gateway = [sys.executable, "-m", "prompt_composer", "--docs", str(docs), "serve", "--mode", "clock",
                   "--servers", str(servers), "--log", str(log), "--log-content"]  # fmt: skip
        done = subprocess.run(
            [str(fast_agent_python), str(DRIVER), "--base-url", f"{base_url}/v1", "--workdir", str(run),
             "--out", str(out), "--task", task, "--env", f"PYTHONPATH={REPO}", "--", *gateway],
            capture_output=True, text=True, timeout=900, check=False, env=driver_env, cwd=run,
        )  # fmt: skip
        # fast-agent completed the turn (whatever its model said), and listed the mode's tool through the gateway.
        assert done.returncode == 0, f"fast-agent failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
        seen = json.loads(out.read_text(encoding="utf-8"))
        assert seen["fast_agent_version"] == VERSION
        assert any(name.endswith("get_current_time") for name in seen["tools"]), seen["tools"]
        logged = events(log)
        assert any(e["event"] == "list" for e in logged), logged  # fast-agent's tools/list reached the gateway
        assert all(e["provider"] == "mcp" and e["mode"] == "clock" for e in logged), logged
        routed = [e for e in logged if e["event"] == "tool_call" and e["tool"] == "get_current_time"]
        if any(e["outcome"] == "ok" for e in routed):
            break
    else:
        pytest.fail(f"no routed get_current_time answered ok in {len(TASKS)} runs; the last: {seen} {events(log)}")

    # The gateway routed the call to the real time server, which answered with a time for the zone asked about.
    call = next(e for e in routed if e["outcome"] == "ok")
    answer = json.loads(call["output"])
    assert answer["timezone"] == call["input"]["timezone"] and TIMESTAMP.match(answer["datetime"]), answer
    # That answer is what fast-agent got back as the result of its model's call.
    assert any(name.endswith("get_current_time") for name in (c["name"] for c in seen["calls"])), seen["calls"]
    assert any(not r["is_error"] and call["output"] in r["text"] for r in seen["results"]), seen["results"]
    print(json.dumps({"fast_agent": seen, "gateway_call": call}, indent=1))
