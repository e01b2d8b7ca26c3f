"""The texts of a tool doc that the model may read, each with its place in the doc (and, for a doc loaded from
YAML, its line): the brief, full text, hint, queries, origin name, and every description and title of the input
schema (and any other string in it: the model is sent the whole schema), and every string of its enum, default,
const, example and examples values at any depth (an example may be a whole object of arguments). Property names,
and the keys of example objects, are identifiers: checked for hidden characters, and for phrases once their
underscores and hyphens are read as spaces (``ignore_previous_instructions``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from ..core.docs import ToolDoc
from ..shared.yamlfile import LineMap, ScalarMap, line_of
from .text import escape_invisible

Loc = tuple[str | int, ...]
# "text": prose; "value": a value the model may copy into a call; "secret-value": one of a parameter that says it
# takes a key or credential file; "key": an identifier; "name": the upstream tool name.
Kind = Literal["text", "value", "secret-value", "key", "name"]

_SCHEMA_TEXT_KEYS = ("description", "title")
_SCHEMA_VALUE_KEYS = ("enum", "examples", "example", "default", "const")
_SCHEMA_SKIP_KEYS = frozenset({"$schema", "$id", "$ref", "pattern", "format", "type", "required"})
_MAX_DEPTH = 32

# A parameter that says what it holds is a key, credential or dotenv file: a secret file as its default is what it is
# for (a dotenv loader's `path` defaulting to `.env` reads it; that is its job).
_SECRET_PARAM_NAME = re.compile(
    r"(?:^|[_\-.])(?:identity|keyfile|key_?file|key_?path|private_?key|ssh_?key|cert|certificate|pem|credentials?"
    r"|dotenv|env_?file)"
    r"(?:$|[_\-.])",
    re.IGNORECASE,
)
_SECRET_PARAM_TEXT = re.compile(
    r"(?:\b(?:private\s+key|identity\s+file|key\s+file|ssh\s+key|certificate|credentials?\s+file|dotenv"
    r"|env(?:ironment)?\s+file)|\.env\s+file)\b",
    re.IGNORECASE,
)


def label(loc: Loc) -> str:
    """A location as a field name: ``input_schema.properties.path.examples[0]``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return escape_invisible(out)


def _holds_secret(name: str, schema: Any) -> bool:
    description = schema.get("description") if isinstance(schema, Mapping) else None
    return bool(
        _SECRET_PARAM_NAME.search(name)
        or (isinstance(description, str) and _SECRET_PARAM_TEXT.search(description) is not None)
    )


def _values(value: Any, loc: Loc, kind: Kind, depth: int) -> Iterator[tuple[Loc, Kind, str]]:
    """Every string of an enum, default, const or example value, at any depth; object keys as identifiers."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, str):
        yield loc, kind, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield (*loc, str(key)), "key", str(key)
            yield from _values(item, (*loc, str(key)), kind, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _values(item, (*loc, index), kind, depth + 1)


def schema_texts(schema: Any, loc: Loc, depth: int = 0, *, secret: bool = False) -> Iterator[tuple[Loc, Kind, str]]:
    """(location, kind, text) of every string in a JSON schema the model may read (see :data:`Kind`): the model is
    sent the whole schema, so a string under any other key (``$comment``, ``x-…``, ``errorMessage``) is prose too."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(schema, str):
        yield loc, "text", schema
    elif isinstance(schema, Mapping):
        for key, value in schema.items():
            key = str(key)
            where = (*loc, key)
            if key in _SCHEMA_SKIP_KEYS:
                continue
            if key in _SCHEMA_TEXT_KEYS and isinstance(value, str):
                yield where, "text", value
            elif key in _SCHEMA_VALUE_KEYS:
                yield from _values(value, where, "secret-value" if secret else "value", depth + 1)
            elif key in ("properties", "patternProperties", "$defs", "definitions") and isinstance(value, Mapping):
                for name, sub in value.items():
                    yield (*where, str(name)), "key", str(name)
                    held = secret or _holds_secret(str(name), sub)
                    yield from schema_texts(sub, (*where, str(name)), depth + 1, secret=held)
            else:
                yield from schema_texts(value, where, depth + 1, secret=secret)
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from schema_texts(item, (*loc, index), depth + 1, secret=secret)


def doc_texts(doc: ToolDoc) -> Iterator[tuple[Loc, Kind, str]]:
    """(location, kind, text) of every text of ``doc`` the model may read, in field order."""
    yield ("brief",), "text", doc.brief
    yield ("full",), "text", doc.full
    if doc.hint:
        yield ("hint",), "text", doc.hint
    for index, query in enumerate(doc.queries):
        yield ("queries", index), "text", query
    if doc.origin is not None:
        yield ("origin", "name"), "name", doc.origin.name
    yield from schema_texts(doc.input_schema, ("input_schema",))


def line(lines: LineMap, scalars: ScalarMap, loc: Loc, kind: Kind, text: str, offset: int) -> int:
    """The file line of ``text[offset]``, the text at ``loc`` (its key line when the position is unknown)."""
    if kind == "key" and loc in lines:  # a property name: the line of its key
        return lines[loc]
    scalar = scalars.get(loc)
    if scalar is None:
        return line_of(lines, loc)
    if scalar.style in ("|", ">"):
        lead = scalar.value.find(text) if text else -1
        lead = max(lead, 0)
        within = scalar.value[: lead + offset].count("\n")
        return scalar.line + 1 + within if scalar.style == "|" else scalar.line + 1
    return scalar.line
