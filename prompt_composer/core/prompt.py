"""What composing produces and reads: the composed prompt, its token counts, the machine facts the system prompt may
state, and the view of a tool doc that templates see."""

from __future__ import annotations

import datetime
import functools
import json
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .docs import ToolDoc


@dataclass(frozen=True)
class SystemInfo:
    """What the system information section tells the model about the machine it works on.

    An explicit input (``Composer(registry, context={"system_info": info})``, ``wrap(..., system_info=info)``),
    never read during composition, so composing stays pure. :meth:`detect` reads the machine; build one by hand
    for reproducible prompts. The date sits in the stable part of the system prompt, so a client that re-detects
    it changes its cached prompt prefix once a day.
    """

    workspace: str
    os: str
    shell: str
    date: str  # ISO 8601, YYYY-MM-DD

    @classmethod
    def detect(
        cls,
        workspace: str | Path = ".",
        *,
        today: datetime.date | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> SystemInfo:
        """This machine now: the workspace's absolute path, the OS and release, the user's shell, today's date."""
        env = os.environ if environ is None else environ
        system = platform.system() or "unknown"
        if system == "Darwin":
            name = f"macOS {platform.mac_ver()[0]}".strip()
        else:
            name = f"{system} {platform.release()}".strip()
        shell = env.get("SHELL") or env.get("COMSPEC") or "unknown"
        return cls(
            workspace=str(Path(workspace).resolve()),
            os=name,
            shell=shell,
            date=(today or datetime.date.today()).isoformat(),
        )

    def items(self) -> tuple[tuple[str, str], ...]:
        """(label, value) pairs in display order, as the ``system_info`` template lists a mapping's items."""
        pairs = (
            ("Workspace folder", self.workspace),
            ("Operating system", self.os),
            ("Default shell", self.shell),
            ("Current date", self.date),
        )
        return tuple((label, value) for label, value in pairs if value)


@dataclass(frozen=True)
class TokenCounts:
    system: int
    tools: int

    @property
    def total(self) -> int:
        return self.system + self.tools

    def as_dict(self) -> dict[str, int]:
        return {"system": self.system, "tools": self.tools, "total": self.total}


@dataclass(frozen=True)
class ComposedPrompt:
    """One turn's prompt. Shared between callers through the cache: treat it (and its dicts) as read-only."""

    mode: str
    fingerprint: str
    style: str
    system_stable: str
    system_recent: str
    tools: tuple[dict[str, Any], ...]
    full: tuple[str, ...]
    brief: tuple[str, ...]
    recent: tuple[str, ...]
    tokens: TokenCounts
    # Discovery modes only: the tools tool_search activated in this task, in discovery order.
    discovered: tuple[str, ...] = ()
    discovery: bool = False
    # Tiered modes only: the tools shown as catalog lines and as names (not callable until loaded), and the ones
    # loaded in this task, appended in full in load order.
    catalog: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    loaded: tuple[str, ...] = ()
    tiered: bool = False
    # Tiered modes with ``stubs: true``: the tools declared as stubs (callable, but with no schema in the prompt).
    stubs: tuple[str, ...] = ()
    # Preselection with ``shortlist_stubs``: the shortlisted tools declared as stubs after the loaded ones (callable;
    # a first call loads the tool and returns its parameters).
    offered: tuple[str, ...] = ()
    # Native deferral only: the tools kept out of the prompt until a reference loads them. For a provider's own
    # deferral their full definitions follow the eager ones in ``tools``; when the loop emulates it, ``tools``
    # holds only the eager ones and those ``loaded`` so far.
    deferred: tuple[str, ...] = ()
    native: bool = False

    def appended(self) -> frozenset[str]:
        """The tools at the end of ``tools`` that change within a task: the ``loaded`` ones, then the ``offered``
        stubs (a cache breakpoint, or a tool added per mode, goes before them)."""
        return frozenset((*self.loaded, *self.offered))

    def hidden(self) -> frozenset[str]:
        """The tools whose schema the model cannot see in this prompt until they are loaded: a tiered mode's catalog
        and name tools, or the deferred ones (those already loaded excepted)."""
        return frozenset((*self.catalog, *self.names, *self.deferred)) - frozenset(self.loaded)

    @property
    def system(self) -> str:
        """The whole system prompt: the stable part, then the part that changes within a task."""
        if self.system_stable and self.system_recent:
            return f"{self.system_stable}\n\n{self.system_recent}"
        return self.system_stable or self.system_recent

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "fingerprint": self.fingerprint,
            "style": self.style,
            "full": list(self.full),
            "brief": list(self.brief),
            "recent": list(self.recent),
            "system": self.system,
            "tools": [json.loads(json.dumps(t)) for t in self.tools],
            "tokens": self.tokens.as_dict(),
            **({"discovered": list(self.discovered)} if self.discovery else {}),
            **(
                {
                    "catalog": list(self.catalog),
                    "names": list(self.names),
                    "loaded": list(self.loaded),
                    **({"stubs": list(self.stubs)} if self.stubs else {}),
                }
                if self.tiered
                else {}
            ),
            **({"deferred": list(self.deferred)} if self.native else {}),
            **({"offered": list(self.offered)} if self.offered else {}),
        }


@dataclass(frozen=True)
class DocView:
    """What templates see of a tool doc. The schema's text forms are made when a template asks for them (only
    text style shows them), not for each of a large mode's tools on every composer."""

    name: str
    group: str
    brief: str
    full: str
    hint: str
    schema: Mapping[str, Any] = field(repr=False, hash=False)

    @functools.cached_property
    def schema_json(self) -> str:
        """The input schema as compact JSON."""
        return json.dumps(self.schema, ensure_ascii=False, separators=(",", ":"))

    @functools.cached_property
    def signature(self) -> str:
        """``path (string, required), recursive (boolean)``: the parameter list a text-style brief carries."""
        return _signature(self.schema)


def signature(doc: ToolDoc) -> str:
    """``path (string, required), recursive (boolean)``: the parameter list a text-style brief carries."""
    return _signature(doc.input_schema)


def _signature(schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required", []))
    parts = []
    for name, sub in schema.get("properties", {}).items():
        kind = sub.get("type", "any")
        kind = "|".join(kind) if isinstance(kind, list) else str(kind)
        parts.append(f"{name} ({kind}{', required' if name in required else ''})")
    return ", ".join(parts)


def doc_view(doc: ToolDoc) -> DocView:
    return DocView(doc.name, doc.group, doc.brief, doc.full, doc.hint or "", doc.input_schema)


def builtin_view(definition: Mapping[str, Any]) -> DocView:
    """What templates see of one of our own tools (fetch_tool_description, tool_search), so text style can render
    it: as a tool doc of it would show (stripped, as a doc's texts are), without validating our own definition."""
    name, description = definition["name"], definition["description"]
    full = f"## {name}\n{description}".strip()
    return DocView(name, "prompt-composer", description.strip(), full, "", definition["input_schema"])
