"""The tool loop answers ``tool_search`` (discovery modes) and ``call_tool`` (``wrap(..., call_tool=True)``),
against the real SDK and the scripted Messages API server, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import anthropic
import pytest

from prompt_composer import Composer, Registry, ToolDoc
from prompt_composer.agent.anthropic import wrap
from prompt_composer.agent.results import PendingCall, TokenUsage
from prompt_composer.core.builtins import CALL_TOOL_NAME, FETCH_TOOL_NAME, TOOL_SEARCH_NAME, call_tool_definition
from prompt_composer.core.modes import FileRestriction
from prompt_composer.core.promotion import inline_text
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.testing.replies import Usage, text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import bodies, make_mode, served

MODEL = "claude-test"
CC = {"type": "ephemeral"}
SECRET_WORDS = ("secret_tool", "Rotate", "TOP SECRET")


def doc(
    name: str, group: str, brief: str, *, queries: tuple[str, ...] = (), full: str = "", param: str = "path"
) -> ToolDoc:
    return ToolDoc(
        name=name,
        group=group,
        brief=brief,
        full=full or f"## {name}\nFULL TEXT OF {name.upper()}. {brief}",
        input_schema={"type": "object", "properties": {param: {"type": "string"}}, "required": [param]},
        queries=queries,
    )


DOCS = [
    doc("read_file", "read", "Read the contents of a file.", queries=("open a file",)),
    doc("search_files", "read", "Search file contents with a regular expression.", queries=("grep the codebase",)),
    doc("list_files", "read", "List the files and folders in a directory."),
    doc("apply_diff", "edit", "Change part of a file by replacing exact text."),
    doc(
        "execute_command",
        "command",
        "Run a shell command and read its output.",
        queries=("run the tests",),
        param="command",
    ),
    # Outside every mode but admin; its words overlap the queries below on purpose.
    doc(
        "secret_tool",
        "admin",
        "Rotate the production credentials and run the tests on the cluster.",
        queries=("run the tests", "list the files"),
        full="## secret_tool\nTOP SECRET INTERNALS",
    ),
]
GROUPS = ["read", "edit", "command"]
REG = Registry.from_docs(
    DOCS,
    [
        make_mode("disco", groups=GROUPS, permanent=["read_file"], discovery=True),
        make_mode("textdisco", groups=GROUPS, permanent=["read_file"], discovery=True, tool_style="text"),
        make_mode(
            "plain",
            groups=GROUPS,
            permanent=["read_file"],
            recent_size=2,
            file_restrictions={"edit": FileRestriction(file_regex=r"\.md$")},
        ),
        make_mode("admin", groups=["admin"], permanent=[]),
    ],
)
COMPOSER = Composer(REG)
SEARCH = ToolSearch(REG, embedder=False)  # lexical only: no embedding model in tests
TAIL = [TOOL_SEARCH_NAME, FETCH_TOOL_NAME]


def names(body: Mapping[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


def results(body: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
    """The tool results of a request's last (user) message: id → (all text, is_error)."""
    out: dict[str, tuple[str, bool]] = {}
    for block in body["messages"][-1]["content"]:
        if block["type"] == "tool_result":
            text = "\n\n".join(part["text"] for part in block["content"])
            out[block["tool_use_id"]] = (text, bool(block.get("is_error")))
    return out


def recorder() -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    ran: list[tuple[str, dict[str, Any]]] = []

    def make(name: str) -> Any:
        def run(tool_input: Mapping[str, Any]) -> str:
            ran.append((name, dict(tool_input)))
            return f"{name} ran"

        return run

    return ran, {d.name: make(d.name) for d in DOCS}


def wrapped(client: Any, mode: str, **kw: Any) -> Any:
    return wrap(client, composer=COMPOSER, mode=mode, task_id=kw.pop("task_id", "t1"), search=SEARCH, **kw)


# ------------------------------------------------------------------------------------------ tool_search

