"""YAML files read with line numbers: every problem is reported as ``path:line: message``, never raised.

The parser itself is :mod:`.yamlparse`, imported at the first text parsed; what the rest of the package needs of
YAML files (lines, bounds, loading a model) imports no YAML library."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import InputFileError, Problem, did_you_mean
from .files import read_text
from .yamltypes import (
    MAX_COMPOSE_DEPTH,
    MAX_YAML_BYTES,
    MAX_YAML_DEPTH,
    MAX_YAML_VALUES,
    LineMap,
    Scalar,
    ScalarMap,
)

__all__ = [
    "MAX_COMPOSE_DEPTH",
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_VALUES",
    "PARSER",
    "LineMap",
    "Scalar",
    "ScalarMap",
    "ValidatedModels",
    "YamlReader",
    "known_keys",
    "line_of",
    "load_model",
    "load_named_model",
    "parse_yaml",
    "read_yaml",
    "validation_problems",
    "yaml_files",
    "yaml_layout",
    "yaml_text",
]

# Which parser reads YAML text: "libyaml", its C parser where PyYAML was built with it (else PyYAML's pure-Python
# one), or "python". Both feed the same composer (.yamlparse), so the nodes, their lines and every bound are the
# same either way; the C parser only makes the scanning and parsing, nearly all of the time, ~35 times faster.
# Tests set it to compare.
PARSER: Literal["libyaml", "python"] = "libyaml"


def read_yaml(path: Path) -> tuple[Any, LineMap, list[Problem]]:
    """Parse one YAML document, returning the data, a map from key path to line, and problems found.

    Whatever the file holds, the outcome is data or ``path:line`` problems, never an exception: the file is read
    through :func:`~prompt_composer.shared.files.read_text` (regular files only, at most :data:`MAX_YAML_BYTES`),
    and the reader's, parser's and constructor's errors all become problems at their line."""
    text = yaml_text(path)
    if isinstance(text, Problem):
        return None, {}, [text]
    return parse_yaml(text, path)


def yaml_text(path: Path) -> str | Problem:
    """The text of the YAML file ``path`` as :func:`read_yaml` reads it, or the problem that it cannot be read."""
    try:
        return read_text(path, what="YAML file", max_bytes=MAX_YAML_BYTES)
    except InputFileError as exc:
        reason = str(exc).partition(": cannot read the YAML file: ")[2] or str(exc)
        return Problem(path, 1, f"cannot read file: {reason}")


def parse_yaml(text: str, path: Path) -> tuple[Any, LineMap, list[Problem]]:
    """:func:`read_yaml` for a text already read (safely) from ``path``: data, line map and problems.

    Parsed by :data:`PARSER`. A text libyaml refuses is parsed again by the pure-Python parser, whose message
    and line the problem then carries: the two parsers word their errors differently, and a problem reads the
    same whichever parser a machine has (a broken file is rare; the second parse costs only then)."""
    from .yamlparse import parse

    return parse(text, path, PARSER)


def yaml_layout(text: str) -> tuple[LineMap, ScalarMap]:
    """Where the values of a YAML text are: each key path's line (as :func:`read_yaml` maps them: a mapping
    entry at its key's line) and each scalar value; both empty when the text is no single YAML document. For
    locating something in a value that was loaded from this text."""
    from .yamlparse import layout

    return layout(text, PARSER)


