"""Learning from use: the event log (JSONL, OpenTelemetry), statistics, the cost replay of real tool-use
sequences, tuning a mode's permanent list and FIFO size, and search phrasings learned from logs.

Built on :mod:`prompt_composer.core` only.
"""

from typing import TYPE_CHECKING

from ..shared.lazy import attach

if TYPE_CHECKING:
    from .events import DropCounts, EventLog, JsonlSink, Sink, read_events
    from .otel import OtelSink
    from .phrasings import load_phrasings, phrasings_from_events
    from .replay import ReplayReport, replay
    from .stats import StatsReport, compute_stats
    from .traces import Task, load_traces
    from .tune import TuneResult, tune_mode

__all__ = [
    "DropCounts",
    "EventLog",
    "JsonlSink",
    "OtelSink",
    "ReplayReport",
    "Sink",
    "StatsReport",
    "Task",
    "TuneResult",
    "compute_stats",
    "load_phrasings",
    "load_traces",
    "phrasings_from_events",
    "read_events",
    "replay",
    "tune_mode",
]

__getattr__, __dir__ = attach(__name__, __file__)
