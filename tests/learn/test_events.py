"""The event log: what the loop (both providers, sync and async, JSON and streaming) and the gateway emit, that it
holds no tool text unless asked, and that a sink that raises or blocks changes nothing about the loop's result and
holds nothing up. The loop runs against the scripted server of ``tests/test_loop.py`` through the real SDKs."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anthropic
import pytest

from prompt_composer.agent.results import LoopResult, PendingCall
from prompt_composer.agent.wrapping import wrap
from prompt_composer.cli import main
from prompt_composer.core.builtins import FETCH_TOOL_NAME, TOOL_SEARCH_NAME
from prompt_composer.core.session import TaskSession
from prompt_composer.learn.events import EVENT_KINDS, OUTCOMES, SCHEMA_VERSION, EventLog, JsonlSink
from prompt_composer.learn.otel import OtelSink
from prompt_composer.mcp.gateway import ClientTask, Gateway
from prompt_composer.testing.replies import error_reply, text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import COMBOS, EXECUTORS, REG, REPO, SEARCH, Combo, agent, echo

COMMON = ("v", "ts", "event", "task", "mode", "fingerprint", "provider")


class ListSink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.closed = False

    def write(self, event: Mapping[str, Any]) -> None:
        self.events.append(dict(event))

    def close(self) -> None:
        self.closed = True


class RaisingSink:
    def __init__(self) -> None:
        self.calls = 0

    def write(self, event: Mapping[str, Any]) -> None:
        self.calls += 1
        raise OSError("disk full")

    def close(self) -> None:
        raise OSError("still full")


class BlockingSink:
    """Blocks its first write until released: a log on a hung network file system."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    def write(self, event: Mapping[str, Any]) -> None:
        self.entered.set()
        self.release.wait()

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------------- the scenario


def boom(tool_input: Mapping[str, Any]) -> str:
    raise RuntimeError("disk on fire")


def deny_writes(call: PendingCall) -> bool:
    return call.name != "write_to_file"


SCENARIO = [
    tool_use_reply(
        ("f1", FETCH_TOOL_NAME, {"name": "glob"}),
        ("f2", FETCH_TOOL_NAME, {"name": "secret_tool"}),
        ("a", "secret_tool", {"path": "x"}),
        ("b", "list_files", {"path": "src"}),
        ("c", "write_to_file", {"path": "x"}),
        ("d", "glob", {"path": "x"}),
    ),
    tool_use_reply(("e", "list_files", {"path": "src"})),
    text_reply("done"),
]
SCENARIO_OPTIONS: dict[str, Any] = {"executors": {**EXECUTORS, "glob": boom}, "approve": deny_writes}
# (event, tool, outcome or promotion kind), in emitted order
EXPECTED = [
    ("request", None, "ok"),
    ("fetch", "glob", "ok"),
    ("tool_call", FETCH_TOOL_NAME, "ok"),
    ("fetch", "secret_tool", "refused"),
    ("refusal", "secret_tool", None),
    ("tool_call", FETCH_TOOL_NAME, "refused"),
    ("refusal", "secret_tool", None),
    ("tool_call", "secret_tool", "refused"),
    ("promotion", "list_files", "fifo"),
    ("promotion", "list_files", "inline"),
    ("tool_call", "list_files", "ok"),
    ("tool_call", "write_to_file", "denied"),
    ("tool_call", "glob", "error"),
    ("request", None, "ok"),
    ("tool_call", "list_files", "ok"),
    ("request", None, "ok"),
]


