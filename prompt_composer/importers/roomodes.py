"""Import Roo Code custom modes (a ``.roomodes`` file, YAML or JSON) as mode files.

Each entry is converted to a mode config (:mod:`.roo_entries`); the restriction of a ``fileRegex`` is enforced by
:meth:`prompt_composer.core.modes.Mode.check_paths`. Settings Roo has no notion of (``permanent``,
``recent_size``, ``budget_tokens``) come from the import options; the budget defaults to the mode's worst case
rounded up, and a given budget below that worst case is refused.

A ``.roomodes`` mode overrides a mode of the same slug, as in Roo Code. ``.import-state.json`` records, per mode,
a hash of the file as written and of what it was made from, so each existing mode file is one of:

- written by the importer and not edited since: regenerated;
- the shipped built-in mode, unedited: replaced;
- edited since the last import, while its ``.roomodes`` entry has not changed: kept (the edit is newer);
- otherwise written or edited by a person: replaced with ``replace=True`` (``--replace``), else refused.

Everything is checked before anything is written; every problem is one line of :class:`RooModesError`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from ..core.audit import run_audit
from ..core.composer import Composer
from ..core.modes import ModeConfig
from ..core.registry import Registry, default_docs_dir
from ..errors import ImporterError, LoadError, did_you_mean
from ..shared.files import read_text
from .folder import (
    STATE_FILE,
    files_summary,
    load_output_folder,
    read_state,
    recover_output_folder,
    state_text,
    text_hash,
    write_files,
)
from .roo_entries import ParsedMode, parse_entry, read_roomodes
from .yaml_out import dump_yaml

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

_BUILT_IN = "the .roomodes mode overrides the built-in mode of the same slug, as in Roo Code"
_PERSON_REPLACED = "written or edited by a person; replaced because of --replace (as in Roo Code, .roomodes wins)"
_KEPT = "edited since the last import, and its .roomodes entry has not changed; --replace overwrites it"

_Action = Literal["import", "replace", "kept", "conflict"]


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
    budget = budget_tokens if budget_tokens is None or budget_tokens > 0 else None
    parsed = _parsed_modes(
        path,
        existing,
        option_problems,
        permanent=permanent,
        recent_size=max(recent_size, 0),
        budget_tokens=budget_tokens,
    )
    state = read_state(out)
    records: dict[str, Any] = dict(state["modes"])
    final = {slug: m.config for slug, m in existing.modes.items()}
    decisions: dict[str, tuple[_Action, str]] = {}
    for mode in parsed:
        slug = mode.config.slug
        file = _mode_file(existing, out, slug)
        decisions[slug] = _decide(mode, file, records.get(slug), replace=replace) if file.exists() else ("import", "")
        if decisions[slug][0] != "kept":
            final[slug] = mode.config  # a conflict too, so its budget is checked in the same run
    imported = [m for m in parsed if decisions[m.config.slug][0] != "kept"]
    problems = [*option_problems, *(reason for action, reason in decisions.values() if action == "conflict")]
    registry = _validate(existing, final.values(), out)  # budgets still placeholders: to find the worst cases
    problems += _set_budgets(imported, final, registry, budget)
    if problems:
        raise RooModesError(problems)
    registry = _validate(existing, final.values(), out)
    changes, files = _mode_files(parsed, decisions, registry, existing, out, records)
    new_state = {**state, "modes": dict(sorted(records.items()))}
    if new_state != state:
        files[STATE_FILE] = state_text(new_state)
    notes = tuple(note for mode in parsed for note in mode.notes)
    return RooModesPlan(out, tuple(changes), files, registry, notes)


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
    if not dry_run:
        recover_output_folder(out)
    plan = plan_roomodes(
        path, out, permanent=permanent, recent_size=recent_size, budget_tokens=budget_tokens, replace=replace
    )
    if not dry_run:
        write_files(plan.out, plan.files)
    return plan


def mode_yaml(config: ModeConfig) -> str:
    data = config.model_dump(mode="json")
    if not data["file_restrictions"]:
        del data["file_restrictions"]
    text = dump_yaml({k: data[k] for k in _KEY_ORDER if k in data})
    if ModeConfig.model_validate(yaml.safe_load(text)) != config:
        raise ImporterError(f"mode {config.slug!r}: its YAML does not round-trip; please report this")
    return text


# --- the steps of a plan ---------------------------------------------------------------------------------------


def _option_problems(
    permanent: Sequence[str], recent_size: int, budget_tokens: int | None, tools: Iterable[str]
) -> list[str]:
    problems = []
    names = sorted(tools)
    for name in permanent:
        if name not in names:
            close = did_you_mean(name, names)
            hint = f" ({close})" if close else ""
            problems.append(f"--permanent: unknown tool {name!r}{hint}; the folder has no tool doc of that name")
    if recent_size < 0:
        problems.append(f"--recent-size {recent_size}: must be 0 or more")
    if budget_tokens is not None and budget_tokens <= 0:
        problems.append(f"--budget-tokens {budget_tokens}: must be a positive number of tokens")
    return problems


def _parsed_modes(
    path: Path,
    existing: Registry,
    option_problems: Sequence[str],
    *,
    permanent: Sequence[str],
    recent_size: int,
    budget_tokens: int | None,
) -> list[ParsedMode]:
    """Every entry of the file converted; any problem (the options' too) raises :class:`RooModesError`."""
    entries, lines = read_roomodes(path)
    problems: list[str] = []
    parsed: list[ParsedMode] = []
    for entry, loc in entries:
        mode = parse_entry(
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
    return parsed


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


def _decide(parsed: ParsedMode, file: Path, record: Any, *, replace: bool) -> tuple[_Action, str]:
    """What to do with an existing mode file of the same slug, and why (see the module docstring)."""
    current = read_text(file, what="mode file")
    written, source = _record(record)
    if written == text_hash(current):
        return "import", ""
    shipped = default_docs_dir() / "modes" / f"{parsed.config.slug}.yaml"
    if shipped.is_file() and read_text(shipped, what="mode file") == current:
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


def _set_budgets(
    imported: Sequence[ParsedMode], final: dict[str, ModeConfig], registry: Registry, budget: int | None
) -> list[str]:
    """Give each imported mode in ``final`` its budget: ``budget``, or its worst case rounded up; a ``budget``
    below a mode's worst case is a problem (returned)."""
    if not imported:
        return []
    problems = []
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
    return problems


def _mode_files(
    parsed: Sequence[ParsedMode],
    decisions: Mapping[str, tuple[_Action, str]],
    registry: Registry,
    existing: Registry,
    out: Path,
    records: dict[str, Any],
) -> tuple[list[ModeChange], dict[str, str]]:
    """What happens to each mode's file, and the files that change (relative path → text); records what is
    written in ``records``."""
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
        previous = read_text(old_file, what="mode file") if old_file.exists() else None
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
    return changes, files


def _validate(existing: Registry, modes: Any, out: Path) -> Registry:
    try:
        return Registry.from_docs(
            existing.tools.values(), modes, root=out, groups=existing.groups.values(), servers=existing.servers.values()
        )
    except LoadError as exc:
        raise ImporterError(f"the imported modes do not validate: {exc.summary()}") from None
