"""Import Roo Code custom modes (a ``.roomodes`` file, YAML or JSON) as mode files.

A Roo mode has ``slug``, ``name``, ``roleDefinition``, ``whenToUse`` (or ``description``), ``groups`` and
``customInstructions``. A group entry is a name or ``[name, {fileRegex, description}]``; the restriction is
kept as the mode's ``file_restrictions`` and enforced by :meth:`prompt_composer.modes.Mode.check_paths`.
``fileRegex`` is a JavaScript pattern: the JavaScript-only syntax is translated (see :func:`js_file_regex`).
Keys outside Roo's mode schema are ignored, as Roo's own schema ignores them, and named in the report.

Roo's tool groups map onto ours by name (read, edit, browser, command, mcp, modes); Roo's always-available
tools (ask a question, attempt completion, switch mode, new task, todo list) are our ``workflow`` and ``modes``
groups, so every imported mode gets both. Settings Roo has no notion of (``permanent``, ``recent_size``,
``budget_tokens``) come from the import options; the budget defaults to the mode's worst case rounded up, and a
given budget below that worst case is refused.

A ``.roomodes`` mode overrides a mode of the same slug, as in Roo Code. ``.import-state.json`` records, per mode,
a hash of the file as written and of what it was made from, so each existing mode file is one of:

- written by the importer and not edited since: regenerated;
- the shipped built-in mode, unedited: replaced;
- edited since the last import, while its ``.roomodes`` entry has not changed: kept (the edit is newer);
- otherwise written or edited by a person: replaced with ``replace=True`` (``--replace``), else refused.

Everything is checked before anything is written; every problem is one line of :class:`RooModesError`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from ..core.audit import run_audit
from ..core.composer import Composer
from ..core.modes import FileRestriction, ModeConfig
from ..core.registry import Registry, default_docs_dir
from ..errors import ImporterError, LoadError
from ..shared.yamlfile import LineMap, line_of, read_yaml
from .tool_list import STATE_FILE, dump_yaml, files_summary, load_output_folder, read_state, text_hash, write_files

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
_BUDGET_STEP = 500
_PLACEHOLDER_BUDGET = 10**9  # until the worst case is known
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

_BUILT_IN = "the .roomodes mode overrides the built-in mode of the same slug, as in Roo Code"
_PERSON_REPLACED = "written or edited by a person; replaced because of --replace (as in Roo Code, .roomodes wins)"
_KEPT = "edited since the last import, and its .roomodes entry has not changed; --replace overwrites it"


class RooModesError(ImporterError):
    """A ``.roomodes`` import refused: ``problems`` holds one line per problem. Nothing was written."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class ModeChange:
    slug: str
    action: Literal["add", "update", "unchanged", "replace", "kept"]
    reason: str = ""

    def describe(self) -> str:
        line = f"{self.action:<9} modes/{self.slug}.yaml"
        return f"{line}  ({self.reason})" if self.reason else line


@dataclass(frozen=True)
class RooModesPlan:
    out: Path
    changes: tuple[ModeChange, ...]
    files: Mapping[str, str]
    registry: Registry
    notes: tuple[str, ...] = ()  # ignored keys, permanent tools a mode does not allow, regex readings

    def report(self, *, dry_run: bool = False) -> list[str]:
        return [
            *(c.describe() for c in self.changes),
            *self.notes,
            files_summary(self.files, self.out, dry_run=dry_run),
        ]


@dataclass(frozen=True)
class _Parsed:
    """One ``.roomodes`` entry, converted (budget still a placeholder)."""

    config: ModeConfig
    where: str
    source: str  # hash of what the mode file is made from: the converted entry and the budget option
    notes: tuple[str, ...]


# --- fileRegex: JavaScript RegExp -> the `regex` module ----------------------------------------------------

# Letter escapes JavaScript gives a meaning without the u flag (Roo compiles fileRegex with `new RegExp(p)`).
# Any other escaped letter is that letter ("identity escape"); the `regex` module would refuse or misread it.
_JS_LETTER_ESCAPES = frozenset("bBdDfnrsStvwW")
_HEX = frozenset("0123456789abcdefABCDEF")
_LITERAL_BRACE = re.compile(r"\{,\d*\}")  # `{,n}`: a quantifier in Python, literal text in JavaScript


