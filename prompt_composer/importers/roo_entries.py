"""Reading a Roo Code ``.roomodes`` file (YAML or JSON) and converting each of its modes into a mode config.

A Roo mode has ``slug``, ``name``, ``roleDefinition``, ``whenToUse`` (or ``description``), ``groups`` and
``customInstructions``. A group entry is a name or ``[name, {fileRegex, description}]``; the restriction is
kept as the mode's ``file_restrictions``, with ``fileRegex`` translated from JavaScript (:mod:`.js_regex`).
Keys outside Roo's mode schema are ignored, as Roo's own schema ignores them, and named in the report.

Roo's tool groups map onto ours by name (read, edit, browser, command, mcp, modes); Roo's always-available
tools (ask a question, attempt completion, switch mode, new task, todo list) are our ``workflow`` and ``modes``
groups, so every converted mode gets both. Every problem of an entry is one line, at the line of the offending
key.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..core.modes import FileRestriction, ModeConfig
from ..errors import ImporterError, InputFileError
from ..shared.files import read_text
from ..shared.yamlfile import MAX_YAML_BYTES, LineMap, line_of, parse_yaml
from .folder import text_hash
from .js_regex import js_file_regex

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
# Roo's mode schema (packages/types/src/mode.ts). Its zod objects drop any other key, so Roo ignores them.
_IMPORTED_KEYS = ("slug", "name", "roleDefinition", "whenToUse", "description", "groups", "customInstructions")
_ROO_KEYS = (*_IMPORTED_KEYS, "source", "rulesFiles")
_SILENT_KEYS = frozenset({"source"})  # Roo's own bookkeeping (which settings file a mode came from)
_RULES_KEY = "rulesFiles"  # Roo's export format: the mode's .roo/rules-<slug>/ files, reported on their own
_OPTION_KEYS = ("fileRegex", "description")
PLACEHOLDER_BUDGET = 10**9  # until the worst case is known


@dataclass(frozen=True)
class ParsedMode:
    """One ``.roomodes`` entry, converted (budget still a placeholder)."""

    config: ModeConfig
    where: str
    source: str  # hash of what the mode file is made from: the converted entry and the budget option
    notes: tuple[str, ...]


@dataclass(frozen=True)
class _At:
    """``path:line`` of a key of one entry (``loc`` is the entry's place in the file)."""

    path: Path
    lines: LineMap
    loc: tuple[str | int, ...]

    def __call__(self, *keys: str | int) -> str:
        return f"{self.path}:{line_of(self.lines, (*self.loc, *keys))}"


def read_roomodes(path: Path) -> tuple[list[tuple[Any, tuple[str | int, ...]]], LineMap]:
    """The entries of a ``.roomodes`` file, each with its place in the file, and the file's line numbers."""
    try:  # once, safely: a FIFO, a device or a file over the YAML size limit is refused, naming the path
        text = read_text(path, what=".roomodes file", max_bytes=MAX_YAML_BYTES)
    except InputFileError as exc:
        raise ImporterError(str(exc)) from None
    data, lines, problems = parse_yaml(text, path)  # YAML, and JSON as a subset of it; with line numbers
    if text.lstrip().startswith(("{", "[")):  # JSON: decode it as JSON (PyYAML mangles surrogate-pair escapes)
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ImporterError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
        except RecursionError:
            raise ImporterError(f"{path}:1: invalid JSON: nested too deeply to read") from None
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
    return [(entry, (*base, index)) for index, entry in enumerate(entries)], lines


def parse_entry(
    entry: Any,
    loc: tuple[str | int, ...],
    *,
    path: Path,
    lines: LineMap,
    permanent: Sequence[str],
    recent_size: int,
    budget_tokens: int | None,
    tools: Mapping[str, Any],
    problems: list[str],
) -> ParsedMode | None:
    """Convert one entry; its problems go to ``problems`` (each at the line of the offending key)."""
    at = _At(path, lines, loc)
    where = at()
    if not isinstance(entry, Mapping):
        problems.append(f"{where}: mode #{int(loc[-1]) + 1} is not a mapping")
        return None
    count = len(problems)
    problems += _text_problems(entry, at)
    skipped = {*_IMPORTED_KEYS, *_SILENT_KEYS, _RULES_KEY}
    ignored = [_ignored(str(k), _ROO_KEYS) for k in entry if k not in skipped]
    groups, restrictions, properties = _groups(entry, at, problems, ignored)
    if len(problems) > count:
        return None
    for group in ALWAYS_AVAILABLE_GROUPS:
        if group not in groups:
            groups.append(group)
    allowed = {n for n, doc in tools.items() if doc.group in groups}
    data = {
        "slug": _slug(entry["slug"]),
        "name": entry["name"],
        "role": entry["roleDefinition"],
        "when_to_use": entry.get("whenToUse") or entry.get("description") or "",
        "groups": groups,
        "file_restrictions": restrictions,
        "permanent": [n for n in permanent if n in allowed],
        "recent_size": recent_size,
        "budget_tokens": PLACEHOLDER_BUDGET,
        "custom_instructions": entry.get("customInstructions") or "",
    }
    try:
        config = ModeConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        problems.append(f"{where}: {field}: {str(first['msg']).removeprefix('Value error, ')}")
        return None
    not_allowed = [n for n in permanent if n not in allowed]
    notes = _notes(entry, f"mode {config.slug!r} ({where})", ignored, not_allowed, properties)
    made_from = [config.model_dump(mode="json"), budget_tokens]
    source = text_hash(json.dumps(made_from, sort_keys=True, ensure_ascii=False))
    return ParsedMode(config, where, source, notes)


def _slug(raw: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", raw.lower()).strip("-")[:64]


def _ignored(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
    return f"{key} (did you mean {close[0]}?)" if close else key


def _text_problems(entry: Mapping[str, Any], at: _At) -> list[str]:
    """The required keys that are missing, and the text keys that are not strings."""
    problems = []
    for key in ("slug", "name", "roleDefinition"):
        value = entry.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            problems.append(f"{at(key)}: missing required key {key!r}")
        elif not isinstance(value, str):
            problems.append(f"{at(key)}: {key!r} must be a string, not {type(value).__name__}")
    for key in ("whenToUse", "description", "customInstructions"):
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(f"{at(key)}: {key!r} must be a string, not {type(value).__name__}")
    return problems


def _groups(
    entry: Mapping[str, Any], at: _At, problems: list[str], ignored: list[str]
) -> tuple[list[str], dict[str, FileRestriction], bool]:
    """The entry's groups (ours), their file restrictions, and whether a ``fileRegex`` uses ``\\p{…}``.

    Problems go to ``problems``, option keys outside Roo's schema to ``ignored``."""
    groups: list[str] = []
    restrictions: dict[str, FileRestriction] = {}
    properties = False
    raw_groups = entry.get("groups", [])
    if not isinstance(raw_groups, list):
        problems.append(f"{at('groups')}: 'groups' must be a list")
        raw_groups = []
    for index, item in enumerate(raw_groups):
        options: Any = None
        if isinstance(item, list) and 1 <= len(item) <= 2 and isinstance(item[0], str):
            roo_group, options = item[0], item[1] if len(item) > 1 else None
        elif isinstance(item, str):
            roo_group = item
        else:
            problems.append(f"{at('groups', index)}: group entry {item!r} is neither a name nor [name, options]")
            continue
        if roo_group not in ROO_GROUPS:
            problems.append(
                f"{at('groups', index)}: unknown Roo tool group {roo_group!r} (known: {', '.join(ROO_GROUPS)})"
            )
            continue
        group = ROO_GROUPS[roo_group]
        if group not in groups:
            groups.append(group)
        if options is None:
            continue
        restriction, uses_property = _restriction(options, roo_group, index, at, problems, ignored)
        properties |= uses_property
        if restriction is not None:
            restrictions[group] = restriction
    return groups, restrictions, properties


def _restriction(
    options: Any, roo_group: str, index: int, at: _At, problems: list[str], ignored: list[str]
) -> tuple[FileRestriction | None, bool]:
    """The file restriction of the group entry ``[roo_group, options]`` (``None`` without a ``fileRegex`` or with a
    problem), and whether its ``fileRegex`` uses ``\\p{…}``."""
    if not isinstance(options, Mapping):
        problems.append(f"{at('groups', index)}: options of group {roo_group!r} must be a mapping")
        return None, False
    ignored += [f"groups[{index}].{_ignored(str(k), _OPTION_KEYS)}" for k in options if k not in _OPTION_KEYS]
    raw_regex, description = options.get("fileRegex"), options.get("description")
    if not isinstance(raw_regex, str | None) or not isinstance(description, str | None):
        problems.append(f"{at('groups', index, 1)}: fileRegex and description of {roo_group!r} must be strings")
        return None, False
    if not raw_regex:
        return None, False  # Roo: no fileRegex, no restriction
    file_regex, uses_property = js_file_regex(raw_regex)
    try:
        return FileRestriction(file_regex=file_regex, description=description or ""), uses_property
    except ValidationError as exc:
        message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        problems.append(f"{at('groups', index, 1, 'fileRegex')}: {message}")
        return None, uses_property


def _notes(
    entry: Mapping[str, Any], label: str, ignored: Sequence[str], not_allowed: Sequence[str], properties: bool
) -> tuple[str, ...]:
    """The report's notes on a converted entry: keys ignored, ``--permanent`` tools the mode does not allow, and
    how a ``\\p{…}`` in a ``fileRegex`` was read."""
    notes = []
    if ignored:
        notes.append(f"ignored   {label}: {', '.join(ignored)} (Roo Code ignores keys outside its mode schema)")
    if _RULES_KEY in entry:
        notes.append(f"ignored   {label}: {_RULES_KEY} (add their text to custom_instructions if the mode needs it)")
    if not_allowed:
        listed = ", ".join(not_allowed)
        notes.append(f"note      {label}: --permanent {listed} not kept in full: the mode does not allow it")
    if properties:
        notes.append(
            f"note      {label}: fileRegex \\p{{…}} read as a Unicode property (as JavaScript does with the u "
            "flag; Roo Code compiles fileRegex without flags, where \\p{L} is the text p{L})"
        )
    return tuple(notes)