SEARCH_SCRIPT = [
    tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "run the tests"})),
    tool_use_reply(("c1", "execute_command", {"command": "pytest -q"})),
    text_reply("done"),
]


def check_search_flow(server: ScriptedMessagesServer, pc: Any, ran: list[Any], result: Any) -> None:
    first, second, third = bodies(server)
    assert names(first) == ["read_file", *TAIL]
    found = list(pc.session.discovered())
    assert found[0] == "execute_command" and "secret_tool" not in found
    # The found tools come after the permanent ones and before tool_search / fetch, in discovery order, in full.
    assert names(second) == ["read_file", *found, *TAIL]
    assert second["tools"][0] == first["tools"][0]  # the prefix is unchanged (breakpoint included)
    described = {t["name"]: t["description"] for t in second["tools"]}
    assert described["execute_command"] == REG.tools["execute_command"].full
    assert names(third) == names(second)
    # The one tool breakpoint sits on the last permanent tool: the part of the list that never changes.
    assert [t["name"] for t in second["tools"] if "cache_control" in t] == ["read_file"]
    assert second["system"][0]["cache_control"] == CC and second["system"][0]["text"] == first["system"][0]["text"]
    text, is_error = results(second)["s1"]
    assert not is_error and "execute_command (command)" in text and "now available" in text
    assert not any(word in str(body) for body in (first, second, third) for word in SECRET_WORDS)
    assert ran == [("execute_command", {"command": "pytest -q"})]
    assert results(third)["c1"] == ("execute_command ran", False)
    search, call = result.tool_calls
    assert (search.name, search.is_error, search.executed) == (TOOL_SEARCH_NAME, False, False)
    assert (call.name, call.executed) == ("execute_command", True)
    assert pc.session.history() == ("execute_command",)  # tool_search itself takes no FIFO slot
    assert result.text == "done"


@pytest.mark.parametrize("policy", ["every_turn", "task_start", "inline"])
def test_tool_search_results_join_the_next_requests_tools_under_every_policy(policy: str) -> None:
    ran, executors = recorder()
    with served(SEARCH_SCRIPT) as (server, client):
        pc = wrapped(client, "disco", policy=policy)
        result = pc.run("Run the tests", model=MODEL, executors=executors)
    check_search_flow(server, pc, ran, result)
    assert result.iterations[0].prompt.discovered == ()
    assert result.iterations[1].prompt.discovered == pc.session.discovered()


def test_tool_search_async() -> None:
    ran, executors = recorder()

    async def go(base_url: str) -> tuple[Any, Any]:
        async with anthropic.AsyncAnthropic(base_url=base_url, api_key="k", max_retries=0) as client:
            pc = wrapped(client, "disco", policy="task_start")
            return pc, await pc.run("Run the tests", model=MODEL, executors=executors)

    with ScriptedMessagesServer(SEARCH_SCRIPT) as server:
        pc, result = asyncio.run(go(server.base_url))
    check_search_flow(server, pc, ran, result)


def test_a_second_search_appends_and_never_reorders() -> None:
    script = [
        tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "run the tests", "limit": 1})),
        tool_use_reply(("s2", TOOL_SEARCH_NAME, {"query": "replace exact text in a file", "limit": 2})),
        tool_use_reply(("s3", TOOL_SEARCH_NAME, {"query": "run the tests"})),
        text_reply("ok"),
    ]
    with served(script) as (server, client):
        pc = wrapped(client, "disco", policy="inline")
        pc.run("go", model=MODEL)
    lists = [names(b) for b in bodies(server)]
    assert lists[1] == ["read_file", "execute_command", *TAIL]
    added = lists[2][2:-2]
    assert "apply_diff" in added and "execute_command" not in added
    assert lists[2] == ["read_file", "execute_command", *added, *TAIL]
    assert lists[3] == lists[2]  # found again: stays where it is
    assert bodies(server)[3]["tools"][: len(lists[2]) - 2] == [
        {**t, **({"cache_control": CC} if t["name"] == "read_file" else {})}
        for t in (dict(d) for d in COMPOSER.compose("disco", loaded=lists[2][1:-2]).tools[:-2])
    ]