def js_file_regex(pattern: str) -> tuple[str, bool]:
    """A Roo Code ``fileRegex`` (JavaScript RegExp syntax) in the syntax of the ``regex`` module, which
    :class:`prompt_composer.modes.FileRestriction` matches with, and whether it uses ``\\p{…}``/``\\P{…}``.

    ``(?<name>…)``, variable-length lookbehind and ``\\p{L}`` are ``regex`` syntax already; ``\\k<name>``
    becomes ``(?P=name)``, ``[^]`` and ``[]`` become ``[\\s\\S]`` and ``(?!)``, ``\\cX`` a ``\\xNN`` escape, and
    identity escapes (``\\e``, ``\\x`` without hex digits…) and ``{,n}`` the literal text JavaScript reads.
    ``\\p{…}`` is kept as a Unicode property: that is what its author meant, though Roo, compiling without the
    u flag, reads ``\\p{L}`` as the text ``p{L}``. Python-style patterns valid in both come out unchanged.
    """
    named_groups = re.search(r"\(\?<(?![=!])", pattern) is not None
    out: list[str] = []
    uses_property = False
    in_class = False
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            rest = pattern[i + 2 :]
            if nxt in "pP" and rest.startswith("{") and "}" in rest:
                end = i + 2 + rest.index("}")
                out.append(pattern[i : end + 1])
                uses_property = True
                i = end + 1
            elif nxt == "k" and named_groups and not in_class and rest.startswith("<") and ">" in rest:
                end = i + 2 + rest.index(">")
                out.append(f"(?P={pattern[i + 3 : end]})")
                i = end + 1
            elif nxt == "c" and rest[:1].isascii() and rest[:1].isalpha():
                out.append(f"\\x{ord(rest[0]) % 32:02x}")
                i += 3
            elif nxt == "c":
                out.append("\\\\c")  # JavaScript: a backslash, then c
                i += 2
            elif nxt == "x" and len(rest) >= 2 and set(rest[:2]) <= _HEX:
                out.append(pattern[i : i + 4])
                i += 4
            elif nxt == "u" and len(rest) >= 4 and set(rest[:4]) <= _HEX:
                out.append(pattern[i : i + 6])
                i += 6
            elif nxt.isascii() and nxt.isalpha() and nxt not in _JS_LETTER_ESCAPES:
                out.append(nxt)
                i += 2
            else:
                out.append(pattern[i : i + 2])
                i += 2
        elif in_class:
            in_class = char != "]"
            out.append(char)
            i += 1
        elif pattern.startswith("[^]", i):
            out.append(r"[\s\S]")
            i += 3
        elif pattern.startswith("[]", i):
            out.append("(?!)")
            i += 2
        elif char == "[":
            in_class = True
            out.append(char)
            i += 1
        elif char == "{" and _LITERAL_BRACE.match(pattern, i):
            out.append("\\{")
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out), uses_property


# --- reading .roomodes -----------------------------------------------------------------------------------


