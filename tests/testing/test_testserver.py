"""Tests for prompt_composer.testing.server, driving the real anthropic and openai SDKs against it."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from prompt_composer.testing.replies import Reply, Usage, error_reply, text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from prompt_composer.testing.wire import chat_completion_chunks, sse_events
from tests.helpers import REPO

REPO_ROOT = REPO
MESSAGES: list[Any] = [{"role": "user", "content": "hello"}]
USAGE = Usage(input_tokens=123, output_tokens=45, cache_creation_input_tokens=7, cache_read_input_tokens=8)


def _client(server: ScriptedMessagesServer, max_retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="test-key", max_retries=max_retries, timeout=30)


def _async_client(server: ScriptedMessagesServer) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=server.base_url, api_key="test-key", max_retries=0, timeout=30)


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with ScriptedMessagesServer() as srv:
        yield srv


@pytest.fixture
def client(server: ScriptedMessagesServer) -> Iterator[anthropic.Anthropic]:
    sdk = _client(server)
    yield sdk
    sdk.close()


def _blocks(message: Any) -> list[dict[str, Any]]:
    return [block.to_dict(exclude_none=True) for block in message.content]


def _message_posts(server: ScriptedMessagesServer) -> list[Any]:
    return [r for r in server.requests if r.method == "POST" and r.path.split("?")[0] == "/v1/messages"]


def test_text_reply_json(server: ScriptedMessagesServer, client: anthropic.Anthropic) -> None:
    server.add(text_reply("Hello there", usage=USAGE))
    msg = client.messages.create(model="claude-echo-me", max_tokens=64, messages=MESSAGES)
    assert msg.id == "msg_test_0001"
    assert msg.type == "message"
    assert msg.role == "assistant"
    assert msg.model == "claude-echo-me"
    assert _blocks(msg) == [{"type": "text", "text": "Hello there"}]
    assert msg.stop_reason == "end_turn"
    assert msg.stop_sequence is None
    assert msg.usage.to_dict(exclude_none=True) == USAGE.to_dict()
    assert server.pending == 0


def test_tool_use_reply_with_two_calls(server: ScriptedMessagesServer, client: anthropic.Anthropic) -> None:
    reply = tool_use_reply(
        ("list_files", {"path": "."}),
        ("toolu_explicit", "read_file", {"path": "README.md"}),
        text="Looking around.",
    )
    server.add(reply)
    msg = client.messages.create(model="m", max_tokens=64, messages=MESSAGES)
    assert msg.stop_reason == "tool_use"
    blocks = _blocks(msg)
    assert blocks[0] == {"type": "text", "text": "Looking around."}
    assert [(b["type"], b["name"], b["input"]) for b in blocks[1:]] == [
        ("tool_use", "list_files", {"path": "."}),
        ("tool_use", "read_file", {"path": "README.md"}),
    ]
    assert blocks[2]["id"] == "toolu_explicit"
    generated = blocks[1]["id"]
    assert generated.startswith("toolu_")
    assert len(generated) == len("toolu_") + 24
    # deterministic: the same call builds the same id
    assert tool_use_reply(("list_files", {"path": "."})).content[0]["id"] == generated
    assert tool_use_reply(("list_files", {"path": ".."})).content[0]["id"] != generated


SCRIPTED = [
    pytest.param(text_reply("A longer answer, streamed in pieces.", usage=USAGE), id="text"),
    pytest.param(
        tool_use_reply(
            ("list_files", {"path": "."}), ("read_file", {"path": "a b/ü.md", "n": [1, 2]}), text="Hm.", usage=USAGE
        ),
        id="tool_use",
    ),
]


@pytest.mark.parametrize("reply", SCRIPTED)
def test_stream_helper_final_message_matches_script(
    server: ScriptedMessagesServer, client: anthropic.Anthropic, reply: Reply
) -> None:
    server.add(reply)
    with client.messages.stream(model="claude-s", max_tokens=64, messages=MESSAGES) as stream:
        final = stream.get_final_message()
    assert _blocks(final) == list(reply.content)
    assert final.stop_reason == reply.stop_reason
    assert final.usage.to_dict(exclude_none=True) == USAGE.to_dict()
    assert final.model == "claude-s"
    assert _message_posts(server)[0].body["stream"] is True


def test_create_stream_true_yields_api_events(server: ScriptedMessagesServer, client: anthropic.Anthropic) -> None:
    server.add(tool_use_reply(("read_file", {"path": "README.md"}), text="Reading it now.", usage=USAGE))
    stream = client.messages.create(model="m", max_tokens=64, messages=MESSAGES, stream=True)
    with stream:
        events = list(stream)
    types = [e.type for e in events]
    assert types[0] == "message_start"
    assert types[-2:] == ["message_delta", "message_stop"]
    assert types.count("content_block_start") == 2 == types.count("content_block_stop")
    start = events[0]
    assert start.type == "message_start"
    assert start.message.content == []
    assert start.message.usage.input_tokens == 123
    assert start.message.usage.cache_read_input_tokens == 8
    assert start.message.usage.output_tokens == 1
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta")
    assert text == "Reading it now."
    assert sum(1 for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta") >= 2
    tool_start = [e for e in events if e.type == "content_block_start"][1]
    assert tool_start.content_block.to_dict(exclude_none=True)["input"] == {}
    partial = "".join(
        e.delta.partial_json for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    )
    assert json.loads(partial) == {"path": "README.md"}
    delta = events[-2]
    assert delta.type == "message_delta"
    assert delta.delta.stop_reason == "tool_use"
    assert delta.delta.stop_sequence is None
    assert delta.usage.output_tokens == 45


def test_sse_wire_format_has_ping_and_event_names(server: ScriptedMessagesServer) -> None:
    server.add(text_reply("hi"))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        body = json.dumps({"model": "m", "max_tokens": 5, "messages": MESSAGES, "stream": True})
        conn.request("POST", "/v1/messages", body, {"content-type": "application/json"})
        resp = conn.getresponse()
        raw = resp.read().decode()
        assert resp.status == 200
        assert resp.getheader("content-type", "").startswith("text/event-stream")
    finally:
        conn.close()
    names = [line.removeprefix("event: ") for line in raw.splitlines() if line.startswith("event: ")]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert names == [event for event, _ in sse_events(text_reply("hi"), msg_id="x", model="m")]


def test_async_create_and_stream(server: ScriptedMessagesServer) -> None:
    server.add(text_reply("async hello", usage=USAGE), tool_use_reply(("list_files", {"path": "."}), usage=USAGE))

    async def run() -> tuple[Any, Any]:
        client = _async_client(server)
        try:
            created = await client.messages.create(model="m", max_tokens=64, messages=MESSAGES)
            async with client.messages.stream(model="m", max_tokens=64, messages=MESSAGES) as stream:
                final = await stream.get_final_message()
            return created, final
        finally:
            await client.close()

    created, final = asyncio.run(run())
    assert _blocks(created) == [{"type": "text", "text": "async hello"}]
    assert created.usage.to_dict(exclude_none=True) == USAGE.to_dict()
    assert final.stop_reason == "tool_use"
    assert [(b["name"], b["input"]) for b in _blocks(final)] == [("list_files", {"path": "."})]
    assert final.usage.to_dict(exclude_none=True) == USAGE.to_dict()
    assert all(r.headers["x-stainless-async"] != "false" for r in _message_posts(server))


def test_rate_limit_then_success_is_retried_by_the_sdk(server: ScriptedMessagesServer) -> None:
    server.add(error_reply(429), text_reply("after retry"))
    client = _client(server, max_retries=1)
    try:
        msg = client.messages.create(model="m", max_tokens=64, messages=MESSAGES)
    finally:
        client.close()
    assert _blocks(msg) == [{"type": "text", "text": "after retry"}]
    posts = _message_posts(server)
    assert [r.headers["x-stainless-retry-count"] for r in posts] == ["0", "1"]


def test_scripted_errors_surface_as_sdk_errors(server: ScriptedMessagesServer, client: anthropic.Anthropic) -> None:
    server.add(error_reply(529), error_reply(429, message="slow down"))
    with pytest.raises(anthropic.OverloadedError) as overloaded:
        client.messages.create(model="m", max_tokens=64, messages=MESSAGES)
    assert overloaded.value.status_code == 529
    assert overloaded.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "scripted overloaded_error (529)"},
    }
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(model="m", max_tokens=64, messages=MESSAGES, stream=True)
    assert limited.value.response.headers["retry-after"] == "0"
    assert "slow down" in str(limited.value)


def test_exhausted_script_is_a_500_the_sdk_does_not_retry(server: ScriptedMessagesServer) -> None:
    server.add(text_reply("only one"))
    client = _client(server, max_retries=2)  # the SDK default; x-should-retry: false wins
    try:
        client.messages.create(model="m", max_tokens=64, messages=MESSAGES)
        with pytest.raises(anthropic.InternalServerError) as err:
            client.messages.create(model="m", max_tokens=64, messages=MESSAGES)
    finally:
        client.close()
    assert err.value.status_code == 500
    assert "script exhausted" in str(err.value)
    assert len(_message_posts(server)) == 2


def test_requests_are_recorded_with_key(server: ScriptedMessagesServer, client: anthropic.Anthropic) -> None:
    tools: list[Any] = [
        {"name": "read_file", "description": "Read a file", "input_schema": {"type": "object", "properties": {}}}
    ]
    messages: list[Any] = [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "text"}]},
    ]
    server.add(text_reply("ok"))
    client.messages.create(model="m", max_tokens=99, system="You are terse.", tools=tools, messages=messages)
    (recorded,) = server.requests
    assert recorded.method == "POST"
    assert recorded.path == "/v1/messages"
    assert recorded.body["system"] == "You are terse."
    assert recorded.body["tools"] == tools
    assert recorded.body["messages"] == messages
    assert recorded.body["max_tokens"] == 99
    headers = recorded.headers
    assert headers.get("authorization") == "Bearer test-key" or headers.get("x-api-key") == "test-key"
    assert "anthropic-version" in headers


def test_count_tokens(server: ScriptedMessagesServer, client: anthropic.Anthropic) -> None:
    result = client.messages.count_tokens(model="m", messages=MESSAGES, system="sys")
    body = server.requests[0].body
    assert server.requests[0].path == "/v1/messages/count_tokens"
    assert result.input_tokens == len(json.dumps(body, sort_keys=True, separators=(",", ":"))) // 4
    assert result.input_tokens > 0
    assert server.pending == 0
    assert len(_message_posts(server)) == 0


def test_callable_script_and_add(client: anthropic.Anthropic, server: ScriptedMessagesServer) -> None:
    def echo(body: dict[str, Any]) -> Reply:
        return text_reply("echo: " + body["messages"][-1]["content"])

    with ScriptedMessagesServer(echo) as dynamic:
        sdk = _client(dynamic)
        try:
            dynamic.add(text_reply("queued first"))
            first = sdk.messages.create(model="m", max_tokens=5, messages=MESSAGES)
            second = sdk.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "ping"}])
        finally:
            sdk.close()
    assert _blocks(first) == [{"type": "text", "text": "queued first"}]
    assert _blocks(second) == [{"type": "text", "text": "echo: ping"}]


def test_callable_script_errors_are_reported() -> None:
    def broken(body: dict[str, Any]) -> Reply:
        raise KeyError("no rule for this request")

    with ScriptedMessagesServer(broken) as dynamic:
        sdk = _client(dynamic, max_retries=2)
        try:
            with pytest.raises(anthropic.InternalServerError, match="script callable raised KeyError"):
                sdk.messages.create(model="m", max_tokens=5, messages=MESSAGES)
        finally:
            sdk.close()
        assert len(dynamic.requests) == 1


def test_unknown_path_and_bad_requests(server: ScriptedMessagesServer, client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("claude-nope")
    assert server.requests[0].method == "GET"
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("POST", "/v1/messages", "not json", {"content-type": "application/json"})
        resp = conn.getresponse()
        payload = json.loads(resp.read())
        assert resp.status == 400
        assert payload["type"] == "error"
        assert payload["error"]["type"] == "invalid_request_error"
        conn.request("GET", "/v1/messages")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 405
    finally:
        conn.close()


def test_close_is_idempotent_and_releases_the_port() -> None:
    server = ScriptedMessagesServer([text_reply("x")])
    client = _client(server)
    try:
        client.messages.create(model="m", max_tokens=5, messages=MESSAGES)
    finally:
        server.close()  # while the client still holds a keep-alive connection
        server.close()
        client.close()
    probe = ScriptedMessagesServer(port=server.port)
    probe.close()


# ------------------------------------------------------------------- OpenAI

# What a script's USAGE becomes in OpenAI formats: cache reads and writes count as prompt tokens.
CHAT_USAGE = {
    "prompt_tokens": 138,
    "completion_tokens": 45,
    "total_tokens": 183,
    "prompt_tokens_details": {"cached_tokens": 8},
}


def _openai(server: ScriptedMessagesServer, max_retries: int = 0, *, v1: bool = True) -> openai.OpenAI:
    # Strict validation makes the SDK reject any body that does not match its models exactly.
    return openai.OpenAI(
        base_url=server.base_url + ("/v1" if v1 else ""),
        api_key="k",
        max_retries=max_retries,
        timeout=30,
        _strict_response_validation=True,
    )


@pytest.fixture
def oai(server: ScriptedMessagesServer) -> Iterator[openai.OpenAI]:
    sdk = _openai(server)
    yield sdk
    sdk.close()


def _chat_posts(server: ScriptedMessagesServer) -> list[Any]:
    return [r for r in server.requests if r.path.split("?")[0].endswith("/chat/completions")]


def _calls(message: Any) -> list[tuple[str, str, Any]]:
    return [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]


def test_openai_text_reply(server: ScriptedMessagesServer, oai: openai.OpenAI) -> None:
    server.add(text_reply("Hello there", usage=USAGE))
    completion = oai.chat.completions.create(model="gpt-echo-me", messages=MESSAGES)
    assert completion.id == "chatcmpl_test_0001"
    assert completion.object == "chat.completion"
    assert completion.model == "gpt-echo-me"
    assert completion._request_id == "req_test_0001"
    (choice,) = completion.choices
    assert choice.index == 0
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content == "Hello there"
    assert choice.message.tool_calls is None
    assert completion.usage is not None
    assert completion.usage.to_dict(exclude_none=True) == CHAT_USAGE


def test_openai_tool_use_reply_with_two_calls(server: ScriptedMessagesServer, oai: openai.OpenAI) -> None:
    reply = tool_use_reply(
        ("list_files", {"path": "."}),
        ("call_explicit", "read_file", {"path": "a b/ü.md", "n": [1, 2]}),
        text="Looking around.",
    )
    server.add(reply, tool_use_reply(("list_files", {"path": ".."})))
    message = oai.chat.completions.create(model="m", messages=MESSAGES).choices[0].message
    assert message.content == "Looking around."
    assert _calls(message) == [
        (reply.content[1]["id"], "list_files", {"path": "."}),
        ("call_explicit", "read_file", {"path": "a b/ü.md", "n": [1, 2]}),
    ]
    assert all(call.type == "function" for call in message.tool_calls or [])
    tool_only = oai.chat.completions.create(model="m", messages=MESSAGES).choices[0]
    assert tool_only.finish_reason == "tool_calls"
    assert tool_only.message.content is None
    assert [name for _, name, _ in _calls(tool_only.message)] == ["list_files"]


def test_openai_finish_reasons(server: ScriptedMessagesServer, oai: openai.OpenAI) -> None:
    stop_reasons = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "pause_turn": "stop"}
    server.add(*(text_reply("x", stop_reason=reason) for reason in stop_reasons))
    got = [oai.chat.completions.create(model="m", messages=MESSAGES).choices[0].finish_reason for _ in stop_reasons]
    assert got == list(stop_reasons.values())


@pytest.mark.parametrize("include_usage", [True, False])
def test_openai_create_stream_true_chunks(
    server: ScriptedMessagesServer, oai: openai.OpenAI, include_usage: bool
) -> None:
    reply = tool_use_reply(
        ("read_file", {"path": "README.md"}), ("list_files", {"path": "."}), text="Reading it now.", usage=USAGE
    )
    server.add(reply)
    stream = oai.chat.completions.create(
        model="gpt-s",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": include_usage},
    )
    with stream:
        chunks = list(stream)
    assert {(c.id, c.object, c.model) for c in chunks} == {("chatcmpl_test_0001", "chat.completion.chunk", "gpt-s")}
    if include_usage:
        *chunks, last = chunks
        assert last.choices == []
        assert last.usage is not None
        assert last.usage.to_dict(exclude_none=True) == CHAT_USAGE
    assert all(c.usage is None for c in chunks)
    deltas = [c.choices[0].delta for c in chunks]
    assert deltas[0].role == "assistant"
    assert deltas[0].content == ""
    text_pieces = [d.content for d in deltas[1:] if d.content]
    assert len(text_pieces) >= 2
    assert "".join(text_pieces) == "Reading it now."
    tool_deltas = [call for d in deltas for call in d.tool_calls or []]
    starts = [call for call in tool_deltas if call.id is not None]
    assert [(s.index, s.id, s.type) for s in starts] == [
        (0, reply.content[1]["id"], "function"),
        (1, reply.content[2]["id"], "function"),
    ]
    assert all(s.function is not None and s.function.arguments == "" for s in starts)
    assert [s.function.name for s in starts if s.function] == ["read_file", "list_files"]
    for index, expected in enumerate([{"path": "README.md"}, {"path": "."}]):
        pieces = [call for call in tool_deltas if call.index == index and call.id is None]
        assert all(p.type is None and p.function is not None and p.function.name is None for p in pieces)
        assert json.loads("".join(p.function.arguments or "" for p in pieces if p.function)) == expected
    assert [c.choices[0].finish_reason for c in chunks] == [None] * (len(chunks) - 1) + ["tool_calls"]
    assert deltas[-1].to_dict(exclude_none=True) == {}


def test_openai_sse_wire_format_is_data_lines_and_done(server: ScriptedMessagesServer) -> None:
    server.add(text_reply("hi"))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        body = json.dumps({"model": "m", "messages": MESSAGES, "stream": True})
        conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
        resp = conn.getresponse()
        raw = resp.read().decode()
        assert resp.status == 200
        assert resp.getheader("content-type", "").startswith("text/event-stream")
    finally:
        conn.close()
    frames = raw.split("\n\n")
    assert frames[-2:] == ["data: [DONE]", ""]
    assert all(frame.startswith("data: {") and "\n" not in frame for frame in frames[:-2])
    sent = [json.loads(frame.removeprefix("data: ")) for frame in frames[:-2]]
    assert sent == list(chat_completion_chunks(text_reply("hi"), completion_id="chatcmpl_test_0001", model="m"))
    assert [chunk["choices"][0]["delta"] for chunk in sent] == [
        {"role": "assistant", "content": "", "refusal": None},
        {"content": "h"},
        {"content": "i"},
        {},
    ]
    assert "usage" not in sent[0]


@pytest.mark.parametrize("include_usage", [True, False])
@pytest.mark.parametrize("reply", SCRIPTED)
def test_openai_stream_helper_final_completion(
    server: ScriptedMessagesServer, oai: openai.OpenAI, reply: Reply, include_usage: bool
) -> None:
    server.add(reply)
    with oai.chat.completions.stream(
        model="gpt-s", messages=MESSAGES, stream_options={"include_usage": include_usage}
    ) as stream:
        final = stream.get_final_completion()
    (choice,) = final.choices
    assert choice.message.content == reply.text
    assert _calls(choice.message) == [
        (b["id"], b["name"], b["input"]) for b in reply.content if b["type"] == "tool_use"
    ]
    assert choice.finish_reason == reply.finish_reason
    assert final.model == "gpt-s"
    if include_usage:
        assert final.usage is not None
        assert final.usage.to_dict(exclude_none=True) == CHAT_USAGE
    else:
        assert final.usage is None
    assert _chat_posts(server)[0].body["stream"] is True


def test_openai_async_create_and_stream(server: ScriptedMessagesServer) -> None:
    server.add(text_reply("async hello", usage=USAGE), tool_use_reply(("list_files", {"path": "."}), usage=USAGE))

    async def run() -> tuple[Any, Any]:
        client = openai.AsyncOpenAI(
            base_url=server.base_url + "/v1", api_key="k", max_retries=0, timeout=30, _strict_response_validation=True
        )
        try:
            created = await client.chat.completions.create(model="m", messages=MESSAGES)
            async with client.chat.completions.stream(
                model="m", messages=MESSAGES, stream_options={"include_usage": True}
            ) as stream:
                final = await stream.get_final_completion()
            return created, final
        finally:
            await client.close()

    created, final = asyncio.run(run())
    assert created.choices[0].message.content == "async hello"
    assert created.usage.to_dict(exclude_none=True) == CHAT_USAGE
    assert final.choices[0].finish_reason == "tool_calls"
    assert [(name, args) for _, name, args in _calls(final.choices[0].message)] == [("list_files", {"path": "."})]
    assert final.usage.to_dict(exclude_none=True) == CHAT_USAGE
    assert all(r.headers["x-stainless-async"] != "false" for r in _chat_posts(server))


def test_openai_exhausted_script_is_not_retried(server: ScriptedMessagesServer) -> None:
    server.add(text_reply("only one"))
    client = _openai(server, max_retries=2)  # the SDK default; x-should-retry: false wins
    try:
        client.chat.completions.create(model="m", messages=MESSAGES)
        with pytest.raises(openai.InternalServerError) as err:
            client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    finally:
        client.close()
    assert err.value.status_code == 500
    assert "script exhausted" in str(err.value)
    assert err.value.request_id == "req_test_0002"
    assert isinstance(err.value.body, dict)
    assert {key: err.value.body[key] for key in ("type", "param", "code")} == {
        "type": "server_error",
        "param": None,
        "code": None,
    }
    assert "script exhausted" in err.value.body["message"]
    assert len(_chat_posts(server)) == 2


def test_openai_rate_limit_then_success_is_retried(server: ScriptedMessagesServer) -> None:
    server.add(error_reply(429), text_reply("after retry"))
    client = _openai(server, max_retries=1)
    try:
        completion = client.chat.completions.create(model="m", messages=MESSAGES)
    finally:
        client.close()
    assert completion.choices[0].message.content == "after retry"
    assert completion.id == "chatcmpl_test_0002"
    assert [r.headers["x-stainless-retry-count"] for r in _chat_posts(server)] == ["0", "1"]


def test_openai_scripted_errors(server: ScriptedMessagesServer, oai: openai.OpenAI) -> None:
    server.add(error_reply(429, message="slow down"), error_reply(400, "invalid_request_error", "bad tools"))
    with pytest.raises(openai.RateLimitError) as limited:
        oai.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert limited.value.body == {"message": "slow down", "type": "rate_limit_error", "param": None, "code": None}
    assert limited.value.response.headers["retry-after-ms"] == "1"
    with pytest.raises(openai.BadRequestError, match="bad tools"):
        oai.responses.create(model="m", input="hi")


def test_openai_responses_text_and_function_call(server: ScriptedMessagesServer, oai: openai.OpenAI) -> None:
    tools: list[Any] = [
        {"type": "function", "name": "read_file", "parameters": {"type": "object", "properties": {}}, "strict": False}
    ]
    reply = tool_use_reply(
        ("read_file", {"path": "README.md"}), ("call_2", "read_file", {"path": "b"}), text="Reading."
    )
    server.add(text_reply("plain answer", usage=USAGE), reply)
    plain = oai.responses.create(model="gpt-r", input="hi")
    assert (plain.id, plain.object, plain.model, plain.status) == ("resp_test_0001", "response", "gpt-r", "completed")
    assert plain.output_text == "plain answer"
    assert [item.type for item in plain.output] == ["message"]
    assert plain.usage is not None
    assert plain.usage.to_dict() == {
        "input_tokens": 138,
        "input_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 7},
        "output_tokens": 45,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 183,
    }
    called = oai.responses.create(model="gpt-r", input="read", tools=tools, instructions="Be terse.")
    assert called.output_text == "Reading."
    assert called.instructions == "Be terse."
    assert [tool.to_dict(exclude_none=True) for tool in called.tools] == tools
    calls = [item for item in called.output if item.type == "function_call"]
    assert [(c.id, c.call_id, c.name, json.loads(c.arguments), c.status) for c in calls] == [
        ("fc_test_0002_1", reply.content[1]["id"], "read_file", {"path": "README.md"}, "completed"),
        ("fc_test_0002_2", "call_2", "read_file", {"path": "b"}, "completed"),
    ]
    assert [r.path for r in server.requests] == ["/v1/responses", "/v1/responses"]


def test_openai_responses_stream_plays_the_real_event_sequence(
    server: ScriptedMessagesServer, oai: openai.OpenAI
) -> None:
    reply = tool_use_reply(("c1", "read_file", {"path": "README.md"}), text="Reading.", usage=USAGE)
    server.add(reply, reply)
    plain = oai.responses.create(model="m", input="hi")
    with oai.responses.stream(model="m", input="hi") as stream:
        kinds = [event.type for event in stream]
        streamed = stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds and "response.function_call_arguments.delta" in kinds
    assert kinds.count("response.output_item.added") == kinds.count("response.output_item.done") == 2
    assert streamed.output_text == plain.output_text == "Reading."
    assert [i.to_dict(exclude_none=True) for i in streamed.output] == [
        {**i.to_dict(exclude_none=True), "id": str(i.id).replace("0001", "0002")} for i in plain.output
    ]
    assert streamed.usage == plain.usage


def test_openai_requests_are_recorded(server: ScriptedMessagesServer, oai: openai.OpenAI) -> None:
    tools: list[Any] = [
        {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}}}
    ]
    messages: list[Any] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "read it"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "text"},
    ]
    server.add(text_reply("ok"))
    oai.chat.completions.create(model="m", messages=messages, tools=tools, max_completion_tokens=99)
    (recorded,) = server.requests
    assert (recorded.method, recorded.path) == ("POST", "/v1/chat/completions")
    assert recorded.body == {"model": "m", "messages": messages, "tools": tools, "max_completion_tokens": 99}
    assert recorded.headers["authorization"] == "Bearer k"


def test_openai_routes_without_v1_share_the_script(server: ScriptedMessagesServer, client: anthropic.Anthropic) -> None:
    server.add(text_reply("one"), text_reply("two"), text_reply("three"))
    bare = _openai(server, v1=False)
    try:
        msg = client.messages.create(model="m", max_tokens=5, messages=MESSAGES)
        completion = bare.chat.completions.create(model="m", messages=MESSAGES)
        response = bare.responses.create(model="m", input="hi")
    finally:
        bare.close()
    assert (msg.id, completion.id, response.id) == ("msg_test_0001", "chatcmpl_test_0002", "resp_test_0003")
    assert [_blocks(msg)[0]["text"], completion.choices[0].message.content, response.output_text] == [
        "one",
        "two",
        "three",
    ]
    assert [r.path for r in server.requests] == ["/v1/messages", "/chat/completions", "/responses"]


def test_openai_bad_requests_use_the_openai_error_shape(server: ScriptedMessagesServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("POST", "/v1/chat/completions", "not json", {"content-type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 400
        assert json.loads(resp.read())["error"]["type"] == "invalid_request_error"
        conn.request("GET", "/v1/responses")
        resp = conn.getresponse()
        payload = json.loads(resp.read())
        assert resp.status == 405
        assert set(payload["error"]) == {"message", "type", "param", "code"}
        conn.request("POST", "/v1/chat/completions/count_tokens", "{}", {"content-type": "application/json"})
        resp = conn.getresponse()
        payload = json.loads(resp.read())
        assert resp.status == 404
        assert payload["type"] == "error"
    finally:
        conn.close()
    assert server.pending == 0


# ---------------------------------------------------------------------- CLI


def _start_cli(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", "prompt_composer.testing", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _first_line(proc: subprocess.Popen[str]) -> str:
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    return lines.get(timeout=60)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=30)


@pytest.mark.slow
def test_cli_demo_prints_ready_and_answers() -> None:
    proc = _start_cli("--demo")
    try:
        line = _first_line(proc)
        assert line.startswith("READY http://127.0.0.1:"), line
        base_url = line.split()[1]
        client = anthropic.Anthropic(base_url=base_url, api_key="test-key", max_retries=0, timeout=30)
        try:
            msg = client.messages.create(model="m", max_tokens=64, messages=MESSAGES)
        finally:
            client.close()
        assert msg.stop_reason == "tool_use"
        tool_calls = [(b["name"], b["input"]) for b in _blocks(msg) if b["type"] == "tool_use"]
        assert tool_calls == [("list_files", {"path": "."})]
    finally:
        _stop(proc)


@pytest.mark.slow
def test_cli_demo_serves_openai_too() -> None:
    proc = _start_cli("--demo")
    try:
        base_url = _first_line(proc).split()[1]
        client = openai.OpenAI(base_url=base_url + "/v1", api_key="k", max_retries=0, timeout=30)
        try:
            completion = client.chat.completions.create(model="m", messages=MESSAGES)
        finally:
            client.close()
        message = completion.choices[0].message
        assert message.content == "Let me look at the directory first."
        assert [(name, args) for _, name, args in _calls(message)] == [("list_files", {"path": "."})]
    finally:
        _stop(proc)


@pytest.mark.slow
def test_cli_script_file_exits_after_the_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from file", "usage": {"input_tokens": 3, "output_tokens": 2}}]))
    proc = _start_cli("--script", str(script), "--linger", "0")
    try:
        base_url = _first_line(proc).split()[1]
        client = anthropic.Anthropic(base_url=base_url, api_key="test-key", max_retries=0, timeout=30)
        try:
            msg = client.messages.create(model="m", max_tokens=64, messages=MESSAGES)
        finally:
            client.close()
        assert _blocks(msg) == [{"type": "text", "text": "from file"}]
        assert (msg.usage.input_tokens, msg.usage.output_tokens) == (3, 2)
        assert proc.wait(timeout=60) == 0
    finally:
        _stop(proc)


@pytest.mark.slow
def test_cli_rejects_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text(json.dumps([{"nothing": 1}]))
    proc = _start_cli("--script", str(script))
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        _stop(proc)
    assert proc.returncode == 2
    assert "needs 'text', 'tool_use' or 'error'" in err


def test_a_client_that_resets_its_connection_is_not_a_server_error(capfd: pytest.CaptureFixture[str]) -> None:
    """A client hanging up mid-request (RST) prints no traceback, and the server keeps answering."""
    import socket
    import struct
    import time

    with ScriptedMessagesServer([text_reply("still here")]) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        for _ in range(3):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n")  # headers never finished
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
            sock.close()
        time.sleep(0.3)  # the handler threads meet the reset
        client = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        reply = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        assert reply.content[0].type == "text" and reply.content[0].text == "still here"
        client.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ConnectionResetError" not in err, err