def test_a_tool_outside_the_mode_is_never_found_listed_or_run() -> None:
    script = [
        tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "rotate the production credentials"})),
        tool_use_reply(("s2", TOOL_SEARCH_NAME, {"query": "secret_tool"})),
        tool_use_reply(("x1", "secret_tool", {"path": "db"})),
        text_reply("ok"),
    ]
    ran, executors = recorder()
    with served(script) as (server, client):
        pc = wrapped(client, "disco")
        result = pc.run("go", model=MODEL, executors=executors)
    assert "secret_tool" not in pc.session.discovered()
    for body in bodies(server):
        assert "secret_tool" not in names(body)
    for body in bodies(server)[1:3]:
        ((text, is_error),) = results(body).values()
        assert not is_error and text.startswith("No tool of mode 'disco' matches")  # only the query is echoed
        assert not any(word in text for word in ("Rotate", "TOP SECRET", "cluster", "admin"))
    assert ran == []
    refused = result.tool_calls[2]
    assert refused.is_error and "in mode 'disco'" in refused.output
    assert "TOP SECRET" not in refused.output


def test_tool_search_outside_a_discovery_mode_is_an_unknown_tool() -> None:
    script = [tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "run the tests"})), text_reply("ok")]
    with served(script) as (server, client):
        pc = wrapped(client, "plain")
        result = pc.run("go", model=MODEL)
    first, second = bodies(server)
    assert TOOL_SEARCH_NAME not in names(first) and names(second) == names(first)
    text, is_error = results(second)["s1"]
    assert is_error and "there is no tool 'tool_search' in mode 'plain'" in text
    assert result.tool_calls[0].error is not None
    assert pc.session.discovered() == ()
    assert pc.answer_tool_search({"query": "run the tests"}).is_error
    assert pc.session.discovered() == ()


def test_a_bad_tool_search_input_is_an_error_result_and_the_loop_goes_on() -> None:
    script = [tool_use_reply(("s1", TOOL_SEARCH_NAME, {"limit": 3})), text_reply("ok")]
    with served(script) as (server, client):
        pc = wrapped(client, "disco")
        result = pc.run("go", model=MODEL)
    text, is_error = results(bodies(server)[1])["s1"]
    assert is_error and '"query"' in text
    assert result.text == "ok" and pc.session.discovered() == ()


def test_text_style_discovery_mode_answers_tool_search_blocks() -> None:
    call = '```tool_call\n{"name": "tool_search", "input": {"query": "run the tests"}}\n```'
    with served([text_reply(call), text_reply("done")]) as (server, client):
        pc = wrapped(client, "textdisco")
        pc.run("go", model=MODEL)
    first, second = bodies(server)
    assert "tools" not in first and "tools" not in second
    label = second["messages"][-1]["content"][0]["text"]
    assert label.startswith("tool_result name=tool_search ok\n") and "execute_command" in label
    assert "FULL TEXT OF EXECUTE_COMMAND" not in str(first["system"])
    assert "FULL TEXT OF EXECUTE_COMMAND" in second["system"][-1]["text"]  # the discovered docs go last
    assert second["system"][0] == first["system"][0]  # the stable part is unchanged


def test_the_search_is_built_lazily_from_the_composers_registry() -> None:
    with pytest.raises(ValueError, match="another registry"):
        wrap(anthropic.Anthropic(api_key="k"), composer=COMPOSER, mode="disco", task_id="t",
             search=ToolSearch(Registry.from_docs(DOCS[:2], []), embedder=False))  # fmt: skip


# ------------------------------------------------------------------------------------------- call_tool


