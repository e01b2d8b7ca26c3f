"""prompt-composer: each turn's system prompt carries only the tool text it needs.

Load a registry of tool docs and modes, keep a task session per task, and compose::

    registry = load_registry("tool_docs")
    composer = Composer(registry)
    session = InMemorySessionStore().get("task-1")
    prompt = composer.compose("code", session)   # prompt.system, prompt.tools
    session.record_use("glob")                     # after the tool ran
"""

from .audit import AuditReport, ModeAudit, ToolAudit, run_audit
from .composer import ComposedPrompt, Composer, TokenCounts, strip_descriptions
from .docs import Origin, ToolDoc
from .errors import LoadError, Problem, PromptComposerError, UnknownModeError, UnknownToolError
from .fetch import FETCH_TOOL_NAME, FetchResult, fetch_tool_definition, handle_fetch
from .modes import Mode, ModeConfig
from .registry import Registry, default_docs_dir, load_registry
from .session import InMemorySessionStore, SessionStore, TaskSession
from .tokens import TiktokenCounter, TokenCounter, default_counter

__version__ = "0.1.0"

__all__ = [
    "FETCH_TOOL_NAME",
    "AuditReport",
    "ComposedPrompt",
    "Composer",
    "FetchResult",
    "InMemorySessionStore",
    "LoadError",
    "Mode",
    "ModeAudit",
    "ModeConfig",
    "Origin",
    "Problem",
    "PromptComposerError",
    "Registry",
    "SessionStore",
    "TaskSession",
    "TiktokenCounter",
    "TokenCounter",
    "TokenCounts",
    "ToolAudit",
    "ToolDoc",
    "UnknownModeError",
    "UnknownToolError",
    "default_counter",
    "default_docs_dir",
    "fetch_tool_definition",
    "handle_fetch",
    "load_registry",
    "run_audit",
    "strip_descriptions",
]
