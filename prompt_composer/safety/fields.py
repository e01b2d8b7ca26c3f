"""The texts of a tool doc that the model may read, each with its place in the doc (and, for a doc loaded from
YAML, its line): the brief, full text, hint, queries, the tool's name and origin name, and **every string of the
input schema** (the model is sent the whole schema): descriptions and titles at any depth, every branch of
``anyOf``/``oneOf``/``allOf``/``not``/``if``/``then``/``else``, ``$defs``/``definitions``, ``items``,
``additionalProperties`` and the rest, any other key's string (``$comment``, ``x-…``), and every string of enum,
default, const, example and examples values at any depth (an example may be a whole object of arguments).

Kinds say how a string is read (see :data:`Kind`): prose; a value the model may copy into a call; an identifier
(property names, keys of any object, ``required`` entries, ``type``, ``format``, ``$ref``/``$id``/``$schema``),
checked for hidden characters and for phrases once its underscores, hyphens, dots and slashes are read as spaces;
a regular expression (``pattern``, the keys of ``patternProperties``), read as the words it spells
(:func:`pattern_words`).

The walk is bounded like every other walk of a schema (:data:`~prompt_composer.core.bounds.MAX_SCHEMA_DEPTH`
levels of nesting, :data:`MAX_SCHEMA_STRINGS` strings): what lies past a bound is not read, so it is reported
(kind ``"unread"``) rather than passed over in silence; the lint quarantines it as ``oversized``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from ..core.bounds import MAX_SCHEMA_DEPTH
from ..core.docs import ToolDoc
from ..shared.yamlfile import LineMap, ScalarMap, line_of
from .text import escape_invisible

Loc = tuple[str | int, ...]
# "text": prose; "value": a value the model may copy into a call; "secret-value": one of a parameter that says it
# takes a key or credential file; "key": an identifier; "name": a tool name; "pattern": a regular expression;
# "unread": a place past the walk's bounds (its text is empty; the lint reports it).
Kind = Literal["text", "value", "secret-value", "key", "name", "pattern", "unread"]

# The most strings of one schema the lint reads. A real schema holds a few hundred (the largest measured, of the
# real catalogs, 311); past this many the rest is reported unread, so a schema padded with strings cannot
# make the lint slow or hide its tail.
MAX_SCHEMA_STRINGS = 20_000

_SCHEMA_TEXT_KEYS = frozenset({"description", "title"})
_SCHEMA_VALUE_KEYS = frozenset({"enum", "examples", "example", "default", "const"})
# Identifiers and references: the model reads them too, a sentence spelled in one is still a sentence.
_SCHEMA_NAME_KEYS = frozenset(
    {"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "type", "format", "required"}
)
_SCHEMA_PATTERN_KEYS = frozenset({"pattern"})
_SCHEMA_NAMED_KEYS = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})

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


class _Walk:
    """One walk of a schema: what it yields, bounded in depth and in strings (see the module's docstring)."""

    def __init__(self) -> None:
        self.strings = 0
        self.cut = False  # the string budget ran out: the rest is reported once, then skipped

    def _take(self, loc: Loc) -> Iterator[tuple[Loc, Kind, str]]:
        """Count one string; past the budget, report the place once and return False (through ``self.cut``)."""
        self.strings += 1
        if self.strings > MAX_SCHEMA_STRINGS and not self.cut:
            self.cut = True
            yield loc, "unread", f"more than {MAX_SCHEMA_STRINGS:,} strings"

    def one(self, loc: Loc, kind: Kind, text: str) -> Iterator[tuple[Loc, Kind, str]]:
        yield from self._take(loc)
        if not self.cut:
            yield loc, kind, text

    def values(self, value: Any, loc: Loc, kind: Kind, level: int) -> Iterator[tuple[Loc, Kind, str]]:
        """Every string of an enum, default, const or example value, at any depth; object keys as identifiers.
        ``level`` is the JSON nesting level of ``value`` (as :func:`~prompt_composer.core.bounds.json_depth`
        counts it)."""
        if isinstance(value, str):
            yield from self.one(loc, kind, value)
        elif isinstance(value, Mapping | list) and level > MAX_SCHEMA_DEPTH:
            yield loc, "unread", f"nested more than {MAX_SCHEMA_DEPTH} levels"
        elif isinstance(value, Mapping):
            for key, item in value.items():
                yield from self.one((*loc, str(key)), "key", str(key))
                yield from self.values(item, (*loc, str(key)), kind, level + 1)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from self.values(item, (*loc, index), kind, level + 1)

    def schema(self, schema: Any, loc: Loc, level: int, secret: bool) -> Iterator[tuple[Loc, Kind, str]]:
        if self.cut:
            return
        if isinstance(schema, str):
            yield from self.one(loc, "text", schema)
        elif isinstance(schema, Mapping | list) and level > MAX_SCHEMA_DEPTH:
            yield loc, "unread", f"nested more than {MAX_SCHEMA_DEPTH} levels"
        elif isinstance(schema, Mapping):
            properties = schema.get("properties")
            named = frozenset(properties) if isinstance(properties, Mapping) else frozenset()
            for key, value in schema.items():
                yield from self.keyword(str(key), value, (*loc, str(key)), level, secret, named)
        elif isinstance(schema, list):
            for index, item in enumerate(schema):
                yield from self.schema(item, (*loc, index), level + 1, secret)

    def keyword(
        self, key: str, value: Any, where: Loc, level: int, secret: bool, named: frozenset[str] = frozenset()
    ) -> Iterator[tuple[Loc, Kind, str]]:
        """The strings under one key of a schema object at JSON level ``level``; ``named`` are the object's
        property names (read once, as names: a ``required`` entry naming one is not read again)."""
        yield from self.one(where, "key", key)  # any key of the schema is read: `x-…` and unknown ones too
        if key in _SCHEMA_TEXT_KEYS and isinstance(value, str):
            yield from self.one(where, "text", value)
        elif key in _SCHEMA_VALUE_KEYS:
            yield from self.values(value, where, "secret-value" if secret else "value", level + 1)
        elif key in _SCHEMA_PATTERN_KEYS and isinstance(value, str):
            yield from self.one(where, "pattern", value)
        elif key in _SCHEMA_NAME_KEYS and isinstance(value, str | list):
            names = [value] if isinstance(value, str) else value
            for index, name in enumerate(names):
                at = where if isinstance(value, str) else (*where, index)
                if isinstance(name, str):
                    if key != "required" or name not in named:
                        yield from self.one(at, "key", name)
                else:  # not a name: a schema where a name belongs is still read
                    yield from self.schema(name, at, level + 2, secret)
        elif key in _SCHEMA_NAMED_KEYS | {"patternProperties"} and isinstance(value, Mapping):
            if level + 1 > MAX_SCHEMA_DEPTH:
                yield where, "unread", f"nested more than {MAX_SCHEMA_DEPTH} levels"
                return
            for name, sub in value.items():
                name = str(name)
                yield from self.one((*where, name), "pattern" if key == "patternProperties" else "key", name)
                held = secret or _holds_secret(name, sub)
                yield from self.schema(sub, (*where, name), level + 2, held)
        else:
            yield from self.schema(value, where, level + 1, secret)


def schema_texts(schema: Any, loc: Loc, *, secret: bool = False) -> Iterator[tuple[Loc, Kind, str]]:
    """(location, kind, text) of every string in a JSON schema the model may read (see :data:`Kind`): the model is
    sent the whole schema, so a string under any key is read, and every key too."""
    yield from _Walk().schema(schema, loc, 1, secret)


def doc_texts(doc: ToolDoc) -> Iterator[tuple[Loc, Kind, str]]:
    """(location, kind, text) of every text of ``doc`` the model may read, in field order."""
    yield ("name",), "name", doc.name
    yield ("brief",), "text", doc.brief
    yield ("full",), "text", doc.full
    if doc.hint:
        yield ("hint",), "text", doc.hint
    for index, query in enumerate(doc.queries):
        yield ("queries", index), "text", query
    if doc.origin is not None and doc.origin.name != doc.name:
        yield ("origin", "name"), "name", doc.origin.name
    yield from schema_texts(doc.input_schema, ("input_schema",))


# --- regular expressions, read as words --------------------------------------------------------------------------

# An escape that stands for a class of characters or a position (\s, \b, \d …): a space between words.
_CLASS_ESCAPES = frozenset("sSbBwWdDAZzGhHvVRNXKQE")
_GROUP_OPEN = re.compile(r"\(\?(?:[:=!>|]|<[=!]|P?<[A-Za-z_]\w*>|P=\w+\)|#[^)]*\)|[a-zA-Z-]+[:)])|\(")
_COUNTED = re.compile(r"\{\d*(?:,\d*)?\}")


def pattern_words(pattern: str) -> tuple[str, list[int]]:
    """The words a regular expression spells, and for each character the index it came from in ``pattern``:
    ``^(?:ignore\\s+all\\s+previous\\s+instructions)$`` reads "ignore all previous instructions". Escapes of a
    class or position (``\\s``, ``\\b``) and alternation read as a space, an escaped character as itself, a set of
    one letter's cases (``[Ii]``) as that letter, any other set and ``.`` as a space; anchors, group brackets and
    quantifiers as nothing. Code-point escapes (``\\u200b``) are not decoded: a pattern that matches hidden
    characters is not hiding any."""
    chars: list[str] = []
    where: list[int] = []

    def put(text: str, at: int) -> None:
        chars.extend(text)
        where.extend([at] * len(text))

    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in _CLASS_ESCAPES or nxt in "xuUpPcN0123456789" or nxt in "nrtfae":
                put(" ", i)
                i += 2
                if nxt in "pPN" and pattern.startswith("{", i):  # \p{L}, \N{NAME}
                    close = pattern.find("}", i)
                    i = len(pattern) if close < 0 else close + 1
            else:
                put(nxt, i + 1)
                i += 2
        elif char == "[":
            close = i + 1 + (pattern[i + 1 : i + 2] == "^")
            close += pattern[close : close + 1] == "]"
            while close < len(pattern) and pattern[close] != "]":
                close += 2 if pattern[close] == "\\" else 1
            members = pattern[i + 1 : close]
            letters = {m.casefold() for m in members}
            put(members[0] if len(letters) == 1 and members.isalpha() else " ", i)
            i = close + 1
        elif char == "(":
            opened = _GROUP_OPEN.match(pattern, i)
            i = opened.end() if opened is not None else i + 1
        elif char == "{" and (counted := _COUNTED.match(pattern, i)) is not None:
            i = counted.end()
        elif char in ")^$*+?":
            i += 1
        elif char in "|.":
            put(" ", i)
            i += 1
        else:
            put(char, i)
            i += 1
    return "".join(chars), where


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
