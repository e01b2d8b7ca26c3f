"""The request as an operation: a model puts a new user message in generic words before preselection searches it
(``wrap(..., rewriter=model_rewriter(sdk, model=...))``). The real SDKs against the scripted server (exact
protocol); what the line changes in the search, on a small registry with the keyword search."""

from __future__ import annotations

import asyncio
import logging
import socketserver
import threading
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from prompt_composer import Composer, Registry
from prompt_composer.agent.anthropic import wrap
from prompt_composer.agent.openai import wrap as wrap_openai
from prompt_composer.agent.preselection import request_messages
from prompt_composer.agent.results import TokenUsage
from prompt_composer.agent.rewriting import model_rewriter
from prompt_composer.core.modes import PreselectConfig, TierConfig
from prompt_composer.discovery.rewrite import (
    MAX_REWRITE_WORDS,
    REWRITE_EXAMPLES,
    REWRITE_MAX_TOKENS,
    REWRITE_SYSTEM,
    is_async_rewriter,
    rewrite_line,
    rewrite_line_async,
    searched_text,
    usable_rewrite,
)
from prompt_composer.learn.events import EventLog, JsonlSink, read_events
from prompt_composer.testing.replies import text_reply, tool_use_reply
from prompt_composer.testing.scripted import Usage
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import TRAVEL_DOCS, bodies, make_mode, message_text, served

SMALL = TierConfig(share=0.004, context_tokens=200_000)  # only catalog lines fit: a preselected tool is appended
REG = Registry.from_docs(
    TRAVEL_DOCS,
    [make_mode("auto", groups=["read", "mcp"], tiers=SMALL, preselect=PreselectConfig(k=2, min_confidence=0.1))],
)
COMPOSER = Composer(REG)
# No word of the request is in weather_lookup's doc: the keyword search alone finds nothing to load.
REQUEST = "should I pack an umbrella for Lyon tomorrow?"


def names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


# ------------------------------------------------------------------------------------------- the guard


@pytest.mark.parametrize(
    ("answer", "line"),
    [
        ("get the weather forecast for a city", "get the weather forecast for a city"),
        ('  "Get the weather forecast for a city."\nextra words', "Get the weather forecast for a city"),
        ("\n\nconvert an amount between currencies.", "convert an amount between currencies"),
        ("none", None),
        ("None.", None),
        ("", None),
        (None, None),
        ("   ", None),
        (" ".join(["word"] * (MAX_REWRITE_WORDS + 1)), None),  # an answer to the message, not its operation
    ],
)
def test_a_rewrite_is_searched_only_when_it_is_one_short_line_naming_an_operation(
    answer: str | None, line: str | None
) -> None:
    assert usable_rewrite(answer) == line


def test_the_line_is_searched_before_the_request_and_a_failing_rewriter_leaves_the_request_as_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert searched_text(REQUEST, lambda text: "get the weather forecast") == (
        f"get the weather forecast. {REQUEST}",
        "get the weather forecast",
    )
    assert searched_text(REQUEST, lambda text: "none") == (REQUEST, None)
    assert searched_text(REQUEST, None) == (REQUEST, None)

    def down(text: str) -> str:
        raise ConnectionError("model server is down")

    with caplog.at_level(logging.WARNING, logger="prompt_composer"):
        assert searched_text(REQUEST, down) == (REQUEST, None)
    assert "request rewriter failed (ConnectionError: model server is down)" in caplog.text


def test_a_rewriter_that_returns_no_text_leaves_the_request_as_written(caplog: pytest.LogCaptureFixture) -> None:
    async def coroutine(text: str) -> str:  # an async function given where a plain one is needed
        return "never awaited"

    with caplog.at_level(logging.WARNING, logger="prompt_composer"):
        assert searched_text(REQUEST, coroutine) == (REQUEST, None)  # type: ignore[arg-type]
        assert searched_text(REQUEST, lambda text: {"content": "an SDK response"}) == (REQUEST, None)  # type: ignore[arg-type,return-value]
    assert "request rewriter is async, and a synchronous client cannot await it" in caplog.text
    assert "returned dict, not text" in caplog.text


def test_the_prompt_names_no_tool_of_any_catalog_and_asks_for_one_line() -> None:
    shown = " ".join([REWRITE_SYSTEM, *(f"{a} {b}" for a, b in REWRITE_EXAMPLES)]).lower()
    for word in ("notion", "github", "playwright", "chrome", "git ", "memory", "filesystem", "browser", "weather_"):
        assert word not in shown
    assert "one line" in REWRITE_SYSTEM and all(len(b.split()) <= MAX_REWRITE_WORDS for _, b in REWRITE_EXAMPLES)


# ------------------------------------------------------------------------------------------- the SDK clients


