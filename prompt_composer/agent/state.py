"""What a composed client is bound to: registry, composer, session store, mode, task and promotion policy
(:class:`TaskState`), the options every ``wrap()`` takes (:class:`WrapOptions`), and what follows from them for
one request: the registry version, the composed prompt under the policy, the composed tools."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Literal, Required, TypedDict

from cachetools import LRUCache

from ..core.builtins import CALL_TOOL_NAME, call_tool_definition
from ..core.composer import Composer, offered_stubs
from ..core.live import LiveRegistry
from ..core.modes import Mode
from ..core.promotion import DEFAULT_POLICY, POLICIES, Policy
from ..core.prompt import ComposedPrompt, SystemInfo
from ..core.registry import Registry, load_registry
from ..core.session import InMemorySessionStore, SessionStore, TaskSession
from ..core.tiers import Tiers
from ..discovery.rewrite import AsyncRequestRewriter, RequestRewriter
from ..discovery.search import LazySearch, ToolSearch
from ..learn.events import EventLog

logger = logging.getLogger(__name__)


def tool_name(tool: Any) -> str | None:
    """A tool definition's name in either wire format (a mapping, or an SDK object)."""
    if isinstance(tool, Mapping):
        function = tool.get("function")
        if isinstance(function, Mapping):  # OpenAI Chat Completions: {"type": "function", "function": {...}}
            return function.get("name")
        return tool.get("name")
    return getattr(tool, "name", None)


class WrapOptions(TypedDict, total=False):
    """The options of every ``wrap()`` (and composed client constructor), whatever the provider.

    ``mode`` and ``task_id`` say what to compose for. ``composer`` (or ``registry``, default: the shipped docs)
    decides what is composed; ``store`` keeps the task sessions (default: a fresh
    :class:`~prompt_composer.session.InMemorySessionStore`); ``policy`` overrides the mode's promotion policy.
    ``search`` answers ``tool_search`` in discovery modes (default: ``ToolSearch(registry)``, built on the first
    search); ``call_tool=True`` adds the ``call_tool`` tool and lets the loop answer it. ``system_info`` (e.g.
    ``SystemInfo.detect(root)``) fills the system information section; without it there is none.
    ``baseline=True`` sends what an agent without prompt-composer sends (every allowed tool in full, no fetch
    tool) on every request, for A/B runs such as ``prompt-composer bench``. ``registry`` may be a
    :class:`~prompt_composer.live.LiveRegistry`: each request then composes from its current version, except that
    a task whose prompt is pinned (``task_start`` / ``inline``) keeps the version it was pinned on while the
    live registry keeps it (the last ``keep`` versions); the tool calls of a response are checked against the
    version its request was composed from. ``events`` (an :class:`~prompt_composer.events.EventLog`) receives one
    event per request, tool call, fetch, search, refusal and promotion of the loop; it never slows the loop down.
    ``native=True`` compiles the mode to the provider's own tool deferral (every tool but the permanent and recent
    ones deferred, loaded by references in the answers to ``tool_search`` and the fetch tool); ``"emulate"`` runs
    the same conversation on a server that cannot defer, the loop appending the loaded tools itself. ``rewriter``
    (e.g. :func:`~prompt_composer.agent.rewriting.model_rewriter`) puts each new user message of a preselecting
    mode as the operation it asks for, searched before the message's own words: a synchronous callable, or an
    ``async def`` one for an async client (the async loop and async clients run a synchronous one in a worker
    thread, so it never blocks their event loop).

    OpenAI clients only: ``api`` picks the API ``run()`` speaks, ``"chat_completions"`` (the default, what every
    OpenAI-compatible server copies) or ``"responses"`` (the only one with tool deferral: ``native=True`` needs it);
    ``hosted_search=True`` (with ``native=True``) lets OpenAI search the deferred tools itself instead of the loop.
    """

    mode: Required[str]
    task_id: Required[str]
    composer: Composer | None
    registry: Registry | LiveRegistry | None
    store: SessionStore | None
    policy: Policy | None
    search: ToolSearch | None
    call_tool: bool
    system_info: SystemInfo | None
    baseline: bool
    events: EventLog | None
    native: bool | Literal["emulate"]
    rewriter: RequestRewriter | AsyncRequestRewriter | None
    api: Literal["chat_completions", "responses"]
    hosted_search: bool


