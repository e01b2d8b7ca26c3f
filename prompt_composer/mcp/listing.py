"""The gateway's one ``tools/list``: what a mode of a registry version offers every MCP connection.

MCP 2026-07-28 has no protocol sessions: ``tools/list`` must not vary per connection (it may by authorization,
which the gateway has none of), should come in a deterministic order, and carries ``ttlMs``/``cacheScope``. So
the list is a function of the registry version and the mode only, composed as for a task that has done nothing:

- a mode with brief tools: its permanent tools in full, every other tool with its brief (schema kept, without
  parameter descriptions, so it stays callable), then ``fetch_tool_description``;
- a discovery mode: its permanent tools, ``tool_search``, ``fetch_tool_description`` and ``call_tool``;
- a tiered mode: its permanent and brief tools, ``tool_search``, ``fetch_tool_description`` and ``call_tool``,
  whose description carries the catalog lines and names of the tools the list does not hold.

Tools keep the mode's order, the built-in tools come last in that order: the same bytes on every start. What a
task learns later (a fetch, a search, a first use) reaches the model in results, never in the list (see
:mod:`prompt_composer.mcp.answers`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from ..core.builtins import (
    CALL_TOOL_NAME,
    FETCH_TOOL_NAME,
    TOOL_SEARCH_NAME,
    call_tool_definition,
    fetch_tool_definition,
    tool_search_definition,
)
from ..core.composer import Composer
from ..core.modes import Mode
from ..core.registry import Registry
from ..core.tiers import Tiers, grouped, summary
from ..discovery.search import LazySearch

# How long a client may keep the list without asking again (the 2026-07-28 ``ttlMs``). The list changes only when
# the registry does (``serve --watch``), and that is announced; five minutes bounds what a client that does not
# listen for announcements misses.
DEFAULT_LIST_TTL_MS = 300_000


@dataclass(frozen=True)
class Listing:
    """The tool list of one mode of one registry version, in list order.

    ``full`` and ``brief`` name the registry tools listed with their full text and with their brief; every other
    tool of the mode is callable through ``call_tool`` (when it is listed). ``encoded`` is the whole list as JSON,
    what tells a reload that changed the list from one that did not."""

    fingerprint: str
    mode: str
    tools: tuple[dict[str, Any], ...]
    full: frozenset[str]
    brief: frozenset[str]
    encoded: str

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(tool["name"] for tool in self.tools)

    @property
    def searches(self) -> bool:
        """Whether ``tool_search`` is listed (discovery and tiered modes)."""
        return TOOL_SEARCH_NAME in self.names

    @property
    def routes(self) -> bool:
        """Whether ``call_tool`` is listed, for the tools the list does not hold (discovery and tiered modes)."""
        return CALL_TOOL_NAME in self.names

    def listed(self, name: str) -> Literal["full", "brief"] | None:
        """How a registry tool is listed: ``full``, ``brief``, or ``None`` (not listed)."""
        return "full" if name in self.full else "brief" if name in self.brief else None

    def schema(self, name: str) -> dict[str, Any] | None:
        """The input schema a listed tool is listed with, else ``None``."""
        for tool in self.tools:
            if tool["name"] == name:
                schema: dict[str, Any] = tool["input_schema"]
                return schema
        return None


@dataclass(frozen=True)
class Version:
    """What the gateway serves from one registry version: the registry, the mode in it, its composer, its list
    and its search (built on the first ``tool_search``)."""

    registry: Registry
    mode: Mode
    composer: Composer
    listing: Listing
    search: LazySearch


def build_listing(composer: Composer, mode: Mode) -> Listing:
    """The list of ``mode`` as the composer composes it for a task that has done nothing yet."""
    prompt = composer.compose(mode)
    full, brief = frozenset(prompt.full), frozenset(prompt.brief)
    shown = full | brief
    tools = [composer.definitions.get(name, full=name in full)[0] for name in mode.allowed if name in shown]
    tiers = composer.tiers(mode) if prompt.tiered else None
    routed = prompt.discovery or prompt.tiered
    if routed:
        tools.append(tool_search_definition(mode))
    tools.append(fetch_tool_definition(mode))
    if routed:
        tools.append(_call_tool(composer, mode, tiers))
    encoded = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
    return Listing(composer.registry.fingerprint, mode.slug, tuple(tools), full, brief, encoded)


def _call_tool(composer: Composer, mode: Mode, tiers: Tiers | None) -> dict[str, Any]:
    """``call_tool``; in a tiered mode its description lists the tools the list does not hold (catalog lines, then
    names), grouped by server or group, as the composer's system prompt would."""
    definition = call_tool_definition(mode)
    if tiers is None or not (tiers.catalog or tiers.names):
        return definition
    docs = composer.registry.tools
    lines = [
        f"{definition['description']}",
        "",
        f"More tools of this mode, not in your tool list: call them through {CALL_TOOL_NAME} "
        f"(read one's parameters with {FETCH_TOOL_NAME} first).",
    ]
    for group, names in grouped(tiers.catalog, docs, composer.registry.servers):
        lines.append(f"{group}:")
        lines.extend(f"- {name}: {summary(docs[name])}" for name in names)
    for group, names in grouped(tiers.names, docs, composer.registry.servers):
        lines.append(f"{group}: {', '.join(names)}")
    return {**definition, "description": "\n".join(lines)}