def _slug(raw: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", raw.lower()).strip("-")[:64]


def _read_roomodes(path: Path) -> tuple[list[tuple[Any, tuple[str | int, ...]]], LineMap]:
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
    return [(entry, (*base, index)) for index, entry in enumerate(entries)], lines


def _ignored(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
    return f"{key} (did you mean {close[0]}?)" if close else key


def _parse_entry(
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
) -> _Parsed | None:
    """Convert one entry; its problems go to ``problems`` (each at the line of the offending key)."""
    where = f"{path}:{line_of(lines, loc)}"
    if not isinstance(entry, Mapping):
        problems.append(f"{where}: mode #{int(loc[-1]) + 1} is not a mapping")
        return None

    def at(*keys: str | int) -> str:
        return f"{path}:{line_of(lines, (*loc, *keys))}"

    count = len(problems)
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
    skipped = {*_IMPORTED_KEYS, *_SILENT_KEYS, _RULES_KEY}
    ignored = [_ignored(str(k), _ROO_KEYS) for k in entry if k not in skipped]

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
        if not isinstance(options, Mapping):
            problems.append(f"{at('groups', index)}: options of group {roo_group!r} must be a mapping")
            continue
        ignored += [f"groups[{index}].{_ignored(str(k), _OPTION_KEYS)}" for k in options if k not in _OPTION_KEYS]
        raw_regex, description = options.get("fileRegex"), options.get("description")
        if not isinstance(raw_regex, str | None) or not isinstance(description, str | None):
            problems.append(f"{at('groups', index, 1)}: fileRegex and description of {roo_group!r} must be strings")
            continue
        if not raw_regex:
            continue  # Roo: no fileRegex, no restriction
        file_regex, uses_property = js_file_regex(raw_regex)
        properties |= uses_property
        try:
            restrictions[group] = FileRestriction(file_regex=file_regex, description=description or "")
        except ValidationError as exc:
            message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
            problems.append(f"{at('groups', index, 1, 'fileRegex')}: {message}")
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
        "budget_tokens": _PLACEHOLDER_BUDGET,
        "custom_instructions": entry.get("customInstructions") or "",
    }
    try:
        config = ModeConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        problems.append(f"{where}: {field}: {str(first['msg']).removeprefix('Value error, ')}")
        return None

    label = f"mode {config.slug!r} ({where})"
    notes = []
    if ignored:
        notes.append(f"ignored   {label}: {', '.join(ignored)} (Roo Code ignores keys outside its mode schema)")
    if _RULES_KEY in entry:
        notes.append(f"ignored   {label}: {_RULES_KEY} (add their text to custom_instructions if the mode needs it)")
    not_allowed = [n for n in permanent if n not in allowed]
    if not_allowed:
        listed = ", ".join(not_allowed)
        notes.append(f"note      {label}: --permanent {listed} not kept in full: the mode does not allow it")
    if properties:
        notes.append(
            f"note      {label}: fileRegex \\p{{…}} read as a Unicode property (as JavaScript does with the u "
            "flag; Roo Code compiles fileRegex without flags, where \\p{L} is the text p{L})"
        )
    made_from = [config.model_dump(mode="json"), budget_tokens]
    source = text_hash(json.dumps(made_from, sort_keys=True, ensure_ascii=False))
    return _Parsed(config, where, source, tuple(notes))


def mode_yaml(config: ModeConfig) -> str:
    data = config.model_dump(mode="json")
    if not data["file_restrictions"]:
        del data["file_restrictions"]
    text = dump_yaml({k: data[k] for k in _KEY_ORDER if k in data})
    if ModeConfig.model_validate(yaml.safe_load(text)) != config:
        raise ImporterError(f"mode {config.slug!r}: its YAML does not round-trip; please report this")
    return text


def _option_problems(
    permanent: Sequence[str], recent_size: int, budget_tokens: int | None, tools: Iterable[str]
) -> list[str]:
    problems = []
    names = sorted(tools)
    for name in permanent:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"--permanent: unknown tool {name!r}{hint}; the folder has no tool doc of that name")
    if recent_size < 0:
        problems.append(f"--recent-size {recent_size}: must be 0 or more")
    if budget_tokens is not None and budget_tokens <= 0:
        problems.append(f"--budget-tokens {budget_tokens}: must be a positive number of tokens")
    return problems


def _record(value: Any) -> tuple[str | None, str | None]:
    """(text hash, source hash) of a state record; a bare string is the older, text-only record."""
    if isinstance(value, str):
        return value, None
    if isinstance(value, Mapping):
        return value.get("text"), value.get("source")
    return None, None


def _mode_file(existing: Registry, out: Path, slug: str) -> Path:
    """The file of mode ``slug`` in ``out``: the one it was loaded from (maybe ``.yml``), else the new name."""
    mode = existing.modes.get(slug)
    return mode.path if mode is not None and mode.path is not None else out / "modes" / f"{slug}.yaml"


def _decide(
    parsed: _Parsed, file: Path, record: Any, *, replace: bool
) -> tuple[Literal["import", "replace", "kept", "conflict"], str]:
    """What to do with an existing mode file of the same slug, and why (see the module docstring)."""
    current = file.read_text(encoding="utf-8")
    written, source = _record(record)
    if written == text_hash(current):
        return "import", ""
    shipped = default_docs_dir() / "modes" / f"{parsed.config.slug}.yaml"
    if shipped.is_file() and shipped.read_text(encoding="utf-8") == current:
        return "replace", _BUILT_IN
    if replace:
        return "replace", _PERSON_REPLACED
    if written is not None and source == parsed.source:
        return "kept", _KEPT
    how = "edited since the last import" if written is not None else "written by a person, not by the importer"
    return "conflict", (
        f"{parsed.where}: modes/{file.name} exists ({how}) and this .roomodes defines mode "
        f"{parsed.config.slug!r} too; Roo Code would use the .roomodes mode: pass --replace to replace the file "
        "with it, or rename the slug"
    )