def shape(event: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    return event["event"], event.get("tool"), event.get("outcome", event.get("kind"))


def view(result: LoopResult) -> Any:
    """Everything a run decided, without timings."""
    calls = [
        (c.id, c.name, dict(c.input), c.output, c.is_error, c.error, c.executed, c.expanded, c.via, c.iteration)
        for c in result.tool_calls
    ]
    iterations = [(it.index, it.usage, it.correction) for it in result.iterations]
    return result.text, result.stop_reason, result.messages, calls, iterations


def run_scenario(combo: Combo, log: EventLog | None, mode: str = "inline") -> tuple[Any, list[dict[str, Any]]]:
    options = {"events": log} if log is not None else {}
    with agent(combo, SCENARIO, mode=mode, **options) as a:
        result = a.run(**SCENARIO_OPTIONS)
        bodies = a.bodies
    return view(result), bodies


def check_well_formed(events: list[dict[str, Any]]) -> None:
    for event in events:
        assert event["v"] == SCHEMA_VERSION and event["event"] in EVENT_KINDS
        if event["event"] == "dropped":
            continue
        assert all(key in event for key in COMMON), event
        assert event["provider"] in ("anthropic", "openai", "mcp")
        if event["event"] == "tool_call":
            assert event["outcome"] in OUTCOMES and event["duration_s"] >= 0
            assert event["listed"] in ("full", "brief", None)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)


# ---------------------------------------------------------------------------------------- the loop


@pytest.mark.parametrize("combo", COMBOS)
def test_the_loop_emits_one_event_per_request_call_fetch_refusal_and_promotion(combo: Combo, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log, agent(combo, SCENARIO, mode="inline", events=log, task_id="t-7") as a:
        result = a.run(**SCENARIO_OPTIONS)
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    check_well_formed(events)
    assert [shape(e) for e in events] == EXPECTED
    assert log.drops.total == 0 and log.written == len(events)
    assert {(e["task"], e["mode"], e["provider"]) for e in events} == {("t-7", "inline", combo.wire.provider)}
    assert {e["fingerprint"] for e in events} == {REG.fingerprint}
    requests = [e for e in events if e["event"] == "request"]
    assert [r["iteration"] for r in requests] == [1, 2, 3]
    assert [r["usage"] for r in requests] == [it.usage.as_dict() for it in result.iterations]
    assert all(r["latency_s"] > 0 and r["stream"] == combo.stream and r["model"] == "test-model" for r in requests)
    assert all((r["first_token_s"] is not None) == combo.stream for r in requests)
    calls = [e for e in events if e["event"] == "tool_call"]
    assert len(calls) == len(result.tool_calls)
    assert [c["call_id"] for c in calls] == [c.id for c in result.tool_calls]
    assert [c["listed"] for c in calls if c["tool"] == "list_files"] == ["brief", "brief"]
    assert [c["expanded"] for c in calls if c["tool"] == "list_files"] == [True, False]
    # No tool text unless asked: neither inputs nor outputs nor the refused tool's doc.
    text = path.read_text(encoding="utf-8")
    assert "ran on src" not in text and '"input"' not in text and '"output"' not in text
    assert "TOP SECRET" not in text and "FULL TEXT OF GLOB" not in text


def test_content_is_logged_only_when_asked(tmp_path: Path) -> None:
    combo = COMBOS[0].values[0]
    sink = ListSink()
    with EventLog(sink, include_content=True) as log, agent(combo, SCENARIO, mode="inline", events=log) as a:
        a.run(**SCENARIO_OPTIONS)
    calls = [e for e in sink.events if e["event"] == "tool_call"]
    assert calls[3]["tool"] == "list_files" and calls[3]["input"] == {"path": "src"}
    assert calls[3]["output"] == "ran on src"
    assert sink.closed


@pytest.mark.parametrize("combo", COMBOS[:4])  # Anthropic and OpenAI, sync and async
def test_tool_search_emits_a_search_and_the_tools_it_activated(combo: Combo) -> None:
    script = [
        tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "run the tests"})),
        tool_use_reply(("c1", "execute_command", {"command": "pytest"})),
        text_reply("ok"),
    ]
    for content in (False, True):
        sink = ListSink()
        with (
            EventLog(sink, include_content=content) as log,
            agent(combo, script, mode="disco", events=log, search=SEARCH) as a,
        ):
            a.run()
        (search,) = [e for e in sink.events if e["event"] == "search"]
        assert "execute_command" in search["hits"] and search["hit_count"] == len(search["hits"])
        assert search["miss"] is False and "execute_command" in search["activated"]
        assert ("query" in search) is content
        promoted = [(e["tool"], e["kind"]) for e in sink.events if e["event"] == "promotion"]
        assert ("execute_command", "discovered") in promoted
        check_well_formed(sink.events)


