"""What the tests share: builders of docs and modes, the scripted server with a real SDK client, real MCP servers
from npm, event logs, the small search registry, the loop harness over both wire formats, and the paths of the
repository's data. Tests import from here; no test imports another test module."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anthropic
import openai
import pytest

from prompt_composer import Composer, ModeConfig, Registry, ToolDoc
from prompt_composer.agent.results import LoopResult
from prompt_composer.agent.wrapping import wrap
from prompt_composer.cli import main
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.testing.replies import Reply
from prompt_composer.testing.server import ScriptedMessagesServer

REPO = Path(__file__).resolve().parents[1]
T = TypeVar("T")
TESTS = REPO / "tests"
DATA = TESTS / "data"
GOLDEN = TESTS / "golden"
SHARED = REPO.parent / "shared"  # ../shared: the real catalogs, queries and traces (each with a SOURCE.md)
TRACES = SHARED / "traces" / "traces.jsonl"


# --- docs, modes, the scripted server, npm servers, event logs ----------------------------------------------------


def make_doc(name: str, group: str = "read", *, params: dict[str, Any] | None = None, **kw: Any) -> ToolDoc:
    params = params if params is not None else {"path": {"type": "string", "description": f"Where {name} looks."}}
    return ToolDoc(
        name=name,
        group=group,
        brief=kw.pop("brief", f"Brief text of {name}. Use it for {group} work."),
        full=kw.pop("full", f"## {name}\nFULL TEXT OF {name.upper()}. Parameters: {', '.join(params)}."),
        input_schema={"type": "object", "properties": params, "required": list(params)[:1]},
        **kw,
    )


def make_mode(slug: str, **kw: Any) -> ModeConfig:
    values: dict[str, Any] = {
        "slug": slug,
        "name": slug.title(),
        "role": f"You are the {slug} agent.",
        "groups": ["read", "edit"],
        "permanent": ["read_file"],
        "recent_size": 2,
        "budget_tokens": 100_000,
    }
    values.update(kw)
    return ModeConfig(**values)


@contextmanager
def served(
    script: Sequence[Reply], *, max_retries: int = 0
) -> Iterator[tuple[ScriptedMessagesServer, anthropic.Anthropic]]:
    """The scripted Messages API server and a real SDK client pointed at it."""
    with ScriptedMessagesServer(script) as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="test-key", max_retries=max_retries)
        try:
            yield server, client
        finally:
            client.close()


def bodies(server: ScriptedMessagesServer) -> list[dict[str, Any]]:
    """The JSON bodies of the Messages API requests the server received, in order."""
    return [r.body for r in server.requests if r.path.split("?")[0] == "/v1/messages"]


NPM_BIN = TESTS / "npm" / "node_modules" / ".bin"


def npm_server(name: str) -> Path:
    """A real MCP server from the npm registry (pinned in tests/npm/package.json, installed by .ci/run).

    Skips where node is not installed. Where it is but the servers are not, the test skips locally (run
    ``npm install --prefix tests/npm``) and fails under CI, where .ci/run has installed them."""
    path = NPM_BIN / name
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    if not path.exists():
        missing = f"{path} is missing: run `npm install --prefix tests/npm`"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    return path


def learned_use_log(path: Path, *, query: str, tool: str, mode: str, provider: str) -> Path:
    """An event log (format 1) in which a search for ``query`` found ``tool`` and the task then used it: what
    ``--learn-from`` turns into a phrasing of ``tool``."""
    base = {"v": 1, "ts": 0.0, "task": "t1", "mode": mode, "provider": provider}
    events = [
        {**base, "event": "search", "query": query, "hits": [tool]},
        {**base, "event": "tool_call", "tool": tool, "outcome": "ok"},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


# --- a small registry for search ----------------------------------------------------------------------------------


def search_doc(name: str, group: str, brief: str, *, queries: tuple[str, ...] = (), full: str = "") -> ToolDoc:
    return ToolDoc(
        name=name,
        group=group,
        brief=brief,
        full=full or f"## {name}\n{brief}",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        queries=queries,
    )


SEARCH_DOCS = [
    search_doc("read_file", "read", "Read the contents of a file.", queries=("open a file", "show file contents")),
    search_doc(
        "search_files", "read", "Search file contents with a regular expression.", queries=("grep the codebase",)
    ),
    search_doc("list_files", "read", "List the files and folders in a directory."),
    search_doc("write_to_file", "edit", "Create a new file or overwrite a whole file."),
    search_doc("apply_diff", "edit", "Change part of a file by replacing exact text."),
    search_doc("execute_command", "command", "Run a shell command and read its output.", queries=("run the tests",)),
    search_doc("secret_tool", "admin", "Rotate the production database credentials.", full="TOP SECRET INTERNALS"),
    search_doc("secret_grep", "admin", "Search file contents in the vault with a regular expression."),
]


def search_mode(slug: str, groups: Sequence[str], **kw: Any) -> ModeConfig:
    values: dict[str, Any] = {
        "slug": slug,
        "name": slug.title(),
        "role": f"You are the {slug} agent.",
        "groups": list(groups),
        "recent_size": 2,
        "budget_tokens": 100_000,
    }
    values.update(kw)
    return ModeConfig(**values)


# --- the loop harness: both wire formats, sync and async, JSON and streaming -------------------------------------


def travel_tool(name: str, brief: str, param: str = "city") -> ToolDoc:
    return make_doc(name, "mcp", brief=brief, params={param: {"type": "string", "description": f"The {param}."}})


# Tools for preselection and tiers: three a request can call for by its words, and twenty fillers.
TRAVEL_DOCS = [
    make_doc("read_file"),
    travel_tool("weather_lookup", "Look up the weather forecast for a city. Use it before planning a trip."),
    travel_tool(
        "currency_convert", "Convert an amount of money between currencies. Use it for prices abroad.", "amount"
    ),
    travel_tool(
        "train_times", "List the train departures between two stations. Use it to plan a rail journey.", "station"
    ),
    *(
        travel_tool(f"filler_{i:02d}", f"Filler tool {i} manages widget number {i}. Use it for widget {i}.")
        for i in range(20)
    ),
]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of a Messages request's last message."""
    return [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]


