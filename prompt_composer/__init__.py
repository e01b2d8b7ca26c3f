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

The package is layered (docs/architecture.md): ``core`` depends on nothing else; ``discovery``, ``learn`` and
``safety`` on the core; ``mcp`` and ``local`` on those; ``agent``, ``importers`` and ``testing`` above; the CLI on
top. Importing this module imports none of them: each name below is loaded on first use.
"""

from typing import TYPE_CHECKING

from .shared.lazy import attach
from .shared.version import VERSION

if TYPE_CHECKING:
    from .agent import (
        Iteration,
        LoopResult,
        MaxIterationsError,
        PendingCall,
        StopLoop,
        TokenUsage,
        ToolCallRecord,
        ToolLoopError,
        WrapOptions,
        model_rewriter,
        partial_result,
        wrap,
    )
    from .core import (
        CALL_TOOL_NAME,
        FETCH_TOOL_NAME,
        TOOL_SEARCH_NAME,
        AuditReport,
        ComposedPrompt,
        Composer,
        FetchResult,
        FileRestriction,
        GroupDoc,
        InMemorySessionStore,
        Mode,
        ModeAudit,
        ModeConfig,
        Origin,
        Registry,
        SessionStore,
        SystemInfo,
        TaskSession,
        TiktokenCounter,
        TokenCounter,
        TokenCounts,
        ToolAudit,
        ToolDoc,
        call_tool_definition,
        default_counter,
        default_docs_dir,
        fetch_tool_definition,
        handle_fetch,
        load_registry,
        run_audit,
        strip_descriptions,
        tool_search_definition,
    )
    from .discovery import CallResult, SearchResult, Selection, ToolSearch, call_tool, handle_tool_search
    from .errors import (
        EmbeddingUnavailable,
        ExecutorError,
        ImporterError,
        InputFileError,
        LoadError,
        LocalModelError,
        Problem,
        PromptComposerError,
        SessionStoreError,
        UnknownModeError,
        UnknownToolError,
        UpstreamError,
    )
    from .learn import (
        DropCounts,
        EventLog,
        JsonlSink,
        OtelSink,
        Sink,
        StatsReport,
        TuneResult,
        compute_stats,
        read_events,
        tune_mode,
    )
    from .mcp import Gateway, ServerSpec, Upstreams, load_servers, mcp_executors

__version__ = VERSION

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
    "ExecutorError",
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
    "model_rewriter",
    "partial_result",
    "read_events",
    "run_audit",
    "strip_descriptions",
    "tool_search_definition",
    "tune_mode",
    "wrap",
]

__getattr__, __dir__ = attach(__name__, __file__)