def test_a_failed_request_is_an_error_event() -> None:
    combo = COMBOS[0].values[0]
    sink = ListSink()
    with (
        EventLog(sink) as log,
        agent(combo, [error_reply(500)], mode="code", events=log) as a,
        pytest.raises(anthropic.InternalServerError),
    ):
        a.run()
    (request,) = sink.events
    assert request["event"] == "request" and request["outcome"] == "error"
    assert request["error"] == "InternalServerError" and request["usage"]["input_tokens"] == 0


# ---------------------------------------------------------------------------------------- failing sinks


@pytest.mark.parametrize("combo", COMBOS)
def test_a_sink_that_raises_or_blocks_changes_nothing_and_holds_nothing_up(combo: Combo) -> None:
    plain = run_scenario(combo, None)

    raising = RaisingSink()
    with EventLog(raising) as log:
        assert run_scenario(combo, log) == plain
    drops = log.drops
    assert drops.sink_errors == log.emitted == len(EXPECTED) and raising.calls >= len(EXPECTED)

    blocking = BlockingSink()
    log = EventLog(blocking, max_queue=3)
    outcome: list[Any] = []
    # The loop runs in a thread joined with a generous bound: it must finish while the sink is still blocked.
    worker = threading.Thread(target=lambda: outcome.append(run_scenario(combo, log)), daemon=True)
    worker.start()
    worker.join(timeout=120)
    try:
        assert not worker.is_alive(), "the loop waited on a blocked sink"
        assert outcome == [plain]
        assert blocking.entered.wait(30) and not blocking.release.is_set()
        drops = log.close(timeout=0.05)  # the sink is still blocked: close gives up and counts the rest
        # At most one event in the sink's hands and three queued; every other one was dropped on arrival.
        assert drops.queue_full >= len(EXPECTED) - 4 and drops.unwritten <= 4
        assert drops.total == len(EXPECTED) and log.written == 0
    finally:
        blocking.release.set()
    log.close(timeout=30)
    assert not log._thread.is_alive()


def test_the_log_counts_what_it_drops_and_says_so_last(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_queue=1)
    blocker = threading.Event()
    sink = log.sink
    original = sink.write

    def slow_write(event: Mapping[str, Any]) -> None:
        blocker.wait(30)
        original(event)

    sink.write = slow_write  # type: ignore[method-assign]
    for n in range(5):
        log.emit("request", task="t", n=n)
    blocker.set()
    drops = log.close(timeout=30)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert drops.queue_full >= 3 and drops.unwritten == 0
    assert lines[-1]["event"] == "dropped" and lines[-1]["dropped"] == drops.total == drops.queue_full
    assert len(lines) - 1 + drops.total == 5
    log.emit("request", task="t")  # after close: dropped, counted, never raises
    assert log.drops.after_close == 1


def test_an_event_whose_input_cannot_be_copied_is_counted_not_raised() -> None:
    class Uncopyable:
        def __deepcopy__(self, memo: Any) -> Any:
            raise TypeError("no")

    sink = ListSink()
    with EventLog(sink, include_content=True) as log:
        log.emit("tool_call", input={"x": Uncopyable()})
    assert log.drops.sink_errors == 1
    assert [(e["event"], e["dropped"], e["sink_errors"]) for e in sink.events] == [("dropped", 1, 1)]