class TaskState:
    """What a wrapped client is bound to: registry, composer, session store, mode, task and policy."""

    def __init__(
        self,
        *,
        mode: str,
        task_id: str,
        composer: Composer | None = None,
        registry: Registry | LiveRegistry | None = None,
        store: SessionStore | None = None,
        policy: Policy | None = None,
        search: ToolSearch | LazySearch | None = None,
        call_tool: bool = False,
        system_info: SystemInfo | None = None,
        baseline: bool = False,
        events: EventLog | None = None,
        native: bool | Literal["emulate"] = False,
        rewriter: RequestRewriter | AsyncRequestRewriter | None = None,
    ) -> None:
        self.live = registry if isinstance(registry, LiveRegistry) else None
        if isinstance(registry, LiveRegistry):
            if composer is not None:
                raise ValueError("give a LiveRegistry or a composer, not both")
            composer, registry = registry.composer, None
        if composer is None:
            composer = Composer(registry if registry is not None else load_registry())
        elif registry is not None and registry is not composer.registry:
            raise ValueError("give either a composer or a registry, or the composer's own registry")
        if system_info is not None:  # an input of composition like any context value: composing stays pure
            composer = composer.with_context(system_info=system_info)
        if policy is not None and policy not in POLICIES:
            raise ValueError(f"unknown promotion policy {policy!r}; choose one of {', '.join(POLICIES)}")
        self.system_info = system_info
        self.composer = composer
        self.registry = composer.registry
        self.mode: Mode = self.registry.mode(mode)
        self.task_id = task_id
        self.store: SessionStore = store if store is not None else InMemorySessionStore()
        self.explicit_policy = policy
        self.searcher = search if isinstance(search, LazySearch) else LazySearch(self.registry, search)
        self.call_tool = call_tool
        self.baseline = baseline
        if native not in (True, False, "emulate"):
            raise ValueError(f"native is True, False or 'emulate', not {native!r}")
        self.native: Literal["provider", "emulate"] | None = "provider" if native is True else native or None
        if events is not None and not isinstance(events, EventLog):  # a bare sink would fail mid-loop: say so now
            raise TypeError(
                f"events takes an EventLog (EventLog(sink) in front of a sink), not {type(events).__name__}"
            )
        self.events = events
        if rewriter is not None and not callable(rewriter):
            raise TypeError(f"rewriter takes a callable (text -> line), not {type(rewriter).__name__}")
        if rewriter is not None and (self.mode.config.preselect is None or self.native == "provider"):
            why = "has no preselect" if self.mode.config.preselect is None else "defers to the provider (native=True)"
            logger.warning("rewriter given, but mode %r %s: nothing is preselected, so it is never asked", mode, why)
        self.rewriter = rewriter
        # The rewriter's answers asked before preselection ran (the loop's effect, an async client's await): message
        # digest -> (line, seconds it took), shared by this state's copies; preselection takes each out once.
        # Bounded: a message whose request was never sent leaves its entry behind.
        self.rewrites: LRUCache[str, tuple[str | None, float]] = LRUCache(maxsize=64)
        # Per registry version (a LiveRegistry's): its composer with this state's context, and its search.
        self._versions: dict[str, tuple[Composer, LazySearch]] = {self.registry.fingerprint: (composer, self.searcher)}

    def derive(self, *, task_id: str | None, mode: str | None, policy: Policy | None) -> TaskState:
        other = copy.copy(self)
        other.task_id = task_id if task_id is not None else self.task_id
        other.explicit_policy = policy if policy is not None else self.explicit_policy
        other.mode = self.registry.mode(mode or self.mode.slug)
        return other

    def bound(self, session: TaskSession | None = None) -> TaskState:
        """The state one request runs on. With a LiveRegistry: the registry version the task's pinned prompt was
        composed from (``task_start`` / ``inline``) while the live registry keeps it, else its current version.
        Without one: this state."""
        if self.live is None:
            return self
        version = self.live.composer
        if self.pins:
            pin = (session or self.session).pinned(self._pin_key)
            kept = self.live.version(pin.fingerprint) if pin is not None else None
            version = kept or version
        if version.registry is self.registry:
            return self
        if version.registry.fingerprint not in self._versions:
            contextual = version.with_context(system_info=self.system_info) if self.system_info else version
            self._versions[version.registry.fingerprint] = (contextual, LazySearch(version.registry, None))
        other = copy.copy(self)
        other.composer, other.searcher = self._versions[version.registry.fingerprint]
        other.registry = version.registry
        other.mode = version.registry.mode(self.mode.slug)
        return other

    @property
    def discovery(self) -> bool:
        """Whether the loop answers ``tool_search`` itself: a discovery mode, a tiered one, or native deferral (what it
        finds is loaded)."""
        return self.mode.config.discovery or self.mode.config.tiers is not None or self.native is not None

    @property
    def tiers(self) -> Tiers | None:
        """A tiered mode's split of its tools (see :mod:`prompt_composer.core.tiers`)."""
        return self.composer.tiers(self.mode)

    @property
    def policy(self) -> Policy:
        return self.explicit_policy or self.mode.config.promotion or DEFAULT_POLICY

    @property
    def session(self) -> TaskSession:
        return self.store.get(self.task_id)

    @property
    def pins(self) -> bool:
        """Whether the task's prompt is pinned at task start (``task_start`` / ``inline``, not discovery)."""
        return not self.baseline and not self.mode.config.discovery and self.policy != "every_turn"

    @property
    def _pin_key(self) -> str:
        # A live registry's versions share one pin per mode (the pin records its version's fingerprint); a fixed
        # registry pins per fingerprint, so another registry over the same store composes its own.
        return f"live/{self.mode.slug}" if self.live is not None else f"{self.registry.fingerprint}/{self.mode.slug}"

    @property
    def stable(self) -> bool:
        """Whether the composed system text and tool list stay the same for the whole task (a discovery mode's
        tool list only grows after its permanent tools): then a provider may cache them."""
        if self.native is not None:
            return True
        return self.baseline or self.discovery or self.policy != "every_turn" or self.mode.recent_size == 0

    def prompt(self, session: TaskSession | None = None) -> ComposedPrompt:
        """This request's composed prompt under the policy."""
        session = session or self.session
        if self.baseline:
            return self.composer.baseline(self.mode)
        # A discovery mode's prompt depends only on the tools tool_search found in this task (not on the FIFO),
        # and discovery only appends to its tool list. Pinning it (task_start / inline) would hide the tools
        # found, so it is recomposed under every policy: it changes only when a search adds tools, and then only
        # at the end of the composed tools (before tool_search / fetch) and of the system prompt; the prefix
        # before the discovered tools stays byte-identical (composing is pure and cached per discovered set).
        if self.native is not None:  # the eager tools are pinned for the task; deferred ones load by reference
            pin = session.pin(self._pin_key, fingerprint=self.registry.fingerprint, mode=self.mode)
            loaded = session.discovered(self.mode) if self.native == "emulate" else None
            return self.composer.compose_native(self.mode, recent=pin.recent, loaded=loaded)
        if not self.pins:
            return self.composer.compose(self.mode, session)
        pin = session.pin(self._pin_key, fingerprint=self.registry.fingerprint, mode=self.mode)
        if pin.fingerprint != self.registry.fingerprint:  # its live version is no longer kept: same views, new docs
            pin = replace(pin, fingerprint=self.registry.fingerprint)
        if self.mode.config.tiers is not None:  # the FIFO view is pinned; loading only appends, so it is live
            return self.composer.compose(
                self.mode,
                recent=pin.recent,
                loaded=session.discovered(self.mode),
                offered=offered_stubs(self.mode, session),
            )
        return self.composer.compose_pinned(pin, self.mode)

    def composed_tools(self, prompt: ComposedPrompt, taken: Iterable[str | None]) -> list[dict[str, Any]]:
        """The composed tool definitions to send after the caller's (``taken`` names win), in the composer's
        (Anthropic) format, as fresh copies an adapter may mark or convert."""
        taken = set(taken)
        composed = [dict(t) for t in prompt.tools if t["name"] not in taken]
        if self.call_tool and prompt.style != "text" and CALL_TOOL_NAME not in taken:
            # Fixed per mode: after fetch, before the tools a tiered mode loads (only those grow within a task).
            at = len(composed) - len([t for t in composed if t["name"] in prompt.appended()])
            composed.insert(at, call_tool_definition(self.mode))
        return composed
