"""Token budget audit: per mode (baseline, composed, worst case, budget) and per tool (brief vs full)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, get_args

from ..shared.text import table
from .cards import card_stem, servers_without_cards
from .composer import Composer
from .docs import ToolDoc, count_words
from .mentions import foreign_mentions
from .modes import Mode
from .session import DEFAULT_DISCOVERED
from .tiers import Tier


@dataclass(frozen=True)
class ModeAudit:
    mode: str
    tools: int
    permanent: int
    recent_size: int
    baseline_tokens: int  # every allowed tool in full, no fetch tool: the agent without prompt-composer
    composed_tokens: int  # empty FIFO: permanent tools in full, the rest brief, plus fetch_tool_description
    worst_tokens: int  # FIFO filled with the mode's largest non-permanent tools
    worst_recent: tuple[str, ...]
    budget_tokens: int
    # Texts shown in the mode that name a tool it does not allow (see mentions.py): the model is told to call a
    # tool it cannot call.
    foreign_mentions: tuple[str, ...] = ()
    # Tiered modes only: each allowed tool's tier (full, brief, catalog, name or stub), in the mode's order.
    tiers: tuple[tuple[str, str], ...] = ()

    @property
    def saving(self) -> float:
        """1 - composed/baseline: the share of tool-prompt tokens an empty-FIFO turn saves."""
        return 1 - self.composed_tokens / self.baseline_tokens if self.baseline_tokens else 0.0

    @property
    def within_budget(self) -> bool:
        return self.worst_tokens <= self.budget_tokens

    @property
    def saves(self) -> bool:
        """Whether composing pays: the empty-FIFO prompt is smaller than the baseline. A mode of a few tools, all
        permanent or with briefs as long as their full texts, can cost more than sending everything in full."""
        return self.composed_tokens < self.baseline_tokens

    @property
    def status(self) -> str:
        """``ok``, or what is wrong: ``OVER`` (budget), ``NO SAVING`` (see :attr:`saves`), or both."""
        problems = [text for text, bad in (("OVER", not self.within_budget), ("NO SAVING", not self.saves)) if bad]
        return ", ".join(problems) or "ok"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["worst_recent"] = list(self.worst_recent)
        data["foreign_mentions"] = list(self.foreign_mentions)
        data["tiers"] = dict(self.tiers) if self.tiers else None
        data["saving"] = round(self.saving, 4)
        data["within_budget"] = self.within_budget
        data["saves"] = self.saves
        return data


@dataclass(frozen=True)
class ToolAudit:
    name: str
    group: str
    brief_tokens: int  # the brief native definition: brief text + schema without descriptions
    full_tokens: int  # the full native definition: full text + complete schema
    brief_words: int
    brief_source: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AuditReport:
    fingerprint: str
    modes: tuple[ModeAudit, ...]
    tools: tuple[ToolAudit, ...]
    warnings: tuple[str, ...] = field(default=())
    # Servers with imported tools and no card (servers/<server>.yaml): nothing tells search what they are for.
    retrieval_risks: tuple[str, ...] = field(default=())
    drafted_cards: tuple[str, ...] = field(default=())  # cards drafted from tool names, for a person to review

    @property
    def over_budget(self) -> tuple[ModeAudit, ...]:
        return tuple(m for m in self.modes if not m.within_budget)

    @property
    def not_saving(self) -> tuple[ModeAudit, ...]:
        """The modes whose composed prompt is not smaller than their baseline (see :attr:`ModeAudit.saves`)."""
        return tuple(m for m in self.modes if not m.saves)

    @property
    def unclean(self) -> tuple[ModeAudit, ...]:
        """The modes whose shown texts name a tool they do not allow."""
        return tuple(m for m in self.modes if m.foreign_mentions)

    def as_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "modes": [m.as_dict() for m in self.modes],
            "tools": [t.as_dict() for t in self.tools],
            "drafted_briefs": [t.name for t in self.tools if t.brief_source == "drafted"],
            "warnings": list(self.warnings),
            "retrieval_risks": list(self.retrieval_risks),
            "drafted_cards": list(self.drafted_cards),
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=False)

    def to_table(self) -> str:
        return _render_table(self, markdown=False)

    def to_markdown(self) -> str:
        return _render_table(self, markdown=True)


_CODE_SPAN = re.compile(r"`([^`]+)`")


def brief_parameter_mentions(doc: ToolDoc) -> list[str]:
    """Parameter names the brief mentions: in backticks, or as a distinctive identifier (``start_line``).

    Plain English words that happen to be parameter names ("path", "query") are not flagged unless quoted
    as code, since a brief may well say "a file path".
    """
    params = doc.parameters
    spans = {s.strip() for s in _CODE_SPAN.findall(doc.brief)}
    found = []
    for name in params:
        distinctive = "_" in name or any(c.isupper() for c in name[1:])
        if name in spans or (distinctive and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", doc.brief)):
            found.append(name)
    return found


def tool_audit(composer: Composer, doc: ToolDoc) -> ToolAudit:
    return ToolAudit(
        name=doc.name,
        group=doc.group,
        brief_tokens=composer.definitions.get(doc.name, full=False)[1],
        full_tokens=composer.definitions.get(doc.name, full=True)[1],
        brief_words=count_words(doc.brief),
        brief_source=doc.brief_source,
    )


def mode_audit(composer: Composer, mode: Mode, tool_audits: dict[str, ToolAudit]) -> ModeAudit:
    permanent = set(mode.permanent)
    candidates = [n for n in mode.allowed if n not in permanent]
    # The largest expansions: what a full FIFO adds over the brief forms it replaces.
    largest = sorted(candidates, key=lambda n: (-(tool_audits[n].full_tokens - tool_audits[n].brief_tokens), n))
    baseline = composer.baseline(mode).tokens.total
    tiers = composer.tiers(mode)
    if mode.config.discovery:
        # A discovery mode's list grows with what tool_search finds, up to the session's limit.
        worst_recent = tuple(largest[:DEFAULT_DISCOVERED])
        composed = composer.compose(mode, loaded=()).tokens.total
        worst = composer.compose(mode, loaded=worst_recent).tokens.total
    elif tiers is not None:
        # The FIFO full of the largest brief tools, and as many of the largest catalog and name tools loaded as a
        # task may load (the session's limit).
        brief = [n for n in largest if not tiers.unlisted(n)][: mode.recent_size]
        unlisted = [n for n in largest if tiers.unlisted(n)][:DEFAULT_DISCOVERED]
        worst_recent = (*brief, *unlisted)
        composed = composer.compose(mode, recent=(), loaded=()).tokens.total
        worst = composer.compose(mode, recent=brief, loaded=unlisted).tokens.total
    else:
        worst_recent = tuple(n for n in mode.allowed if n in set(largest[: mode.recent_size]))
        composed = composer.compose(mode, recent=()).tokens.total
        worst = composer.compose(mode, recent=worst_recent).tokens.total
    return ModeAudit(
        mode=mode.slug,
        tools=len(mode.allowed),
        permanent=len(mode.permanent),
        recent_size=mode.recent_size,
        baseline_tokens=baseline,
        composed_tokens=composed,
        worst_tokens=worst,
        worst_recent=worst_recent,
        budget_tokens=mode.config.budget_tokens,
        foreign_mentions=tuple(str(m) for m in foreign_mentions(composer, mode)),
        tiers=tuple((n, tiers.tier(mode, n) or "") for n in mode.allowed) if tiers is not None else (),
    )


def run_audit(composer: Composer) -> AuditReport:
    registry = composer.registry
    tool_audits = {name: tool_audit(composer, doc) for name, doc in registry.tools.items()}
    modes = tuple(mode_audit(composer, mode, tool_audits) for mode in registry.modes.values())
    warnings = []
    for name, doc in registry.tools.items():
        mentioned = brief_parameter_mentions(doc)
        if mentioned:
            warnings.append(f"{name}: brief names parameters ({', '.join(mentioned)}); keep those for the full form")
    warnings += [mention for mode in modes for mention in mode.foreign_mentions]
    risks = []
    for server, names in sorted(servers_without_cards(registry).items()):
        shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
        risks.append(
            f"retrieval risk: server {server!r} ({len(names)} tool(s): {shown}) has no card: nothing tells search or "
            f"the model what it is for; add servers/{card_stem(server)}.yaml, or import it again (an import writes one)"
        )
    drafted = tuple(name for name, card in registry.servers.items() if card.source == "drafted")
    return AuditReport(
        registry.fingerprint, modes, tuple(tool_audits.values()), (*warnings, *risks), tuple(risks), drafted
    )


# --- rendering -------------------------------------------------------------------------------------------


def _render_table(report: AuditReport, *, markdown: bool) -> str:
    mode_rows = [
        [
            m.mode,
            str(m.tools),
            str(m.baseline_tokens),
            str(m.composed_tokens),
            f"{m.saving:.0%}",
            str(m.worst_tokens),
            str(m.budget_tokens),
            m.status,
        ]
        for m in report.modes
    ]
    tool_rows = [
        [t.name, t.group, str(t.brief_tokens), str(t.full_tokens), str(t.brief_words), t.brief_source]
        for t in report.tools
    ]
    heading = "## " if markdown else ""
    lines = [f"{heading}Modes (tokens: cl100k_base; registry {report.fingerprint})", ""]
    lines += table(
        ["mode", "tools", "baseline", "composed", "saving", "worst", "budget", "status"], mode_rows, markdown=markdown
    )
    lines += ["", f"{heading}Tools", ""]
    lines += table(["tool", "group", "brief", "full", "brief words", "brief source"], tool_rows, markdown=markdown)
    for m in report.modes:
        if m.tiers:
            counts = {tier: sum(1 for _, t in m.tiers if t == tier) for tier in get_args(Tier)}
            summary = ", ".join(f"{n} {tier}" for tier, n in counts.items() if n or tier != "stub")
            lines += ["", f"{heading}Tiers of mode {m.mode} ({summary})", ""]
            lines += table(["tool", "tier"], [list(pair) for pair in m.tiers], markdown=markdown, left=2)
    if report.warnings:
        lines += ["", f"{heading}Warnings", ""]
        lines += [f"- {w}" for w in report.warnings]
    return "\n".join(lines)


def start_tokens(composer: Composer, mode: Mode) -> int:
    """The tokens of ``mode``'s prompt as a task starts (the audit's "composed" column): what every command that
    composes the mode checks against its budget."""
    return composer.compose(mode, recent=(), loaded=()).tokens.total


def budget_warning(mode: Mode, tokens: int) -> str | None:
    """``warning: …`` when ``tokens`` of ``mode``'s composed prompt are over its budget, else ``None``."""
    budget = mode.config.budget_tokens
    if tokens <= budget:
        return None
    return (
        f"warning: mode {mode.slug!r} composes to {tokens:,} tokens, over its budget of {budget:,} "
        f"(prompt-composer audit shows where they go)"
    )
