"""The tool loop over OpenAI's Responses API (``wrap(..., api="responses")``): a call, a refusal, a fetch, usage with
cached tokens, streaming, async, and what stays as it was (Chat Completions by default). Real ``openai`` SDK,
scripted server on 127.0.0.1, which holds the loop to the API's rules on call and output items."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import openai
import pytest
from openai.types.responses import Response

from prompt_composer import Composer, Registry
from prompt_composer.agent.openai import AsyncComposedOpenAI, ComposedOpenAI, wrap
from prompt_composer.agent.responses import ResponsesAdapter, usage_of_response
from prompt_composer.agent.results import LoopResult
from prompt_composer.agent.wrapping import wrap as any_wrap
from prompt_composer.core.builtins import FETCH_TOOL_NAME
from prompt_composer.testing.replies import Usage, error_reply, text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import make_doc, make_mode

DOCS = [
    make_doc("read_file"),
    make_doc("glob"),
    make_doc("write_to_file", "edit"),
    make_doc("secret_tool", "admin", full="## secret_tool\nTOP SECRET INTERNALS"),
]
REG = Registry.from_docs(
    DOCS,
    [
        make_mode("code", groups=["read", "edit"], promotion="task_start"),
        make_mode("text", groups=["read", "edit"], tool_style="text"),
    ],
)
COMPOSER = Composer(REG)
PATH = "/v1/responses"
EXECUTORS = {"glob": lambda tool_input: f"ran on {tool_input['path']}", "read_file": lambda _: "text"}


@contextmanager
def served(script: list[Any], **options: Any) -> Iterator[tuple[ScriptedMessagesServer, ComposedOpenAI]]:
    with ScriptedMessagesServer(script) as server:
        sdk = openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        client = wrap(sdk, **{"composer": COMPOSER, "mode": "code", "task_id": "t", "api": "responses", **options})
        try:
            yield server, client
        finally:
            client.close()


def bodies(server: ScriptedMessagesServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == PATH]


def outputs(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(call id, output) of the function_call_output items of a request."""
    return [(i["call_id"], i["output"]) for i in body["input"] if i.get("type") == "function_call_output"]


SCRIPT = [
    tool_use_reply(
        ("c1", "glob", {"path": "src"}),
        ("c2", "secret_tool", {"path": "x"}),
        ("c3", FETCH_TOOL_NAME, {"name": "write_to_file"}),
        text="Looking.",
        usage=Usage(100, 10),
    ),
    text_reply("Done.", usage=Usage(20, 5, cache_read_input_tokens=96)),
]


def check_loop(result: LoopResult, server: ScriptedMessagesServer) -> None:
    first, second = bodies(server)
    assert result.text == "Done." and result.stop_reason == "completed"
    assert [(c.name, c.executed, c.is_error) for c in result.tool_calls] == [
        ("glob", True, False),
        ("secret_tool", False, True),
        (FETCH_TOOL_NAME, False, False),
    ]
    answers = dict(outputs(second))
    assert answers["c1"] == "ran on src"
    assert answers["c2"].startswith("Error:") and "TOP SECRET" not in json.dumps(second)
    assert "FULL TEXT OF WRITE_TO_FILE" in answers["c3"]
    # The response's items go back as they came (message, then the calls), then the outputs, in order.
    kinds = [i.get("type") or i.get("role") for i in second["input"]]
    assert kinds == ["user", "message", *["function_call"] * 3, *["function_call_output"] * 3]
    assert first["max_output_tokens"] == 99 and "max_tokens" not in first
    assert first["instructions"] == second["instructions"] and first["tools"] == second["tools"]
    assert first["instructions"].startswith(COMPOSER.compose("code").system_stable)
    assert [t["name"] for t in first["tools"]] == [t["name"] for t in COMPOSER.compose("code").tools]
    assert result.usage.as_dict() == {
        "input_tokens": 120,
        "output_tokens": 15,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 96,
    }


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_the_loop_runs_over_responses_a_call_a_refusal_a_fetch_and_counts_cached_tokens(stream: bool) -> None:
    with served(list(SCRIPT)) as (server, client):
        result = client.run("go", model="m", max_tokens=99, executors=EXECUTORS, stream=stream)
    check_loop(result, server)
    assert client.session.history() == ("glob",)
    if stream:
        assert server.requests[0].body["stream"] is True
        assert all(it.first_token is not None and it.first_token <= it.latency for it in result.iterations)


def test_the_async_client_runs_over_responses_too() -> None:
    async def go(server: ScriptedMessagesServer) -> LoopResult:
        sdk = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        async with wrap(sdk, composer=COMPOSER, mode="code", task_id="t", api="responses") as client:
            assert isinstance(client, AsyncComposedOpenAI) and client.api == "responses"
            return await client.run("go", model="m", max_tokens=99, executors=EXECUTORS, stream=True)

    with ScriptedMessagesServer(list(SCRIPT)) as server:
        result = asyncio.run(go(server))
    check_loop(result, server)


