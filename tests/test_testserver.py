"""Tests for prompt_composer.testserver, driving the real anthropic SDK against it."""

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
import pytest

from prompt_composer.testserver import (
    Reply,
    ScriptedMessagesServer,
    Usage,
    error_reply,
    sse_events,
    text_reply,
    tool_use_reply,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
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


# ---------------------------------------------------------------------- CLI


def _start_cli(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", "prompt_composer.testserver", *args],
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
