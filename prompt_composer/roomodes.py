"""Import Roo Code custom modes (a ``.roomodes`` file, YAML or JSON) as mode files.

A Roo mode has ``slug``, ``name``, ``roleDefinition``, ``whenToUse`` (or ``description``), ``groups`` and
``customInstructions``. A group entry is a name or ``[name, {fileRegex, description}]``; the restriction is
kept as the mode's ``file_restrictions`` and enforced by :meth:`prompt_composer.modes.Mode.check_paths`.

Roo's tool groups map onto ours by name (read, edit, browser, command, mcp, modes); Roo's always-available
tools (ask a question, attempt completion, switch mode, new task, todo list) are our ``workflow`` and ``modes``
groups, so every imported mode gets both. Settings Roo has no notion of (``permanent``, ``recent_size``,
``budget_tokens``) come from the import options; the budget defaults to the mode's worst case rounded up.

The merge follows the tool importers: ``.import-state.json`` records a hash of each mode file as written; a
mode file that no longer matches it (edited, or never written by the importer) is kept and reported.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from .audit import run_audit
from .composer import Composer
from .docs import LineMap, line_of, read_yaml
from .errors import ImporterError, LoadError
from .importers import STATE_FILE, dump_yaml, files_summary, load_output_folder, read_state, text_hash, write_files
from .modes import ModeConfig
from .registry import Registry

__all__ = ["ALWAYS_AVAILABLE_GROUPS", "ROO_GROUPS", "ModeChange", "RooModesPlan", "import_roomodes", "plan_roomodes"]

# Roo Code tool group -> our group. Roo's always-available tools are our workflow + modes groups.
ROO_GROUPS: Mapping[str, str] = {
    "read": "read",
    "edit": "edit",
    "browser": "browser",
    "command": "command",
    "mcp": "mcp",
    "modes": "modes",
}
ALWAYS_AVAILABLE_GROUPS = ("workflow", "modes")
_KNOWN_KEYS = frozenset(
    {"slug", "name", "roleDefinition", "whenToUse", "description", "groups", "customInstructions"}
    | {"source", "iconName", "rulesFiles"}  # Roo bookkeeping: accepted, not imported
)
_BUDGET_STEP = 500
_KEY_ORDER = (
    "slug",
    "name",
    "role",
    "when_to_use",
    "groups",
    "file_restrictions",
    "include",
    "exclude",
    "permanent",
    "recent_size",
    "budget_tokens",
    "tool_style",
    "custom_instructions",
)


@dataclass(frozen=True)
class ModeChange:
    slug: str
    action: Literal["add", "update", "unchanged", "kept"]

    def describe(self) -> str:
        if self.action == "kept":
            return f"kept      modes/{self.slug}.yaml  (edited or not written by the importer; not replaced)"
        return f"{self.action:<9} modes/{self.slug}.yaml"


@dataclass(frozen=True)
class RooModesPlan:
    out: Path
    changes: tuple[ModeChange, ...]
    files: Mapping[str, str]
    registry: Registry

    def report(self, *, dry_run: bool = False) -> list[str]:
        return [*(c.describe() for c in self.changes), files_summary(self.files, self.out, dry_run=dry_run)]


def _slug(raw: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", raw.lower()).strip("-")[:64]


def _read_roomodes(path: Path) -> tuple[list[tuple[dict[str, Any], tuple[str | int, ...]]], LineMap]:
    data, lines, problems = read_yaml(path)  # YAML, and JSON as a subset of it; with line numbers
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""  # read_yaml has reported it
    if text.lstrip().startswith(("{", "[")):  # JSON: decode it as JSON (PyYAML mangles surrogate-pair escapes)
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ImporterError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
        if problems or decoded != data:
            lines = {}  # YAML read it differently: no line numbers rather than wrong ones
        data, problems = decoded, []
    if problems:
        raise ImporterError(str(problems[0]))
    base: tuple[str | int, ...]
    if isinstance(data, Mapping) and isinstance(data.get("customModes"), list):
        entries, base = data["customModes"], ("customModes",)
    elif isinstance(data, list):
        entries, base = data, ()
    else:
        raise ImporterError(f"{path}:1: expected a 'customModes' list of modes")
    out: list[tuple[dict[str, Any], tuple[str | int, ...]]] = []
    for index, entry in enumerate(entries):
        loc: tuple[str | int, ...] = (*base, index)
        if not isinstance(entry, Mapping):
            raise ImporterError(f"{path}:{line_of(lines, loc)}: mode #{index + 1} is not a mapping")
        out.append((dict(entry), loc))
    return out, lines


def _mode_config(
    entry: dict[str, Any],
    *,
    where: str,
    permanent: Sequence[str],
    recent_size: int,
    budget_tokens: int,
    tools: Mapping[str, Any],
) -> ModeConfig:
    unknown = sorted(k for k in entry if k not in _KNOWN_KEYS)
    if unknown:
        raise ImporterError(f"{where}: unknown Roo mode key(s): {', '.join(unknown)}")
    for key in ("slug", "name", "roleDefinition"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise ImporterError(f"{where}: missing required key {key!r}")
    groups: list[str] = []
    restrictions: dict[str, dict[str, str]] = {}
    raw_groups = entry.get("groups", [])
    if not isinstance(raw_groups, list):
        raise ImporterError(f"{where}: 'groups' must be a list")
    for item in raw_groups:
        options: Any = None
        if isinstance(item, list) and item and isinstance(item[0], str):
            roo_group, options = item[0], item[1] if len(item) > 1 else None
        elif isinstance(item, str):
            roo_group = item
        else:
            raise ImporterError(f"{where}: group entry {item!r} is neither a name nor [name, options]")
        if roo_group not in ROO_GROUPS:
            raise ImporterError(f"{where}: unknown Roo tool group {roo_group!r} (known: {', '.join(ROO_GROUPS)})")
        group = ROO_GROUPS[roo_group]
        if group not in groups:
            groups.append(group)
        if options is not None:
            if not isinstance(options, Mapping) or not isinstance(options.get("fileRegex"), str):
                raise ImporterError(f"{where}: options of group {roo_group!r} need a 'fileRegex' string")
            restrictions[group] = {
                "file_regex": options["fileRegex"],
                "description": str(options.get("description", "")),
            }
    for group in ALWAYS_AVAILABLE_GROUPS:
        if group not in groups:
            groups.append(group)
    allowed = {n for n, doc in tools.items() if doc.group in groups}
    when = entry.get("whenToUse") or entry.get("description") or ""
    data = {
        "slug": _slug(entry["slug"]),
        "name": entry["name"],
        "role": entry["roleDefinition"],
        "when_to_use": when,
        "groups": groups,
        "file_restrictions": restrictions,
        "permanent": [n for n in permanent if n in allowed],
        "recent_size": recent_size,
        "budget_tokens": budget_tokens,
        "custom_instructions": entry.get("customInstructions") or "",
    }
    try:
        return ModeConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ImporterError(f"{where}: {field}: {str(first['msg']).removeprefix('Value error, ')}") from None


def mode_yaml(config: ModeConfig) -> str:
    data = config.model_dump(mode="json")
    if not data["file_restrictions"]:
        del data["file_restrictions"]
    text = dump_yaml({k: data[k] for k in _KEY_ORDER if k in data})
    if ModeConfig.model_validate(yaml.safe_load(text)) != config:
        raise ImporterError(f"mode {config.slug!r}: its YAML does not round-trip; please report this")
    return text


def plan_roomodes(
    path: str | Path,
    out: str | Path,
    *,
    permanent: Sequence[str] = (),
    recent_size: int = 6,
    budget_tokens: int | None = None,
) -> RooModesPlan:
    """Read a ``.roomodes`` file and plan mode files for the tool-doc folder ``out`` (which must load)."""
    path, out = Path(path), Path(out)
    existing = load_output_folder(out)
    if existing is None:
        raise ImporterError(f"{out}: no such tool docs folder (import modes into a folder that has the tools)")
    entries, lines = _read_roomodes(path)
    configs: list[ModeConfig] = []
    for entry, loc in entries:
        where = f"{path}:{line_of(lines, loc)}"
        config = _mode_config(
            entry,
            where=where,
            permanent=permanent,
            recent_size=recent_size,
            budget_tokens=budget_tokens or 10**9,
            tools=existing.tools,
        )
        if any(c.slug == config.slug for c in configs):
            raise ImporterError(f"{where}: duplicate mode slug {config.slug!r}")
        configs.append(config)
    if not configs:
        raise ImporterError(f"{path}: no modes to import")
    state = read_state(out)
    records: dict[str, Any] = dict(state["modes"])
    changes: list[ModeChange] = []
    final = {slug: m.config for slug, m in existing.modes.items()}
    imported: list[ModeConfig] = []
    for config in configs:
        old_path = out / "modes" / f"{config.slug}.yaml"
        if config.slug in final or old_path.exists():
            current = old_path.read_text(encoding="utf-8") if old_path.exists() else ""
            if records.get(config.slug) != text_hash(current):
                changes.append(ModeChange(config.slug, "kept"))
                continue
        final[config.slug] = config
        imported.append(config)
    registry = _validate(existing, final.values(), out)
    if budget_tokens is None and imported:  # the worst case of each new mode, rounded up
        worst = {m.mode: m.worst_tokens for m in run_audit(Composer(registry)).modes}
        for config in imported:
            budget = max(_BUDGET_STEP, math.ceil(worst[config.slug] / _BUDGET_STEP) * _BUDGET_STEP)
            final[config.slug] = config.model_copy(update={"budget_tokens": budget})
        registry = _validate(existing, final.values(), out)
    files: dict[str, str] = {}
    for config in imported:
        text = mode_yaml(registry.modes[config.slug].config)
        relative = f"modes/{config.slug}.yaml"
        old_file = out / relative
        previous = old_file.read_text(encoding="utf-8") if old_file.exists() else None
        changes.append(
            ModeChange(config.slug, "add" if previous is None else "unchanged" if previous == text else "update")
        )
        if previous != text:
            files[relative] = text
        records[config.slug] = text_hash(text)
    new_state = {**state, "modes": dict(sorted(records.items()))}
    if new_state != state:
        files[STATE_FILE] = json.dumps(new_state, indent=2, ensure_ascii=False) + "\n"
    return RooModesPlan(out, tuple(changes), files, registry)


def _validate(existing: Registry, modes: Any, out: Path) -> Registry:
    try:
        return Registry.from_docs(existing.tools.values(), modes, root=out)
    except LoadError as exc:
        raise ImporterError(f"the imported modes do not validate: {exc.summary()}") from None


def import_roomodes(
    path: str | Path,
    out: str | Path,
    *,
    permanent: Sequence[str] = (),
    recent_size: int = 6,
    budget_tokens: int | None = None,
    dry_run: bool = False,
) -> RooModesPlan:
    """Import a ``.roomodes`` file into ``out/modes/`` (all or nothing; edited mode files are kept)."""
    plan = plan_roomodes(path, out, permanent=permanent, recent_size=recent_size, budget_tokens=budget_tokens)
    if not dry_run:
        write_files(plan.out, plan.files)
    return plan