def line_of(lines: LineMap, loc: tuple[str | int, ...]) -> int:
    """The line of the deepest known ancestor of ``loc`` (a missing key points at its parent)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 1


M = TypeVar("M", bound=BaseModel)


def known_keys(model: type[BaseModel] | None, loc: tuple[str | int, ...]) -> list[str]:
    """The keys a mapping at ``loc`` (below ``model``) may have, when the path leads through models only."""
    for part in loc:
        if model is None:
            return []
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    if model is None:
        return []
    return [field.alias or name for name, field in model.model_fields.items()]


def validation_problems(
    path: Path, lines: LineMap, error: ValidationError, model: type[BaseModel] | None = None
) -> Iterator[Problem]:
    """One readable problem per pydantic error, located at the offending key's line; an unknown key of
    ``model`` gets the close known one (``unknown key 'querys'; did you mean 'queries'?``)."""
    errors = error.errors()
    failed = [tuple(err["loc"]) for err in errors]
    for err in errors:
        loc = tuple(err["loc"]) + tuple(err.get("ctx", {}).get("at", ()))
        if err["type"] == "too_short" and _short_by_its_items(err, loc, failed):
            continue  # a list left too short by its own bad items: the items' errors say it already
        field = ".".join(str(part) for part in loc) or "(document)"
        kind = err["type"]
        if kind == "extra_forbidden":
            hint = did_you_mean(str(loc[-1]), known_keys(model, loc[:-1])) if loc else ""
            message = f"unknown key {field!r}; {hint}" if hint else f"unknown key {field!r}"
        elif kind == "missing":
            message = f"missing required key {field!r}"
        else:
            text = str(err["msg"]).removeprefix("Value error, ")
            message = f"{field}: {text}"
        yield Problem(path, line_of(lines, loc), message)


def _short_by_its_items(err: Any, loc: tuple[Any, ...], failed: list[tuple[Any, ...]]) -> bool:
    """Whether a ``too_short`` list had enough items as written, and is short only because some of them failed (each
    reported at its own place)."""
    given, least = err.get("input"), err.get("ctx", {}).get("min_length")
    long_enough = isinstance(given, list | tuple) and isinstance(least, int) and len(given) >= least
    return long_enough and any(len(f) > len(loc) and f[: len(loc)] == loc for f in failed)


YamlReader = Callable[[Path], tuple[Any, LineMap, list[Problem]]]  # read_yaml, or a cache's read (see .yamlcache)


class ValidatedModels(Protocol):
    """Models validated before from the same bytes, and where to keep those validated now (a cache's: see
    :class:`~.yamlcache.YamlCache`)."""

    def validated(self, path: Path, model: type[M]) -> M | None: ...

    def keep(self, path: Path, obj: BaseModel) -> None: ...


def load_model(
    path: Path, model: type[M], *, read: YamlReader = read_yaml, models: ValidatedModels | None = None
) -> tuple[M | None, LineMap, list[Problem]]:
    """Read ``path`` as YAML (with ``read``) and validate it as ``model``; problems instead of exceptions.

    ``models``: where a model validated before from the same bytes comes from (then nothing is read or
    validated, and the line map is empty), and where the model validated now is kept (see :mod:`.yamlcache`)."""
    if models is not None:
        known = models.validated(path, model)
        if known is not None:
            return known, {}, []
    data, lines, problems = read(path)
    if data is None and not problems:
        problems.append(Problem(path, 1, "file is empty"))
    if problems:
        return None, lines, problems
    if not isinstance(data, Mapping):
        return None, lines, [Problem(path, 1, f"expected a mapping of keys, got {type(data).__name__}")]
    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        return None, lines, list(validation_problems(path, lines, exc, model))
    if models is not None:
        models.keep(path, obj)
    return obj, lines, []


def load_named_model(
    path: Path, model: type[M], key: str, *, read: YamlReader = read_yaml, models: ValidatedModels | None = None
) -> tuple[M | None, LineMap, list[Problem]]:
    """:func:`load_model`, plus the rule that the model's ``key`` (its name or slug) equals the file's stem."""
    obj, lines, problems = load_model(path, model, read=read, models=models)
    if obj is not None and getattr(obj, key) != path.stem:
        message = f"{key} {getattr(obj, key)!r} must equal the file name {path.stem!r}"
        return None, lines, [*problems, Problem(path, line_of(lines, (key,)), message)]
    return obj, lines, problems


def yaml_files(folder: Path) -> list[Path]:
    """The ``*.yaml`` and ``*.yml`` files of a folder (none if it does not exist or cannot be listed), in a stable
    order: what ``folder.glob`` finds for both patterns, sorted, listed once (a warm load reads little else)."""
    try:
        with os.scandir(folder) as listing:
            names = sorted(entry.name for entry in listing if entry.name.endswith((".yaml", ".yml")))
    except OSError:  # missing, not a folder, unreadable
        return []
    return [folder / name for name in names]