def test_events_takes_an_event_log_not_a_bare_sink() -> None:
    with (
        anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="k") as sdk,
        pytest.raises(TypeError, match="EventLog"),
    ):
        wrap(sdk, registry=REG, mode="code", task_id="t", events=ListSink())
    with pytest.raises(TypeError, match="EventLog"):
        Gateway(REG, "code", events=ListSink())


def test_jsonl_sink_appends_and_leaves_a_given_stream_open(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    for run in range(2):
        with EventLog(path) as log:
            log.emit("request", task=f"run-{run}", note="é")
    assert [json.loads(line)["task"] for line in path.read_text(encoding="utf-8").splitlines()] == ["run-0", "run-1"]
    stream = io.StringIO()
    sink = JsonlSink(stream)
    sink.write({"v": 1, "event": "list"})
    sink.close()
    assert json.loads(stream.getvalue()) == {"v": 1, "event": "list"}


# ---------------------------------------------------------------------------------------- the gateway


def test_the_gateway_emits_the_same_events_with_provider_mcp() -> None:
    sink = ListSink()
    with EventLog(sink, include_content=True) as log:
        gateway = Gateway(REG, "code", executors={"list_files": echo, "glob": boom}, events=log)
        client = ClientTask(TaskSession())

        async def session() -> None:
            gateway.tool_list(client)
            await gateway.answer(client, FETCH_TOOL_NAME, {"name": "glob"})
            await gateway.answer(client, "secret_tool", {"path": "x"})
            await gateway.answer(client, "list_files", {"path": "src"})
            await gateway.answer(client, "glob", {"path": "x"})
            await gateway.answer(client, "write_to_file", {"path": "x"})  # allowed, but no executor here

        asyncio.run(session())
    events = sink.events
    check_well_formed(events)
    assert [shape(e) for e in events] == [
        ("list", None, None),
        ("fetch", "glob", "ok"),
        ("tool_call", FETCH_TOOL_NAME, "ok"),
        ("refusal", "secret_tool", None),
        ("tool_call", "secret_tool", "refused"),
        ("promotion", "list_files", "fifo"),
        ("tool_call", "list_files", "ok"),
        ("tool_call", "glob", "error"),
        ("refusal", "write_to_file", None),
        ("tool_call", "write_to_file", "refused"),
    ]
    assert {(e["provider"], e["task"], e["mode"]) for e in events} == {("mcp", client.task_id, "code")}
    assert "iteration" not in events[0] and events[0]["tools"] >= 1
    listed = next(e for e in events if e["event"] == "tool_call" and e["tool"] == "list_files")
    assert listed["input"] == {"path": "src"} and listed["output"] == "ran on src" and listed["listed"] == "brief"


# ---------------------------------------------------------------------------------------- OpenTelemetry


def test_the_otel_sink_writes_genai_spans_and_metrics() -> None:
    if not os.environ.get("CI"):  # the dev extra installs it; without it this test has nothing to check
        pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    combo = COMBOS[2].values[0]  # Anthropic, async, JSON
    sink = OtelSink(tracer_provider=tracer_provider, meter_provider=meter_provider)
    with EventLog(sink) as log, agent(combo, SCENARIO, mode="inline", events=log, task_id="t-otel") as a:
        a.run(**SCENARIO_OPTIONS)
    spans = exporter.get_finished_spans()
    chats = [s for s in spans if s.attributes and s.attributes.get("gen_ai.operation.name") == "chat"]
    tools = [s for s in spans if s.attributes and s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert [s.name for s in chats] == ["chat test-model"] * 3
    first = chats[0].attributes or {}
    assert first["gen_ai.provider.name"] == "anthropic" and first["gen_ai.request.model"] == "test-model"
    assert first["gen_ai.usage.input_tokens"] == 10 and first["gen_ai.usage.output_tokens"] == 5
    assert first["gen_ai.conversation.id"] == "t-otel" and first["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert [s.name for s in tools] == [f"execute_tool {t}" for _, t, _ in [e for e in EXPECTED if e[0] == "tool_call"]]
    failed = {(s.attributes or {})["gen_ai.tool.name"]: (s.attributes or {}).get("error.type") for s in tools}
    assert failed["glob"] == "error" and failed["write_to_file"] == "denied" and failed["secret_tool"] == "refused"
    assert all(s.end_time is not None and s.start_time is not None and s.start_time <= s.end_time for s in spans)
    data = reader.get_metrics_data()
    assert data is not None
    metrics = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "gen_ai.execute_tool.duration"} <= set(
        metrics
    )
    usage = metrics["gen_ai.client.token.usage"].data.data_points  # type: ignore[union-attr]
    by_type = {p.attributes["gen_ai.token.type"]: p.sum for p in usage}  # type: ignore[index,union-attr]
    assert by_type == {"input": 30, "output": 15}
    counted = metrics["prompt_composer.events"].data.data_points  # type: ignore[union-attr]
    assert sum(p.value for p in counted) == len(EXPECTED)  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------- the command line


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_run_log_writes_the_events_stats_reads(
    provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl"
    script = [tool_use_reply(("c1", "list_files", {"path": "."})), text_reply("A small folder.")]
    (tmp_path / "ws").mkdir()
    with ScriptedMessagesServer(script) as server:
        url = server.base_url if provider == "anthropic" else server.base_url + "/v1"
        code = main(
            ["run", "--mode", "code", "--task", "look", "--provider", provider, "--base-url", url,
             "--workspace", str(tmp_path / "ws"), "--log", str(path), "--format", "json"]
        )  # fmt: skip
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    check_well_formed(events)
    assert sum(e["event"] == "request" for e in events) == len(out["requests"]) == 2
    assert {e["provider"] for e in events} == {provider} and {e["mode"] for e in events} == {"code"}
    assert main(["stats", "--log", str(path), "--format", "json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert {t["tool"]: t["uses"] for t in stats["tools"]} == {"list_files": 1}
    (mode,) = stats["modes"]
    assert mode["mode"] == "code" and mode["requests"] == 2 and mode["tasks"] == 1
    assert mode["input_tokens"] == sum(r["input_tokens"] for r in out["requests"])


def test_run_log_to_an_unwritable_place_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedMessagesServer([text_reply("never")]) as server:
        code = main(
            ["run", "--mode", "code", "--task", "x", "--base-url", server.base_url,
             "--log", str(tmp_path / "no" / "such" / "dir" / "log.jsonl")]
        )  # fmt: skip
    assert code == 2 and "cannot open the event log" in capsys.readouterr().err


def test_serve_log_records_what_an_mcp_client_did(tmp_path: Path) -> None:
    """``serve --log`` over stdio with the SDK's own client: the list it got and the call it made are in the log."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client, StdioServerParameters

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("hello")
    log = tmp_path / "serve.jsonl"
    args = ["-m", "prompt_composer", "serve", "--mode", "code", "--workspace", str(tmp_path / "ws"), "--log", str(log)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    async def scenario() -> None:
        params = StdioServerParameters(command=sys.executable, args=args, env=env)
        with anyio.fail_after(120):
            async with Client(params, cache=None) as client:
                await client.list_tools()
                result = await client.call_tool("list_files", {"path": "."})
                assert not result.is_error

    anyio.run(scenario)
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + 10  # the server may still be writing its last lines as the client leaves
    while time.monotonic() < deadline:
        events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        if len(events) >= 3:
            break
        time.sleep(0.05)
    check_well_formed(events)
    assert events[0]["event"] == "list" and events[0]["tools"] > 0
    # list_files is brief in the code mode's one list: its first result carries its full text (inline promotion).
    assert [shape(e) for e in events if e["event"] != "list"] == [
        ("promotion", "list_files", "fifo"),
        ("promotion", "list_files", "inline"),
        ("tool_call", "list_files", "ok"),
    ]
    assert {e["provider"] for e in events} == {"mcp"} and len({e["task"] for e in events}) == 1
