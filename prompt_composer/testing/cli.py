"""The test server's command line: serve a scripted JSON file until it is played out, or the demo until stopped.

Command line (used by the docs' examples)::

    python -m prompt_composer.testing --script FILE.json [--port N] [--linger S]
    python -m prompt_composer.testing --demo [--port N]

prints ``READY http://127.0.0.1:PORT``. A script is served until it has been played out and ``--linger`` seconds
(default 1) have passed, or until killed; the demo answers every conversation the same way, until stopped
(Ctrl-C, or ``--linger S`` to stop S seconds after it started).
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Sequence
from typing import Any

from ..errors import InputFileError
from ..shared.files import read_text
from .replies import Reply, ToolCall, error_reply, text_reply, tool_use_reply
from .scripted import Usage
from .server import ScriptedMessagesServer


def _demo_script() -> list[Reply]:
    return [
        tool_use_reply(("list_files", {"path": "."}), text="Let me look at the directory first."),
        tool_use_reply(("read_file", {"path": "README.md"})),
        text_reply("I listed the directory and read README.md. (This is a scripted demo answer.)"),
    ]


def demo_reply(request: dict[str, Any]) -> Reply:
    """The demo's reply to one request, from how far its conversation has come (the model's turns so far, on any
    of the three APIs): list_files, then read_file, then the answer. So every conversation gets the same three
    steps, however many are run against one server."""
    turns = sum(1 for m in request.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")
    items = request.get("input")
    if isinstance(items, list):  # the Responses API: the model's earlier calls are items of the input
        turns = sum(1 for item in items if isinstance(item, dict) and item.get("type") == "function_call")
    script = _demo_script()
    return script[min(turns, len(script) - 1)]


def _parse_reply(item: Any) -> Reply:
    if not isinstance(item, dict):
        raise ValueError(f"each reply must be a JSON object, got {item!r}")
    usage = Usage(**item["usage"]) if "usage" in item else None
    if "error" in item:
        return error_reply(int(item["error"]), item.get("type"), item.get("message"))
    if "tool_use" in item:
        calls: list[ToolCall] = []
        for call in item["tool_use"]:
            if "id" in call:
                calls.append((str(call["id"]), str(call["name"]), dict(call.get("input", {}))))
            else:
                calls.append((str(call["name"]), dict(call.get("input", {}))))
        return tool_use_reply(*calls, text=item.get("text"), usage=usage)
    if "text" in item:
        return text_reply(str(item["text"]), usage=usage)
    raise ValueError(f"a reply needs 'text', 'tool_use' or 'error': {item!r}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m prompt_composer.testing",
        description=(
            "Serve scripted replies on 127.0.0.1, as the Anthropic Messages API (/v1/messages) "
            "and the OpenAI Chat Completions (/v1/chat/completions) and Responses (/v1/responses) APIs."
        ),
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--script",
        metavar="FILE.json",
        help=(
            'JSON list of replies: {"text"} | {"tool_use": [{"name", "input", "id"?}, ...], "text"?} '
            '| {"error": STATUS}; text and tool_use replies may add "usage": {"input_tokens", "output_tokens", ...}'
        ),
    )
    source.add_argument(
        "--demo",
        action="store_true",
        help="list_files, read_file, then a final text answer, for every conversation, until stopped",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free port)")
    parser.add_argument(
        "--linger",
        type=float,
        default=None,
        help="--script: seconds to keep serving once it is played out (default 1); --demo: seconds to serve "
        "(default: until stopped)",
    )
    args = parser.parse_args(argv)
    script: list[Reply] | Any
    if args.demo:
        script = demo_reply
    else:
        try:
            items = json.loads(read_text(args.script, what="script"))
            if not isinstance(items, list):
                raise ValueError("the script must be a JSON list")
            script = [_parse_reply(item) for item in items]
        except InputFileError as exc:
            parser.error(str(exc))
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            parser.error(f"bad script {args.script}: {exc}")
    with ScriptedMessagesServer(script, port=args.port) as server:
        print(f"READY {server.base_url}", flush=True)
        try:
            if args.demo:
                threading.Event().wait(None if args.linger is None else max(0.0, args.linger))
            else:
                if script:
                    server.wait_drained()
                threading.Event().wait(max(0.0, 1.0 if args.linger is None else args.linger))
        except KeyboardInterrupt:
            pass
    return 0
