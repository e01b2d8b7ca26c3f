"""Modes: named agent roles, the tools each allows, and the one access check everything else uses."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from ..errors import Problem, did_you_mean
from ..shared.yamlfile import (
    LineMap,
    ValidatedModels,
    YamlReader,
    line_of,
    load_named_model,
    read_yaml,
    validation_problems,
)
from .docs import ToolDoc

if TYPE_CHECKING:
    from pydantic import RootModel

ToolStyle = Literal["native", "text"]
SHORTLIST = 5  # PreselectConfig.shortlist's default (see there)
PromotionPolicy = Literal["every_turn", "task_start", "inline"]


class FileRestriction(BaseModel):
    """Files the tools of one group may touch in a mode: paths must match ``file_regex`` (searched).

    Matched with the ``regex`` module, not ``re``: it also reads the syntax of Roo Code's JavaScript patterns,
    such as ``(?<name>…)``, ``\\p{L}`` and variable-length lookbehind (see ``roomodes.js_file_regex``).
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, str_strip_whitespace=True)

    file_regex: str = Field(min_length=1)
    description: str = ""

    @field_validator("file_regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        # A pattern ``re`` compiles, ``regex`` (a superset of its syntax) compiles too: ``regex``, ~8 ms to import,
        # is imported to check only the patterns ``re`` does not read.
        try:
            re.compile(value)
            return value
        except (re.error, RecursionError, OverflowError):
            pass
        import regex  # here, not at the top: only a mode with file restrictions needs it

        try:
            regex.compile(value)
        except regex.error as exc:
            raise ValueError(f"file_regex {value!r} is not a valid regular expression: {exc}") from None
        return value

    def allows(self, path: str) -> bool:
        import regex

        return regex.search(self.file_regex, path.replace("\\", "/").removeprefix("./")) is not None


class PreselectConfig(BaseModel):
    """``preselect:`` in a mode: before a task's first request, and whenever a new user message arrives, the user's
    text is searched over the mode's tools and the best ``k`` whose confidence is at least ``min_confidence`` are
    loaded in full for the task, so the model needs neither to search nor to fetch them."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    # Defaults chosen on the large-catalog task sets (docs/benchmarks.md): past 3 tools recall barely grows. The floor
    # was 0.3; on five spent blind splits 0.2 loads a right tool on 66% of tasks instead of 59% (precision 0.32 to
    # 0.31), and no request that needs no tool loads more ("A lower floor, and the sixth blind split").
    k: StrictInt = Field(default=3, ge=1, le=20)
    min_confidence: float = Field(default=0.2, ge=0.0, le=1.0)
    # After the loaded tools, the next ``shortlist`` of the ranking are named in the note with a short summary,
    # callable but not loaded (0: none). Default chosen on the tuning half of the large tasks (docs/tool-choice.md).
    shortlist: StrictInt = Field(default=SHORTLIST, ge=0, le=20)
    # The shortlisted tools are also declared in the tool list as stubs (name and summary, no schema), appended
    # after the loaded tools, so a model that calls only what its tool list declares can call them; a first call
    # loads the tool and returns its parameters. Native tool styles only (a text-style mode has no tool list).
    # Off by default: on the local model it helped on one split and not on the next, at about twice the
    # shortlist's tokens (docs/benchmarks.md, "The shortlist as stubs").
    shortlist_stubs: StrictBool = False


class TierConfig(BaseModel):
    """``tiers:`` in a mode (``tiers: auto`` takes the defaults): the non-permanent tools are brief while their
    briefs fit ``share`` of the model's context (``context_tokens``), the rest catalog lines, least used first,
    and where even the lines do not fit, names only (see :mod:`prompt_composer.core.tiers`). With ``stubs: true``
    the catalog and name tools are declared in the tool list too, without a schema, so that loading one never
    changes the tool list (for a conversation cached by a server that renders the tools before it)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    share: float = Field(default=0.10, gt=0.0, le=1.0)
    context_tokens: StrictInt = Field(default=200_000, gt=0)
    stubs: StrictBool = False


DEFAULT_RECENT_SIZE = 4
"""``recent_size`` when a mode file leaves it out: the middle of the shipped modes' 3 to 6."""
DEFAULT_BUDGET_TOKENS = 10_000
"""``budget_tokens`` when a mode file leaves it out: a guard against a blow-up (an import of a large server into
the mode), not a tuned figure; about the worst case of the shipped mode with the most tools (debug, 22)."""


class ModeConfig(BaseModel):
    """A mode file as the user writes it (``tool_docs/modes/<slug>.yaml``)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, str_strip_whitespace=True)

    slug: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    name: str = Field(min_length=1)
    role: str = Field(min_length=1)
    when_to_use: str = ""
    groups: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    permanent: tuple[str, ...] = ()
    recent_size: StrictInt = Field(default=DEFAULT_RECENT_SIZE, ge=0)  # strict: `true` or "2" are mistakes
    budget_tokens: StrictInt = Field(default=DEFAULT_BUDGET_TOKENS, gt=0)
    tool_style: ToolStyle = "native"
    custom_instructions: str = ""
    # Optional: per group, the files its tools may touch (Roo Code's fileRegex), e.g. architect edits only *.md.
    file_restrictions: dict[str, FileRestriction] = Field(default_factory=dict)
    # Optional: when a recent-use FIFO change reaches the prompt (see prompt_composer.anthropic); None = default.
    promotion: PromotionPolicy | None = None
    # Optional: start with the permanent tools, tool_search and fetch_tool_description only; the tools a
    # search returns join the tool list for the rest of the task (prompt_composer.discovery).
    discovery: bool = False
    # Optional: load the tools a task's text calls for before the model asks (see PreselectConfig).
    preselect: PreselectConfig | None = None
    # Optional: three tiers (brief, catalog line, name) sized to a share of the model's context (see TierConfig).
    tiers: TierConfig | None = None

    @field_validator("tiers", mode="before")
    @classmethod
    def _auto_tiers(cls, value: Any) -> Any:
        if value == "auto":
            return {}
        if isinstance(value, str):
            raise ValueError(f"tiers is 'auto' or a mapping with share and context_tokens, not {value!r}")
        return value

    @field_validator("tiers")
    @classmethod
    def _tiers_or_discovery(cls, value: TierConfig | None, info: ValidationInfo) -> TierConfig | None:
        if value is not None and info.data.get("discovery"):
            raise ValueError("give tiers or discovery, not both: discovery lists no tool until a search finds it")
        if value is not None and value.stubs and info.data.get("tool_style") == "text":
            raise ValueError("tiers.stubs declares tools in the tool list, and a text-style mode sends none")
        return value

    @field_validator("file_restrictions")
    @classmethod
    def _restricted_groups_allowed(
        cls, value: dict[str, FileRestriction], info: ValidationInfo
    ) -> dict[str, FileRestriction]:
        groups = info.data.get("groups", ())
        stray = [g for g in value if g not in groups]
        if stray:
            raise ValueError(f"restricts group(s) not in groups: {', '.join(stray)}")
        return value


# Input keys that name files: ``path``, ``file``, ``files``, ``paths`` and anything ending in ``_path``/``_file``
# (``file_path``, ``target_file``…); values may be strings, lists of strings, or lists of objects with such keys.
_PATH_KEY = re.compile(r"^(?:path|paths|file|files|filename|filepath|.+_(?:path|paths|file|files))$", re.IGNORECASE)


def tool_paths(tool_input: Any) -> Iterator[str]:
    """Every file path a tool input names (see ``_PATH_KEY``), in input order."""
    if isinstance(tool_input, Mapping):
        for key, value in tool_input.items():
            if isinstance(key, str) and _PATH_KEY.match(key):
                if isinstance(value, str):
                    yield value
                elif isinstance(value, list | tuple):
                    for item in value:
                        if isinstance(item, str):
                            yield item
                        else:
                            yield from tool_paths(item)
                elif isinstance(value, Mapping):
                    yield from tool_paths(value)
            elif isinstance(value, Mapping | list | tuple):
                yield from tool_paths(value)
    elif isinstance(tool_input, list | tuple):
        for item in tool_input:
            yield from tool_paths(item)


@dataclass(frozen=True)
class Mode:
    """A mode resolved against a registry: which tools it allows, in a stable order."""

    config: ModeConfig
    allowed: tuple[str, ...]
    path: Path | None = None
    overlay: Path | None = None  # the per-user overlay file that set this mode's permanent/recent_size, if any
    _allowed_set: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_allowed_set", frozenset(self.allowed))

    @property
    def slug(self) -> str:
        return self.config.slug

    @property
    def permanent(self) -> tuple[str, ...]:
        return self.config.permanent

    @property
    def recent_size(self) -> int:
        return self.config.recent_size

    def allows(self, tool: str) -> bool:
        """The access check: fetch, composition, search and tool calls all ask this one question."""
        return tool in self._allowed_set

    def check_paths(self, doc: ToolDoc, tool_input: Any) -> str | None:
        """A refusal message if ``doc``'s group is file-restricted here and the input names a path outside it.

        Call it after :meth:`allows` and before running the tool; ``None`` means go ahead.
        """
        restriction = self.config.file_restrictions.get(doc.group)
        if restriction is None:
            return None
        for path in tool_paths(tool_input):
            if not restriction.allows(path):
                what = f" ({restriction.description})" if restriction.description else ""
                return (
                    f"Error: in mode {self.config.name!r}, {doc.name} may only touch files matching "
                    f"the pattern {restriction.file_regex}{what}; {path!r} does not match. Nothing was done."
                )
        return None


def load_mode_file(
    path: Path, *, read: YamlReader = read_yaml, models: ValidatedModels | None = None
) -> tuple[ModeConfig | None, LineMap, list[Problem]]:
    """Load one mode file (read with ``read``, validated unless ``models`` holds it: see
    :func:`~prompt_composer.shared.yamlfile.load_model`); its ``slug`` must equal the file's stem."""
    return load_named_model(path, ModeConfig, "slug", read=read, models=models)


def resolve_mode(
    config: ModeConfig,
    tools: Mapping[str, ToolDoc],
    *,
    path: Path | None = None,
    lines: LineMap | None = None,
    broken: frozenset[str] = frozenset(),
) -> tuple[Mode | None, list[Problem]]:
    """Resolve allowed tools; every reference to a missing or disallowed tool is a problem. Quarantined tools
    are left out silently (a mode may name one; it is just not allowed until a person clears it).

    ``broken`` names tools whose own file failed to load: they are reported there, not again here.
    """
    lines = lines or {}
    where = path or Path(f"<mode {config.slug}>")
    problems: list[Problem] = []

    def check_known(key: str, names: tuple[str, ...]) -> None:
        for index, name in enumerate(names):
            if name not in tools and name not in broken:
                hint = did_you_mean(name, tuple(tools))
                message = f"{key}: unknown tool {name!r} in mode {config.slug!r}" + (f"; {hint}" if hint else "")
                problems.append(Problem(where, line_of(lines, (key, index)), message))

    for key in ("include", "exclude", "permanent"):
        check_known(key, getattr(config, key))
    for key in ("groups", "include", "exclude", "permanent"):
        seen: set[str] = set()
        for index, name in enumerate(getattr(config, key)):
            if name in seen:
                problems.append(Problem(where, line_of(lines, (key, index)), f"{key}: {name!r} is listed twice"))
            seen.add(name)

    groups = {g: i for i, g in enumerate(config.groups)}
    excluded = set(config.exclude)
    # A quarantined tool (see ToolDoc.quarantine) is never chosen, whatever the mode says: not by its group, not
    # by include, not as permanent. That is not a problem in the mode, so a quarantine never breaks loading.
    chosen = {
        n
        for n, doc in tools.items()
        if (doc.group in groups or n in config.include) and n not in excluded and not doc.quarantined
    }
    for index, name in enumerate(config.permanent):
        if name in tools and name not in chosen and not tools[name].quarantined:
            reason = "excluded" if name in excluded else f"its group {tools[name].group!r} is not in groups"
            problems.append(
                Problem(
                    where,
                    line_of(lines, ("permanent", index)),
                    f"permanent tool {name!r} is not allowed in mode {config.slug!r} ({reason})",
                )
            )
    if problems or broken:
        return None, problems
    # Permanent tools first, in the order the user listed them; then by group as listed, then by name.
    permanent = [n for n in config.permanent if n in chosen]
    rest = sorted(chosen - set(permanent), key=lambda n: (groups.get(tools[n].group, len(groups)), n))
    return Mode(config=config, allowed=tuple(permanent + rest), path=path), []


# --- per-user overlay --------------------------------------------------------------------------------------


class ModeOverlay(BaseModel):
    """One mode's entry in a per-user overlay file: values that replace the mode file's at load.

    Only the two settings that are a matter of how one person works (and that ``prompt-composer tune`` fits to
    their own use): which tools are always in full, and how many recently used ones are. What a mode *allows*,
    its budget and its text stay the mode file's, so an overlay can never widen a mode's access.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    permanent: tuple[str, ...] | None = None
    recent_size: StrictInt | None = Field(default=None, ge=0)


@functools.cache
def _overlay_file() -> type[RootModel[dict[str, ModeOverlay]]]:
    """The model of a whole overlay file, made when an overlay is read: a parametrized model builds its validator
    when it is made (``defer_build`` does not reach it), and importing ``RootModel`` builds pydantic's own, which a
    process reading no overlay need not pay."""
    from pydantic import RootModel

    return RootModel[dict[str, ModeOverlay]]


def load_overlay_file(path: Path) -> tuple[dict[str, ModeOverlay], LineMap, list[Problem]]:
    """Read an overlay file, ``{mode slug: {permanent: [...], recent_size: N}}``; problems as ``path:line``.

    A file with nothing but comments is an empty overlay (a user may comment every entry out)."""
    data, lines, problems = read_yaml(path)
    if data is None and (not problems or [p.message for p in problems] == ["file is empty"]):
        return {}, lines, []
    if problems:
        return {}, lines, problems
    if not isinstance(data, Mapping):
        return {}, lines, [Problem(path, 1, f"expected a mapping of mode slugs, got {type(data).__name__}")]
    entries: dict[str, ModeOverlay] = {}
    for slug, value in data.items():
        try:  # one entry at a time, so a bad entry does not hide the problems of the others
            entries.update(_overlay_file().model_validate({slug: value}).root)
        except ValidationError as exc:
            problems += validation_problems(path, lines, exc)
    return entries, lines, problems


def apply_overlay(
    mode: Mode, overlay: ModeOverlay, tools: Mapping[str, ToolDoc], *, path: Path, lines: LineMap
) -> tuple[Mode | None, list[Problem]]:
    """``mode`` with the overlay's values, resolved again: a permanent tool that is unknown, listed twice or not
    allowed in the mode is a problem at the overlay's file and line (``lines`` is the overlay file's map)."""
    updates = overlay.model_dump(exclude_none=True)
    if not updates:
        return mode, []
    config = mode.config.model_copy(update=updates)
    # resolve_mode locates a permanent tool by ("permanent", index): the overlay holds it under (slug, ...).
    local = {key[1:]: line for key, line in lines.items() if key[:1] == (mode.slug,)}
    resolved, problems = resolve_mode(config, tools, path=path, lines=local)
    if resolved is None:
        return None, problems
    return replace(resolved, path=mode.path, overlay=path), []