def call(call_id: str, name: str, arguments: Any) -> tuple[str, str, dict[str, Any]]:
    return (call_id, CALL_TOOL_NAME, {"name": name, "arguments": arguments})


USAGES = [Usage(100, 10, 50, 0), Usage(20, 7, 3, 150), Usage(5, 30, 0, 170)]
CALL_SCRIPT = [
    tool_use_reply(call("c1", "list_files", {"path": "src"}), call("c2", "list_files", {"path": 3}), usage=USAGES[0]),
    tool_use_reply(call("c3", "secret_tool", {"path": "db"}), call("c4", "nope", {}), usage=USAGES[1]),
    text_reply("done", usage=USAGES[2]),
]


def check_call_flow(
    server: ScriptedMessagesServer, pc: Any, ran: list[Any], seen: list[PendingCall], result: Any
) -> None:
    first, second, third = bodies(server)
    mode = REG.mode("plain")
    assert first["tools"][-1] == call_tool_definition(mode)  # every_turn with a FIFO: no tool breakpoint
    assert names(first)[-2:] == [FETCH_TOOL_NAME, CALL_TOOL_NAME]
    # Valid: the executor ran with the inner arguments; approval saw the inner call; the FIFO has the tool.
    assert ran == [("list_files", {"path": "src"})]
    assert seen == [PendingCall("c1", "list_files", {"path": "src"}, 1, CALL_TOOL_NAME)]
    assert pc.session.history() == ("list_files",)
    answers = results(second)
    assert answers["c1"] == ("list_files ran", False)
    # Schema-invalid: an error naming the problem, nothing run.
    text, is_error = answers["c2"]
    assert is_error and "arguments.path: expected string, got integer" in text and "nothing was run" in text
    # Outside the mode, or unknown: refused, naming only tools of the mode.
    for key in ("c3", "c4"):
        text, is_error = results(third)[key]
        assert is_error and "Nothing was run" in text
        assert not any(word in text for word in ("Rotate", "TOP SECRET", "credentials"))
    assert "'secret_tool'" in results(third)["c3"][0] and "admin" not in results(third)["c3"][0]
    records = result.tool_calls
    assert [(r.name, r.via, r.executed, r.is_error) for r in records] == [
        ("list_files", CALL_TOOL_NAME, True, False),
        (CALL_TOOL_NAME, None, False, True),  # refused before reaching the tool: the call_tool call
        (CALL_TOOL_NAME, None, False, True),
        (CALL_TOOL_NAME, None, False, True),
    ]
    assert records[0].input == {"path": "src"} and records[0].as_dict()["via"] == CALL_TOOL_NAME
    assert "expected string" in (records[1].error or "")
    # Every_turn: the FIFO reached the next request (list_files now in full).
    assert {t["name"]: t["description"] for t in second["tools"]}["list_files"] == REG.tools["list_files"].full
    assert result.usage == TokenUsage(125, 47, 53, 320)


def test_call_tool_routes_through_the_per_call_path() -> None:
    ran, executors = recorder()
    seen: list[PendingCall] = []

    def approve(pending: PendingCall) -> bool:
        seen.append(pending)
        return True

    with served(CALL_SCRIPT) as (server, client):
        pc = wrapped(client, "plain", policy="every_turn", call_tool=True)
        result = pc.run("go", model=MODEL, executors=executors, approve=approve)
    check_call_flow(server, pc, ran, seen, result)


def test_call_tool_async_with_an_async_approval() -> None:
    ran, executors = recorder()
    seen: list[PendingCall] = []

    async def approve(pending: PendingCall) -> bool:
        seen.append(pending)
        return True

    async def go(base_url: str) -> tuple[Any, Any]:
        async with anthropic.AsyncAnthropic(base_url=base_url, api_key="k", max_retries=0) as client:
            pc = wrapped(client, "plain", policy="every_turn", call_tool=True)
            return pc, await pc.run("go", model=MODEL, executors=executors, approve=approve)

    with ScriptedMessagesServer(CALL_SCRIPT) as server:
        pc, result = asyncio.run(go(server.base_url))
    check_call_flow(server, pc, ran, seen, result)


