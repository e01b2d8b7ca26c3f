"""The scripted server's Responses API: the documented rules of tool deferral and of call / output items (a 400
that uses up no reply), the replies no model could give (a 500 naming the script's mistake), tool searches in JSON
and in the streamed event sequence, and usage. Real ``openai`` SDK against the server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from prompt_composer.testing.replies import Usage, hosted_search_reply, text_reply, tool_search_reply, tool_use_reply
from prompt_composer.testing.responses_api import responses_problem
from prompt_composer.testing.server import ScriptedMessagesServer

EAGER = {"type": "function", "name": "read_file", "parameters": {"type": "object", "properties": {}}}
WEATHER = {"type": "function", "name": "weather", "parameters": {"type": "object"}, "defer_loading": True}
TRAVEL = {"type": "namespace", "name": "travel", "description": "Travel tools.", "tools": [WEATHER]}
SEARCH = {"type": "tool_search", "execution": "client"}
TOOLS: list[Any] = [EAGER, TRAVEL, SEARCH]
HI = {"role": "user", "content": "hi"}


@pytest.fixture
def served() -> Iterator[tuple[ScriptedMessagesServer, openai.OpenAI]]:
    with ScriptedMessagesServer() as server:
        sdk = openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        try:
            yield server, sdk
        finally:
            sdk.close()


def call(call_id: str = "ts_1") -> dict[str, Any]:
    return {"type": "tool_search_call", "call_id": call_id, "execution": "client", "arguments": {"query": "w"}}


def output(call_id: str = "ts_1", tools: list[Any] | None = None) -> dict[str, Any]:
    loaded = tools if tools is not None else [{**TRAVEL, "tools": [{**WEATHER, "description": "Full."}]}]
    return {"type": "tool_search_output", "call_id": call_id, "execution": "client", "tools": loaded}


@pytest.mark.parametrize(
    ("tools", "items", "problem"),
    [
        ([TRAVEL, SEARCH], [], "at least one tool must not be deferred"),
        ([EAGER, TRAVEL], [], "need a tool_search tool"),
        ([EAGER, {**TRAVEL, "defer_loading": True}, SEARCH], [], "not to the namespace"),
        (TOOLS, [output()], "no tool search call found for tool_search_output with call_id ts_1"),
        (TOOLS, [call("ts_1"), output("ts_2")], "no tool search call found for tool_search_output with call_id ts_2"),
        (TOOLS, [call()], "no output found for the call with call_id ts_1"),
        (TOOLS, [{"type": "function_call_output", "call_id": "c9", "output": "x"}], "no tool call found"),
        (TOOLS, [call(), output(tools=[EAGER])], "loads 'read_file', which the request's tools do not declare"),
        (TOOLS, [call(), output(tools=[{**WEATHER}])], "loads 'weather', which"),  # declared in a namespace
        (TOOLS, [call(), output(tools=[{**TRAVEL, "tools": [{**WEATHER, "name": "other"}]}])], "loads 'other'"),
    ],
)
def test_requests_the_real_api_refuses_are_400s_that_use_up_no_reply(
    served: tuple[ScriptedMessagesServer, openai.OpenAI], tools: list[Any], items: list[Any], problem: str
) -> None:
    server, sdk = served
    server.add(text_reply("kept"))
    assert problem in str(responses_problem({"tools": tools, "input": [HI, *items]}))
    with pytest.raises(openai.BadRequestError, match=problem):
        sdk.responses.create(model="m", input=[HI, *items], tools=tools)  # type: ignore[list-item]
    assert server.pending == 1
    assert sdk.responses.create(model="m", input=[HI, call(), output()], tools=TOOLS).output_text == "kept"


def test_a_client_tool_search_call_in_json_and_in_the_stream(
    served: tuple[ScriptedMessagesServer, openai.OpenAI],
) -> None:
    server, sdk = served
    reply = tool_search_reply("weather forecast", call_id="ts_7", text="Searching.", usage=Usage(90, 4, 0, 64))
    server.add(reply, reply)
    plain = sdk.responses.create(model="m", input="hi", tools=TOOLS)
    with sdk.responses.stream(model="m", input="hi", tools=TOOLS) as stream:
        kinds = [event.type for event in stream]
        streamed = stream.get_final_response()
    for response in (plain, streamed):
        message, search = response.output
        assert message.type == "message" and response.output_text == "Searching."
        assert search.type == "tool_search_call" and (search.call_id, search.execution) == ("ts_7", "client")
        assert search.arguments == {"query": "weather forecast"}
        assert response.usage is not None and response.usage.input_tokens == 154
        assert response.usage.input_tokens_details.cached_tokens == 64 and response.usage.output_tokens == 4
    assert kinds.count("response.output_item.added") == 2 and kinds[-1] == "response.completed"


def test_a_function_call_names_the_namespace_its_function_is_declared_in(
    served: tuple[ScriptedMessagesServer, openai.OpenAI],
) -> None:
    server, sdk = served
    server.add(tool_use_reply(("c1", "weather", {"city": "Oslo"}), ("c2", "read_file", {})))
    response = sdk.responses.create(model="m", input=[HI, call(), output()], tools=TOOLS)
    assert [(i.name, i.namespace) for i in response.output if i.type == "function_call"] == [
        ("weather", "travel"),
        ("read_file", None),
    ]


def test_hosted_search_loads_the_requests_own_declarations(
    served: tuple[ScriptedMessagesServer, openai.OpenAI],
) -> None:
    server, sdk = served
    hosted: list[Any] = [EAGER, TRAVEL, {"type": "tool_search"}]
    server.add(hosted_search_reply("weather", ["weather"], ("c1", "weather", {"city": "Oslo"})))
    response = sdk.responses.create(model="m", input="hi", tools=hosted)
    searched, loaded, function = response.output
    assert (searched.type, searched.execution, loaded.type, loaded.execution) == (
        "tool_search_call", "server", "tool_search_output", "server"
    )  # fmt: skip
    assert [t.to_dict(exclude_none=True) for t in loaded.tools] == [TRAVEL]
    assert function.type == "function_call" and function.namespace == "travel"


@pytest.mark.parametrize(
    ("reply", "tools", "items", "mistake"),
    [
        (tool_use_reply(("c1", "weather", {})), TOOLS, [], "calls 'weather', a deferred function this conversation"),
        (tool_search_reply("w"), [EAGER], [], "no client tool_search tool"),
        (hosted_search_reply("w", ["weather"]), TOOLS, [], "no hosted tool_search"),
        (hosted_search_reply("w", ["read_file"]), [EAGER, TRAVEL, {"type": "tool_search"}], [], "cannot load"),
    ],
)
def test_replies_no_model_could_give_are_500s_naming_the_mistake(
    served: tuple[ScriptedMessagesServer, openai.OpenAI], reply: Any, tools: list[Any], items: list[Any], mistake: str
) -> None:
    server, sdk = served
    server.add(reply)
    with pytest.raises(openai.InternalServerError, match=mistake):
        sdk.responses.create(model="m", input=[HI, *items], tools=tools)
