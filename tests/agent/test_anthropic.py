"""The Anthropic middleware against the scripted Messages API server: the real SDK, sync and async, JSON and SSE."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from typing import Any

import anthropic
import pytest

from prompt_composer import Composer, InMemorySessionStore, Registry, SystemInfo
from prompt_composer.agent.anthropic import AsyncComposedClient, ComposedClient, wrap
from prompt_composer.agent.results import Iteration, MaxIterationsError, PendingCall, TokenUsage, partial_result
from prompt_composer.core.builtins import FETCH_TOOL_NAME
from prompt_composer.core.fetch import fetch_tool_doc
from prompt_composer.core.modes import FileRestriction
from prompt_composer.core.promotion import inline_text
from prompt_composer.testing.replies import Usage, error_reply, text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import bodies, make_doc, make_mode, served

MODEL = "claude-test"
CC = {"type": "ephemeral"}


def registry(**mode_kw: Any) -> Registry:
    docs = [
        make_doc("alpha"),
        make_doc("beta"),
        make_doc("gamma"),
        make_doc("delta", "edit"),
    ]
    values: dict[str, Any] = {"groups": ["read"], "permanent": ["alpha"], "recent_size": 2}
    values.update(mode_kw)
    return Registry.from_docs(docs, [make_mode("work", **values)])


REG = registry()
COMPOSER = Composer(REG)
MODE = REG.mode("work")


def wrapped(client: Any, policy: Any = None, *, composer: Composer = COMPOSER, **kw: Any) -> Any:
    return wrap(client, composer=composer, mode="work", task_id=kw.pop("task_id", "t1"), policy=policy, **kw)


def echo(name: str) -> Any:
    return lambda tool_input: f"{name} ran on {tool_input.get('path')}"


EXECUTORS = {n: echo(n) for n in ("alpha", "beta", "gamma", "delta")}


def expected_tools(recent: Sequence[str], *, breakpoint: bool) -> list[dict[str, Any]]:
    tools = [dict(t) for t in COMPOSER.compose(MODE, recent=recent).tools]
    if breakpoint:
        tools[-1]["cache_control"] = CC
    return tools


def expected_system(recent: Sequence[str], *, breakpoint: bool) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "text", "text": COMPOSER.compose(MODE, recent=recent).system_stable}
    if breakpoint:
        block["cache_control"] = CC
    return [block]


def descriptions(body: dict[str, Any]) -> dict[str, str]:
    return {t["name"]: t["description"] for t in body["tools"]}


# Turn by turn: beta, gamma, beta again, then a final answer.
SEQUENCE = [
    tool_use_reply(("c1", "beta", {"path": "a"})),
    tool_use_reply(("c2", "gamma", {"path": "b"})),
    tool_use_reply(("c3", "beta", {"path": "c"})),
    text_reply("all done"),
]


# ------------------------------------------------------------------------------------------ the wrapper


def test_other_attributes_pass_through_to_the_real_client() -> None:
    with served([]) as (_, client):
        pc = wrapped(client)
        assert isinstance(pc, ComposedClient)
        assert pc.api_key == "test-key"
        assert pc.models is client.models
        assert pc.messages.batches is client.messages.batches
        assert pc.client is client
        with pytest.raises(TypeError):
            wrap(object(), composer=COMPOSER, mode="work", task_id="x")


def test_create_merges_the_callers_system_and_tools_unchanged() -> None:
    caller_tools = [{"name": "my_tool", "description": "Mine.", "input_schema": {"type": "object"}}]
    caller_messages = [{"role": "user", "content": "hi"}]
    kept = copy.deepcopy((caller_tools, caller_messages))
    with served([text_reply("hello")]) as (server, client):
        reply = wrapped(client, "task_start").messages.create(
            model=MODEL, max_tokens=50, system="Project rules.", tools=caller_tools, messages=caller_messages
        )
        assert isinstance(reply, anthropic.types.Message)
        assert reply.content[0].text == "hello"  # type: ignore[union-attr]
    (body,) = bodies(server)
    assert (caller_tools, caller_messages) == kept  # the caller's objects are not mutated
    assert body["system"] == [*expected_system((), breakpoint=True), {"type": "text", "text": "Project rules."}]
    assert body["tools"] == [*caller_tools, *expected_tools((), breakpoint=True)]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": CC}]}]
    assert [t["name"] for t in body["tools"]] == ["my_tool", "alpha", "beta", "gamma", FETCH_TOOL_NAME]


def test_caller_system_blocks_and_breakpoints_count_toward_the_limit_of_four() -> None:
    system = [
        {"type": "text", "text": "one", "cache_control": CC},
        {"type": "text", "text": "two", "cache_control": CC},
    ]
    tools = [{"name": "x", "description": "X.", "input_schema": {"type": "object"}, "cache_control": CC}]
    with served([text_reply("ok")]) as (server, client):
        wrapped(client, "task_start").messages.create(
            model=MODEL, max_tokens=5, system=system, tools=tools, messages=[{"role": "user", "content": "q"}]
        )
    (body,) = bodies(server)
    # 3 of the caller's + ours on the newest message = 4; none on the composed system or tools.
    assert body["system"] == [*expected_system((), breakpoint=False), *system]
    assert body["tools"] == [*tools, *expected_tools((), breakpoint=False)]
    assert body["messages"][-1]["content"][-1]["cache_control"] == CC


def test_a_caller_tool_with_a_composed_name_wins() -> None:
    mine = {"name": "beta", "description": "My own beta.", "input_schema": {"type": "object"}}
    with served([text_reply("ok")]) as (server, client):
        wrapped(client, "task_start").messages.create(
            model=MODEL, max_tokens=5, tools=[mine], messages=[{"role": "user", "content": "q"}]
        )
    names = [t["name"] for t in bodies(server)[0]["tools"]]
    assert names == ["beta", "alpha", "gamma", FETCH_TOOL_NAME]
    assert bodies(server)[0]["tools"][0] == mine


def test_count_tokens_sees_the_composed_request() -> None:
    with served([]) as (server, client):
        counted = wrapped(client, "task_start").messages.count_tokens(
            model=MODEL, messages=[{"role": "user", "content": "q"}]
        )
    assert counted.input_tokens > 1
    (request,) = server.requests
    assert request.path == "/v1/messages/count_tokens"
    assert request.body["tools"] == expected_tools((), breakpoint=False)
    assert request.body["system"] == expected_system((), breakpoint=False)


def test_messages_stream_is_composed_and_streams_sse() -> None:
    with (
        served([text_reply("streamed answer")]) as (server, client),
        wrapped(client, "task_start").messages.stream(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "q"}]
        ) as stream,
    ):
        text = "".join(stream.text_stream)
    assert text == "streamed answer"
    (body,) = bodies(server)
    assert body["stream"] is True
    assert body["tools"] == expected_tools((), breakpoint=True)


def test_policy_comes_from_the_mode_unless_the_wrapper_overrides_it() -> None:
    reg = registry(promotion="every_turn")
    with served([]) as (_, client):
        assert wrap(client, registry=reg, mode="work", task_id="x").policy == "every_turn"
        assert wrap(client, registry=reg, mode="work", task_id="x", policy="inline").policy == "inline"
        assert wrapped(client).policy == "inline"  # the package default
        with pytest.raises(ValueError, match="unknown promotion policy"):
            wrapped(client, "sometimes")


# -------------------------------------------------------------------------- policies, turn by turn


def run_sequence(policy: str) -> tuple[list[dict[str, Any]], Any, Any]:
    with served(SEQUENCE) as (server, client):
        pc = wrapped(client, policy, store=InMemorySessionStore())
        result = pc.run("do it", model=MODEL, max_tokens=100, executors=EXECUTORS)
        session = pc.session
    return bodies(server), result, session


def test_every_turn_recomposes_from_the_fifo_each_request() -> None:
    sent, result, session = run_sequence("every_turn")
    assert len(sent) == 4
    recent_per_turn: list[tuple[str, ...]] = [(), ("beta",), ("beta", "gamma"), ("gamma", "beta")]
    for body, recent in zip(sent, recent_per_turn, strict=True):
        # The tool list and system change within the task: no breakpoint on them, only on the newest message.
        assert body["tools"] == expected_tools(recent, breakpoint=False)
        assert body["system"] == expected_system(recent, breakpoint=False)
        assert body["messages"][-1]["content"][-1]["cache_control"] == CC
    assert descriptions(sent[0])["beta"] == REG.tools["beta"].brief
    assert descriptions(sent[1])["beta"] == REG.tools["beta"].full
    assert descriptions(sent[1])["gamma"] == REG.tools["gamma"].brief
    assert descriptions(sent[2])["gamma"] == REG.tools["gamma"].full
    assert session.history() == ("gamma", "beta")
    assert result.text == "all done"
    assert [c.expanded for c in result.tool_calls] == [False, False, False]


@pytest.mark.parametrize("policy", ["task_start", "inline"])
def test_task_start_and_inline_keep_system_and_tools_fixed_for_the_task(policy: str) -> None:
    sent, _result, session = run_sequence(policy)
    for body in sent:
        assert body["tools"] == expected_tools((), breakpoint=True)
        assert body["system"] == expected_system((), breakpoint=True)
        # only the newest message carries a breakpoint; older ones are sent as they were
        marked = [
            b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"] if "cache_control" in b
        ]
        assert marked == [body["messages"][-1]["content"][-1]]
    assert session.history() == ("gamma", "beta")  # the FIFO is still kept
    assert len({repr((b["system"], b["tools"])) for b in sent}) == 1


def test_inline_appends_the_full_text_once_to_the_first_executed_result() -> None:
    sent, result, _ = run_sequence("inline")
    first_beta = sent[1]["messages"][-1]["content"]
    assert first_beta == [
        {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": [
                {"type": "text", "text": "beta ran on a"},
                {"type": "text", "text": inline_text(REG, "beta")},
            ],
            "cache_control": CC,
        }
    ]
    assert fetch_tool_doc(REG.tools["beta"]) in inline_text(REG, "beta")
    second_beta = sent[3]["messages"][-1]["content"][0]
    assert second_beta["content"] == [{"type": "text", "text": "beta ran on c"}]
    assert second_beta["cache_control"] == CC
    assert [c.expanded for c in result.tool_calls] == [True, True, False]


def test_task_start_never_appends() -> None:
    sent, result, _ = run_sequence("task_start")
    assert sent[1]["messages"][-1]["content"][0]["content"] == [{"type": "text", "text": "beta ran on a"}]
    assert not any(c.expanded for c in result.tool_calls)


def test_permanent_tools_are_never_appended_inline() -> None:
    with served([tool_use_reply(("c1", "alpha", {"path": "x"})), text_reply("ok")]) as (server, client):
        result = wrapped(client, "inline").run("go", model=MODEL, executors=EXECUTORS)
    assert not result.tool_calls[0].expanded
    assert len(bodies(server)[1]["messages"][-1]["content"][0]["content"]) == 1


def test_task_start_pins_per_task_and_a_new_task_recomposes() -> None:
    store = InMemorySessionStore()
    with served([tool_use_reply(("c1", "beta", {"path": "a"})), text_reply("ok"), text_reply("again")]) as (
        server,
        client,
    ):
        pc = wrapped(client, "task_start", store=store)
        pc.run("one", model=MODEL, executors=EXECUTORS)
        # same task, later request: still the pinned prompt
        pc.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "more"}])
        assert pc.for_task("t2").prompt() == COMPOSER.compose(MODE, store.get("t2"))
        assert pc.prompt().brief == ("beta", "gamma")
        pc.reset_task()
        assert pc.prompt().brief == ("beta", "gamma")  # recomposed from an empty FIFO
    assert bodies(server)[2]["tools"] == expected_tools((), breakpoint=True)


# ---------------------------------------------------------------------------------- the loop's paths


def test_fetch_is_answered_by_the_middleware_and_refuses_other_modes_tools() -> None:
    script = [
        tool_use_reply(("f1", FETCH_TOOL_NAME, {"name": "gamma"}), ("f2", FETCH_TOOL_NAME, {"name": "delta"})),
        tool_use_reply(("c1", "gamma", {"path": "p"})),
        text_reply("fetched"),
    ]
    with served(script) as (server, client):
        pc = wrapped(client, "inline")
        result = pc.run("go", model=MODEL, executors=EXECUTORS)
    results = bodies(server)[1]["messages"][-1]["content"]
    assert results[0]["tool_use_id"] == "f1"
    assert results[0]["content"][0]["text"] == fetch_tool_doc(REG.tools["gamma"])
    assert "is_error" not in results[0]
    assert results[1]["is_error"] is True
    assert "there is no tool 'delta' in mode 'work'" in results[1]["content"][0]["text"]
    assert REG.tools["delta"].full not in results[1]["content"][0]["text"]
    # gamma's text is already in the conversation (fetched): inline does not append it again
    gamma_result = bodies(server)[2]["messages"][-1]["content"][0]
    assert len(gamma_result["content"]) == 1
    assert [c.is_error for c in result.tool_calls] == [False, True, False]
    assert pc.session.history() == ("gamma",)  # a fetch is not a use


def test_a_denied_call_is_an_error_result_and_is_not_recorded() -> None:
    seen: list[PendingCall] = []

    def approve(call: PendingCall) -> bool:
        seen.append(call)
        return call.name != "beta"

    script = [tool_use_reply(("c1", "beta", {"path": "a"}), ("c2", "gamma", {"path": "b"})), text_reply("ok")]
    ran: list[str] = []
    executors = {n: (lambda i, n=n: ran.append(n) or "ran") for n in ("beta", "gamma")}
    with served(script) as (server, client):
        pc = wrapped(client, "inline")
        result = pc.run("go", model=MODEL, executors=executors, approve=approve)
    assert [(c.name, c.iteration) for c in seen] == [("beta", 1), ("gamma", 1)]
    assert ran == ["gamma"]
    denied, ok = bodies(server)[1]["messages"][-1]["content"]
    assert denied["is_error"] is True
    assert denied["content"] == [
        {"type": "text", "text": "Error: the call to 'beta' was denied by the user; it was not run."}
    ]
    assert len(ok["content"]) == 2  # gamma executed: recorded and expanded inline
    assert pc.session.history() == ("gamma",)
    assert pc.session.expanded() == frozenset({"gamma"})
    assert result.tool_calls[0].error is not None
    assert not result.tool_calls[0].executed


def test_an_executor_error_becomes_an_error_result_and_the_loop_goes_on() -> None:
    def broken(tool_input: Any) -> str:
        raise RuntimeError("disk on fire")

    script = [
        tool_use_reply(("c1", "beta", {"path": "a"})),
        tool_use_reply(("c2", "beta", {"path": "b"})),
        text_reply("ok"),
    ]
    calls = iter([broken, echo("beta")])
    with served(script) as (server, client):
        pc = wrapped(client, "inline")
        result = pc.run("go", model=MODEL, executors={"beta": lambda i: next(calls)(i)})
    failed = bodies(server)[1]["messages"][-1]["content"][0]
    assert failed == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": [{"type": "text", "text": "Error: beta failed: RuntimeError: disk on fire"}],
        "is_error": True,
        "cache_control": CC,
    }
    # the failed call was not "executed": the first success is the one that gets the inline text
    second = bodies(server)[2]["messages"][-1]["content"][0]
    assert second["content"][1]["text"] == inline_text(REG, "beta")
    assert result.text == "ok"
    assert [c.executed for c in result.tool_calls] == [False, True]


def test_disallowed_unknown_and_executorless_tools_are_refused_without_running() -> None:
    ran: list[str] = []
    executors = {"delta": lambda i: ran.append("delta") or "x", "nope": lambda i: ran.append("nope") or "x"}
    script = [
        tool_use_reply(("c1", "delta", {"path": "a"}), ("c2", "nope", {}), ("c3", "gamma", {"path": "b"})),
        text_reply("ok"),
    ]
    with served(script) as (server, client):
        pc = wrapped(client)
        result = pc.run("go", model=MODEL, executors=executors)
    assert ran == []
    texts = [r["content"][0]["text"] for r in bodies(server)[1]["messages"][-1]["content"]]
    assert texts[0].startswith("Error: there is no tool 'delta' in mode 'work'.") and texts[0].endswith(
        "Nothing was run."
    )
    assert texts[1].startswith("Error: there is no tool 'nope' in mode 'work'.") and texts[1].endswith(
        "Nothing was run."
    )
    assert texts[2] == "Error: tool 'gamma' has no executor here; it was not run."
    assert all(c.is_error for c in result.tool_calls)
    assert pc.session.history() == ()


def test_file_restrictions_of_the_mode_refuse_the_call() -> None:
    reg = registry(file_restrictions={"read": FileRestriction(file_regex=r"\.md$")})
    ran: list[str] = []
    script = [tool_use_reply(("c1", "beta", {"path": "x.py"}), ("c2", "beta", {"path": "x.md"})), text_reply("ok")]
    with served(script) as (_server, client):
        result = wrap(client, registry=reg, mode="work", task_id="t").run(
            "go", model=MODEL, executors={"beta": lambda i: ran.append(i["path"]) or "ok"}
        )
    assert ran == ["x.md"]
    assert result.tool_calls[0].is_error
    assert "x.py" in result.tool_calls[0].output
    assert not result.tool_calls[1].is_error


def test_caller_tools_run_through_their_own_executors() -> None:
    mine = {"name": "my_tool", "description": "Mine.", "input_schema": {"type": "object"}}
    script = [tool_use_reply(("c1", "my_tool", {"q": 1})), text_reply("ok")]
    with served(script) as (server, client):
        result = wrapped(client).run("go", model=MODEL, tools=[mine], executors={"my_tool": lambda i: {"got": i["q"]}})
    assert result.tool_calls[0].output == '{"got": 1}'
    assert bodies(server)[0]["tools"][0] == mine


def test_parallel_tool_use_is_answered_in_one_user_turn_in_order() -> None:
    script = [
        tool_use_reply(("c1", "gamma", {"path": "1"}), ("c2", "alpha", {"path": "2"}), ("c3", "beta", {"path": "3"})),
        text_reply("ok"),
    ]
    with served(script) as (server, client):
        pc = wrapped(client, "task_start")
        result = pc.run("go", model=MODEL, executors=EXECUTORS)
    second = bodies(server)[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert [r["tool_use_id"] for r in second[-1]["content"]] == ["c1", "c2", "c3"]
    assert [r["content"][0]["text"] for r in second[-1]["content"]] == [
        "gamma ran on 1",
        "alpha ran on 2",
        "beta ran on 3",
    ]
    assert pc.session.history() == ("gamma", "alpha", "beta")
    assert len(result.iterations) == 2
    assert len(result.iterations[0].tool_calls) == 3


def test_max_iterations_raises_with_the_partial_result() -> None:
    script = [tool_use_reply((f"c{i}", "beta", {"path": str(i)})) for i in range(3)]
    with served(script) as (server, client), pytest.raises(MaxIterationsError, match="max_iterations=3") as info:
        wrapped(client).run("go", model=MODEL, executors=EXECUTORS, max_iterations=3)
    result = info.value.result
    assert partial_result(info.value) is result
    assert len(result.iterations) == 3
    assert [c.output for c in result.tool_calls] == ["beta ran on 0", "beta ran on 1", "beta ran on 2"]
    assert len(bodies(server)) == 3


def test_token_totals_are_the_sum_of_the_scripted_usage_and_on_iteration_sees_each_step() -> None:
    usages = [Usage(100, 10, 50, 0), Usage(20, 7, 3, 150), Usage(5, 30, 0, 170)]
    script = [
        tool_use_reply(("c1", "beta", {"path": "a"}), usage=usages[0]),
        tool_use_reply(("c2", "gamma", {"path": "b"}), usage=usages[1]),
        text_reply("ok", usage=usages[2]),
    ]
    steps: list[Iteration] = []
    with served(script) as (_, client):
        result = wrapped(client).run("go", model=MODEL, executors=EXECUTORS, on_iteration=steps.append)
    assert [s.index for s in steps] == [1, 2, 3]
    assert [s.usage.as_dict() for s in steps] == [
        {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_creation_input_tokens": u.cache_creation_input_tokens,
            "cache_read_input_tokens": u.cache_read_input_tokens,
        }
        for u in usages
    ]
    assert result.usage == TokenUsage(125, 47, 53, 320)
    assert result.as_dict()["usage"] == {
        "input_tokens": 125,
        "output_tokens": 47,
        "cache_creation_input_tokens": 53,
        "cache_read_input_tokens": 320,
    }


def test_usage_none_counts_as_zero() -> None:
    assert TokenUsage.of({"input_tokens": 3, "output_tokens": None}) == TokenUsage(3, 0, 0, 0)


def test_api_errors_surface_as_sdk_exceptions_with_the_partial_result() -> None:
    script = [tool_use_reply(("c1", "beta", {"path": "a"})), error_reply(500)]
    with served(script) as (_, client), pytest.raises(anthropic.InternalServerError) as info:
        wrapped(client).run("go", model=MODEL, executors=EXECUTORS)
    result = partial_result(info.value)
    assert result is not None
    assert [c.name for c in result.tool_calls] == ["beta"]
    assert len(result.iterations) == 1


def test_rate_limits_are_left_to_the_sdk_retries() -> None:
    script = [error_reply(429), text_reply("after retry")]
    with served(script, max_retries=2) as (server, client):
        result = wrapped(client).run("go", model=MODEL)
    assert result.text == "after retry"
    assert len(bodies(server)) == 2
    assert len(result.iterations) == 1


def test_streaming_loop_gives_the_same_requests_and_result() -> None:
    usages = [Usage(100, 10, 50, 0), Usage(5, 30, 0, 170)]
    script = [tool_use_reply(("c1", "beta", {"path": "a"}), usage=usages[0]), text_reply("done", usage=usages[1])]
    with served(script) as (server, client):
        result = wrapped(client, "inline").run("go", model=MODEL, executors=EXECUTORS, stream=True)
    sent = bodies(server)
    assert all(b["stream"] is True for b in sent)
    assert sent[1]["tools"] == expected_tools((), breakpoint=True)
    assert sent[1]["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "beta", "input": {"path": "a"}}
    ]
    assert result.text == "done"
    assert result.usage == TokenUsage(105, 40, 50, 170)


def test_the_loop_rejects_bad_limits() -> None:
    with served([]) as (server, client), pytest.raises(ValueError, match="max_iterations"):
        wrapped(client).run("go", model=MODEL, max_iterations=0)
    assert server.requests == []  # text-style modes run too: see test_anthropic_text.py


# ------------------------------------------------------------------------------------------------ async


def test_async_create_and_stream_are_composed() -> None:
    async def main(server: ScriptedMessagesServer) -> str:
        async with wrap(
            anthropic.AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0),
            composer=COMPOSER,
            mode="work",
            task_id="a",
            policy="task_start",
        ) as pc:
            assert isinstance(pc, AsyncComposedClient)
            reply = await pc.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "q"}])
            async with pc.messages.stream(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "q"}]) as s:
                streamed = await s.get_final_text()
            return f"{reply.content[0].text}|{streamed}"

    with ScriptedMessagesServer([text_reply("json"), text_reply("sse")]) as server:
        assert asyncio.run(main(server)) == "json|sse"
    for body in bodies(server):
        assert body["tools"] == expected_tools((), breakpoint=True)
        assert body["system"] == expected_system((), breakpoint=True)


@pytest.mark.parametrize("stream", [False, True])
def test_async_loop_with_async_executors_approval_and_callbacks(stream: bool) -> None:
    async def read(tool_input: Any) -> str:
        await asyncio.sleep(0)
        return f"async read {tool_input['path']}"

    async def approve(call: PendingCall) -> bool:
        return call.input.get("path") != "deny-me"

    steps: list[int] = []

    async def on_iteration(it: Iteration) -> None:
        steps.append(it.index)

    usages = [Usage(10, 1, 2, 3), Usage(20, 2, 0, 4), Usage(30, 3, 0, 5)]
    script = [
        tool_use_reply(("c1", "beta", {"path": "x"}), ("c2", "gamma", {"path": "deny-me"}), usage=usages[0]),
        tool_use_reply(("c3", "gamma", {"path": "y"}), usage=usages[1]),
        text_reply("async done", usage=usages[2]),
    ]

    async def main(server: ScriptedMessagesServer) -> Any:
        client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)
        try:
            pc = wrap(client, composer=COMPOSER, mode="work", task_id="a", policy="every_turn")
            result = await pc.run(
                "go",
                model=MODEL,
                executors={"beta": read, "gamma": echo("gamma")},
                approve=approve,
                on_iteration=on_iteration,
                stream=stream,
            )
            return result, pc.session.history()
        finally:
            await client.close()

    with ScriptedMessagesServer(script) as server:
        result, history = asyncio.run(main(server))
    sent = bodies(server)
    assert [b.get("stream", False) for b in sent] == [stream] * 3
    assert [b["tools"] for b in sent] == [
        expected_tools((), breakpoint=False),
        expected_tools(("beta",), breakpoint=False),
        expected_tools(("beta", "gamma"), breakpoint=False),
    ]
    assert steps == [1, 2, 3]
    assert history == ("beta", "gamma")
    assert [(c.name, c.is_error) for c in result.tool_calls] == [("beta", False), ("gamma", True), ("gamma", False)]
    assert result.tool_calls[0].output == "async read x"
    assert result.usage == TokenUsage(60, 6, 2, 12)
    assert result.text == "async done"


def test_async_max_iterations_and_api_error() -> None:
    async def main(server: ScriptedMessagesServer) -> tuple[Any, Any]:
        client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)
        try:
            pc = wrap(client, composer=COMPOSER, mode="work", task_id="a")
            with pytest.raises(MaxIterationsError) as limit:
                await pc.run("go", model=MODEL, executors=EXECUTORS, max_iterations=1)
            with pytest.raises(anthropic.RateLimitError) as api:
                await pc.for_task("b").run("go", model=MODEL, executors=EXECUTORS)
            return limit.value.result, partial_result(api.value)
        finally:
            await client.close()

    script = [tool_use_reply(("c1", "beta", {"path": "a"})), error_reply(429)]
    with ScriptedMessagesServer(script) as server:
        limited, failed = asyncio.run(main(server))
    assert len(limited.iterations) == 1
    assert limited.tool_calls[0].output == "beta ran on a"
    assert failed is not None
    assert failed.iterations == []


# ---------------------------------------------------------------------------------------- system info

INFO = SystemInfo(workspace="/srv/app", os="Linux 6.8.0", shell="/bin/bash", date="2026-11-24")


def test_wrap_passes_system_info_through_to_composition() -> None:
    expected = Composer(REG, context={"system_info": INFO}).compose(MODE).system_stable
    assert "Workspace folder: /srv/app" in expected and "Current date: 2026-11-24" in expected
    with served([text_reply("a"), text_reply("b"), text_reply("c")]) as (server, client):
        pc = wrapped(client, "task_start", system_info=INFO)
        pc.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "q"}])
        pc.for_task("t2").messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "q"}])
        wrapped(client, "task_start").messages.create(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "q"}]
        )
    first, derived, plain = bodies(server)
    assert first["system"] == [{"type": "text", "text": expected, "cache_control": CC}]
    assert derived["system"] == first["system"]  # for_task keeps it
    assert plain["system"] == expected_system((), breakpoint=True)  # without it: no section, nothing detected
    assert "SYSTEM INFORMATION" not in plain["system"][0]["text"]
    assert "SYSTEM INFORMATION" not in COMPOSER.compose(MODE).system  # the caller's composer is unchanged


def test_async_wrap_passes_system_info_through_to_composition() -> None:
    async def main(server: ScriptedMessagesServer) -> None:
        client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)
        async with wrap(client, registry=REG, mode="work", task_id="a", system_info=INFO) as pc:
            assert isinstance(pc, AsyncComposedClient)
            await pc.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "q"}])

    with ScriptedMessagesServer([text_reply("x")]) as server:
        asyncio.run(main(server))
    (body,) = bodies(server)
    assert "Workspace folder: /srv/app\nOperating system: Linux 6.8.0" in body["system"][0]["text"]
