"""A complete agent loop with two real executors, run against the scripted test server with one command:

    PYTHONPATH=. python examples/agent_loop.py     # from a source checkout; installed: python examples/agent_loop.py

It starts ``prompt_composer.testing.server`` on 127.0.0.1 with a short script (list a directory, read a file,
answer), wraps a real ``anthropic.Anthropic`` client with prompt-composer, and runs the tool loop in code mode.
Point ``base_url`` at the real API (and drop the server) to run it against a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic

from prompt_composer import Composer, load_registry
from prompt_composer.agent.anthropic import wrap
from prompt_composer.testing.replies import text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer

WORKSPACE = Path(__file__).resolve().parent.parent


def read_file(tool_input: dict[str, Any]) -> str:
    path = (WORKSPACE / tool_input["path"]).resolve()
    if WORKSPACE not in path.parents:
        raise PermissionError(f"{tool_input['path']} is outside the workspace")
    return path.read_text(encoding="utf-8")[:2000]


def list_files(tool_input: dict[str, Any]) -> str:
    folder = (WORKSPACE / tool_input.get("path", ".")).resolve()
    if folder != WORKSPACE and WORKSPACE not in folder.parents:
        raise PermissionError(f"{tool_input['path']} is outside the workspace")
    return "\n".join(sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()))


SCRIPT = [
    tool_use_reply(("list_files", {"path": "."}), text="Let me look around first."),
    tool_use_reply(("read_file", {"path": "pyproject.toml"})),
    text_reply("This is the prompt-composer project; pyproject.toml names its dependencies."),
]


def main() -> None:
    composer = Composer(load_registry())
    with ScriptedMessagesServer(SCRIPT) as server:
        sdk = anthropic.Anthropic(base_url=server.base_url, api_key="test-key")
        with wrap(sdk, composer=composer, mode="code", task_id="example-1") as client:
            result = client.run(
                "What is this project?",
                model="claude-sonnet-4-6",
                executors={"read_file": read_file, "list_files": list_files},
                on_iteration=lambda it: print(f"iteration {it.index}: {[c.name for c in it.tool_calls]}"),
            )
    print(result.text)
    for call in result.tool_calls:
        print(f"  {call.name}({call.input}) -> {len(call.output)} chars{' ERROR' if call.is_error else ''}")
    print("usage:", result.usage.as_dict())
    print("tools sent:", len(server.requests[0].body["tools"]), "policy:", client.policy)


if __name__ == "__main__":
    main()