def test_call_tool_keeps_file_restrictions_denial_and_inline_promotion() -> None:
    script = [
        tool_use_reply(call("c1", "apply_diff", {"path": "app.py"})),
        tool_use_reply(call("c2", "apply_diff", {"path": "notes.md"}), call("c3", "search_files", {"path": "x"})),
        tool_use_reply(call("c4", "apply_diff", {"path": "more.md"})),
        text_reply("ok"),
    ]
    ran, executors = recorder()
    with served(script) as (server, client):
        pc = wrapped(client, "plain", policy="inline", call_tool=True)
        result = pc.run("go", model=MODEL, executors=executors, approve=lambda p: p.name != "search_files")
    first = bodies(server)[0]
    assert first["tools"][-1] == {**call_tool_definition(REG.mode("plain")), "cache_control": CC}  # fixed: cached
    answers = [results(b) for b in bodies(server)[1:]]
    text, is_error = answers[0]["c1"]
    assert is_error and "may only touch files matching" in text
    assert answers[1]["c2"] == ("apply_diff ran\n\n" + inline_text(REG, "apply_diff"), False)  # expanded once
    assert answers[1]["c3"][1] and "denied by the user" in answers[1]["c3"][0]
    assert answers[2]["c4"] == ("apply_diff ran", False)
    assert ran == [("apply_diff", {"path": "notes.md"}), ("apply_diff", {"path": "more.md"})]
    assert [r.expanded for r in result.tool_calls] == [False, True, False, False]
    assert pc.session.history() == ("apply_diff",)


def test_call_tool_in_text_style_is_labelled_call_tool() -> None:
    reg = Registry.from_docs(DOCS, [make_mode("t", groups=GROUPS, permanent=["read_file"], tool_style="text")])
    block = '```tool_call\n{"name": "call_tool", "input": {"name": "list_files", "arguments": {"path": "a"}}}\n```'
    ran, executors = recorder()
    with served([text_reply(block), text_reply("ok")]) as (server, client):
        pc = wrap(client, registry=reg, mode="t", task_id="t", call_tool=True)
        pc.run("go", model=MODEL, executors=executors)
    assert "tools" not in bodies(server)[0]  # text style sends no native definitions
    (answer,) = bodies(server)[1]["messages"][-1]["content"]
    assert answer["text"].startswith("tool_result name=call_tool ok\nlist_files ran\n\n")
    assert answer["text"].endswith(inline_text(reg, "list_files"))  # inline promotion of the inner tool
    assert ran == [("list_files", {"path": "a"})]


def test_without_call_tool_it_is_an_unknown_tool_and_a_callers_own_call_tool_wins() -> None:
    script = [tool_use_reply(call("c1", "list_files", {"path": "a"})), text_reply("ok")]
    ran, executors = recorder()
    with served(script) as (server, client):
        wrapped(client, "plain").run("go", model=MODEL, executors=executors)
    assert CALL_TOOL_NAME not in names(bodies(server)[0])
    text, is_error = results(bodies(server)[1])["c1"]
    assert is_error and "there is no tool 'call_tool' in mode 'plain'" in text and ran == []

    mine = {"name": CALL_TOOL_NAME, "description": "Mine.", "input_schema": {"type": "object"}}
    with served(script) as (server, client):
        wrapped(client, "plain", call_tool=True).run(
            "go", model=MODEL, tools=[mine], executors={CALL_TOOL_NAME: lambda i: f"mine: {i['name']}"}
        )
    assert names(bodies(server)[0]).count(CALL_TOOL_NAME) == 1 and bodies(server)[0]["tools"][0] == mine
    assert results(bodies(server)[1])["c1"] == ("mine: list_files", False)