def plan_roomodes(
    path: str | Path,
    out: str | Path,
    *,
    permanent: Sequence[str] = (),
    recent_size: int = 6,
    budget_tokens: int | None = None,
    replace: bool = False,
) -> RooModesPlan:
    """Read a ``.roomodes`` file and plan mode files for the tool-doc folder ``out`` (which must load).

    Raises :class:`RooModesError` listing every problem (bad entries, unknown ``permanent`` tools, a budget
    below a mode's worst case, person-written mode files without ``replace``), or :class:`ImporterError`.
    """
    path, out = Path(path), Path(out)
    existing = load_output_folder(out)
    if existing is None:
        raise ImporterError(f"{out}: no such tool docs folder (import modes into a folder that has the tools)")
    permanent = list(dict.fromkeys(permanent))
    # Bad options are reported with everything else; the entries are read with usable values meanwhile.
    option_problems = _option_problems(permanent, recent_size, budget_tokens, existing.tools)
    recent_size = max(recent_size, 0)
    budget = budget_tokens if budget_tokens is None or budget_tokens > 0 else None
    entries, lines = _read_roomodes(path)
    problems: list[str] = []
    parsed: list[_Parsed] = []
    for entry, loc in entries:
        mode = _parse_entry(
            entry,
            loc,
            path=path,
            lines=lines,
            permanent=permanent,
            recent_size=recent_size,
            budget_tokens=budget_tokens,
            tools=existing.tools,
            problems=problems,
        )
        if mode is None:
            continue
        if any(p.config.slug == mode.config.slug for p in parsed):
            problems.append(f"{mode.where}: duplicate mode slug {mode.config.slug!r}")
            continue
        parsed.append(mode)
    if not entries:
        problems.append(f"{path}: no modes to import")
    if problems:
        raise RooModesError([*option_problems, *problems])

    state = read_state(out)
    records: dict[str, Any] = dict(state["modes"])
    final = {slug: m.config for slug, m in existing.modes.items()}
    decisions: dict[str, tuple[str, str]] = {}
    for mode in parsed:
        slug = mode.config.slug
        file = _mode_file(existing, out, slug)
        if file.exists():
            decisions[slug] = _decide(mode, file, records.get(slug), replace=replace)
        else:
            decisions[slug] = ("import", "")
        if decisions[slug][0] != "kept":
            final[slug] = mode.config  # a conflict too, so its budget is checked in the same run
    imported = [m for m in parsed if decisions[m.config.slug][0] != "kept"]
    problems = [*option_problems, *(reason for action, reason in decisions.values() if action == "conflict")]

    registry = _validate(existing, final.values(), out)
    if imported:
        worst = {m.mode: m.worst_tokens for m in run_audit(Composer(registry)).modes}
        for mode in imported:
            slug = mode.config.slug
            needed = max(_BUDGET_STEP, math.ceil(worst[slug] / _BUDGET_STEP) * _BUDGET_STEP)
            if budget is not None and budget < worst[slug]:
                problems.append(
                    f"{mode.where}: --budget-tokens {budget} is below what mode {slug!r} needs: its worst case is "
                    f"{worst[slug]} tokens (permanent tools and a full recent-use FIFO); pass at least "
                    f"{worst[slug]}, or leave --budget-tokens out to get {needed}"
                )
            final[slug] = mode.config.model_copy(update={"budget_tokens": budget or needed})
    if problems:
        raise RooModesError(problems)
    registry = _validate(existing, final.values(), out)

    changes: list[ModeChange] = []
    files: dict[str, str] = {}
    for mode in parsed:
        slug = mode.config.slug
        action, reason = decisions[slug]
        if action == "kept":
            changes.append(ModeChange(slug, "kept", reason))
            continue
        text = mode_yaml(registry.modes[slug].config)
        old_file = _mode_file(existing, out, slug)
        relative = f"modes/{old_file.name}"
        previous = old_file.read_text(encoding="utf-8") if old_file.exists() else None
        if previous is None:
            changes.append(ModeChange(slug, "add"))
        elif previous == text:
            changes.append(ModeChange(slug, "unchanged"))
        elif action == "replace":
            changes.append(ModeChange(slug, "replace", reason))
        else:
            changes.append(ModeChange(slug, "update"))
        if previous != text:
            files[relative] = text
        records[slug] = {"text": text_hash(text), "source": mode.source}
    new_state = {**state, "modes": dict(sorted(records.items()))}
    if new_state != state:
        files[STATE_FILE] = json.dumps(new_state, indent=2, ensure_ascii=False) + "\n"
    notes = tuple(note for mode in parsed for note in mode.notes)
    return RooModesPlan(out, tuple(changes), files, registry, notes)


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
    replace: bool = False,
    dry_run: bool = False,
) -> RooModesPlan:
    """Import a ``.roomodes`` file into ``out/modes/`` (all or nothing; see the module docstring)."""
    plan = plan_roomodes(
        path, out, permanent=permanent, recent_size=recent_size, budget_tokens=budget_tokens, replace=replace
    )
    if not dry_run:
        write_files(plan.out, plan.files)
    return plan
