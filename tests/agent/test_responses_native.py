"""Native deferral over OpenAI's Responses API (``api="responses", native=True`` and ``--provider openai-responses
--native``): eager permanent and recent functions, every other tool of the mode a ``defer_loading`` function in a
namespace, a client ``tool_search`` answered with ``tool_search_output`` items, hosted search as an option. The
scripted server enforces the API's rules, so a request that breaks them fails here as it would there."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai
import pytest

from prompt_composer import Composer, Registry, load_registry
from prompt_composer.agent.openai import ComposedOpenAI, wrap
from prompt_composer.agent.providers import MAX_NAMESPACE_TOOLS, namespaces
from prompt_composer.cli import main
from prompt_composer.core.builtins import FETCH_TOOL_NAME, TOOL_SEARCH_NAME
from prompt_composer.core.docs import Origin
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.testing.replies import hosted_search_reply, text_reply, tool_search_reply, tool_use_reply
from prompt_composer.testing.responses_api import responses_problem
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import make_doc, make_mode

TRAVEL = Origin(server="travel", name="x")
DOCS = [
    make_doc("read_file"),
    make_doc("glob"),
    make_doc("write_to_file", "edit"),
    make_doc("weather_lookup", "mcp", brief="Look up the weather forecast for a city. Use it to plan a trip.",
             origin=TRAVEL),
    make_doc("train_times", "mcp", brief="List train departures between two stations. Use it for rail journeys.",
             origin=TRAVEL),
    make_doc("secret_weather", "admin", brief="Rotate the weather station credentials. Use it for the forecast.",
             full="## secret_weather\nTOP SECRET"),
]  # fmt: skip
REG = Registry.from_docs(DOCS, [make_mode("work", groups=["read", "edit", "mcp"], promotion="every_turn")])
COMPOSER = Composer(REG)
SEARCH = ToolSearch(REG, embedder=False)
PATH = "/v1/responses"
HI = {"role": "user", "content": "hi"}
EXECUTORS = {name: (lambda tool_input, n=name: f"{n} ran") for name in ("glob", "weather_lookup", "read_file")}


@contextmanager
def served(script: list[Any], **options: Any) -> Iterator[tuple[ScriptedMessagesServer, ComposedOpenAI]]:
    with ScriptedMessagesServer(script) as server:
        sdk = openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        defaults = {"composer": COMPOSER, "mode": "work", "task_id": "t", "api": "responses", "native": True}
        client = wrap(sdk, **{**defaults, "search": SEARCH, **options})
        try:
            yield server, client
        finally:
            client.close()


def bodies(server: ScriptedMessagesServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == PATH]


def functions(tools: list[dict[str, Any]]) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """Function name -> (its namespace or None, its definition)."""
    out: dict[str, tuple[str | None, dict[str, Any]]] = {}
    for tool in tools:
        if tool["type"] == "function":
            out[tool["name"]] = (None, tool)
        elif tool["type"] == "namespace":
            out |= {f["name"]: (tool["name"], f) for f in tool["tools"]}
    return out


def test_compose_native_for_responses_defers_every_tool_of_the_mode_in_namespaces(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shipped = load_registry()
    for slug in ("code", "architect", "debug", "orchestrator"):
        assert main(["compose", "--mode", slug, "--provider", "openai-responses", "--native", "--format", "json"]) == 0
        data = json.loads(capsys.readouterr().out)
        mode, tools = shipped.mode(slug), data["tools"]
        declared = functions(tools)
        assert set(declared) == {*mode.allowed, FETCH_TOOL_NAME}  # every tool of the mode, nothing outside it
        for name, (space, definition) in declared.items():
            eager = name in mode.permanent or name == FETCH_TOOL_NAME
            assert (space is None) is eager and definition.get("defer_loading", False) is (not eager), (slug, name)
            if not eager:
                assert definition["description"] == shipped.tools[name].brief
        spaces = [t for t in tools if t["type"] == "namespace"]
        assert spaces and all(0 < len(t["tools"]) <= MAX_NAMESPACE_TOOLS and "defer_loading" not in t for t in spaces)
        assert tools[-1] == {**tools[-1], "type": "tool_search", "execution": "client"}
        assert data["deferred"] == [n for n in mode.allowed if n not in mode.permanent]
        assert responses_problem({"tools": tools, "input": []}) is None
    assert main(["compose", "--mode", "code", "--provider", "openai", "--native"]) == 2
    assert "openai does not" in capsys.readouterr().err


def test_a_group_of_more_than_ten_is_split_into_numbered_namespaces() -> None:
    docs = [make_doc(f"tool_{n:02d}", "read") for n in range(23)] + [make_doc("read", "edit")]
    registry = Registry.from_docs(docs, [make_mode("m", groups=["read", "edit"], permanent=[])])
    spaces = namespaces([d.name for d in docs], registry, taken=registry.tools.keys())
    assert [(s.name, len(s.tools)) for s in spaces] == [("read_tools-1", 8), ("read_tools-2", 8), ("read_tools-3", 7),
                                                         ("edit", 1)]  # fmt: skip
    assert spaces[0].description.startswith("Tools of the read group. (part 1 of 3) Functions: tool_00, ")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_tool_search_call_is_answered_with_the_full_definitions_of_deferred_tools_of_the_mode_only(
    stream: bool,
) -> None:
    script = [
        tool_search_reply("weather forecast for a city", call_id="ts_1"),
        tool_use_reply(("c1", "weather_lookup", {"path": "Paris"})),
        text_reply("Sunny."),
    ]
    with served(script) as (server, client):
        client.session.record_use("glob")  # recent before the task's first request: eager for the whole task
        result = client.run("Weather in Paris?", model="m", executors=EXECUTORS, stream=stream)
        requests = bodies(server)
    assert all(body.get("stream", False) is stream for body in requests)
    assert result.text == "Sunny." and [c.name for c in result.tool_calls] == [TOOL_SEARCH_NAME, "weather_lookup"]
    first, second, third = requests
    declared = functions(first["tools"])
    assert declared["glob"][0] is None and "defer_loading" not in declared["glob"][1]  # recent: eager, in full
    assert declared["weather_lookup"] == ("travel", {**declared["weather_lookup"][1], "defer_loading": True})
    # The answer: the call as the model made it, then a tool_search_output with its call id and full definitions.
    call, output = second["input"][-2:]
    assert call["type"] == "tool_search_call" and call["call_id"] == "ts_1"
    assert output["type"] == "tool_search_output" and output["call_id"] == "ts_1"
    loaded = functions(output["tools"])
    assert set(loaded) <= {n for n, (space, _) in declared.items() if space is not None}
    assert "weather_lookup" in loaded and loaded["weather_lookup"][0] == "travel"
    assert loaded["weather_lookup"][1]["description"] == REG.tools["weather_lookup"].full
    assert loaded["weather_lookup"][1]["parameters"] == REG.tools["weather_lookup"].input_schema
    assert "secret_weather" not in json.dumps(requests)  # outside the mode: never declared, found or loaded
    # The prefix never changes within the task: byte-identical tools and instructions on every request.
    assert len({json.dumps(b["tools"]) for b in requests}) == 1
    assert len({b["instructions"] for b in requests}) == 1
    assert third["input"][-1] == {"type": "function_call_output", "call_id": "c1", "output": "weather_lookup ran"}


def test_a_search_that_loads_nothing_says_why_and_a_fetch_loads_a_deferred_tool() -> None:
    script = [
        tool_search_reply({"limit": 3}, call_id="ts_bad"),
        tool_use_reply(("f1", FETCH_TOOL_NAME, {"name": "train_times"})),
        tool_use_reply(("c1", "train_times", {"path": "Lyon"})),
        text_reply("Done."),
    ]
    with served(script) as (server, client):
        result = client.run("Trains?", model="m", executors={"train_times": lambda _: "08:15"})
        requests = bodies(server)
    assert [c.is_error for c in result.tool_calls] == [True, False, False]
    empty, note = requests[1]["input"][-2:]
    assert empty["type"] == "tool_search_output" and empty["tools"] == []
    assert note["role"] == "developer" and "needs" in note["content"]
    fetched, call, output = requests[2]["input"][-3:]
    assert fetched["type"] == "function_call_output" and "FULL TEXT OF TRAIN_TIMES" in fetched["output"]
    assert call["type"] == "tool_search_call" and call["call_id"] == output["call_id"] == "load_f1"
    assert list(functions(output["tools"])) == ["train_times"]
    assert result.tool_calls[-1].executed


def test_hosted_search_declares_openais_tool_and_what_it_loads_can_be_called(
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = [hosted_search_reply("weather", ["weather_lookup"], ("c1", "weather_lookup", {"path": "Oslo"})),
              text_reply("Cold.")]  # fmt: skip
    with served(script, hosted_search=True) as (server, client):
        result = client.run("Weather in Oslo?", model="m", executors=EXECUTORS)
        first, second = bodies(server)
    assert first["tools"][-1] == {"type": "tool_search"}
    assert [(c.name, c.executed) for c in result.tool_calls] == [("weather_lookup", True)]  # not refused as unseen
    kinds = [i.get("type") for i in second["input"][1:]]
    assert kinds == ["tool_search_call", "tool_search_output", "function_call", "function_call_output"]


def test_the_server_refuses_what_the_real_api_would() -> None:
    # A loop that forgot to answer the search: the same 400 the API gives, as an SDK error the caller sees.
    with ScriptedMessagesServer([tool_search_reply("weather", call_id="ts_1"), text_reply("x")]) as server:
        sdk = openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        tools: list[Any] = [
            {"type": "function", "name": "read_file", "parameters": {}},
            {"type": "namespace", "name": "travel", "description": "Travel.", "tools": [
                {"type": "function", "name": "weather_lookup", "parameters": {}, "defer_loading": True}]},
            {"type": "tool_search", "execution": "client"},
        ]  # fmt: skip
        first = sdk.responses.create(model="m", input="hi", tools=tools)
        items: list[Any] = [HI, *(i.to_dict(exclude_none=True) for i in first.output)]
        with pytest.raises(openai.BadRequestError, match="no output found for the call with call_id ts_1"):
            sdk.responses.create(model="m", input=items, tools=tools)
        assert server.pending == 1  # a 400 uses up no reply
        sdk.close()


def test_run_native_over_responses_and_native_with_chat_completions_is_an_error(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")  # a key is checked first; the refusal comes before any request
    assert main(["run", "--provider", "openai", "--native", "--mode", "code", "--task", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "openai-responses" in err
    monkeypatch.delenv("OPENAI_API_KEY")
    script = [
        tool_search_reply("list the files in a folder"),
        tool_use_reply(("c1", "read_file", {"path": "README.md"})),
        text_reply("It is a demo."),
    ]
    with ScriptedMessagesServer(script) as server:
        url = server.base_url + "/v1"
        code = main(["run", "--provider", "openai-responses", "--native", "--mode", "code", "--task", "What is here?",
                     "--base-url", url, "--workspace", str(workspace), "--format", "json"])  # fmt: skip
        requests = [r.body for r in server.requests]
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["text"] == "It is a demo." and requests[0]["model"] == "gpt-5.4"
    assert [c["name"] for c in out["tool_calls"]] == [TOOL_SEARCH_NAME, "read_file"]
    assert any(i.get("type") == "tool_search_output" for i in requests[1]["input"])
    assert main(["run", "--provider", "anthropic", "--hosted-search", "--mode", "code", "--task", "x"]) == 2


def test_callers_of_responses_create_answer_a_search_with_tool_search_output() -> None:
    with served([tool_search_reply("weather forecast", call_id="ts_9")]) as (server, client):
        response = client.responses.create(model="m", input="Weather?")
        (call,) = [item for item in response.output if item.type == "tool_search_call"]
        answer = client.tool_search_output(call)
        (body,) = bodies(server)
    assert answer["call_id"] == "ts_9" and "weather_lookup" in functions(answer["tools"])
    assert responses_problem({"tools": body["tools"], "input": [call.to_dict(exclude_none=True), answer]}) is None
    assert "weather_lookup" in client.session.discovered()


def test_emulated_deferral_over_chat_completions_appends_what_is_loaded_and_says_so() -> None:
    script = [tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "weather forecast"})),
              tool_use_reply(("c1", "weather_lookup", {"path": "Rome"})), text_reply("Warm.")]  # fmt: skip
    with served(script, api="chat_completions", native="emulate") as (server, client):
        result = client.run("Weather in Rome?", model="m", executors=EXECUTORS)
        first, second, _ = [r.body for r in server.requests]
    names = [[t["function"]["name"] for t in body["tools"]] for body in (first, second)]
    assert "weather_lookup" not in names[0] and names[1][-1] == "weather_lookup"  # appended at the end
    assert second["messages"][-1]["content"].endswith("weather_lookup is loaded: it is in your tools now.")
    assert result.tool_calls[-1].executed
