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
from pydantic_core import PydanticCustomError

from .errors import Problem

__all__ = [
    "BRIEF_MAX_SENTENCES",
    "BRIEF_MAX_WORDS",
    "NAME_PATTERN",
    "GroupDoc",
    "Origin",
    "ToolDoc",
    "count_sentences",
    "count_words",
    "load_group_file",
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


def _schema_error(message: str, *at: str | int) -> PydanticCustomError:
    """A schema problem that remembers where inside the schema it is, so it is reported at that line."""
    return PydanticCustomError("schema", message.replace("{", "{{").replace("}", "}}"), {"at": at})


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
    # Security findings that hold this tool back (rule ids of prompt_composer.security). While non-empty the tool
    # is quarantined: no mode allows it, so it is never listed, fetched, found or called. Importers set it; a
    # person clears it by deleting the key after reviewing the doc.
    quarantine: tuple[str, ...] = ()

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
            raise _schema_error(f"must be 'object' (got {schema.get('type')!r})", "type")
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            raise _schema_error("must map each parameter name to a schema object", "properties")
        for name, sub in properties.items():
            if not isinstance(sub, dict):
                raise _schema_error("must be a schema object", "properties", name)
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise _schema_error("must be a list of parameter names", "required")
        for index, name in enumerate(required):
            if name not in properties:
                raise _schema_error(f"names undefined parameter {name!r}", "required", index)
        return schema

    @field_validator("queries")
    @classmethod
    def _non_empty_queries(cls, queries: tuple[str, ...]) -> tuple[str, ...]:
        if any(not q.strip() for q in queries):
            raise ValueError("queries must be non-empty strings")
        return queries

    @field_validator("quarantine")
    @classmethod
    def _rule_ids(cls, rules: tuple[str, ...]) -> tuple[str, ...]:
        bad = [r for r in rules if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", r)]
        if bad:
            raise ValueError(f"quarantine lists security rule ids (like hidden-markup); got {bad[0]!r}")
        return rules

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(self.input_schema.get("properties", {}))

    @property
    def quarantined(self) -> bool:
        """Held back by a security finding until a person reviews it: no mode allows a quarantined tool."""
        return bool(self.quarantine)


# --- YAML with line numbers -------------------------------------------------------------------------

LineMap = dict[tuple[str | int, ...], int]


_STR_TAG = "tag:yaml.org,2002:str"


def _walk(
    node: yaml.Node,
    path: tuple[str | int, ...],
    lines: LineMap,
    problems: list[tuple[str, int]],
    ancestors: frozenset[int] = frozenset(),
    visited: set[int] | None = None,
) -> None:
    """Record the line of every key path; collect duplicate keys, non-string keys and recursive aliases.

    Each node is walked once (an alias points at a node already walked), so "billion laughs" files stay cheap.
    """
    visited = set() if visited is None else visited
    lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in ancestors:
        problems.append((f"recursive YAML alias at {'.'.join(map(str, path)) or 'the top'}", node.start_mark.line + 1))
        return
    if id(node) in visited:
        return
    visited.add(id(node))
    inner = ancestors | {id(node)}
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _STR_TAG:
                problems.append((f"key {key!r} must be a string (quote it)", line))
                continue
            if key in seen:
                problems.append((f"duplicate key {'.'.join(map(str, (*path, key)))!r}", line))
            seen.add(key)
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, problems, inner, visited)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, problems, inner, visited)


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
        found: list[tuple[str, int]] = []
        _walk(node, (), lines, found)
        if found:  # constructing a recursive or non-string-keyed document would fail or mislead
            return None, lines, [Problem(path, line, message) for message, line in found]
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        message = f"invalid YAML: {exc.problem or exc}"
        if exc.context and exc.context_mark and exc.problem_mark and exc.context_mark.line != exc.problem_mark.line:
            message += f" ({exc.context} at line {exc.context_mark.line + 1})"
        return None, {}, [Problem(path, line, message)]
    except yaml.YAMLError as exc:
        return None, {}, [Problem(path, 1, f"invalid YAML: {exc}")]
    except RecursionError:
        return None, {}, [Problem(path, 1, "invalid YAML: nested too deeply")]
    finally:
        loader.dispose()
    return data, lines, []


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
        loc = tuple(err["loc"]) + tuple(err.get("ctx", {}).get("at", ()))
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


def load_named_model(path: Path, model: type[M], key: str) -> tuple[M | None, LineMap, list[Problem]]:
    """:func:`load_model`, plus the rule that the model's ``key`` (its name or slug) equals the file's stem."""
    obj, lines, problems = load_model(path, model)
    if obj is not None and getattr(obj, key) != path.stem:
        message = f"{key} {getattr(obj, key)!r} must equal the file name {path.stem!r}"
        return None, lines, [*problems, Problem(path, line_of(lines, (key,)), message)]
    return obj, lines, problems


def yaml_files(folder: Path) -> list[Path]:
    """The ``*.yaml`` and ``*.yml`` files of a folder (none if it does not exist), in a stable order."""
    return sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]) if folder.is_dir() else []


def load_tool_file(path: Path) -> tuple[ToolDoc | None, list[Problem]]:
    """Load one tool doc; its ``name`` must equal the file's stem."""
    doc, _, problems = load_named_model(path, ToolDoc, "name")
    return doc, problems


class GroupDoc(BaseModel):
    """Workflow guidance for one tool group (``tool_docs/groups/<name>.yaml``), shown by tool_search beside
    the group's tools."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    workflow: str = Field(min_length=1)
    description: str = ""


def load_group_file(path: Path) -> tuple[GroupDoc | None, list[Problem]]:
    """Load one group doc; its ``name`` must equal the file's stem."""
    group, _, problems = load_named_model(path, GroupDoc, "name")
    return group, problems
