"""What only the OpenAI adapter does: how Chat Completions and Responses requests are spelled, what passes
through, usage with cached tokens, and ``run --provider openai``. (What the loop decides is checked for both
providers at once in test_loop.py.) Real ``openai`` SDK, scripted server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion

from prompt_composer import Composer, Registry
from prompt_composer.agent.openai import AsyncComposedOpenAI, ComposedOpenAI, usage_of, wrap
from prompt_composer.cli import main
from prompt_composer.core.builtins import FETCH_TOOL_NAME
from prompt_composer.testing.replies import Usage, text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import make_doc, make_mode

DOCS = [make_doc("read_file"), make_doc("glob"), make_doc("write_to_file", "edit")]
REG = Registry.from_docs(
    DOCS,
    [
        make_mode("code", groups=["read", "edit"], promotion="task_start"),
        make_mode("text", groups=["read", "edit"], tool_style="text", recent_size=2, promotion="every_turn"),
    ],
)
COMPOSER = Composer(REG)
CHAT = "/v1/chat/completions"


@contextmanager
def served(script: list[Any], **options: Any) -> Iterator[tuple[ScriptedMessagesServer, ComposedOpenAI]]:
    with ScriptedMessagesServer(script) as server:
        sdk = openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        client = wrap(sdk, **{"composer": COMPOSER, "mode": "code", "task_id": "t", **options})
        try:
            yield server, client
        finally:
            client.close()


def bodies(server: ScriptedMessagesServer, path: str = CHAT) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == path]


def test_create_sends_one_system_message_then_the_callers_tools_and_returns_the_sdk_object() -> None:
    mine = {"type": "function", "function": {"name": "mine", "description": "Mine.", "parameters": {}}}
    with served([text_reply("hi")]) as (server, client):
        reply = client.chat.completions.create(
            model="m",
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "system", "content": [{"type": "text", "text": "Answer in English."}]},
                {"role": "user", "content": "hello"},
            ],
            tools=[mine],
        )
        (body,) = bodies(server)
    assert isinstance(reply, ChatCompletion) and reply.choices[0].message.content == "hi"
    prompt = COMPOSER.compose("code")
    # Many chat templates read a system message only in first place: one message, composed part first.
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == f"{prompt.system_stable}\n\nBe brief.\n\nAnswer in English."
    names = [t["function"]["name"] for t in body["tools"]]
    assert names == ["mine", *(t["name"] for t in prompt.tools)]
    assert all(t["type"] == "function" and "parameters" in t["function"] for t in body["tools"])
    assert "cache_control" not in json.dumps(body)  # automatic prefix caches: nothing to mark


def test_a_developer_message_stays_a_developer_message_and_the_callers_tool_wins_a_name_clash() -> None:
    own_fetch = {"type": "function", "function": {"name": FETCH_TOOL_NAME, "description": "Mine.", "parameters": {}}}
    with served([text_reply("hi")]) as (server, client):
        client.chat.completions.create(
            model="m", messages=[{"role": "developer", "content": "Dev."}, {"role": "user", "content": "x"}],
            tools=[own_fetch],
        )  # fmt: skip
        (body,) = bodies(server)
    assert body["messages"][0]["role"] == "developer" and body["messages"][0]["content"].endswith("\n\nDev.")
    fetches = [t for t in body["tools"] if t["function"]["name"] == FETCH_TOOL_NAME]
    assert fetches == [own_fetch]


def test_text_style_modes_put_the_changing_part_last_in_the_system_message_and_send_no_tools() -> None:
    with served([text_reply("hi")], mode="text") as (server, client):
        client.session.record_use("glob")
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        (body,) = bodies(server)
    prompt = COMPOSER.compose("text", client.session)
    assert (
        prompt.system_recent and body["messages"][0]["content"] == f"{prompt.system_stable}\n\n{prompt.system_recent}"
    )
    assert "tools" not in body


def test_responses_create_gets_composed_instructions_and_flat_function_tools() -> None:
    with served([tool_use_reply(("c1", "glob", {"path": "x"}), text="Looking.")]) as (server, client):
        response = client.responses.create(model="m", input="find it", instructions="Be brief.")
        (body,) = bodies(server, "/v1/responses")
    prompt = COMPOSER.compose("code")
    assert body["instructions"] == f"{prompt.system_stable}\n\nBe brief."
    assert [t["name"] for t in body["tools"]] == [t["name"] for t in prompt.tools]
    assert all(t["type"] == "function" and "parameters" in t for t in body["tools"])
    assert response.output_text == "Looking."
    assert [item.type for item in response.output] == ["message", "function_call"]


def test_everything_else_passes_through_to_the_sdk() -> None:
    with served([]) as (_server, client):
        assert client.models is client.client.models
        assert client.chat.completions.with_raw_response is client.client.chat.completions.with_raw_response
        assert client.base_url == client.client.base_url


def test_arguments_that_are_not_a_json_object_get_an_error_result_and_the_loop_goes_on() -> None:
    with ScriptedMessagesServer([]) as server:
        sdk = openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        client = wrap(sdk, composer=COMPOSER, mode="code", task_id="t")
        bad = tool_use_reply(("c1", "glob", {"path": "x"}))
        server.add(bad, text_reply("done"))

        # The scripted server always sends valid JSON: break it on the way back, as a weak model does.
        original = client.client.chat.completions.create

        def create(**params: Any) -> Any:
            reply = original(**params)
            if reply.choices[0].message.tool_calls:
                reply.choices[0].message.tool_calls[0].function.arguments = '{"path": "x"'
            return reply

        client.client.chat.completions.create = create
        result = client.run("go", model="m", executors={"glob": lambda _: "ran"})
        sent = bodies(server)[1]["messages"]
        client.close()
    (call,) = result.tool_calls
    assert call.is_error and not call.executed and "not valid JSON" in call.output
    assert call.output.startswith("Error:")
    assert sent[-1] == {"role": "tool", "tool_call_id": "c1", "content": call.output}
    assert result.text == "done"


def test_usage_reads_cached_tokens_and_llama_cpp_timings() -> None:
    standard = ChatCompletion.model_validate(
        {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [],
         "usage": {"prompt_tokens": 500, "completion_tokens": 7, "total_tokens": 507,
                   "prompt_tokens_details": {"cached_tokens": 384}}}
    )  # fmt: skip
    assert usage_of(standard).as_dict() == {
        "input_tokens": 116,
        "output_tokens": 7,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 384,
    }
    llama = ChatCompletion.model_validate(
        {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [],
         "usage": {"prompt_tokens": 503, "completion_tokens": 3, "total_tokens": 506},
         "timings": {"cache_n": 493, "prompt_n": 10}}
    )  # fmt: skip
    assert usage_of(llama).cache_read_input_tokens == 493 and usage_of(llama).input_tokens == 10
    assert usage_of(ChatCompletion.model_construct()).prompt_tokens == 0


def test_the_loop_asks_for_max_completion_tokens_and_a_usage_chunk_when_streaming() -> None:
    script = [tool_use_reply(("c1", "glob", {"path": "x"}), usage=Usage(50, 5)), text_reply("done")]
    with served(script) as (server, client):
        result = client.run("go", model="m", max_tokens=77, stream=True, executors={"glob": lambda _: "ran"})
        first, _ = bodies(server)
    assert first["max_completion_tokens"] == 77 and "max_tokens" not in first
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assert result.iterations[0].usage.input_tokens == 50
    assert result.stop_reason == "stop" and result.messages[1]["tool_calls"][0]["id"] == "c1"


def test_a_streamed_reply_cut_at_max_tokens_ends_the_loop_with_its_stop_reason() -> None:
    # The SDK's get_final_completion() raises on finish_reason "length"; the loop reports it like a JSON reply.
    with served([text_reply("Once upon a", stop_reason="max_tokens")]) as (_server, client):
        result = client.run("tell a story", model="m", max_tokens=3, stream=True)
    assert result.stop_reason == "length" and result.text == "Once upon a"


def test_async_client_composes_and_runs() -> None:
    async def go(server: ScriptedMessagesServer) -> tuple[str, list[str]]:
        sdk = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        async with wrap(sdk, composer=COMPOSER, mode="code", task_id="t") as client:
            assert isinstance(client, AsyncComposedOpenAI)
            reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            result = await client.run("go", model="m", executors={"glob": lambda _: "ran"})
        return reply.choices[0].message.content or "", [c.name for c in result.tool_calls]

    script = [text_reply("hi"), tool_use_reply(("c1", "glob", {"path": "x"})), text_reply("done")]
    with ScriptedMessagesServer(script) as server:
        text, calls = asyncio.run(go(server))
    assert text == "hi" and calls == ["glob"]


def test_wrap_refuses_another_client() -> None:
    with pytest.raises(TypeError, match=r"openai\.OpenAI or openai\.AsyncOpenAI"):
        wrap(object(), mode="code", task_id="t")  # type: ignore[type-var]


# ------------------------------------------------------------------------------------ run --provider openai


def test_run_provider_openai_against_a_local_server_needs_no_key(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    script = [
        tool_use_reply(("c1", "read_file", {"path": "README.md"}), usage=Usage(100, 10)),
        text_reply("It is a demo.", usage=Usage(20, 5, cache_read_input_tokens=96)),
    ]
    with ScriptedMessagesServer(script) as server:
        code = main(
            ["run", "--provider", "openai", "--mode", "code", "--task", "What is here?",
             "--base-url", server.base_url + "/v1", "--workspace", str(workspace), "--format", "json",
             "--temperature", "0.2"]
        )  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["text"] == "It is a demo." and out["stop_reason"] == "stop"
    assert out["tool_calls"] == [{"name": "read_file", "input": {"path": "README.md"}, "is_error": False}]
    assert out["usage"]["cache_read_input_tokens"] == 96 and out["usage"]["input_tokens"] == 120
    requests = [r for r in server.requests if r.path == CHAT]
    assert requests[0].headers["authorization"] == "Bearer local"
    assert all(r.body["temperature"] == 0.2 for r in requests)
    assert requests[1].body["messages"][-1]["content"] == "1 | # Demo"  # the tool result, read from the workspace


def test_run_provider_openai_without_a_key_for_a_remote_server_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code = main(
        ["run", "--provider", "openai", "--mode", "code", "--task", "x", "--base-url", "https://example.com/v1"]
    )
    assert code == 2 and "OPENAI_API_KEY" in capsys.readouterr().err


def test_a_streamed_reply_keeps_llama_cpp_timings_for_the_cache_count() -> None:
    from openai.types.chat import ChatCompletionChunk

    from prompt_composer.agent.adapter import Clock
    from prompt_composer.agent.openai import _Accumulator

    base = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "timings": {"cache_n": 80}},
        {**base, "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}},
    ]
    state = _Accumulator()
    clock = Clock()
    for chunk in chunks:
        state.add(ChatCompletionChunk.model_validate(chunk), clock)
    usage = usage_of(state.final())
    assert (usage.cache_read_input_tokens, usage.input_tokens) == (80, 20) and clock.first is not None
    with pytest.raises(ValueError, match="before its first chunk"):
        _Accumulator().final()


def test_odd_replies_are_answered_or_refused_never_left_dangling() -> None:
    from prompt_composer.agent.openai import ChatAdapter

    def completion(message: dict[str, Any]) -> ChatCompletion:
        return ChatCompletion.model_validate(
            {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
             "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", **message}}]}
        )  # fmt: skip

    calls = [
        {"id": "a", "type": "function", "function": {"name": "glob", "arguments": "null"}},
        {"id": "b", "type": "function", "function": {"name": "glob", "arguments": "[1]"}},
        {"id": "c", "type": "function", "function": {"name": "glob", "arguments": '{"path": "x'}},
        {"id": "d", "type": "custom", "custom": {"name": "grammar_tool", "input": "x"}},
        {"id": "e", "type": "function", "function": {"name": "glob", "arguments": "[" * 100_000}},
    ]
    reply = ChatAdapter().read(completion({"content": None, "tool_calls": calls}))
    problems = [(c.id, c.input, c.problem) for c in reply.content if not isinstance(c, str)]
    assert problems[0] == ("a", {}, None)  # "null": no arguments
    assert problems[1][2] == "the arguments of the glob call are an array, not a JSON object"
    assert problems[2][2] is not None and problems[2][2].startswith("the arguments of the glob call are not valid JSON")
    assert problems[3][2] == "custom tool calls are not supported here"
    assert problems[4] == ("e", {}, "the arguments of the glob call are nested too deeply to read")  # no crash
    assert [c["id"] for c in reply.message["tool_calls"]] == ["a", "b", "c", "d", "e"]  # all kept, all answered
    with pytest.raises(ValueError, match="no choice"):
        ChatAdapter().read(ChatCompletion.model_construct(choices=[]))
