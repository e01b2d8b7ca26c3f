"""Native deferral over the Messages API: a mode compiled to ``defer_loading`` tools loaded by ``tool_reference``
blocks, and the loop's emulation of it for servers that cannot defer. The scripted server enforces the API's rules
(not every tool deferred; a reference names a declared deferred tool), so a request that breaks them fails here."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from prompt_composer import Composer, Registry, load_registry
from prompt_composer.agent.anthropic import wrap
from prompt_composer.agent.providers import anthropic_native_tools
from prompt_composer.cli import main
from prompt_composer.core.builtins import FETCH_TOOL_NAME, TOOL_SEARCH_NAME
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.testing.replies import text_reply, tool_use_reply
from prompt_composer.testing.rules import messages_problem
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import bodies, make_doc, make_mode, served

DOCS = [
    make_doc("read_file"),
    make_doc("weather_lookup", "mcp", brief="Look up the weather forecast for a city. Use it to plan a trip."),
    make_doc("train_times", "mcp", brief="List train departures between two stations. Use it for rail journeys."),
    make_doc("secret_tool", "admin", full="## secret_tool\nTOP SECRET"),
]
REG = Registry.from_docs(
    DOCS, [make_mode("work", groups=["read", "mcp"]), make_mode("text", groups=["read"], tool_style="text")]
)
COMPOSER = Composer(REG)
SEARCH = ToolSearch(REG, embedder=False)


def names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]


def test_compose_native_defers_every_tool_but_the_eager_ones(capsys: pytest.CaptureFixture[str]) -> None:
    shipped = load_registry()
    for slug in ("code", "architect", "debug", "orchestrator"):
        assert main(["compose", "--mode", slug, "--provider", "anthropic", "--native", "--format", "json"]) == 0
        data = json.loads(capsys.readouterr().out)
        mode = shipped.mode(slug)
        tools = {t["name"]: t for t in data["tools"]}
        own = [n for n in tools if n not in (TOOL_SEARCH_NAME, FETCH_TOOL_NAME)]
        assert set(own) == set(mode.allowed)  # every tool the mode allows, nothing outside it
        for name in own:
            assert tools[name].get("defer_loading", False) is (name not in mode.permanent), (slug, name)
        assert TOOL_SEARCH_NAME in tools and "defer_loading" not in tools[TOOL_SEARCH_NAME]
        # The documented 400s cannot come from any shipped mode: one tool at least is eager.
        assert messages_problem({"tools": data["tools"], "messages": []}) is None
    assert main(["compose", "--mode", "ask", "--native"]) == 2  # a text-style mode has no definitions to defer
    assert "text style" in capsys.readouterr().err


def test_a_search_answers_with_references_to_deferred_tools_and_the_prefix_never_changes() -> None:
    script = [
        tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "weather forecast for a city"})),
        tool_use_reply(("f1", FETCH_TOOL_NAME, {"name": "read_file"})),  # eager: no reference
        tool_use_reply(("w1", "weather_lookup", {"path": "Paris"})),
        text_reply("Sunny."),
    ]
    with served(script) as (server, sdk):
        client = wrap(sdk, composer=COMPOSER, search=SEARCH, mode="work", task_id="t", native=True)
        result = client.run("Weather in Paris?", model="m", executors={"weather_lookup": lambda i: "sunny"})
        sent = bodies(server)
    assert result.text == "Sunny." and len(sent) == 4  # no request was refused by the server's rules
    found = tool_results(sent[1])[0]["content"]
    references = [b["tool_name"] for b in found if b["type"] == "tool_reference"]
    assert references and "weather_lookup" in references
    deferred = {t["name"] for t in sent[0]["tools"] if t.get("defer_loading")}
    assert set(references) <= deferred and "read_file" not in deferred
    assert not [b for b in tool_results(sent[2])[0]["content"] if b["type"] == "tool_reference"]
    for body in sent[1:]:  # the system prompt and the tools never change within the task
        assert body["system"] == sent[0]["system"] and body["tools"] == sent[0]["tools"]
    assert "secret_tool" not in json.dumps(sent)


def test_the_server_refuses_what_the_real_api_refuses() -> None:
    everything_deferred = [{"name": "a", "description": "", "input_schema": {"type": "object"}, "defer_loading": True}]
    undeclared = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": [
        {"type": "tool_reference", "tool_name": "nope"}]}]}  # fmt: skip
    with served([text_reply("never")]) as (server, sdk):
        with pytest.raises(anthropic.BadRequestError, match="at least one tool must not have defer_loading"):
            sdk.messages.create(
                model="m", max_tokens=5, tools=everything_deferred, messages=[{"role": "user", "content": "x"}]
            )  # type: ignore[arg-type]
        with pytest.raises(anthropic.BadRequestError, match="names 'nope', which is not declared"):
            sdk.messages.create(
                model="m", max_tokens=5, tools=anthropic_native_tools(DOCS_DEFS, ["weather_lookup"]),  # type: ignore[arg-type]
                messages=[{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}, undeclared],  # type: ignore[list-item]
            )  # fmt: skip
        assert server.pending == 1  # a refused request used up no reply


DOCS_DEFS = [{"name": d.name, "description": d.brief, "input_schema": d.input_schema} for d in DOCS[:2]]


def test_emulated_deferral_appends_what_is_loaded_and_sends_no_reference() -> None:
    script = [
        tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "train departures between two stations"})),
        tool_use_reply(("t1", "train_times", {"path": "Lyon"})),
        text_reply("done"),
    ]
    with served(script) as (server, sdk):
        client = wrap(sdk, composer=COMPOSER, search=SEARCH, mode="work", task_id="t", native="emulate")
        client.run("Trains to Lyon?", model="m", executors={"train_times": lambda i: "9:00"})
        sent = bodies(server)
    assert not any(t.get("defer_loading") for body in sent for t in body["tools"])
    assert "train_times" not in names(sent[0]) and names(sent[1])[-1] == "train_times"
    assert names(sent[1])[: len(names(sent[0]))] == names(sent[0])  # loading only appended
    assert "tool_reference" not in json.dumps(sent)
    notes = [b["text"] for b in tool_results(sent[1])[0]["content"]]
    assert "train_times is loaded: it is in your tools now." in notes
    assert sent[1]["system"] == sent[0]["system"]  # the same system prompt as the provider's deferral
    native = COMPOSER.compose_native("work")
    assert sent[0]["system"][0]["text"] == native.system_stable


def test_run_native_on_the_shipped_code_mode(
    workspace: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    script = [
        tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "list the entries of a directory"})),
        tool_use_reply(("l1", "list_files", {"path": "."})),
        text_reply("A README."),
    ]
    with ScriptedMessagesServer(script) as server:
        code = main(
            ["run", "--mode", "code", "--task", "What is here?", "--base-url", server.base_url, "--native",
             "--workspace", str(workspace), "--format", "json"]
        )  # fmt: skip
        sent = [r.body for r in server.requests if r.path.startswith("/v1/messages")]
    assert code == 0 and json.loads(capsys.readouterr().out)["text"] == "A README."
    deferred = {t["name"] for t in sent[0]["tools"] if t.get("defer_loading")}
    references = [b["tool_name"] for b in tool_results(sent[1])[0]["content"] if b["type"] == "tool_reference"]
    assert "list_files" in references and set(references) <= deferred
    assert all(body["system"] == sent[0]["system"] and body["tools"] == sent[0]["tools"] for body in sent[1:])
    assert main(["run", "--mode", "ask", "--task", "x", "--base-url", server.base_url, "--native"]) == 2
