"""One scripted suite for the tool loop over both providers: the loop decides the same things whichever wire
format carries them. Each scenario runs against the real ``anthropic`` and ``openai`` SDKs and the scripted
server on 127.0.0.1, sync and async, JSON and streaming (8 combinations); only the small readers below know how
each API spells a request."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import anthropic
import openai
import pytest

from prompt_composer.agent.anthropic import MessagesAdapter
from prompt_composer.agent.engine import ANSWER, NO_FETCH, REPEATED
from prompt_composer.agent.openai import ChatAdapter
from prompt_composer.agent.responses import ResponsesAdapter
from prompt_composer.agent.results import (
    Iteration,
    LoopResult,
    MaxIterationsError,
    PendingCall,
    StopLoop,
    TokenUsage,
    partial_result,
)
from prompt_composer.agent.wrapping import wrap
from prompt_composer.core.builtins import CALL_TOOL_NAME, FETCH_TOOL_NAME, TOOL_SEARCH_NAME
from prompt_composer.core.promotion import inline_text
from prompt_composer.testing.replies import Usage, error_reply, text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import (
    COMBOS,
    COMPOSER,
    EXECUTORS,
    REG,
    SEARCH,
    WIRES,
    Combo,
    agent,
)
from tests.helpers import LOOP_MODEL as MODEL

# ------------------------------------------------------------------------------ the two wire formats


# --------------------------------------------------------------------------------------- scenarios


@pytest.mark.parametrize("combo", COMBOS)
def test_a_call_is_executed_answered_and_recorded(combo: Combo) -> None:
    script = [tool_use_reply(("c1", "list_files", {"path": "src"})), text_reply("Listed.")]
    with agent(combo, script, mode="code") as a:
        result = a.run()
        bodies = a.bodies
    assert result.text == "Listed."
    assert [(c.name, c.output, c.executed, c.is_error) for c in result.tool_calls] == [
        ("list_files", "ran on src", True, False)
    ]
    assert a.client.session.history() == ("list_files",)
    assert len(bodies) == 2 and combo.wire.results(bodies[1]) == [("c1", "ran on src", False)]
    assert len(result.iterations) == 2 and result.iterations[0].latency > 0
    if combo.stream:  # the first content was seen before the whole response
        assert all(it.first_token is not None and it.first_token <= it.latency for it in result.iterations)
    else:
        assert all(it.first_token is None for it in result.iterations)


@pytest.mark.parametrize("combo", COMBOS)
def test_the_composed_prompt_carries_the_mode_and_the_callers_parts_come_first_in_tools(combo: Combo) -> None:
    mine = {"name": "my_tool", "description": "Mine.", "input_schema": {"type": "object", "properties": {}}}
    if combo.wire.provider == "openai":
        mine = {"type": "function", "function": {"name": "my_tool", "description": "Mine.", "parameters": {}}}
    with agent(combo, [text_reply("ok")], mode="code") as a:
        a.run(tools=[mine])
        (body,) = a.bodies
    prompt = COMPOSER.compose(REG.mode("code"), a.client.session)
    assert combo.wire.system(body).startswith(prompt.system_stable)
    assert combo.wire.tools(body) == ["my_tool", *(t["name"] for t in prompt.tools)]
    assert "secret_tool" not in combo.wire.tools(body)


@pytest.mark.parametrize("combo", COMBOS)
def test_fetch_is_answered_by_the_loop_and_another_modes_tool_is_refused_without_its_text(combo: Combo) -> None:
    script = [
        tool_use_reply(("f1", FETCH_TOOL_NAME, {"name": "glob"}), ("f2", FETCH_TOOL_NAME, {"name": "secret_tool"})),
        text_reply("done"),
    ]
    with agent(combo, script, mode="code") as a:
        result = a.run()
        bodies = a.bodies
    (glob, secret) = combo.wire.results(bodies[1])
    assert "FULL TEXT OF GLOB" in glob[1] and not glob[2]
    assert secret[2] and secret[1].startswith("Error:") and "TOP SECRET" not in secret[1]
    assert [c.is_error for c in result.tool_calls] == [False, True]


@pytest.mark.parametrize("combo", COMBOS)
def test_a_second_fetch_of_a_tool_makes_the_next_request_ask_for_that_tool_alone(combo: Combo) -> None:
    script = [
        tool_use_reply(("f1", FETCH_TOOL_NAME, {"name": "glob"})),
        tool_use_reply(("f2", FETCH_TOOL_NAME, {"name": "glob"})),
        tool_use_reply(("c1", "glob", {"path": "src"})),
        text_reply("done"),
    ]
    with agent(combo, script, mode="code") as a:
        result = a.run()
        bodies = a.bodies
    wire = combo.wire
    full = wire.tools(bodies[0])
    assert "glob" in full and FETCH_TOOL_NAME in full and len(full) > 2
    assert wire.results(bodies[2])[0][1].startswith("glob is already documented in full above")
    # The request after the repeated fetch offers glob alone and names it; the one after has every tool again.
    assert [wire.tools(b) for b in bodies] == [full, full, ["glob"], full]
    choice = bodies[2]["tool_choice"]
    named = (
        {"type": "tool", "name": "glob"}
        if wire.provider == "anthropic"
        else {"type": "function", "function": {"name": "glob"}}
    )
    assert choice == named and all("tool_choice" not in b for b in (bodies[0], bodies[1], bodies[3]))
    assert [i.forced for i in result.iterations] == [None, None, "glob", None]
    assert [(c.name, c.executed) for c in result.tool_calls][-1] == ("glob", True)


@pytest.mark.parametrize("combo", COMBOS)
def test_refusals_denials_and_executor_errors_are_error_results_and_the_loop_goes_on(combo: Combo) -> None:
    def boom(tool_input: Mapping[str, Any]) -> str:
        raise RuntimeError("disk on fire")

    seen: list[PendingCall] = []

    def approve(call: PendingCall) -> bool:
        seen.append(call)
        return call.name != "write_to_file"

    script = [
        tool_use_reply(
            ("a", "secret_tool", {"path": "x"}),
            ("b", "no_such_tool", {"path": "x"}),
            ("c", "write_to_file", {"path": "x"}),
            ("d", "glob", {"path": "x"}),
            ("e", "read_file", {"path": "ok"}),
        ),
        text_reply("done"),
    ]
    executors = {**EXECUTORS, "glob": boom}
    with agent(combo, script, mode="code") as a:
        result = a.run(executors=executors, approve=approve)
        answers = combo.wire.results(a.bodies[1])
    assert [a[0] for a in answers] == ["a", "b", "c", "d", "e"]  # one answer per call, in order
    assert [a[2] for a in answers] == [True, True, True, True, False]
    assert all(text.startswith("Error:") for _, text, error in answers if error)
    assert "there is no tool 'secret_tool' in mode 'code'" in answers[0][1] and "TOP SECRET" not in answers[0][1]
    assert "there is no tool 'no_such_tool' in mode 'code'" in answers[1][1]
    assert "denied by the user" in answers[2][1]
    assert "disk on fire" in answers[3][1]
    assert [c.name for c in seen] == ["write_to_file", "glob", "read_file"]  # refused calls never reach approve
    assert a.client.session.history() == ("read_file",)  # only the executed call is recorded
    assert result.text == "done"


@pytest.mark.parametrize("combo", COMBOS)
def test_async_approval_executors_and_callbacks_work_in_either_loop(combo: Combo) -> None:
    seen: list[int] = []

    async def approve(call: PendingCall) -> bool:
        return True

    async def read(tool_input: Mapping[str, Any]) -> str:
        await asyncio.sleep(0)
        return "async output"

    async def observe(iteration: Iteration) -> None:
        seen.append(iteration.index)

    script = [tool_use_reply(("c1", "read_file", {"path": "a"})), text_reply("done")]
    with agent(combo, script, mode="code") as a:
        if combo.use_async:
            result = a.run(executors={"read_file": read}, approve=approve, on_iteration=observe)
        else:  # a sync loop runs an async executor to completion
            result = a.run(executors={"read_file": read}, on_iteration=lambda it: seen.append(it.index))
    assert result.tool_calls[0].output == "async output" and seen == [1, 2]


@pytest.mark.parametrize("combo", COMBOS)
def test_usage_is_totalled_with_cached_input_reported(combo: Combo) -> None:
    script = [
        tool_use_reply(("c1", "read_file", {"path": "a"}), usage=Usage(input_tokens=100, output_tokens=7)),
        text_reply("done", usage=Usage(input_tokens=20, output_tokens=3, cache_read_input_tokens=90)),
    ]
    with agent(combo, script, mode="code") as a:
        result = a.run()
    assert [it.usage for it in result.iterations] == [
        TokenUsage(100, 7),
        TokenUsage(20, 3, cache_read_input_tokens=90),
    ]
    assert result.usage == TokenUsage(120, 10, cache_read_input_tokens=90)
    assert result.usage.prompt_tokens == 210


@pytest.mark.parametrize("combo", COMBOS)
def test_max_iterations_and_api_errors_carry_the_partial_result(combo: Combo) -> None:
    loop_forever = [tool_use_reply((f"c{i}", "read_file", {"path": str(i)})) for i in range(2)]
    with agent(combo, loop_forever, mode="code") as a, pytest.raises(MaxIterationsError) as info:
        a.run(max_iterations=2)
    assert len(info.value.result.tool_calls) == 2 and "max_iterations=2" in str(info.value)

    failing = [tool_use_reply(("c1", "read_file", {"path": "a"})), error_reply(500)]
    with agent(combo, failing, mode="code") as a, pytest.raises((anthropic.APIError, openai.APIError)) as raised:
        a.run()
    partial = partial_result(raised.value)
    assert partial is not None and [c.name for c in partial.tool_calls] == ["read_file"]


@pytest.mark.parametrize("combo", COMBOS)
def test_stop_loop_from_on_iteration_returns_the_result_so_far(combo: Combo) -> None:
    def stop(iteration: Iteration) -> None:
        raise StopLoop

    with agent(combo, [tool_use_reply(("c1", "read_file", {"path": "a"}))], mode="code") as a:
        result = a.run(on_iteration=stop)
    assert len(result.iterations) == 1 and result.tool_calls[0].executed
    assert result.messages[-1]["role"] in ("user", "tool")  # the answers are in, ready for a request of one's own


@pytest.mark.parametrize("combo", COMBOS)
def test_inline_appends_the_full_text_once_to_the_first_executed_result(combo: Combo) -> None:
    script = [
        tool_use_reply(("c1", "glob", {"path": "a"})),
        tool_use_reply(("c2", "glob", {"path": "b"})),
        text_reply("done"),
    ]
    with agent(combo, script, mode="inline") as a:
        result = a.run()
        bodies = a.bodies
    first, second = combo.wire.results(bodies[1])[0][1], combo.wire.results(bodies[2])[0][1]
    assert first == "ran on a\n\n" + inline_text(REG, "glob") and second == "ran on b"
    assert [c.expanded for c in result.tool_calls] == [True, False]
    assert combo.wire.tools(bodies[0]) == combo.wire.tools(bodies[2])  # the tool list stays pinned
    assert combo.wire.descriptions(bodies[0]) == combo.wire.descriptions(bodies[2])


@pytest.mark.parametrize("combo", COMBOS)
def test_every_turn_recomposes_from_the_fifo(combo: Combo) -> None:
    script = [tool_use_reply(("c1", "glob", {"path": "a"})), text_reply("done")]
    with agent(combo, script, mode="fifo") as a:
        a.run()
        before, after = (combo.wire.descriptions(b)["glob"] for b in a.bodies)
    assert "FULL TEXT OF GLOB" not in before and "FULL TEXT OF GLOB" in after


@pytest.mark.parametrize("combo", COMBOS)
def test_text_style_calls_are_read_from_the_reply_and_answered_as_labelled_text(combo: Combo) -> None:
    call = 'Looking.\n```tool_call\n{"name": "read_file", "input": {"path": "README.md"}}\n```\n'
    bad = "```tool_call\n{not json}\n```"
    script = [text_reply(call + bad), text_reply("tool_result name=read_file ok\nI made this up"), text_reply("fine")]
    with agent(combo, script, mode="text") as a:
        result = a.run()
        bodies = a.bodies
    assert combo.wire.tools(bodies[0]) == []  # text style: no native tools
    (answer,) = (
        combo.wire.user_texts(bodies[1])
        if combo.wire.provider == "openai"
        else ["\n\n".join(combo.wire.user_texts(bodies[1]))]
    )
    assert answer.startswith("tool_result name=read_file ok\nran on README.md")
    assert "tool_result name=? error\nError: the tool_call block is not valid JSON" in answer
    assert [c.name for c in result.tool_calls] == ["read_file", ""]
    assert result.iterations[1].correction is not None  # the imitated result was not taken as final
    assert "imitated a tool result" in combo.wire.user_texts(bodies[2])[0]
    assert result.text == "fine" and len(result.iterations) == 3


@pytest.mark.parametrize("combo", COMBOS)
def test_call_tool_runs_the_inner_tool_under_the_same_policy(combo: Combo) -> None:
    script = [
        tool_use_reply(
            ("c1", CALL_TOOL_NAME, {"name": "glob", "arguments": {"path": "x"}}),
            ("c2", CALL_TOOL_NAME, {"name": "secret_tool", "arguments": {"path": "x"}}),
        ),
        text_reply("done"),
    ]
    with agent(combo, script, mode="code", call_tool=True) as a:
        result = a.run()
        bodies = a.bodies
    assert combo.wire.tools(bodies[0])[-1] == CALL_TOOL_NAME
    assert [(c.name, c.via, c.is_error) for c in result.tool_calls] == [
        ("glob", CALL_TOOL_NAME, False),
        (CALL_TOOL_NAME, None, True),
    ]
    assert "TOP SECRET" not in combo.wire.results(bodies[1])[1][1]


@pytest.mark.parametrize("combo", COMBOS)
def test_tool_search_adds_the_tools_found_to_the_next_request_and_never_another_modes(combo: Combo) -> None:
    script = [tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "run the tests"})), text_reply("done")]
    with agent(combo, script, mode="disco", search=SEARCH) as a:
        a.run()
        first, second = a.bodies
    assert "execute_command" not in combo.wire.tools(first)
    assert "execute_command" in combo.wire.tools(second)
    assert "secret_tool" not in combo.wire.tools(second)
    assert combo.wire.tools(second)[-2:] == combo.wire.tools(first)[-2:]  # found tools go before search/fetch


def test_wrap_refuses_what_is_not_an_sdk_client() -> None:
    with pytest.raises(TypeError, match=r"anthropic\.Anthropic / AsyncAnthropic or openai\.OpenAI"):
        wrap(object(), mode="code", task_id="t")


@pytest.mark.parametrize("combo", [p for p in COMBOS if "-sync-" in str(p.id)])
def test_an_async_executor_in_the_sync_loop_inside_an_event_loop_is_an_error_result(combo: Combo) -> None:
    async def read(tool_input: Mapping[str, Any]) -> str:
        return "never"

    async def inside_a_loop() -> LoopResult:
        with agent(combo, [tool_use_reply(("c1", "read_file", {"path": "a"})), text_reply("done")], mode="code") as a:
            return a.run(executors={"read_file": read})

    result = asyncio.run(inside_a_loop())
    (call,) = result.tool_calls
    assert call.is_error and "use the async client" in call.output and result.text == "done"


def test_anthropic_tools_not_given_means_no_caller_tools() -> None:
    with ScriptedMessagesServer([text_reply("ok")]) as server:
        sdk = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        with wrap(sdk, composer=COMPOSER, mode="code", task_id="t") as client:
            client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "x"}],
                                   tools=anthropic.NOT_GIVEN)  # fmt: skip
        (body,) = WIRES["anthropic"].bodies(server)
    assert [t["name"] for t in body["tools"]] == [t["name"] for t in COMPOSER.compose("code").tools]


@pytest.mark.parametrize("combo", COMBOS)
def test_two_fetches_in_a_row_make_the_next_request_offer_no_fetch_tool(combo: Combo) -> None:
    script = [
        tool_use_reply(("f1", FETCH_TOOL_NAME, {"name": "get_directions"})),
        tool_use_reply(("g1", "glob", {"path": "src"})),  # a call between: the count starts again
        tool_use_reply(("f2", FETCH_TOOL_NAME, {"name": "secret_tool"})),  # refused
        tool_use_reply(("f3", FETCH_TOOL_NAME, {"name": "read_file"})),  # another tool, read in full
        text_reply("There is no tool for directions here."),
        text_reply("unused"),
    ]
    with agent(combo, script, mode="code") as a:
        result = a.run()
        bodies = a.bodies
    wire = combo.wire
    assert len(bodies) == 5 and wire.results(bodies[3])[0][2] and not wire.results(bodies[4])[0][2]
    # The request after two fetches in a row offers every tool but the fetch tool; the choice is the model's.
    assert wire.tools(bodies[4]) == [t for t in wire.tools(bodies[0]) if t != FETCH_TOOL_NAME]
    assert FETCH_TOOL_NAME in wire.tools(bodies[0]) and len(wire.tools(bodies[4])) > 1
    assert all("tool_choice" not in b for b in bodies)
    assert [i.forced for i in result.iterations] == [None, None, None, None, NO_FETCH]
    assert result.text == "There is no tool for directions here."


@pytest.mark.parametrize("combo", COMBOS)
def test_the_same_call_with_the_same_result_twice_makes_the_next_request_ask_for_an_answer(combo: Combo) -> None:
    """A small model can repeat one call until max_iterations runs out: after the second identical round (the same
    calls, the same results) the next request keeps its tools and sets the tool choice to none."""
    polled = iter(["queued", "running", "90%", "done"])
    script = [
        tool_use_reply(("g1", "glob", {"path": "src"})),
        tool_use_reply(("g2", "glob", {"path": "src"})),  # the same call, the same result: a repeat
        text_reply("src holds a.py."),
        text_reply("unused"),
    ]
    with agent(combo, script, mode="code") as a:
        result = a.run(executors={"glob": lambda i: "a.py"})
        bodies = a.bodies
    assert len(bodies) == 3 and result.text == "src holds a.py."
    assert [i.forced for i in result.iterations] == [None, None, ANSWER]
    assert combo.wire.tools(bodies[2]) == combo.wire.tools(bodies[0])
    assert "tool_choice" not in bodies[0] and "tool_choice" not in bodies[1]
    assert bodies[2]["tool_choice"] in ({"type": "none"}, "none")
    # The repeated result says so too (a server may ignore the tool choice); the first one does not.
    assert combo.wire.results(bodies[2])[0][1] == f"a.py\n\n{REPEATED}"
    assert combo.wire.results(bodies[1])[0][1] == "a.py"
    # A call whose result changes (polling a job) is not a repeat.
    script = [*(tool_use_reply((f"p{i}", "glob", {"path": "job"})) for i in range(4)), text_reply("done")]
    with agent(combo, script, mode="code") as a:
        result = a.run(executors={"glob": lambda i: next(polled)})
    assert [i.forced for i in result.iterations] == [None] * 5 and result.text == "done"


def test_forcing_a_call_keeps_what_the_provider_needs() -> None:
    tool = {"name": "glob", "description": "d", "input_schema": {"type": "object"}}
    other = {**tool, "name": "read_file"}
    request = {"model": "m", "tools": [other, tool], "messages": []}
    adapter = MessagesAdapter()
    named = {"type": "tool", "name": "glob"}
    assert adapter.forced(request, "glob") == {**request, "tools": [tool], "tool_choice": named}
    assert adapter.forced(request, "write_to_file") is None  # not offered: nothing to force
    # Extended thinking refuses a forced choice: the tool list alone narrows.
    thinking = {**request, "thinking": {"type": "enabled", "budget_tokens": 1024}, "tool_choice": {"type": "auto"}}
    assert adapter.forced(thinking, "glob") == {**thinking, "tools": [tool]}
    # With the provider's deferral a reference in the conversation must resolve: the list stays, the choice names.
    deferred = {**request, "tools": [{**other, "defer_loading": True}, tool]}
    assert adapter.forced(deferred, "glob") == {**deferred, "tool_choice": named}
    flat = {"type": "function", "name": "glob", "parameters": {}}
    responses = {"tools": [{**flat, "name": "read_file"}, flat], "input": []}
    assert ResponsesAdapter().forced(responses, "glob") == {
        **responses,
        "tools": [flat],
        "tool_choice": {"type": "function", "name": "glob"},
    }
    chat = {"type": "function", "function": {"name": "glob", "parameters": {}}}
    assert ChatAdapter().forced({"tools": [chat], "messages": []}, "read_file") is None
    # No tool: the fetch tool leaves the list; where it is all there is, it stays and the choice is none.
    fetch = {**tool, "name": FETCH_TOOL_NAME}
    fetching = {**request, "tools": [other, fetch]}
    assert adapter.forced(fetching, None) == {**fetching, "tools": [other]}
    alone = {**request, "tools": [fetch]}
    assert adapter.forced(alone, None) == {**alone, "tool_choice": {"type": "none"}}
    chat_fetch = {"type": "function", "function": {"name": FETCH_TOOL_NAME, "parameters": {}}}
    assert ChatAdapter().forced({"tools": [chat, chat_fetch]}, None) == {"tools": [chat]}
    # An answer, not a call: the list stays, the choice is none, in each API's spelling.
    assert ResponsesAdapter().answer_only(responses) == {**responses, "tool_choice": "none"}
    assert adapter.answer_only(request) == {**request, "tool_choice": {"type": "none"}}
    assert ChatAdapter().answer_only({"tools": [chat]}) == {"tools": [chat], "tool_choice": "none"}
    assert ResponsesAdapter().forced({"tools": [{**flat, "name": FETCH_TOOL_NAME}]}, None) == {
        "tools": [{**flat, "name": FETCH_TOOL_NAME}],
        "tool_choice": "none",
    }