# The upstream servers' instructions the gateway passes on, all together: two servers' worth. Each card holds at
# most INSTRUCTIONS_MAX_CHARS of its own; past this, the rest is cut (what is cut is said).
UPSTREAM_INSTRUCTIONS_MAX_CHARS = 4096


def instructions(mode: Mode, registry: Registry | None = None) -> str:
    """The server's ``instructions``: how this mode's list is meant to be used, then the instructions of the MCP
    servers its tools came from (their cards', see :mod:`prompt_composer.core.cards`), merged and capped."""
    own = _own_instructions(mode)
    upstream = upstream_instructions(mode, registry) if registry is not None else ""
    return f"{own}\n\n{upstream}" if upstream else own


def upstream_instructions(mode: Mode, registry: Registry) -> str:
    """The instructions of each server whose tools ``mode`` allows, in the mode's order, each under its server's
    name, cut at :data:`UPSTREAM_INSTRUCTIONS_MAX_CHARS` in all; ``""`` when none has any."""
    seen: dict[str, str] = {}
    for name in mode.allowed:
        card = registry.card_of(name)
        if card is not None and card.instructions and card.name not in seen:
            seen[card.name] = f"## {card.label}\n{card.instructions}"
    if not seen:
        return ""
    text = "Instructions of the MCP servers these tools come from:\n\n" + "\n\n".join(seen.values())
    if len(text) <= UPSTREAM_INSTRUCTIONS_MAX_CHARS:
        return text
    note = f"\n[… cut: the servers' instructions are longer than {UPSTREAM_INSTRUCTIONS_MAX_CHARS:,} characters]"
    return text[: UPSTREAM_INSTRUCTIONS_MAX_CHARS - len(note)].rstrip() + note


def _own_instructions(mode: Mode) -> str:
    name = mode.config.name
    if mode.config.discovery:
        return (
            f"Tools of prompt-composer's {name!r} mode. Call {TOOL_SEARCH_NAME} to find the tools for a need: it "
            f"answers with their documentation, and {CALL_TOOL_NAME} calls them."
        )
    text = (
        f"Tools of prompt-composer's {name!r} mode. Tools described briefly: call {FETCH_TOOL_NAME} with a tool's "
        "name to read its parameters and rules before the first use."
    )
    if mode.config.tiers is not None:
        text += (
            f" More tools are named in {CALL_TOOL_NAME}'s description; {TOOL_SEARCH_NAME} finds tools for a need, "
            f"and {CALL_TOOL_NAME} calls the ones not in this list."
        )
    return text