def test_an_anthropic_rewriter_sends_the_examples_as_turns_and_reads_the_text() -> None:
    with ScriptedMessagesServer([text_reply("get the weather forecast for a city")]) as server:
        sdk = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        rewrite = model_rewriter(sdk, model="small", extra_body={"temperature": 0})
        assert rewrite(REQUEST) == "get the weather forecast for a city"
        (body,) = bodies(server)
    assert body["model"] == "small" and body["system"] == REWRITE_SYSTEM and body["temperature"] == 0
    assert "tools" not in body and body["max_tokens"] <= 64
    turns = body["messages"]
    assert len(turns) == 2 * len(REWRITE_EXAMPLES) + 1
    assert [t["role"] for t in turns[:2]] == ["user", "assistant"] and turns[-1] == {"role": "user", "content": REQUEST}


def test_an_openai_rewriter_speaks_chat_completions() -> None:
    with ScriptedMessagesServer([text_reply("convert an amount between currencies")]) as server:
        sdk = openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        rewrite = model_rewriter(sdk, model="small")
        assert rewrite("how much is 30 quid in euros") == "convert an amount between currencies"
        (body,) = [r.body for r in server.requests if r.path == "/v1/chat/completions"]
    assert body["messages"][0] == {"role": "system", "content": REWRITE_SYSTEM}
    assert body["messages"][-1] == {"role": "user", "content": "how much is 30 quid in euros"}
    # OpenAI's reasoning models refuse max_tokens; every compatible server takes this name.
    assert body["max_completion_tokens"] == REWRITE_MAX_TOKENS and "max_tokens" not in body


def test_a_rewriter_counts_what_its_requests_cost_in_either_format() -> None:
    used = Usage(input_tokens=140, output_tokens=7, cache_read_input_tokens=30)
    replies = [text_reply("get the weather forecast for a city", usage=used) for _ in range(3)]
    with ScriptedMessagesServer(replies) as server:
        messages = model_rewriter(anthropic.Anthropic(base_url=server.base_url, api_key="k"), model="m")
        chat = model_rewriter(openai.OpenAI(base_url=server.base_url + "/v1", api_key="k"), model="m")
        assert messages.requests == 0 and messages.usage == TokenUsage()
        messages(REQUEST)
        messages(REQUEST)
        chat(REQUEST)
    assert messages.requests == 2 and chat.requests == 1
    assert messages.usage == TokenUsage(input_tokens=280, output_tokens=14, cache_read_input_tokens=60)
    # Chat Completions folds cache reads into prompt_tokens: read back apart, as the loop's own usage is.
    assert chat.usage == TokenUsage(input_tokens=140, output_tokens=7, cache_read_input_tokens=30)


def test_a_rewriter_that_times_out_is_not_retried_and_the_request_goes_as_written() -> None:
    connections: list[int] = []
    release = threading.Event()

    class Silent(socketserver.BaseRequestHandler):
        def handle(self) -> None:  # reads the request, never answers
            connections.append(1)
            release.wait(10)

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Silent) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}"
            sdk = anthropic.Anthropic(base_url=url, api_key="k")  # the SDK's own default: 2 retries
            rewriter = model_rewriter(sdk, model="m", timeout=0.3)
            assert searched_text(REQUEST, rewriter) == (REQUEST, None)
            assert rewriter.requests == 0 and rewriter.usage == TokenUsage()  # nothing answered, nothing counted
        finally:
            release.set()
            server.shutdown()
    assert connections == [1]  # asked once, not retried


def test_model_rewriter_over_an_async_client_is_awaited_and_anything_else_is_refused_by_name() -> None:
    async def ask(server: ScriptedMessagesServer) -> tuple[str | None, str | None]:
        async with (
            anthropic.AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0) as messages_sdk,
            openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0) as chat_sdk,
        ):
            messages, chat = model_rewriter(messages_sdk, model="m"), model_rewriter(chat_sdk, model="m")
            assert is_async_rewriter(messages) and is_async_rewriter(chat)
            lines = await rewrite_line_async(REQUEST, messages), await rewrite_line_async(REQUEST, chat)
            assert messages.requests == chat.requests == 1 and messages.usage.output_tokens == 5
            return lines

    replies = [text_reply("get the weather forecast for a city"), text_reply("look up a city's forecast")]
    with ScriptedMessagesServer(replies) as server:
        assert asyncio.run(ask(server)) == ("get the weather forecast for a city", "look up a city's forecast")
        assert [r.path for r in server.requests] == ["/v1/messages", "/v1/chat/completions"]
    assert not is_async_rewriter(model_rewriter(anthropic.Anthropic(api_key="k"), model="m"))
    with pytest.raises(TypeError, match="not dict"):
        model_rewriter({}, model="m")


# ------------------------------------------------------------------------------------------- in the loop


