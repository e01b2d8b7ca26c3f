"""A long session on the real local model: how much of each request's input the provider's prefix cache serves.

Run: python3 benchmarks/bench_session.py [--tasks N] [--turns N] [--json FILE]
Needs `prompt-composer model setup` and the mcp extra (the real mcp-server-time and mcp-server-git from PyPI).

One agent session, one model server (llama.cpp, 16k context, one slot) and one task store, over many user
messages in a row, as an agent that stays up serves them: a mode with preselection and tiers over the shipped docs
plus the tools of two real MCP servers (time, git) routed to those servers; a fixture repository as the workspace.
The mode's unlisted tools are stubs (``tiers.stubs``), so what loads mid-conversation goes into the conversation and
the tool list, which the server's chat template renders before the conversation, never changes.
The messages go out as conversations, as a user chats with a coding agent: each message continues the
conversation before it (one task, so its preselections, loaded tools and FIFO carry on) until ``--turns`` messages
or a history past :data:`HISTORY_LIMIT` tokens start a new one (an agent's compaction or a new chat). Midway the
docs folder changes (a hot reload of a LiveRegistry) and the time server is killed (the next call of one of its
tools reconnects). Every request's usage is recorded: the figure is the share of input tokens read from the cache
after the first request, and every request that read less than 90% of its input from the cache is named, with the
reason (what changed since the request before it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anthropic

from prompt_composer import default_docs_dir, partial_result, wrap
from prompt_composer.core.live import LiveRegistry
from prompt_composer.core.session import InMemorySessionStore
from prompt_composer.importers import import_mcp
from prompt_composer.local.server import LocalModelServer
from prompt_composer.mcp import mcp_executors
from prompt_composer.safety import workspace_executors

HERE = Path(__file__).resolve().parent
REPO = HERE / "agent" / "coding" / "repo"
TIME = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
GIT = [sys.executable, "-m", "mcp_server_git"]
CONTEXT = 16_384
# A conversation whose last request read more than this many tokens ends after that message: the next one starts
# a new conversation, so that one long tool result cannot push a request past the context.
HISTORY_LIMIT = 9_000
TURNS = 6
MODE = """slug: session
name: Session
role: You are a senior software engineer working in the user's repository. Use your tools to answer from facts.
groups: [read, edit, command, mcp, mcp-write, workflow]
permanent: [read_file, search_files, list_files, attempt_completion]
recent_size: 4
budget_tokens: 60000
tiers: {share: 0.10, context_tokens: 16384, stubs: true}
preselect: {k: 3, min_confidence: 0.3}
"""
TASKS = [
    "What files are in the src/tally folder?",
    "Show me lines 1 to 30 of src/tally/models.py.",
    "Which function in src/tally/report.py computes the monthly totals?",
    "Where does the code read the TALLY_DB environment variable?",
    "What time is it now in Tokyo?",
    "What does the README say the project is for?",
    "Convert 14:00 in New York to Berlin time today.",
    "Which file defines the command-line interface of tally?",
    "Show me the git status of the repository at {repo}.",
    "What are the last three commits of the repository at {repo}?",
    "List the tests of this project.",
    "What does storage.py store, and where?",
    "What time is it in London right now?",
    "Find every place that raises ValueError.",
    "Which Python version does pyproject.toml require?",
    "Show me the diff of the unstaged changes in {repo}.",
    "What fields does the Entry model have?",
    "Which functions does src/tally/cli.py define?",
    "What is the current time in Sydney?",
    "Find where the word 'total' appears in src/tally/report.py.",
    "Show me lines 30 to 60 of src/tally/storage.py.",
    "Convert 9:30 in Paris to Los Angeles time.",
    "Which branch is the repository at {repo} on?",
    "What does src/tally/__init__.py export?",
    "How many tests does tests/ contain, roughly?",
    "What time is it in UTC?",
    "Show the last commit of {repo} in full.",
    "Where is the function that formats amounts?",
    "What is in the pyproject.toml dependencies?",
    "Summarise src/tally/report.py in two sentences.",
]


@dataclass
class Request:
    index: int
    task: int  # the user message (its index in the run)
    conversation: int
    iteration: int
    input_tokens: int
    cache_read: int
    fingerprint: str
    tools: str  # a digest of the tool names sent
    system: str  # a digest of the system prompt sent
    loaded: list[str] = field(default_factory=list)
    lost: str | None = None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def build(work: Path) -> tuple[Path, Path, Path]:
    """The docs folder (shipped docs + the time and git servers' tools, a `session` mode), a git repository and
    a servers file."""
    docs = work / "docs"
    shutil.copytree(default_docs_dir(), docs)
    import_mcp(TIME, docs, server="time")
    import_mcp(GIT, docs, server="git")
    (docs / "modes" / "session.yaml").write_text(MODE, encoding="utf-8")
    repo = work / "repo"
    shutil.copytree(REPO, repo)
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "first"]):
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@b", *args], check=True)
    (repo / "NOTES.md").write_text("unstaged\n", encoding="utf-8")
    servers = work / "servers.json"
    specs = {"time": {"command": TIME[0], "args": TIME[1:]}, "git": {"command": GIT[0], "args": GIT[1:]}}
    servers.write_text(json.dumps({"mcpServers": specs}), encoding="utf-8")
    return docs, repo, servers


def why_lost(request: Request, before: Request | None) -> str | None:
    """Why a request read less than 90% of its input from the cache (what changed since the request before it),
    or None when it read more."""
    total = request.input_tokens + request.cache_read
    if total and request.cache_read >= 0.9 * total:
        return None
    if before is None:
        return "first request (cold)"
    if request.fingerprint != before.fingerprint:
        return "hot reload: the registry changed, so did the prompt"
    if request.system != before.system:
        return "the system prompt changed"
    if request.conversation != before.conversation:
        return "new conversation: only the shared system prompt and tools are cached"
    if request.tools != before.tools:
        return "tools appended (preselection, search, fetch or recovery loaded one)"
    if request.task != before.task:
        return "a new user message longer than a tenth of the request"
    return "the conversation grew by more than a tenth (a long tool result or answer)"


def run(tasks: list[str], work: Path, *, turns: int = TURNS) -> list[Request]:
    docs, repo, servers = build(work)
    live = LiveRegistry(docs)
    store = InMemorySessionStore()
    requests: list[Request] = []
    routed = mcp_executors(live.current, servers)
    executors = {**workspace_executors(repo), **routed}
    conversation, turn = 0, 0
    dropped = False  # the message before failed: its conversation ends, the next message starts a new one
    messages: list[dict[str, Any]] = []  # the conversation so far, in the Messages API's format
    with LocalModelServer(ctx=CONTEXT, timeout=300) as server:
        sdk = anthropic.Anthropic(base_url=server.base_url, api_key="local", timeout=1800)
        for number, text in enumerate(tasks):
            if number == len(tasks) // 3:  # a hot reload: a brief is edited while the agent runs
                doc = docs / "web_fetch.yaml"
                doc.write_text(doc.read_text(encoding="utf-8").replace("Fetch", "Download", 1), encoding="utf-8")
                print(f"reload: {live.reload()}", file=sys.stderr)
            if number == 2 * len(tasks) // 3:  # the time server dies; its next call reconnects
                subprocess.run(["pkill", "-f", "mcp_server_time"], check=False)
                print("killed the time server", file=sys.stderr)
            last = requests[-1] if requests else None
            full = bool(messages) and (
                turn >= turns or last is None or last.input_tokens + last.cache_read > HISTORY_LIMIT
            )
            if full or dropped:
                conversation, turn, messages, dropped = conversation + 1, 0, [], False
            turn += 1
            client = wrap(sdk, registry=live, store=store, mode="session", task_id=f"conversation-{conversation}")
            first_of_task = len(requests)

            def seen(iteration: Any, number: int = number, conversation: int = conversation) -> None:
                usage, prompt = iteration.usage, iteration.prompt
                requests.append(
                    Request(
                        len(requests),
                        number,
                        conversation,
                        iteration.index,
                        usage.input_tokens,
                        usage.cache_read_input_tokens,
                        prompt.fingerprint,
                        _digest(json.dumps([t["name"] for t in prompt.tools])),
                        _digest(prompt.system),
                        list(prompt.loaded),
                    )
                )

            start = time.perf_counter()
            user = {"role": "user", "content": text.format(repo=repo)}
            try:
                result = client.run(
                    [*messages, user],
                    model="local",
                    max_tokens=300,
                    executors=executors,
                    max_iterations=8,
                    on_iteration=seen,
                    extra_body={"temperature": 0},
                )
                messages = result.messages
                answer = result.text[:80].replace("\n", " ")
            except Exception as exc:  # a message that ran out of iterations still counts its requests
                # Its conversation ends in calls without answers: the next message starts a new one.
                messages, dropped = [], True
                partial = partial_result(exc)
                calls = "; ".join(
                    f"{c.name}{'' if c.executed else ' (not run)'}" for c in (partial.tool_calls if partial else ())
                )
                answer = f"({type(exc).__name__} after {len(partial.iterations) if partial else 0} requests: {calls})"
            for request in requests[first_of_task:]:
                request.lost = why_lost(request, requests[request.index - 1] if request.index else None)
            took = time.perf_counter() - start
            print(f"[{number + 1}/{len(tasks)}] conversation {conversation}, {len(requests) - first_of_task} requests, "
                  f"{took:.0f} s: {answer}", file=sys.stderr, flush=True)  # fmt: skip
        sdk.close()
    routed.close()
    return requests


def report(requests: list[Request]) -> dict[str, Any]:
    later = requests[1:]
    total = sum(r.input_tokens + r.cache_read for r in later)
    cached = sum(r.cache_read for r in later)
    lost = [asdict(r) for r in requests if r.lost is not None]
    return {
        "requests": len(requests),
        "tasks": len({r.task for r in requests}),
        "conversations": len({r.conversation for r in requests}),
        "input_after_first": total,
        "cached_after_first": cached,
        "cached_share": round(cached / total, 4) if total else None,
        "lost": lost,
        "per_request": [asdict(r) for r in requests],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--tasks", type=int, default=2 * len(TASKS), help=f"messages to send, the {len(TASKS)} in turn (default 52)"
    )
    parser.add_argument("--turns", type=int, default=TURNS, help=f"messages a conversation (default {TURNS})")
    parser.add_argument("--json", metavar="FILE", help="also write every request as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        requests = run([TASKS[i % len(TASKS)] for i in range(args.tasks)], Path(tmp), turns=args.turns)
    out = report(requests)
    print(f"{out['requests']} requests, {out['tasks']} messages, {out['conversations']} conversations; after the "
          f"first, {out['cached_share']:.1%} of {out['input_after_first']:,} input tokens were read from the "
          "cache")  # fmt: skip
    print("\n| request | message | iteration | input | cache read | why the prefix was not all read |")
    print("|---|---|---|---|---|---|")
    for r in out["lost"]:
        print(f"| {r['index']} | {r['task']} | {r['iteration']} | {r['input_tokens']:,} | {r['cache_read']:,} | "
              f"{r['lost']} |")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
