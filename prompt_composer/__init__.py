"""prompt-composer: each turn's system prompt carries only the tool text it needs.

Load a registry of tool docs and modes, keep a task session per task, and compose::

    registry = load_registry("tool_docs")
    composer = Composer(registry)
    session = InMemorySessionStore().get("task-1")
    prompt = composer.compose("code", session)   # prompt.system, prompt.tools
    session.record_use("glob")                     # after the tool ran

Or wrap an SDK client (``anthropic`` or ``openai``) and let it compose every request and run the tool loop::

    client = wrap(openai.OpenAI(), mode="code", task_id="task-1")
    result = client.run("Fix the failing test", model=..., executors=workspace_executors("."))
"""

from .audit import AuditReport, ModeAudit, ToolAudit, run_audit
from .composer import ComposedPrompt, Composer, SystemInfo, TokenCounts, strip_descriptions
from .discovery import (
    CALL_TOOL_NAME,
    TOOL_SEARCH_NAME,
    CallResult,
    call_tool,
    call_tool_definition,
    handle_tool_search,
    tool_search_definition,
)
from .docs import GroupDoc, Origin, ToolDoc
from .errors import (
    EmbeddingUnavailable,
    ImporterError,
    InputFileError,
    LoadError,
    LocalModelError,
    Problem,
    PromptComposerError,
    SessionStoreError,
    UnknownModeError,
    UnknownToolError,
)
from .events import DropCounts, EventLog, JsonlSink, OtelSink, Sink
from .fetch import FETCH_TOOL_NAME, FetchResult, fetch_tool_definition, handle_fetch
from .gateway import Gateway
from .loop import (
    Iteration,
    LoopResult,
    MaxIterationsError,
    PendingCall,
    StopLoop,
    TokenUsage,
    ToolCallRecord,
    ToolLoopError,
    WrapOptions,
    partial_result,
    wrap,
)
from .modes import FileRestriction, Mode, ModeConfig
from .registry import Registry, default_docs_dir, load_registry
from .search import SearchResult, Selection, ToolSearch
from .session import InMemorySessionStore, SessionStore, TaskSession
from .stats import StatsReport, compute_stats, read_events
from .tokens import TiktokenCounter, TokenCounter, default_counter
from .tune import TuneResult, tune_mode
from .upstreams import ServerSpec, UpstreamError, Upstreams, load_servers, mcp_executors

__version__ = "0.1.0"

__all__ = [
    "CALL_TOOL_NAME",
    "FETCH_TOOL_NAME",
    "TOOL_SEARCH_NAME",
    "AuditReport",
    "CallResult",
    "ComposedPrompt",
    "Composer",
    "DropCounts",
    "EmbeddingUnavailable",
    "EventLog",
    "FetchResult",
    "FileRestriction",
    "Gateway",
    "GroupDoc",
    "ImporterError",
    "InMemorySessionStore",
    "InputFileError",
    "Iteration",
    "JsonlSink",
    "LoadError",
    "LocalModelError",
    "LoopResult",
    "MaxIterationsError",
    "Mode",
    "ModeAudit",
    "ModeConfig",
    "Origin",
    "OtelSink",
    "PendingCall",
    "Problem",
    "PromptComposerError",
    "Registry",
    "SearchResult",
    "Selection",
    "ServerSpec",
    "SessionStore",
    "SessionStoreError",
    "Sink",
    "StatsReport",
    "StopLoop",
    "SystemInfo",
    "TaskSession",
    "TiktokenCounter",
    "TokenCounter",
    "TokenCounts",
    "TokenUsage",
    "ToolAudit",
    "ToolCallRecord",
    "ToolDoc",
    "ToolLoopError",
    "ToolSearch",
    "TuneResult",
    "UnknownModeError",
    "UnknownToolError",
    "UpstreamError",
    "Upstreams",
    "WrapOptions",
    "call_tool",
    "call_tool_definition",
    "compute_stats",
    "default_counter",
    "default_docs_dir",
    "fetch_tool_definition",
    "handle_fetch",
    "handle_tool_search",
    "load_registry",
    "load_servers",
    "mcp_executors",
    "partial_result",
    "read_events",
    "run_audit",
    "strip_descriptions",
    "tool_search_definition",
    "tune_mode",
    "wrap",
]
