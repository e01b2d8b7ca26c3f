"""The OpenTelemetry sink of the event log: events as spans and metrics after the GenAI semantic conventions.

Needs the ``otel`` extra; OpenTelemetry is imported when a sink is made, not when this module is.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any


class OtelSink:
    """Events as OpenTelemetry spans and metrics, after the GenAI semantic conventions (the ``otel`` extra).

    - ``request`` → a CLIENT span ``chat {model}``: ``gen_ai.operation.name = "chat"``, ``gen_ai.provider.name``,
      ``gen_ai.request.model``, ``gen_ai.conversation.id`` (the task), ``gen_ai.request.stream``,
      ``gen_ai.usage.input_tokens`` (all input, cached included, as the conventions ask),
      ``gen_ai.usage.output_tokens``, ``gen_ai.usage.cache_read.input_tokens``,
      ``gen_ai.usage.cache_creation.input_tokens``, ``gen_ai.response.finish_reasons``,
      ``gen_ai.response.time_to_first_chunk``; ``error.type`` and an error status on a failed request. Metrics:
      ``gen_ai.client.operation.duration`` (s) and ``gen_ai.client.token.usage`` (``gen_ai.token.type`` input /
      output).
    - ``tool_call`` → an INTERNAL span ``execute_tool {tool}``: ``gen_ai.operation.name = "execute_tool"``,
      ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type = "function"``; any outcome but ``ok`` sets
      ``error.type`` to the outcome (``error``, ``refused``, ``denied``) and an error status. Metric:
      ``gen_ai.execute_tool.duration`` (s).
    - Every event → the counter ``prompt_composer.events`` (``prompt_composer.event``, ``prompt_composer.mode``,
      ``gen_ai.tool.name`` and ``prompt_composer.outcome`` / ``prompt_composer.promotion`` where the event has
      them): fetches, searches, refusals and promotions have no GenAI convention of their own.

    Every span also carries ``prompt_composer.mode`` and ``prompt_composer.task``, every data point the mode (a
    task attribute would make one series per task). Spans are created after the fact, with the event's timing
    (start = ``ts`` minus the duration). With content, a tool span gets ``gen_ai.tool.call.arguments`` and
    ``gen_ai.tool.call.result`` (opt-in attributes of the conventions). Give a ``tracer_provider`` /
    ``meter_provider``, or the global ones are used."""

    def __init__(self, *, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        try:
            from opentelemetry import metrics, trace
        except ImportError as exc:  # pragma: no cover - depends on the environment
            from ..errors import MissingExtraError
            from ..shared.extras import needs_extra

            raise MissingExtraError(needs_extra("OtelSink", "otel"), extra="otel") from exc
        from ..shared.version import VERSION as __version__

        self._trace = trace
        tracer_provider = tracer_provider or trace.get_tracer_provider()
        meter_provider = meter_provider or metrics.get_meter_provider()
        self._tracer = tracer_provider.get_tracer("prompt_composer", __version__)
        meter = meter_provider.get_meter("prompt_composer", __version__)
        self._operation_duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration."
        )
        self._token_usage = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Number of input and output tokens used."
        )
        self._tool_duration = meter.create_histogram(
            "gen_ai.execute_tool.duration", unit="s", description="Duration of tool executions."
        )
        self._events = meter.create_counter(
            "prompt_composer.events", unit="{event}", description="prompt-composer events, by kind."
        )

    def write(self, event: Mapping[str, Any]) -> None:
        kind = str(event.get("event"))
        common = {
            "prompt_composer.mode": str(event.get("mode", "")),
            "prompt_composer.task": str(event.get("task", "")),
        }
        counted: dict[str, Any] = {
            "prompt_composer.event": kind,
            "prompt_composer.mode": common["prompt_composer.mode"],
        }
        if "tool" in event:
            counted["gen_ai.tool.name"] = str(event["tool"])
        if "outcome" in event:
            counted["prompt_composer.outcome"] = str(event["outcome"])
        if kind == "promotion":
            counted["prompt_composer.promotion"] = str(event.get("kind", ""))
        self._events.add(1, counted)
        if kind == "request":
            self._request(event, common)
        elif kind == "tool_call":
            self._tool_call(event, common)

    def _span(
        self, name: str, kind: Any, event: Mapping[str, Any], duration: float, attributes: dict[str, Any]
    ) -> tuple[Any, int]:
        """A span started at the event's start time, and the end time to end it at (nanoseconds)."""
        end = float(event.get("ts", time.time()))
        start_ns, end_ns = int((end - max(duration, 0.0)) * 1e9), int(end * 1e9)
        return self._tracer.start_span(name, kind=kind, start_time=start_ns, attributes=attributes), end_ns

    def _request(self, event: Mapping[str, Any], common: dict[str, Any]) -> None:
        usage = event.get("usage") or {}
        cache_read = int(usage.get("cache_read_input_tokens", 0))
        cache_write = int(usage.get("cache_creation_input_tokens", 0))
        prompt = int(usage.get("input_tokens", 0)) + cache_read + cache_write
        output = int(usage.get("output_tokens", 0))
        model = str(event.get("model", ""))
        provider = str(event.get("provider", ""))
        base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": model}
        attributes: dict[str, Any] = {
            **base,
            **common,
            "gen_ai.conversation.id": str(event.get("task", "")),
            "gen_ai.request.stream": bool(event.get("stream")),
            "gen_ai.usage.input_tokens": prompt,
            "gen_ai.usage.output_tokens": output,
            "gen_ai.usage.cache_read.input_tokens": cache_read,
            "gen_ai.usage.cache_creation.input_tokens": cache_write,
        }
        if event.get("stop_reason"):
            attributes["gen_ai.response.finish_reasons"] = [str(event["stop_reason"])]
        if event.get("first_token_s") is not None:
            attributes["gen_ai.response.time_to_first_chunk"] = float(event["first_token_s"])
        failed = event.get("outcome") == "error"
        if failed:
            attributes["error.type"] = str(event.get("error") or "_OTHER")
        latency = float(event.get("latency_s") or 0.0)
        span, end_ns = self._span(f"chat {model}".strip(), self._trace.SpanKind.CLIENT, event, latency, attributes)
        if failed:
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, attributes["error.type"]))
        span.end(end_time=end_ns)
        metric = {**base, "prompt_composer.mode": common["prompt_composer.mode"]}  # no task: one series a task
        self._operation_duration.record(
            latency, {**metric, **({"error.type": attributes["error.type"]} if failed else {})}
        )
        if not failed:
            self._token_usage.record(prompt, {**metric, "gen_ai.token.type": "input"})
            self._token_usage.record(output, {**metric, "gen_ai.token.type": "output"})

    def _tool_call(self, event: Mapping[str, Any], common: dict[str, Any]) -> None:
        tool = str(event.get("tool", ""))
        outcome = str(event.get("outcome", "ok"))
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": str(event.get("call_id", "")),
            "gen_ai.tool.type": "function",
            **common,
        }
        if outcome != "ok":
            attributes["error.type"] = outcome
        if "input" in event:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(event["input"], ensure_ascii=False, default=str)
        if "output" in event and outcome == "ok":
            attributes["gen_ai.tool.call.result"] = str(event["output"])
        duration = float(event.get("duration_s") or 0.0)
        span, end_ns = self._span(f"execute_tool {tool}", self._trace.SpanKind.INTERNAL, event, duration, attributes)
        if outcome != "ok":
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, outcome))
        span.end(end_time=end_ns)
        metric = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "prompt_composer.mode": common["prompt_composer.mode"],
        }
        self._tool_duration.record(duration, {**metric, **({"error.type": outcome} if outcome != "ok" else {})})

    def close(self) -> None:
        """Nothing to release: the providers belong to the caller (flush or shut them down there)."""
