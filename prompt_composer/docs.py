"""Tool docs: the :class:`ToolDoc` model and YAML loading that reports ``path:line: message``.

A tool doc is one YAML file; unknown keys are refused so a typo (``breif:``) is an error, not a silently
missing field. Validation problems are collected, never raised one at a time, so a user fixing a folder of
docs sees every problem in one run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import Problem

__all__ = [
    "BRIEF_MAX_SENTENCES",
    "BRIEF_MAX_WORDS",
    "NAME_PATTERN",
    "Origin",
    "ToolDoc",
    "count_sentences",
    "count_words",
    "load_tool_file",
]

NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"  # what the Anthropic and OpenAI tool APIs accept
BRIEF_MAX_WORDS = 100
BRIEF_MAX_SENTENCES = 5

# Abbreviations whose dot does not end a sentence.
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl)\.", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f]+(?=\s|$)")  # also CJK full stops


def count_words(text: str) -> int:
    return len(text.split())


def count_sentences(text: str) -> int:
    """Sentences in ``text``: runs of ``.!?`` followed by whitespace or the end; a trailing fragment counts."""
    text = _ABBREVIATIONS.sub("", text.strip())
    if not text:
        return 0
    ends = list(_SENTENCE_END.finditer(text))
    trailing = text[ends[-1].end() :].strip() if ends else text
    return len(ends) + (1 if trailing else 0)


class Origin(BaseModel):
    """Where an imported tool came from, so a call can be routed back under its original name."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    server: str
    name: str


class ToolDoc(BaseModel):
    """One tool's documentation: a brief form, a full form and the input schema."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str = Field(pattern=NAME_PATTERN)
    group: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    brief: str
    full: str = Field(min_length=1)
    input_schema: dict[str, Any]
    queries: tuple[str, ...] = ()
    hint: str | None = None
    brief_source: Literal["human", "drafted"] = "human"
    origin: Origin | None = None

    @field_validator("brief")
    @classmethod
    def _brief_limits(cls, value: str) -> str:
        words = count_words(value)
        if words > BRIEF_MAX_WORDS:
            raise ValueError(f"brief has {words} words; at most {BRIEF_MAX_WORDS} allowed")
        sentences = count_sentences(value)
        if not 1 <= sentences <= BRIEF_MAX_SENTENCES:
            raise ValueError(f"brief has {sentences} sentences; 1 to {BRIEF_MAX_SENTENCES} allowed")
        return value

    @field_validator("input_schema")
    @classmethod
    def _object_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if schema.get("type") != "object":
            raise ValueError(f"input_schema must have type: object (got {schema.get('type')!r})")
        properties = schema.get("properties", {})
        if not isinstance(properties, dict) or not all(isinstance(v, dict) for v in properties.values()):
            raise ValueError("input_schema.properties must map each parameter name to a schema object")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise ValueError("input_schema.required must be a list of parameter names")
        missing = [r for r in required if r not in properties]
        if missing:
            raise ValueError(f"input_schema.required names undefined parameters: {', '.join(missing)}")
        return schema

    @field_validator("queries")
    @classmethod
    def _non_empty_queries(cls, queries: tuple[str, ...]) -> tuple[str, ...]:
        if any(not q.strip() for q in queries):
            raise ValueError("queries must be non-empty strings")
        return queries

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(self.input_schema.get("properties", {}))


# --- YAML with line numbers -------------------------------------------------------------------------

LineMap = dict[tuple[str | int, ...], int]


def _walk(node: yaml.Node, path: tuple[str | int, ...], lines: LineMap, dupes: list[tuple[str, int]]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen:
                dupes.append((".".join(map(str, (*path, key))), key_node.start_mark.line + 1))
            seen.add(key)
            lines[(*path, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*path, key), lines, dupes)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, dupes)


def read_yaml(path: Path) -> tuple[Any, LineMap, list[Problem]]:
    """Parse one YAML document, returning the data, a map from key path to line, and problems found."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, {}, [Problem(path, 1, f"cannot read file: {exc}")]
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}, [Problem(path, 1, "file is empty")]
        lines: LineMap = {}
        dupes: list[tuple[str, int]] = []
        _walk(node, (), lines, dupes)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        return None, {}, [Problem(path, line, f"invalid YAML: {exc.problem or exc}")]
    except yaml.YAMLError as exc:
        return None, {}, [Problem(path, 1, f"invalid YAML: {exc}")]
    finally:
        loader.dispose()
    problems = [Problem(path, line, f"duplicate key {key!r}") for key, line in dupes]
    return data, lines, problems


def line_of(lines: LineMap, loc: tuple[str | int, ...]) -> int:
    """The line of the deepest known ancestor of ``loc`` (a missing key points at its parent)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 1


M = TypeVar("M", bound=BaseModel)


def validation_problems(path: Path, lines: LineMap, error: ValidationError) -> Iterator[Problem]:
    """One readable problem per pydantic error, located at the offending key's line."""
    for err in error.errors():
        loc = tuple(err["loc"])
        field = ".".join(str(part) for part in loc) or "(document)"
        kind = err["type"]
        if kind == "extra_forbidden":
            message = f"unknown key {field!r}"
        elif kind == "missing":
            message = f"missing required key {field!r}"
        else:
            text = str(err["msg"]).removeprefix("Value error, ")
            message = f"{field}: {text}"
        yield Problem(path, line_of(lines, loc), message)


def load_model(path: Path, model: type[M]) -> tuple[M | None, LineMap, list[Problem]]:
    """Read ``path`` as YAML and validate it as ``model``; problems instead of exceptions."""
    data, lines, problems = read_yaml(path)
    if data is None and not problems:
        problems.append(Problem(path, 1, "file is empty"))
    if problems:
        return None, lines, problems
    if not isinstance(data, Mapping):
        return None, lines, [Problem(path, 1, f"expected a mapping of keys, got {type(data).__name__}")]
    try:
        return model.model_validate(data), lines, []
    except ValidationError as exc:
        return None, lines, list(validation_problems(path, lines, exc))


def load_tool_file(path: Path) -> tuple[ToolDoc | None, list[Problem]]:
    """Load one tool doc; its ``name`` must equal the file's stem."""
    doc, lines, problems = load_model(path, ToolDoc)
    if doc is not None and doc.name != path.stem:
        problems.append(
            Problem(path, line_of(lines, ("name",)), f"name {doc.name!r} must equal the file name {path.stem!r}")
        )
        doc = None
    return doc, problems
