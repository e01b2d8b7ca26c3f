"""The ``--format json`` documents of the listing commands (validate, modes, tools) and of the import reports.

Each is a plain dict of strings, numbers, booleans, lists and dicts, with a ``"command"`` key naming what made it.
Keys are only ever added: a script may rely on every key here (``tests/cli/test_json_formats.py`` pins them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..core.registry import Registry
from ..errors import LoadError, Problem
from ..importers import ImportPlan, RooModesPlan
from ..importers.folder import STATE_FILE

if TYPE_CHECKING:
    from ..importers.servers_file import ServersPlan


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)


def validate_ok(registry: Registry, warnings: Sequence[Problem] = ()) -> dict[str, Any]:
    return {
        "command": "validate",
        "ok": True,
        "tools": len(registry.tools),
        "modes": len(registry.modes),
        "servers": len(registry.servers),
        "quarantined": sorted(name for name, doc in registry.tools.items() if doc.quarantined),
        "fingerprint": registry.fingerprint,
        "problems": [],
        "warnings": [{"path": str(w.path), "line": w.line, "message": w.message} for w in warnings],
    }


def validate_failed(exc: LoadError) -> dict[str, Any]:
    return {
        "command": "validate",
        "ok": False,
        "problems": [{"path": str(p.path), "line": p.line, "message": p.message} for p in exc.problems],
    }


def modes(registry: Registry) -> dict[str, Any]:
    return {
        "command": "modes",
        "modes": [
            {
                "slug": mode.config.slug,
                "name": mode.config.name,
                "tools": list(mode.allowed),
                "permanent": list(mode.config.permanent),
                "recent_size": mode.config.recent_size,
                "budget_tokens": mode.config.budget_tokens,
                "tool_style": mode.config.tool_style,
            }
            for mode in registry.modes.values()
        ],
    }


def tools(registry: Registry, names: Iterable[str], mode: str | None) -> dict[str, Any]:
    return {
        "command": "tools",
        "mode": mode,
        "tools": [
            {
                "name": name,
                "group": registry.tools[name].group,
                "brief": registry.tools[name].brief,
                "quarantine": list(registry.tools[name].quarantine),
            }
            for name in names
        ],
    }


def _written(files: Iterable[str]) -> list[str]:
    """The files an import writes, without its bookkeeping file."""
    return sorted(path for path in files if path != STATE_FILE)


def tool_import(kind: str, plan: ImportPlan, *, dry_run: bool) -> dict[str, Any]:
    """``import mcp`` and ``import json``: per tool, what the import does to its doc, and where it ends up."""
    return {
        "command": f"import {kind}",
        "dry_run": dry_run,
        "out": str(plan.out),
        "server": plan.server,
        "changes": [
            {
                "name": change.name,
                "origin": change.origin,
                "action": change.action,
                "updated": list(change.updated),
                "kept": list(change.kept),
                "group": change.group,
                "modes": list(plan.modes_allowing(change.name)),
                "quarantine": list(plan.registry.tools[change.name].quarantine),
            }
            for change in plan.changes
        ],
        "vanished": list(plan.vanished),
        "card": _card(plan),
        "files": _written(plan.files),
        "report": plan.report(dry_run=dry_run),
    }


def _card(plan: ImportPlan) -> dict[str, Any] | None:
    """What an import did to its server's card (``None``: the import carried none)."""
    if plan.card is None:
        return None
    card = plan.card.card
    return {
        "path": plan.card.path,
        "action": plan.card.action,
        "source": card.source,
        "title": card.title,
        "description": card.description,
        "instructions": bool(card.instructions),
        "notes": list(plan.card.notes),
    }


def servers_import(plan: ServersPlan, *, dry_run: bool) -> dict[str, Any]:
    """``import mcp --servers FILE``: each server's import (as ``import mcp`` reports one), and the files written."""
    return {
        "command": "import mcp",
        "dry_run": dry_run,
        "out": str(plan.out),
        "servers_file": str(plan.source),
        "servers": [{"name": name, **tool_import("mcp", one, dry_run=dry_run)} for name, _spec, one in plan.plans],
        "files": _written(plan.files),
        "report": plan.report(dry_run=dry_run),
    }


def mode_import(plan: RooModesPlan, *, dry_run: bool) -> dict[str, Any]:
    """``import roomodes``: per mode file, what the import does to it."""
    return {
        "command": "import roomodes",
        "dry_run": dry_run,
        "out": str(plan.out),
        "changes": [{"slug": c.slug, "action": c.action, "reason": c.reason} for c in plan.changes],
        "notes": list(plan.notes),
        "files": _written(plan.files),
        "report": plan.report(dry_run=dry_run),
    }
