"""Modes: named agent roles, the tools each allows, and the one access check everything else uses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .docs import LineMap, ToolDoc, line_of, load_model
from .errors import Problem

__all__ = ["Mode", "ModeConfig", "ToolStyle", "load_mode_file", "resolve_mode"]

ToolStyle = Literal["native", "text"]


class ModeConfig(BaseModel):
    """A mode file as the user writes it (``tool_docs/modes/<slug>.yaml``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    slug: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    name: str = Field(min_length=1)
    role: str = Field(min_length=1)
    when_to_use: str = ""
    groups: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    permanent: tuple[str, ...] = ()
    recent_size: int = Field(ge=0)
    budget_tokens: int = Field(gt=0)
    tool_style: ToolStyle = "native"
    custom_instructions: str = ""


@dataclass(frozen=True)
class Mode:
    """A mode resolved against a registry: which tools it allows, in a stable order."""

    config: ModeConfig
    allowed: tuple[str, ...]
    path: Path | None = None
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


def load_mode_file(path: Path) -> tuple[ModeConfig | None, LineMap, list[Problem]]:
    config, lines, problems = load_model(path, ModeConfig)
    if config is not None and config.slug != path.stem:
        problems.append(
            Problem(path, line_of(lines, ("slug",)), f"slug {config.slug!r} must equal the file name {path.stem!r}")
        )
        config = None
    return config, lines, problems


def resolve_mode(
    config: ModeConfig,
    tools: Mapping[str, ToolDoc],
    *,
    path: Path | None = None,
    lines: LineMap | None = None,
    broken: frozenset[str] = frozenset(),
) -> tuple[Mode | None, list[Problem]]:
    """Resolve allowed tools; every reference to a missing or disallowed tool is a problem.

    ``broken`` names tools whose own file failed to load: they are reported there, not again here.
    """
    lines = lines or {}
    where = path or Path(f"<mode {config.slug}>")
    problems: list[Problem] = []

    def check_known(key: str, names: tuple[str, ...]) -> None:
        for index, name in enumerate(names):
            if name not in tools and name not in broken:
                problems.append(
                    Problem(
                        where, line_of(lines, (key, index)), f"{key}: unknown tool {name!r} in mode {config.slug!r}"
                    )
                )

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
    chosen = {n for n, doc in tools.items() if (doc.group in groups or n in config.include) and n not in excluded}
    for index, name in enumerate(config.permanent):
        if name in tools and name not in chosen:
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
