"""The public surface: ``__all__`` is pinned, the core imports neither the anthropic SDK nor numpy."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import prompt_composer
from prompt_composer import errors
from prompt_composer.shared.lazy import exports_of

PUBLIC = {
    "Gateway",
    "ServerSpec",
    "UpstreamError",
    "ExecutorError",
    "Upstreams",
    "load_servers",
    "mcp_executors",
    "CALL_TOOL_NAME",
    "FETCH_TOOL_NAME",
    "TOOL_SEARCH_NAME",
    "AuditReport",
    "CallResult",
    "ComposedPrompt",
    "Composer",
    "EmbeddingUnavailable",
    "FetchResult",
    "FileRestriction",
    "GroupDoc",
    "ImporterError",
    "InMemorySessionStore",
    "LoadError",
    "LocalModelError",
    "Mode",
    "ModeAudit",
    "ModeConfig",
    "Origin",
    "Problem",
    "PromptComposerError",
    "InputFileError",
    "Registry",
    "SearchResult",
    "Selection",
    "SessionStore",
    "SessionStoreError",
    "SystemInfo",
    "TaskSession",
    "TiktokenCounter",
    "TokenCounter",
    "TokenCounts",
    "ToolAudit",
    "ToolDoc",
    "ToolSearch",
    "UnknownModeError",
    "UnknownToolError",
    "call_tool",
    "call_tool_definition",
    "default_counter",
    "default_docs_dir",
    "fetch_tool_definition",
    "handle_fetch",
    "handle_tool_search",
    "load_registry",
    "run_audit",
    "strip_descriptions",
    "tool_search_definition",
    # the tool loop, whatever the provider (prompt_composer.agent.results, .state, .wrapping; no SDK imported until
    # wrap() sees a client)
    "Iteration",
    "LoopResult",
    "MaxIterationsError",
    "PendingCall",
    "StopLoop",
    "TokenUsage",
    "ToolCallRecord",
    "ToolLoopError",
    "WrapOptions",
    "model_rewriter",
    "partial_result",
    "wrap",
    # tuning a mode from use (prompt_composer.learn.tune)
    "TuneResult",
    "tune_mode",
    # the event log and what reads it (prompt_composer.learn.events, prompt_composer.learn.stats)
    "DropCounts",
    "EventLog",
    "JsonlSink",
    "OtelSink",
    "Sink",
    "StatsReport",
    "compute_stats",
    "read_events",
}


def test_all_is_pinned_and_importable() -> None:
    assert set(prompt_composer.__all__) == PUBLIC
    assert len(prompt_composer.__all__) == len(PUBLIC)
    for name in PUBLIC:
        assert hasattr(prompt_composer, name), name


def test_every_error_derives_from_the_root() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, Exception):
            assert issubclass(cls, errors.PromptComposerError), name


SUBPACKAGES = ("core", "discovery", "learn", "safety", "agent", "mcp", "importers", "local", "testing")


def test_each_subpackage_exports_what_its_type_checking_block_imports() -> None:
    for name in SUBPACKAGES:
        package = importlib.import_module(f"prompt_composer.{name}")
        exported = set(exports_of(Path(str(package.__file__)).read_text(encoding="utf-8")))
        assert set(package.__all__) == exported, name
        for attr in package.__all__:
            assert getattr(package, attr) is not None, f"{name}.{attr}"


def test_importing_the_package_imports_none_of_its_layers() -> None:
    heavy = (
        "prompt_composer.agent.engine",
        "prompt_composer.agent.clients",
        "prompt_composer.agent.wrapping",
        "prompt_composer.mcp.gateway",
        "prompt_composer.mcp.upstreams",
        "prompt_composer.learn.tune",
        "prompt_composer.agent.bench",
        "anthropic",
        "openai",
        "mcp",
        "numpy",
        "redis",
    )
    probe = f"import sys, prompt_composer; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_the_core_and_the_loop_import_no_sdk_and_no_numpy() -> None:
    modules = [
        "prompt_composer.cli",
        "prompt_composer.core",
        "prompt_composer.learn.replay",
        "prompt_composer.importers.roomodes",
        "prompt_composer.agent.providers",
        "prompt_composer.safety.executors",
        "prompt_composer.discovery.evaluate",
        "prompt_composer.agent.bench",
        "prompt_composer.local.server",
        "prompt_composer.local.weights",
        "prompt_composer.agent.results",
        "prompt_composer.agent.state",
        "prompt_composer.agent.adapter",
        "prompt_composer.agent.drivers",
        "prompt_composer.agent.engine",
        "prompt_composer.agent.clients",
        "prompt_composer.agent.wrapping",
        "prompt_composer.agent.textcalls",
    ]
    probe = (
        f"import importlib, sys; [importlib.import_module(m) for m in {modules!r}];"
        " print(sorted(m for m in ('anthropic', 'openai', 'numpy', 'mcp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


# What a user calls on a composer (docs/library.md): composing, in each of its forms; the baseline audit measures
# against; a tool's full text; composers derived from this one. How a mode is rendered, and each tool's
# definitions, are not methods of the composer (``composer.definitions``, core/definitions.py).
COMPOSER_METHODS = {
    "compose",
    "compose_native",
    "compose_pinned",
    "pinned_prompt",
    "baseline",
    "tiers",
    "fetch_text",
    "with_context",
    "for_registry",
}
COMPOSER_ATTRIBUTES = {"registry", "counter", "definitions"}


def test_the_composer_surface_is_pinned() -> None:
    from prompt_composer import Composer
    from prompt_composer.core.definitions import ToolDefinitions
    from tests.helpers import REG

    assert {name for name in vars(Composer) if not name.startswith("_")} == COMPOSER_METHODS
    composer = Composer(REG)
    assert {name for name in vars(composer) if not name.startswith("_")} == COMPOSER_ATTRIBUTES
    assert isinstance(composer.definitions, ToolDefinitions)
    assert {name for name in vars(ToolDefinitions) if not name.startswith("_")} == {"get", "stub"}
    assert {name for name in vars(composer.definitions) if not name.startswith("_")} == {"tools", "counter", "views"}
    # A composer for the same tool docs (other mode settings, as tune tries) shares the built definitions.
    assert composer.for_registry(REG).definitions is composer.definitions