def test_preselection_searches_the_rewritten_line_once_per_message_and_loads_what_it_names(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    asked: list[str] = []

    def rewriter(text: str) -> str:
        asked.append(text)
        return "look up the weather forecast for a city"

    script = [tool_use_reply(("w1", "weather_lookup", {"city": "Lyon"})), text_reply("Take it.")]
    events = EventLog(JsonlSink(log), include_content=True)
    with served(script) as (server, sdk):
        client = wrap(sdk, composer=COMPOSER, mode="auto", task_id="t", rewriter=rewriter, events=events)
        client.run(REQUEST, model="m", executors={"weather_lookup": lambda i: "rain"})
        first, second = bodies(server)
    events.close()
    assert asked == [REQUEST]  # once for the task's message, not again on the request after the tool ran
    assert names(first)[-1] == "weather_lookup" and names(second) == names(first)
    # The model reads the user's words and the note, never the rewritten line.
    note = message_text(first["messages"][0])
    assert note.startswith(REQUEST + "\n\n[prompt-composer]") and "look up the weather" not in note
    (event,) = [e for e in read_events([log])[0] if e["event"] == "preselect"]
    assert event["tools"][0] == "weather_lookup"
    assert event["query"] == f"look up the weather forecast for a city. {REQUEST}"
    assert event["rewritten"] is True and 0 <= event["rewrite_s"] < 60  # asked once, its time logged


def test_without_a_rewriter_or_with_a_failing_one_the_request_is_searched_as_written() -> None:
    def down(text: str) -> str:
        raise TimeoutError("no answer")

    for rewriter in (None, down):
        with served([text_reply("Maybe.")]) as (server, sdk):
            client = wrap(sdk, composer=COMPOSER, mode="auto", task_id="t", rewriter=rewriter)
            assert client.run(REQUEST, model="m").text == "Maybe."
            (body,) = bodies(server)
        assert "weather_lookup" not in names(body)  # the keyword search finds nothing in the words as written


def test_a_rewriter_that_is_not_callable_is_refused_at_wrap() -> None:
    with pytest.raises(TypeError, match="rewriter takes a callable"):
        wrap(anthropic.Anthropic(api_key="k"), composer=COMPOSER, mode="auto", task_id="t", rewriter="yes")  # type: ignore[typeddict-item]


def test_each_new_user_message_is_rewritten_once_and_only_its_own_text() -> None:
    asked: list[str] = []

    def rewriter(text: str) -> str:
        asked.append(text)
        return "look up the weather forecast for a city"

    later = "and what would 40 euros be in yen?"
    with served([text_reply("Take it."), text_reply("About 6,500."), text_reply("Sure.")]) as (_server, sdk):
        client = wrap(sdk, composer=COMPOSER, mode="auto", task_id="t", rewriter=rewriter)
        first = [{"role": "user", "content": REQUEST}]
        client.messages.create(model="m", max_tokens=50, messages=first)
        second = [*first, {"role": "assistant", "content": "Take it."}, {"role": "user", "content": later}]
        client.messages.create(model="m", max_tokens=50, messages=second)
        client.messages.create(model="m", max_tokens=50, messages=second)  # the same messages again: no new ask
    assert asked == [REQUEST, later]


def test_a_rewriter_in_a_mode_without_preselect_is_never_asked_and_wrap_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    plain = Composer(Registry.from_docs(TRAVEL_DOCS, [make_mode("plain", groups=["read", "mcp"])]))

    def rewriter(text: str) -> str:
        raise AssertionError("asked in a mode without preselect")

    with caplog.at_level(logging.WARNING, logger="prompt_composer"), served([text_reply("ok")]) as (_server, sdk):
        client = wrap(sdk, composer=plain, mode="plain", task_id="t", rewriter=rewriter)
        assert client.run(REQUEST, model="m").text == "ok"
    assert "rewriter given, but mode 'plain' has no preselect" in caplog.text


# ------------------------------------------------------------------------------------------- async clients


def async_sdk(server: ScriptedMessagesServer) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)


def test_the_async_loop_runs_a_sync_rewriter_in_a_thread_so_its_event_loop_goes_on() -> None:
    """A sync rewriter blocks until another task of the event loop has run: asked in the loop's own thread it
    would wait out its 5 s and find nothing set; asked in a worker thread it is released at once."""
    released = threading.Event()
    seen: list[bool] = []

    def rewriter(text: str) -> str:
        seen.append(released.wait(5))
        return "look up the weather forecast for a city"

    async def other_task() -> None:
        while not released.is_set():
            await asyncio.sleep(0.01)
            released.set()

    async def main(server: ScriptedMessagesServer) -> str:
        async with wrap(async_sdk(server), composer=COMPOSER, mode="auto", task_id="t", rewriter=rewriter) as pc:
            other = asyncio.create_task(other_task())
            result = await pc.run(REQUEST, model="m", executors={"weather_lookup": lambda i: "rain"})
            await other
            return result.text

    script = [tool_use_reply(("w1", "weather_lookup", {"city": "Lyon"})), text_reply("Take it.")]
    with ScriptedMessagesServer(script) as server:
        assert asyncio.run(main(server)) == "Take it."
        first, second = bodies(server)
    assert seen == [True]  # asked once for the task's message, while the other task ran
    assert names(first)[-1] == "weather_lookup" and names(second) == names(first)


