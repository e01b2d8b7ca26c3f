"""Drive fast-agent (PyPI ``fast-agent-mcp``) through one task, non-interactively, for test_fast_agent.py.

It runs with the Python of fast-agent's own virtual environment (Python >= 3.12, outside the repository; see
CONTRIBUTING.md), never with the project's, and imports nothing from the project. fast-agent gets one MCP server,
the command after ``--`` (``prompt-composer serve`` over stdio), and its generic OpenAI-compatible provider pointed
at ``--base-url``. It writes the config it used (``fastagent.config.yaml``) into ``--workdir``, sends ``--task`` to
one agent, and writes to ``--out`` what fast-agent saw: the tools it listed, the tool calls its model made, the
results it got back and its reply. Exit 0 when fast-agent completed the turn.

    python fast_agent_driver.py --base-url http://127.0.0.1:PORT/v1 --workdir DIR --out result.json \\
        --task "..." [--env KEY=VALUE ...] -- python3 -m prompt_composer --docs DOCS serve --mode M --servers S
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

SERVER = "gateway"  # fast-agent's name for the one MCP server; it namespaces tools as gateway__<tool>
AGENT = "clock"
INSTRUCTION = "You answer questions with the tools you have. Call a tool when the question needs one."
MODEL = "generic.local"  # llama.cpp serves whatever model it loaded under any name


def config(base_url: str, command: list[str], env: dict[str, str], cwd: str) -> dict[str, Any]:
    """fastagent.config.yaml: the generic provider on the local model, no logging to files, one stdio server."""
    return {
        "default_model": MODEL,
        "generic": {"api_key": "local", "base_url": base_url},
        "logger": {"type": "none", "progress_display": False, "show_chat": False, "show_tools": False},
        "mcp": {"servers": {SERVER: {"command": command[0], "args": command[1:], "env": env, "cwd": cwd}}},
    }


def text_of(content: list[Any]) -> str:
    return "\n".join(str(getattr(block, "text", "")) for block in content)


async def drive(args: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    import yaml
    from fast_agent import FastAgent
    from fast_agent.llm.request_params import RequestParams

    workdir = Path(args.workdir)
    env = dict(pair.split("=", 1) for pair in args.env)
    path = workdir / "fastagent.config.yaml"
    path.write_text(yaml.safe_dump(config(args.base_url, command, env, str(workdir))), encoding="utf-8")
    # isolated: no skills, plugins, session history, log files or telemetry; home: nothing under ~/.fast-agent.
    fast = FastAgent(
        "prompt-composer-test",
        config_path=str(path),
        parse_cli_args=False,
        quiet=True,
        isolated=True,
        home=workdir / "fast-agent-home",
    )
    params = RequestParams(
        temperature=0, max_tokens=args.max_tokens, max_iterations=args.max_iterations, streaming_timeout=600
    )

    @fast.agent(name=AGENT, instruction=INSTRUCTION, servers=[SERVER], model=MODEL, request_params=params)
    async def _agent() -> None:  # fast-agent registers the agent; the function itself is never run
        return None

    async with fast.run() as app:
        agent = app[AGENT]
        tools = [tool.name for tool in (await agent.list_tools()).tools]
        reply = await agent.send(args.task)
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for message in agent.message_history:
            for call_id, call in (message.tool_calls or {}).items():
                calls.append({"id": call_id, "name": call.params.name, "arguments": call.params.arguments})
            for call_id, result in (message.tool_results or {}).items():
                results.append({"id": call_id, "is_error": bool(result.is_error), "text": text_of(result.content)})
    return {
        "fast_agent_version": version("fast-agent-mcp"),
        "python": sys.version.split()[0],
        "tools": tools,
        "calls": calls,
        "results": results,
        "reply": reply,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="the OpenAI-compatible endpoint, ending in /v1")
    parser.add_argument("--workdir", required=True, help="where the config (and fast-agent's home) is written")
    parser.add_argument("--out", required=True, help="the JSON file to write what fast-agent saw into")
    parser.add_argument("--task", required=True)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="for the MCP server")
    parser.add_argument("--max-tokens", type=int, default=300)
    parser.add_argument("--max-iterations", type=int, default=4)
    parser.add_argument("command", nargs="+", help="the MCP server's command, after --")
    args = parser.parse_args()
    result = asyncio.run(drive(args, args.command))
    Path(args.out).write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