def test_chat_completions_stays_the_default_and_for_task_keeps_the_api() -> None:
    with served([text_reply("a"), text_reply("b")], api="chat_completions") as (server, client):
        assert client.api == "chat_completions"
        client.run("go", model="m")
        responses = client.for_task("t2")
        assert isinstance(responses, ComposedOpenAI) and responses.api == "chat_completions"
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]
    with served([text_reply("a")]) as (server, client):
        other = client.for_task("t2", mode="text")
        assert other.api == "responses" and other.mode.slug == "text"
        other.run("go", model="m")
    assert [r.path for r in server.requests] == [PATH]


def test_text_style_results_go_back_as_one_user_message() -> None:
    block = '```tool_call\n{"name": "glob", "input": {"path": "a"}}\n```'
    with served([text_reply(block), text_reply("Done.")], mode="text") as (server, client):
        result = client.run("go", model="m", executors=EXECUTORS)
        _, second = bodies(server)
    assert result.text == "Done." and "tools" not in second
    assert second["input"][-1]["role"] == "user" and second["input"][-1]["content"].startswith("tool_result name=glob")
    assert second["input"][-2]["type"] == "message" and second["input"][-2]["content"][0]["text"] == block


def test_sdk_errors_pass_through_with_the_partial_result() -> None:
    from prompt_composer.agent.results import partial_result

    script = [tool_use_reply(("c1", "glob", {"path": "a"})), error_reply(500)]
    with served(script) as (_server, client), pytest.raises(openai.InternalServerError) as caught:
        client.run("go", model="m", executors=EXECUTORS)
    partial = partial_result(caught.value)
    assert partial is not None and [c.name for c in partial.tool_calls] == ["glob"]


def test_a_reply_cut_at_the_token_limit_ends_with_its_reason_streamed_or_not() -> None:
    for stream in (False, True):
        with served([text_reply("Once upon a", stop_reason="max_tokens")]) as (_server, client):
            result = client.run("tell a story", model="m", max_tokens=16, stream=stream)
        assert result.stop_reason == "max_output_tokens" and result.text == "Once upon a"


def test_arguments_that_are_not_an_object_are_an_error_result_and_every_call_is_answered() -> None:
    response = Response.model_validate(
        {"id": "r", "object": "response", "created_at": 0, "model": "m", "parallel_tool_calls": True,
         "tool_choice": "auto", "tools": [], "status": "completed",
         "output": [
             {"type": "function_call", "call_id": "a", "name": "glob", "arguments": "[1]"},
             {"type": "function_call", "call_id": "b", "name": "glob", "arguments": '{"path": "x'},
             {"type": "function_call", "call_id": "c", "name": "glob", "arguments": ""},
             {"type": "function_call", "call_id": "d", "name": "glob", "arguments": "[" * 100_000},
         ]}
    )  # fmt: skip
    reply = ResponsesAdapter().read(response)
    problems = [(c.id, c.input, c.problem) for c in reply.content if not isinstance(c, str)]
    assert problems[0][2] == "the arguments of the glob call are an array, not a JSON object"
    assert problems[1][2] is not None and problems[1][2].startswith("the arguments of the glob call are not valid")
    assert problems[2] == ("c", {}, None)
    assert problems[3] == ("d", {}, "the arguments of the glob call are nested too deeply to read")  # no crash
    assert reply.message["call_id"] == "a"  # the first item; the others go before the answers


def test_usage_reads_cached_and_written_tokens() -> None:
    response = Response.model_validate(
        {"id": "r", "object": "response", "created_at": 0, "model": "m", "parallel_tool_calls": True,
         "tool_choice": "auto", "tools": [], "output": [],
         "usage": {"input_tokens": 500, "output_tokens": 7, "total_tokens": 507,
                   "input_tokens_details": {"cached_tokens": 384, "cache_write_tokens": 16},
                   "output_tokens_details": {"reasoning_tokens": 0}}}
    )  # fmt: skip
    assert usage_of_response(response).as_dict() == {
        "input_tokens": 100,
        "output_tokens": 7,
        "cache_creation_input_tokens": 16,
        "cache_read_input_tokens": 384,
    }
    assert usage_of_response(Response.model_construct()).as_dict()["input_tokens"] == 0


def test_wrong_api_options_are_refused() -> None:
    sdk = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(ValueError, match="only the Responses API"):
        wrap(sdk, mode="code", task_id="t", composer=COMPOSER, native=True)
    with pytest.raises(ValueError, match="api is"):
        wrap(sdk, mode="code", task_id="t", composer=COMPOSER, api="assistants")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="hosted_search=True needs"):
        wrap(sdk, mode="code", task_id="t", composer=COMPOSER, api="responses", hosted_search=True)
    with pytest.raises(TypeError, match="OpenAI clients only"):
        any_wrap(anthropic.Anthropic(api_key="k"), mode="code", task_id="t", composer=COMPOSER, api="responses")
    sdk.close()