def tool_names(body: dict[str, Any]) -> list[str]:
    """The names of a request body's tools, in order."""
    return [t["name"] for t in body.get("tools", [])]


def message_text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "\n".join(b["text"] for b in content if "text" in b)


def text_of(result: dict[str, Any]) -> str:
    """The text of a tool_result block."""
    return "\n".join(part["text"] for part in result["content"])


LOOP_MODEL = "test-model"


LOOP_DOCS = [
    make_doc("read_file"),
    make_doc("list_files"),
    make_doc("glob"),
    make_doc("write_to_file", "edit"),
    make_doc("secret_tool", "admin", full="## secret_tool\nTOP SECRET INTERNALS of the admin tool."),
    ToolDoc(
        name="execute_command",
        group="command",
        brief="Run a shell command. Use it to run the tests.",
        full="## execute_command\nFULL TEXT OF EXECUTE_COMMAND.",
        input_schema={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        queries=("run the tests",),
    ),
]


REG = Registry.from_docs(
    LOOP_DOCS,
    [
        make_mode("code", groups=["read", "edit", "command"], recent_size=2, promotion="task_start"),
        make_mode("fifo", groups=["read", "edit"], recent_size=2, promotion="every_turn"),
        make_mode("inline", groups=["read", "edit"], recent_size=2, promotion="inline"),
        make_mode("text", groups=["read", "edit"], tool_style="text"),
        make_mode("disco", groups=["read", "edit", "command"], discovery=True),
        make_mode("admin", groups=["admin"], permanent=["secret_tool"], recent_size=0),
    ],
)


COMPOSER = Composer(REG)


SEARCH = ToolSearch(REG, embedder=False)  # lexical only: no embedding model in tests


def echo(tool_input: Mapping[str, Any]) -> str:
    return f"ran on {tool_input.get('path', tool_input.get('command'))}"


EXECUTORS = {name: echo for name in ("read_file", "list_files", "glob", "write_to_file", "execute_command")}


@dataclass(frozen=True)
class Wire:
    """How one provider spells what the suite checks."""

    provider: str
    path: str

    def sdk(self, server: ScriptedMessagesServer, *, use_async: bool) -> Any:
        if self.provider == "anthropic":
            cls: Any = anthropic.AsyncAnthropic if use_async else anthropic.Anthropic
            return cls(base_url=server.base_url, api_key="k", max_retries=0)
        cls = openai.AsyncOpenAI if use_async else openai.OpenAI
        return cls(base_url=server.base_url + "/v1", api_key="k", max_retries=0)

    def bodies(self, server: ScriptedMessagesServer) -> list[dict[str, Any]]:
        return [r.body for r in server.requests if r.path.split("?")[0] == self.path]

    def system(self, body: Mapping[str, Any]) -> str:
        if self.provider == "anthropic":
            return "\n\n".join(block["text"] for block in body.get("system", []))
        first = body["messages"][0]
        return str(first["content"]) if first["role"] in ("system", "developer") else ""

    def tools(self, body: Mapping[str, Any]) -> list[str]:
        if self.provider == "anthropic":
            return [t["name"] for t in body.get("tools", [])]
        return [t["function"]["name"] for t in body.get("tools", [])]

    def descriptions(self, body: Mapping[str, Any]) -> dict[str, str]:
        if self.provider == "anthropic":
            return {t["name"]: t["description"] for t in body.get("tools", [])}
        return {t["function"]["name"]: t["function"]["description"] for t in body.get("tools", [])}

    def results(self, body: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
        """The native tool results at the end of the request: (call id, text, is_error)."""
        messages = body["messages"]
        if self.provider == "anthropic":
            last = messages[-1]["content"]
            return [
                (b["tool_use_id"], "\n\n".join(p["text"] for p in b["content"]), bool(b.get("is_error")))
                for b in last
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
        tail = list(itertools.takewhile(lambda m: m["role"] in ("tool", "user"), reversed(messages)))[::-1]
        return [
            (m["tool_call_id"], m["content"], m["content"].startswith("Error:")) for m in tail if m["role"] == "tool"
        ]

    def check_protocol(self, body: Mapping[str, Any]) -> None:
        """Every tool call of an assistant message is answered once, in order, right after it."""
        messages = body["messages"]
        for index, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            if self.provider == "anthropic":
                ids = [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
                if ids:
                    reply = messages[index + 1]["content"]
                    assert [b["tool_use_id"] for b in reply if b.get("type") == "tool_result"] == ids
                continue
            ids = [call["id"] for call in message.get("tool_calls") or []]
            answers = list(itertools.takewhile(lambda m: m["role"] == "tool", messages[index + 1 :]))
            assert [m["tool_call_id"] for m in answers] == ids

    def user_texts(self, body: Mapping[str, Any]) -> list[str]:
        """The text of the last user message (text-style results, corrections)."""
        last = body["messages"][-1]
        assert last["role"] == "user"
        if isinstance(last["content"], str):
            return [last["content"]]
        return [b["text"] for b in last["content"] if b.get("type") == "text"]


WIRES = {"anthropic": Wire("anthropic", "/v1/messages"), "openai": Wire("openai", "/v1/chat/completions")}


@dataclass(frozen=True)
class Combo:
    wire: Wire
    use_async: bool
    stream: bool


COMBOS = [
    pytest.param(Combo(WIRES[p], a, s), id=f"{p}-{'async' if a else 'sync'}-{'stream' if s else 'json'}")
    for p in WIRES
    for a in (False, True)
    for s in (False, True)
]


class Agent:
    """A composed client over a scripted server, whichever provider and style the combo says."""

    def __init__(self, combo: Combo, server: ScriptedMessagesServer, **options: Any) -> None:
        self.combo = combo
        self.server = server
        options = {"composer": COMPOSER, "task_id": "t-1", **options}
        self.client = wrap(combo.wire.sdk(server, use_async=combo.use_async), **options)

    def run(self, task: str = "Do the task.", **kwargs: Any) -> LoopResult:
        kwargs = {"model": LOOP_MODEL, "max_tokens": 256, "stream": self.combo.stream, "executors": EXECUTORS, **kwargs}
        if not self.combo.use_async:
            result: LoopResult = self.client.run(task, **kwargs)
            return result

        async def go() -> LoopResult:
            try:
                return await self.client.run(task, **kwargs)  # type: ignore[no-any-return]
            finally:
                await self.client.close()

        return asyncio.run(go())

    @property
    def bodies(self) -> list[dict[str, Any]]:
        bodies = self.combo.wire.bodies(self.server)
        for body in bodies:
            self.combo.wire.check_protocol(body)
        return bodies


@contextmanager
def agent(combo: Combo, script: list[Reply], **options: Any) -> Iterator[Agent]:
    with ScriptedMessagesServer(script) as server:
        a = Agent(combo, server, **options)
        try:
            yield a
        finally:
            if not combo.use_async:
                a.client.close()


# --- imports and the CLI -----------------------------------------------------------------------------------------

CORPORA = SHARED / "corpora"
# The xdist group of the tests that read tests/conftest.py's ``large_catalog`` (the large catalog, built once a
# session): under ``--dist loadgroup`` they run on one worker, which builds it once.
LARGE_CATALOG_GROUP = "large-catalog"


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (hidden ones too), to prove a failed import wrote nothing."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def within(call: Callable[[], T], seconds: float) -> T:
    """``call()``'s value (or exception), failing the test if it has not returned after ``seconds``: how a test
    shows that hostile input cannot block a load or a read."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the call had not returned after {seconds} s: it blocked"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def model_server_threads() -> int | None:
    """The llama.cpp threads of a test's model server: every core when the tests run in one process, one under
    pytest-xdist with more than one worker. There the other worker keeps a core busy, and llama.cpp's threads wait
    on each other at every step: on 2 cores, two threads beside a busy worker took about twice the CPU for the same
    tokens (the real-model tests ran 3.5x slower than alone, and their worker was the suite's longest). The tests
    assert protocol, not wording, so they hold with either."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1")
    return 1 if workers > 1 else None


def require_local_model() -> None:
    """Skip the test when the local model cannot run here (no xllamacpp, no verified weights); under CI, where
    README's test command sets both up, fail instead: a skip would hide the failure."""
    from prompt_composer.local.weights import DEFAULT_WEIGHTS, model_path

    weights = model_path()
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        missing = "the local extra (xllamacpp) is not installed"
    else:
        stamp = weights.with_name(weights.name + ".sha256")
        ok = weights.is_file() and stamp.is_file() and stamp.read_text().strip() == DEFAULT_WEIGHTS.sha256
        missing = "" if ok else f"no verified weights at {weights}: run `prompt-composer model setup`"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing} (README's test command sets it up)")
        pytest.skip(missing)


def mutation_names() -> list[Any]:
    """The kinds of benchmarks/doc_mutations.py, to parametrize a test by: "many values" writes docs of 100,000
    values and more, a scale case run by CI, not by the quick tier (-m "not slow")."""
    from benchmarks.doc_mutations import MUTATIONS

    return [pytest.param(n, marks=pytest.mark.slow) if n == "many values" else n for n in sorted(MUTATIONS)]