@pytest.mark.parametrize("call", ["create", "stream"])
def test_wrapped_async_requests_await_an_async_rewriter_once_per_new_message(call: str) -> None:
    asked: list[str] = []

    async def rewriter(text: str) -> str:
        asked.append(text)
        await asyncio.sleep(0)
        return "look up the weather forecast for a city"

    async def send(pc: Any, messages: list[dict[str, Any]]) -> str:
        if call == "stream":
            async with pc.messages.stream(model="m", max_tokens=50, messages=messages) as stream:
                return str(await stream.get_final_text())
        reply = await pc.messages.create(model="m", max_tokens=50, messages=messages)
        return str(reply.content[0].text)

    async def main(server: ScriptedMessagesServer) -> list[str]:
        async with wrap(async_sdk(server), composer=COMPOSER, mode="auto", task_id="t", rewriter=rewriter) as pc:
            first = [{"role": "user", "content": REQUEST}]
            answers = [await send(pc, first), await send(pc, first)]  # the same message again: not asked again
            later = [*first, {"role": "assistant", "content": "Take it."}, {"role": "user", "content": "thanks!"}]
            return [*answers, await send(pc, later)]

    with ScriptedMessagesServer([text_reply("Take it."), text_reply("Still."), text_reply("Bye.")]) as server:
        assert asyncio.run(main(server)) == ["Take it.", "Still.", "Bye."]
        first, again, _last = bodies(server)
    assert asked == [REQUEST, "thanks!"]
    assert names(first)[-1] == "weather_lookup" and names(again) == names(first)


def test_an_async_rewriter_under_a_sync_client_is_logged_and_the_request_searched_as_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def rewriter(text: str) -> str:
        return "look up the weather forecast for a city"

    with caplog.at_level(logging.WARNING, logger="prompt_composer"), served([text_reply("Maybe.")]) as (server, sdk):
        client = wrap(sdk, composer=COMPOSER, mode="auto", task_id="t", rewriter=rewriter)
        assert client.run(REQUEST, model="m").text == "Maybe."  # no crash, no "never awaited" warning either
        (body,) = bodies(server)
    assert "weather_lookup" not in names(body)
    assert "request rewriter is async, and a synchronous client cannot await it" in caplog.text


def test_an_async_openai_client_awaits_a_sync_rewriter_for_chat_completions() -> None:
    asked: list[str] = []

    def rewriter(text: str) -> str:
        asked.append(text)
        return "look up the weather forecast for a city"

    async def main(server: ScriptedMessagesServer) -> None:
        sdk = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        pc = wrap_openai(sdk, composer=COMPOSER, mode="auto", task_id="t", rewriter=rewriter)
        await pc.chat.completions.create(model="m", messages=[{"role": "user", "content": REQUEST}])
        await sdk.close()

    with ScriptedMessagesServer([text_reply("Take it.")]) as server:
        asyncio.run(main(server))
        (body,) = [r.body for r in server.requests if r.path == "/v1/chat/completions"]
    assert asked == [REQUEST]
    assert body["tools"][-1]["function"]["name"] == "weather_lookup"


def test_request_messages_reads_every_wire_format() -> None:
    user = {"role": "user", "content": "hi"}
    assert request_messages({"messages": [user]}) == [user]
    assert request_messages({"input": "hi"}) == [user]
    assert request_messages({"input": [user]}) == [user]
    assert request_messages({"model": "m"}) == [] and request_messages({"messages": None}) == []


def test_rewrite_line_never_raises_and_closes_a_coroutine_it_cannot_await() -> None:
    async def later(text: str) -> str:
        return "an operation"

    assert rewrite_line(REQUEST, later) is None  # closed: pytest's filterwarnings=error would fail a leaked one
    assert rewrite_line("   ", lambda t: "never asked") is None
    assert asyncio.run(rewrite_line_async(REQUEST, later)) == "an operation"
    assert asyncio.run(rewrite_line_async(REQUEST, lambda t: later(t))) == "an operation"  # a coroutine, awaited

    def down(text: str) -> str:
        raise TimeoutError("no answer")

    assert asyncio.run(rewrite_line_async(REQUEST, down)) is None
