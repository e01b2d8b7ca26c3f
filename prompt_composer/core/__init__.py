"""The core: tool docs, modes, the registry, task sessions, the composer, token counts, fetch and audit.

It depends on nothing else in the package (only :mod:`prompt_composer.errors` and :mod:`prompt_composer.shared`);
every other layer builds on it.
"""

from typing import TYPE_CHECKING

from ..shared.lazy import attach

if TYPE_CHECKING:
    from .audit import AuditReport, ModeAudit, ToolAudit, run_audit
    from .builtins import (
        CALL_TOOL_NAME,
        FETCH_TOOL_NAME,
        TOOL_SEARCH_NAME,
        call_tool_definition,
        fetch_tool_definition,
        tool_search_definition,
    )
    from .cards import CardExample, ServerCard
    from .composer import Composer
    from .docs import GroupDoc, Origin, ToolDoc
    from .fetch import FetchResult, handle_fetch
    from .live import LiveRegistry, Reload
    from .modes import FileRestriction, Mode, ModeConfig, ModeOverlay
    from .promotion import DEFAULT_POLICY, POLICIES, Policy
    from .prompt import ComposedPrompt, SystemInfo, TokenCounts
    from .redis_store import RedisSessionStore
    from .registry import Registry, default_docs_dir, load_registry
    from .schema import strip_descriptions, validate_arguments
    from .session import InMemorySessionStore, PinnedPrompt, SessionData, SessionStore, TaskSession
    from .tokens import TiktokenCounter, TokenCounter, default_counter

__all__ = [
    "CALL_TOOL_NAME",
    "DEFAULT_POLICY",
    "FETCH_TOOL_NAME",
    "POLICIES",
    "TOOL_SEARCH_NAME",
    "AuditReport",
    "CardExample",
    "ComposedPrompt",
    "Composer",
    "FetchResult",
    "FileRestriction",
    "GroupDoc",
    "InMemorySessionStore",
    "LiveRegistry",
    "Mode",
    "ModeAudit",
    "ModeConfig",
    "ModeOverlay",
    "Origin",
    "PinnedPrompt",
    "Policy",
    "RedisSessionStore",
    "Registry",
    "Reload",
    "ServerCard",
    "SessionData",
    "SessionStore",
    "SystemInfo",
    "TaskSession",
    "TiktokenCounter",
    "TokenCounter",
    "TokenCounts",
    "ToolAudit",
    "ToolDoc",
    "call_tool_definition",
    "default_counter",
    "default_docs_dir",
    "fetch_tool_definition",
    "handle_fetch",
    "load_registry",
    "run_audit",
    "strip_descriptions",
    "tool_search_definition",
    "validate_arguments",
]

__getattr__, __dir__ = attach(__name__, __file__)
