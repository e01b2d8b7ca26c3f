"""The composer: (mode, task session) → the turn's system prompt and native tool list.

Composing is pure: the same registry, mode and FIFO view give byte-identical output, so results are cached
(keyed on the registry fingerprint, the mode and the FIFO view) and provider prompt caches stay warm.

Doc text reaches the output only as template *variables*, never as template source, so ``{{ 7*7 }}`` in a
tool doc is printed as those characters.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cachetools import LRUCache

from .builtins import fetch_tool_definition, tool_search_definition
from .definitions import ToolDefinitions
from .fetch import fetch_tool_doc
from .modes import Mode
from .prompt import ComposedPrompt, DocView, TokenCounts, builtin_view
from .registry import Registry
from .sections import Sections
from .session import PinnedPrompt, TaskSession
from .tiers import Tiers, catalog_line, grouped, summary
from .tiers import assign as assign_tiers
from .tokens import TokenCounter, count_tools, default_counter

# System prompt sections, in order (the slots of Roo Code's system prompt). Each is a template file in
# templates/ that a user may override; a section that renders empty leaves no trace.
SECTIONS = (
    "role",
    "formatting",
    "tool_use",
    "catalog",
    "guidelines",
    "mcp",
    "capabilities",
    "modes",
    "rules",
    "system_info",  # in the stable part; its date, when given, changes the cached prefix once a day
    "objective",
    "custom_instructions",
)
# Whatever changes within a task goes last, after everything stable, so the stable prefix stays cacheable.
RECENT_SECTION = "recent"


def declares_shortlist(mode: Mode) -> bool:
    """Whether ``mode`` declares its preselections' shortlisted tools in the tool list (``shortlist_stubs``, in a
    native tool style)."""
    config = mode.config.preselect
    return config is not None and config.shortlist_stubs and config.shortlist > 0 and mode.config.tool_style != "text"


def offered_stubs(mode: Mode, session: TaskSession) -> tuple[str, ...]:
    """The tools ``mode`` declares as stubs for the task: its preselections' shortlists not loaded
    (:meth:`TaskSession.offered`) when it :func:`declares_shortlist`, else none."""
    return session.offered(mode) if declares_shortlist(mode) else ()


def _offered(mode: Mode, offered: Sequence[str], listed: set[str], hidden: Callable[[str], bool]) -> tuple[str, ...]:
    """Of ``offered``, the tools of ``mode`` to declare as stubs: not ``listed`` already, and ``hidden`` (a
    tiered mode's catalog and name tools: a brief tool is declared already)."""
    return tuple(dict.fromkeys(n for n in offered if mode.allows(n) and n not in listed and hidden(n)))


class Composer:
    """Composes prompts for one registry. Thread-safe; results are cached.

    ``templates`` is a folder whose ``<section>.j2`` files replace the shipped ones (see :data:`SECTIONS`);
    ``context`` gives templates extra values (``mcp_servers``, ``system_info`` (a :class:`SystemInfo` or a
    mapping of label to value), ``capabilities``, ``custom_instructions`` (the user's own, shown apart from the
    mode's), or anything your own templates use). Both are fixed for the composer's life; see
    :meth:`with_context` for a composer with other values. ``usage`` (tool → how often it was used) orders a
    tiered mode's tools: the least used become catalog lines or names first (see :mod:`.tiers`).

    ``definitions`` holds each tool's native definitions (full, brief, stub) and their token counts
    (:class:`~prompt_composer.core.definitions.ToolDefinitions`).
    """

    def __init__(
        self,
        registry: Registry,
        *,
        counter: TokenCounter | None = None,
        templates: str | Path | None = None,
        context: Mapping[str, Any] | None = None,
        cache_size: int = 4096,
        usage: Mapping[str, int] | None = None,
    ) -> None:
        counter = counter if counter is not None else default_counter()
        self._init(
            registry,
            counter=counter,
            templates=templates,
            sections=Sections(templates),
            context=context or {},
            cache_size=cache_size,
            usage=usage or {},
            definitions=ToolDefinitions(registry.tools, counter),
        )

    def _init(
        self,
        registry: Registry,
        *,
        counter: TokenCounter,
        templates: str | Path | None,
        sections: Sections,
        context: Mapping[str, Any],
        cache_size: int,
        usage: Mapping[str, int],
        definitions: ToolDefinitions,
    ) -> None:
        """Set every field; :meth:`for_registry` calls it with parts shared with another composer."""
        self.registry = registry
        self.counter: TokenCounter = counter
        self.definitions = definitions
        self._templates = templates
        self._sections = sections
        self._context: dict[str, Any] = {
            "mcp_servers": [],
            "system_info": {},
            "capabilities": "",
            "custom_instructions": "",
            **context,
        }
        self._views = definitions.views
        self._cache: LRUCache[tuple[str, str, tuple[str, ...]], ComposedPrompt] = LRUCache(maxsize=cache_size)
        self._lock = threading.Lock()
        # How often each tool was used (an event log's counts, say): in a tiered mode the least used go poorer first.
        self._usage: dict[str, int] = dict(usage)
        self._tiers: dict[str, Tiers] = {}

    # -- public API ----------------------------------------------------------------------------------

    def with_context(self, **values: Any) -> Composer:
        """A composer for the same registry, counter and templates whose context has ``values`` on top of this
        one's (e.g. ``system_info=SystemInfo.detect(root)``). It has its own cache; this one is unchanged."""
        return Composer(
            self.registry,
            counter=self.counter,
            templates=self._templates,
            context={**self._context, **values},
            cache_size=int(self._cache.maxsize),
            usage=self._usage,
        )

    def for_registry(self, registry: Registry) -> Composer:
        """A composer for ``registry`` with this one's counter, templates and context, and its own cache. When
        ``registry`` holds the same tool docs (the same folder with other mode settings, as ``tune`` tries), it
        shares this one's compiled templates and tool definitions instead of building them again."""
        same_docs = dict(registry.tools) == dict(self.registry.tools)
        other = Composer.__new__(Composer)
        other._init(
            registry,
            counter=self.counter,
            templates=self._templates,
            sections=self._sections,
            context=self._context,
            cache_size=int(self._cache.maxsize),
            usage=self._usage,
            definitions=self.definitions if same_docs else ToolDefinitions(registry.tools, self.counter),
        )
        return other

    def compose(
        self,
        mode: str | Mode,
        session: TaskSession | None = None,
        *,
        recent: Sequence[str] | None = None,
        loaded: Sequence[str] | None = None,
        offered: Sequence[str] | None = None,
    ) -> ComposedPrompt:
        """The prompt for ``mode`` given a task session (or an explicit FIFO view ``recent``; in a tiered or a
        discovery mode, an explicit list of the tools ``loaded`` (found by ``tool_search``), else the session's,
        and of the tools ``offered`` as stubs (see :func:`offered_stubs`), else the session's)."""
        resolved = self._mode(mode)
        if offered is None:
            offered = offered_stubs(resolved, session) if session is not None else ()
        if resolved.config.discovery:
            if loaded is None:
                loaded = session.discovered(resolved) if session is not None else ()
            return self._compose_discovery(resolved, loaded, offered)
        if recent is None:
            view = session.recent(resolved) if session is not None else ()
        else:
            view = self._view_of(resolved, recent)
        if resolved.config.tiers is not None:
            if loaded is None:
                loaded = session.discovered(resolved) if session is not None else ()
            return self._compose_tiered(resolved, recent=view, loaded=loaded, offered=offered)
        return self._cached(
            resolved,
            view,
            lambda: self._render(resolved, full=frozenset(resolved.permanent) | frozenset(view), recent=view),
        )

    def _compose_tiered(
        self, mode: str | Mode, *, recent: Sequence[str] = (), loaded: Sequence[str] = (), offered: Sequence[str] = ()
    ) -> ComposedPrompt:
        """A tiered mode's prompt: its permanent and brief tools in the mode's order (the ``recent`` ones in full),
        ``tool_search`` and ``fetch_tool_description``, then the ``loaded`` catalog and name tools in full, in the
        order they were loaded, so loading only ever appends. ``loaded`` may name any tool: only the mode's catalog
        and name tools are appended (a brief one is callable already). With ``stubs: true`` every tool of the mode is
        listed in the mode's order from the start (the catalog and name tools as stubs, or in full when ``recent``)
        and nothing is appended: what loads goes into the conversation as text, so ``loaded`` changes nothing.
        ``offered`` catalog and name tools not loaded are declared as stubs after the loaded ones."""
        resolved = self._mode(mode)
        tiers = self.tiers(resolved)
        if tiers is None:
            raise ValueError(f"mode {resolved.slug!r} has no tiers")
        view = tuple(n for n in recent if resolved.allows(n) and not tiers.unlisted(n))
        appended = tuple(dict.fromkeys(n for n in loaded if resolved.allows(n) and tiers.unlisted(n)))
        full = frozenset(resolved.permanent) | frozenset(view) | frozenset(appended)
        stubs = () if tiers.stubs else _offered(resolved, offered, set(appended), tiers.unlisted)
        return self._cached(
            resolved,
            ("\0tiers", *view, "\0", *appended, *(("\0offered", *stubs) if stubs else ())),
            lambda: self._render(resolved, full=full, recent=view, tiers=tiers, loaded=appended, offered=stubs),
        )

    def compose_native(
        self, mode: str | Mode, *, recent: Sequence[str] = (), loaded: Sequence[str] | None = None
    ) -> ComposedPrompt:
        """A mode for a provider's own tool deferral (or the loop's emulation of it).

        Eager: the permanent tools and the ``recent`` ones, in full, then ``tool_search`` and the fetch tool. Every
        other tool of the mode is *deferred*: its full definition follows the eager ones (``prompt.deferred`` names
        them; an adapter marks them ``defer_loading`` or leaves them out), and the system prompt lists it by its
        brief (or, in a tiered mode, its catalog line or name) so the model knows it exists. With ``loaded`` (the
        loop's emulation, for servers that cannot defer), only those deferred tools are sent, appended after the
        eager ones in the order they were loaded, as a tiered mode loads tools."""
        resolved = self._mode(mode)
        if resolved.config.tool_style == "text":
            raise ValueError(f"mode {resolved.slug!r} is text style: it sends no tool definitions to defer")
        if resolved.config.discovery:
            raise ValueError(f"mode {resolved.slug!r} is a discovery mode: it defers by searching already")
        own = self.tiers(resolved)
        permanent = set(resolved.permanent)
        view = tuple(n for n in self._view_of(resolved, recent) if n not in permanent) if recent else ()
        eager = permanent | set(view)
        deferred = tuple(n for n in resolved.allowed if n not in eager)
        names = tuple(n for n in deferred if own is not None and n in own.names)
        tiers = Tiers(brief=(), catalog=tuple(n for n in deferred if n not in names), names=names, budget=0, fixed=0)
        briefs = frozenset(n for n in deferred if own is None or own.tier(resolved, n) == "brief")
        if loaded is None:
            key = ("\0native", *view)
            appended: tuple[str, ...] = deferred
        else:
            appended = tuple(dict.fromkeys(n for n in loaded if n in set(deferred)))
            key = ("\0native-emulated", *view, "\0", *appended)
        full = frozenset(eager) | frozenset(appended)

        def build() -> ComposedPrompt:
            prompt = self._render(resolved, full=full, recent=view, tiers=tiers, loaded=appended, briefs=briefs)
            hidden = sum(self.definitions.get(n, full=True)[1] for n in deferred) if loaded is None else 0
            return replace(
                prompt,
                deferred=deferred,
                native=True,
                tiered=False,
                catalog=(),
                names=(),
                loaded=() if loaded is None else appended,
                # What the model is shown: a provider keeps the deferred definitions out until a reference loads one.
                tokens=TokenCounts(system=prompt.tokens.system, tools=prompt.tokens.tools - hidden),
            )

        return self._cached(resolved, key, build)

    def tiers(self, mode: str | Mode) -> Tiers | None:
        """How a tiered mode splits its tools (``None`` for a mode without ``tiers``), computed once per mode."""
        resolved = self._mode(mode)
        config = resolved.config.tiers
        if config is None:
            return None
        own = self.registry.modes.get(resolved.slug) is resolved
        cached = self._tiers.get(resolved.slug) if own else None
        if cached is not None:
            return cached
        docs = self.registry.tools
        builtins = [tool_search_definition(resolved), fetch_tool_definition(resolved)]
        fixed = sum(self.definitions.get(n, full=True)[1] for n in resolved.permanent) + count_tools(
            self.counter, builtins
        )

        # With stubs a catalog or name tool costs its stub in the tool list, not a line of the system prompt.
        def line_cost(name: str) -> int:
            if config.stubs:
                return self.definitions.stub(name, summarised=True)[1]
            return self.counter.count(catalog_line(docs[name])) + 1

        def name_cost(name: str) -> int:
            return self.definitions.stub(name, summarised=False)[1] if config.stubs else self.counter.count(name) + 1

        computed = assign_tiers(
            resolved,
            config,
            fixed=fixed,
            brief_cost=lambda n: self.definitions.get(n, full=False)[1],
            line_cost=line_cost,
            name_cost=name_cost,
            usage=self._usage,
        )
        if own:
            self._tiers[resolved.slug] = computed
        return computed

    def _compose_discovery(
        self, mode: str | Mode, discovered: Sequence[str] = (), offered: Sequence[str] = ()
    ) -> ComposedPrompt:
        """A discovery mode's prompt: the permanent tools, then the ``discovered`` ones in discovery order (so the
        list only grows at its end), then ``tool_search`` and ``fetch_tool_description``, then the ``offered`` ones
        not discovered as stubs. All listed tools are in full; tools the mode does not allow, and permanent ones,
        are dropped from ``discovered``."""
        resolved = self._mode(mode)
        permanent = set(resolved.permanent)
        seen: set[str] = set()
        view: list[str] = []
        for name in discovered:
            if resolved.allows(name) and name not in permanent and name not in seen:
                seen.add(name)
                view.append(name)
        stubs = _offered(resolved, offered, seen | permanent, lambda _: True)
        return self._cached(
            resolved,
            ("\0discovery", *view, *(("\0offered", *stubs) if stubs else ())),
            lambda: self._render(
                resolved, full=frozenset(resolved.permanent) | seen, recent=(), discovered=tuple(view), offered=stubs
            ),
        )

    def compose_pinned(self, pin: PinnedPrompt, mode: Mode | None = None) -> ComposedPrompt:
        """A pinned prompt, recomposed from what it was pinned from (a cache hit when composed before).

        ``mode`` defaults to the registry's mode of the pin's slug; a ``ValueError`` says this composer's registry
        or the mode is not the one the prompt was pinned for."""
        if self.registry.fingerprint != pin.fingerprint:
            raise ValueError(
                f"the prompt was pinned for registry {pin.fingerprint}, not the composer's {self.registry.fingerprint}"
            )
        resolved = mode if mode is not None else self.registry.mode(pin.mode)
        if resolved.slug != pin.mode:
            raise ValueError(f"the prompt was pinned for mode {pin.mode!r}, not {resolved.slug!r}")
        # The same calls compose(mode, session) makes, with the views it read from the session at pin time.
        if resolved.config.discovery:
            return self._compose_discovery(resolved, pin.discovered)
        return self.compose(resolved, recent=pin.recent)

    def pinned_prompt(self, session: TaskSession, key: str, mode: Mode) -> ComposedPrompt:
        """The prompt pinned under ``key`` for the task: pinned on first call (:meth:`TaskSession.pin`), then
        recomposed from the pin (byte-identical; a cache hit when this composer composed it before)."""
        return self.compose_pinned(session.pin(key, fingerprint=self.registry.fingerprint, mode=mode), mode)

    def _cached(self, mode: Mode, view: tuple[str, ...], build: Callable[[], ComposedPrompt]) -> ComposedPrompt:
        """The cache, keyed on (registry fingerprint, mode, FIFO view). A Mode object that is not the registry's
        own (built or altered by the caller) is rendered without the cache, since its slug no longer says what
        it holds."""
        if self.registry.modes.get(mode.slug) is not mode:
            return build()
        key = (self.registry.fingerprint, mode.slug, view)
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        prompt = build()
        with self._lock:
            self._cache[key] = prompt
        return prompt

    def baseline(self, mode: str | Mode) -> ComposedPrompt:
        """What an agent without prompt-composer sends: every allowed tool in full, no fetch tool."""
        resolved = self._mode(mode)
        return self._render(resolved, full=frozenset(resolved.allowed), recent=(), include_fetch=False)

    def fetch_text(self, name: str) -> str:
        """The full description and schema of any registry tool (no access check: see fetch.handle_fetch)."""
        return fetch_tool_doc(self.registry.tool(name))

    # -- rendering -----------------------------------------------------------------------------------

    def _mode(self, mode: str | Mode) -> Mode:
        return mode if isinstance(mode, Mode) else self.registry.mode(mode)

    @staticmethod
    def _view_of(mode: Mode, recent: Sequence[str]) -> tuple[str, ...]:
        """Replay ``recent`` (oldest first) into a throwaway session and take the mode's view."""
        session = TaskSession(history_limit=max(len(recent), 1))
        session.record_uses(recent)
        return session.recent(mode)

    def _render(
        self,
        mode: Mode,
        *,
        full: frozenset[str],
        recent: tuple[str, ...],
        include_fetch: bool = True,
        discovered: tuple[str, ...] | None = None,
        tiers: Tiers | None = None,
        loaded: tuple[str, ...] = (),
        briefs: frozenset[str] = frozenset(),
        offered: tuple[str, ...] = (),
    ) -> ComposedPrompt:
        """Render without the cache. ``full`` names the tools shown in full; ``recent`` the FIFO view.

        ``discovered`` (discovery modes) limits the tools to the permanent ones and those, see
        :meth:`_compose_discovery`; ``tiers`` and ``loaded`` (tiered modes), see :meth:`_compose_tiered`."""
        discovery = discovered is not None
        permanent = set(mode.permanent)
        # A mode whose every tool is permanent (or that has none) has nothing to expand: offering the fetch tool
        # there only invites a model to call it again and again (docs/tool-choice.md).
        include_fetch = include_fetch and (discovery or any(n not in permanent for n in mode.allowed))
        allowed = mode.allowed
        if discovered is not None:
            allowed = (*(n for n in mode.allowed if n in permanent), *discovered)
        elif tiers is not None:
            allowed = tuple(n for n in mode.allowed if not tiers.unlisted(n))
        full_names = (*(n for n in allowed if n in full), *loaded)
        brief_names = tuple(n for n in allowed if n not in full)
        style = mode.config.tool_style
        text_style = style == "text"
        full_docs, catalog_brief, recent = self._catalog(
            mode, allowed, full, recent, include_fetch=include_fetch, discovered=discovered
        )
        values = {
            **self._mode_values(mode, include_fetch=include_fetch),
            # Whether any tool can be brief at all: stable for the mode, unlike the FIFO-dependent brief list.
            "expandable": not discovery and any(n not in permanent for n in allowed),
            "discovery": discovery,
            "full_tools": full_names,
            "brief_tools": brief_names,
            "full_docs": full_docs,
            "brief_docs": [self._views[n] for n in catalog_brief],
            "recent_docs": [self._views[n] for n in (*recent, *loaded) if n not in permanent] if include_fetch else [],
            **self._tier_values(tiers, briefs),
        }
        stable = "\n\n".join(filter(None, (self._section(name, values) for name in SECTIONS)))
        recent_text = self._section(RECENT_SECTION, values) if text_style else ""
        native: list[dict[str, Any]] = []
        tool_tokens = 0
        if not text_style:
            native, tool_tokens = self._native_tools(
                mode, allowed, full, discovery=discovery or tiers is not None, include_fetch=include_fetch, tiers=tiers
            )
            for name in loaded:  # loaded tools go last, in load order: loading only ever appends
                definition, n_tokens = self.definitions.get(name, full=True)
                native.append(definition)
                tool_tokens += n_tokens
            for name in offered:  # then the shortlisted ones, as stubs, in the order they were first named
                definition, n_tokens = self.definitions.stub(name, summarised=True)
                native.append(definition)
                tool_tokens += n_tokens
        system = f"{stable}\n\n{recent_text}" if recent_text else stable
        tokens = TokenCounts(system=self.counter.count(system), tools=tool_tokens)
        return ComposedPrompt(
            mode=mode.slug,
            fingerprint=self.registry.fingerprint,
            style=style,
            system_stable=stable,
            system_recent=recent_text,
            tools=tuple(native),
            full=full_names,
            brief=brief_names,
            recent=() if discovery else recent,
            tokens=tokens,
            discovered=discovered or (),
            discovery=discovery,
            catalog=tiers.catalog if tiers is not None and not tiers.stubs else (),
            names=tiers.names if tiers is not None and not tiers.stubs else (),
            loaded=loaded,
            tiered=tiers is not None,
            stubs=tuple(n for n in brief_names if tiers.stubbed(n)) if tiers is not None else (),
            offered=() if text_style else offered,
        )

    def _mode_values(self, mode: Mode, *, include_fetch: bool) -> dict[str, Any]:
        """What the templates know of the mode whatever the task's state: its config, its tools and groups, the
        other modes, and the composer's context."""
        return {
            **self._context,
            "mode": mode.config,
            # The groups of the tools the mode allows (not only its ``groups``: ``include`` adds tools by name),
            # so rules and guidelines say only what holds in this mode (no shell advice without a shell).
            "tool_groups": frozenset(self.registry.tools[n].group for n in mode.allowed),
            "allowed_tools": frozenset(mode.allowed),
            "style": mode.config.tool_style,
            "fetch_available": include_fetch,
            "discovery_total": len(mode.allowed),
            "other_modes": [m.config for s, m in self.registry.modes.items() if s != mode.slug],
        }

    def _tier_values(self, tiers: Tiers | None, briefs: frozenset[str] = frozenset()) -> dict[str, Any]:
        """What the templates need of a tiered mode: its catalog lines and names, grouped by server or group (a
        tool in ``briefs`` is listed with its whole brief instead of a short summary)."""
        if tiers is None or tiers.stubs:  # stubs are in the tool list: no catalog in the system prompt
            return {"tiered": False, "catalog_groups": [], "name_groups": [], "unlisted_total": 0}
        docs, cards = self.registry.tools, self.registry.servers
        return {
            "tiered": True,
            "catalog_groups": [
                (group, [(n, docs[n].brief if n in briefs else summary(docs[n])) for n in names])
                for group, names in grouped(tiers.catalog, docs, cards)
            ],
            "name_groups": grouped(tiers.names, docs, cards),
            "unlisted_total": len(tiers.catalog) + len(tiers.names),
        }

    def _catalog(
        self,
        mode: Mode,
        allowed: tuple[str, ...],
        full: frozenset[str],
        recent: tuple[str, ...],
        *,
        include_fetch: bool,
        discovered: tuple[str, ...] | None,
    ) -> tuple[list[DocView], list[str], tuple[str, ...]]:
        """The docs the catalog shows in full, the names it lists briefly, and the tools whose full text goes in
        the recent section (``recent``, or the discovered tools in a discovery mode)."""
        text_style = mode.config.tool_style == "text"
        permanent = set(mode.permanent)
        # In text style, FIFO tools keep their brief entry in the (stable) catalog and get their full text
        # in the recent section at the end, so a FIFO change never alters the cached prefix.
        catalog_full = [n for n in allowed if n in full and (n in permanent or n not in recent)]
        catalog_brief = [n for n in allowed if n not in catalog_full]
        if not include_fetch:
            catalog_full, catalog_brief = [n for n in allowed if n in full], [n for n in allowed if n not in full]
        fetch_view = builtin_view(fetch_tool_definition(mode)) if include_fetch else None
        if text_style and fetch_view is not None:
            full_docs = [self._views[n] for n in catalog_full] + [fetch_view]
        else:
            full_docs = [self._views[n] for n in catalog_full]
        if discovered is not None:
            # Discovered tools change within a task: in text style their docs go last, after the stable part.
            catalog_full = [n for n in allowed if n not in discovered]
            catalog_brief = []
            recent = discovered
            full_docs = [self._views[n] for n in catalog_full]
            if text_style:
                full_docs += [builtin_view(tool_search_definition()), *([fetch_view] if fetch_view else [])]
        return full_docs, catalog_brief, recent

    def _native_tools(
        self,
        mode: Mode,
        allowed: tuple[str, ...],
        full: frozenset[str],
        *,
        discovery: bool,
        include_fetch: bool,
        tiers: Tiers | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """The native tool definitions (the mode's tools, then tool_search and the fetch tool when they are
        offered) and their token count; a tiered mode's stubbed tools not in ``full`` as stubs."""
        native: list[dict[str, Any]] = []
        tool_tokens = 0
        for name in allowed:
            if tiers is not None and name not in full and tiers.stubbed(name):
                definition, n_tokens = self.definitions.stub(name, summarised=name in tiers.catalog)
            else:
                definition, n_tokens = self.definitions.get(name, full=name in full)
            native.append(definition)
            tool_tokens += n_tokens
        if discovery:
            search = tool_search_definition(mode)
            native.append(search)
            tool_tokens += count_tools(self.counter, [search])
        if include_fetch:
            fetch = fetch_tool_definition(mode)
            native.append(fetch)
            tool_tokens += count_tools(self.counter, [fetch])
        return native, tool_tokens

    def _section(self, name: str, values: Mapping[str, Any]) -> str:
        return self._sections.render(f"{name}.j2", values).strip()
