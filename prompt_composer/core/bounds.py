"""Bounds on what comes in from a model, a client or an upstream server, and on what is echoed back.

Whatever the size of the input, an answer stays short and takes a time that does not grow with it:

- a tool name echoed in a refusal is cut (:func:`quoted_name`): real names are at most 64 characters
  (``^[a-zA-Z0-9_-]{1,64}$``), so anything longer is not a name the model could mean, and echoing megabytes of it
  would only cost tokens;
- a ``tool_search`` query is cut to :data:`MAX_QUERY_CHARS` characters and :data:`MAX_QUERY_WORDS` words
  (:func:`cap_query`) before it is searched, so search time is bounded by the cut, not by what was sent;
- an input schema nests at most :data:`MAX_SCHEMA_DEPTH` levels (:func:`json_depth`): deeper nesting would exhaust
  the recursion of every step that walks a schema (validation, YAML, the lint, the SDK's JSON parser).
"""

from __future__ import annotations

from typing import Any

# Characters of a tool name echoed in a refusal; a little over the longest valid name, so a valid one is never cut.
MAX_ECHOED_NAME = 80
# A search query is a request in a sentence or two; real ones measured are under 200 characters and 30 words.
MAX_QUERY_CHARS = 1_000
MAX_QUERY_WORDS = 100
# The deepest input schema taken, in nested objects and arrays (the deepest real one measured has 10).
MAX_SCHEMA_DEPTH = 64


def cut_note(length: int) -> str:
    """The note that follows a cut text: how long the whole was."""
    return f"… (cut: {length:,} characters in all)"


def quoted_name(name: str) -> str:
    """``name`` quoted for a message (``repr``), cut to :data:`MAX_ECHOED_NAME` characters with a note."""
    if len(name) <= MAX_ECHOED_NAME:
        return repr(name)
    return f"{name[:MAX_ECHOED_NAME]!r}{cut_note(len(name))}"


def cap_query(query: str) -> tuple[str, str | None]:
    """``query`` cut to :data:`MAX_QUERY_CHARS` characters and :data:`MAX_QUERY_WORDS` words, and the note to tell
    the model it was (``None`` when nothing was cut). Cuts characters first, so splitting into words is bounded."""
    text = query[:MAX_QUERY_CHARS]
    words = text.split()
    if len(words) > MAX_QUERY_WORDS:
        text = " ".join(words[:MAX_QUERY_WORDS])
    if text == query:
        return query, None
    note = (
        f"(Your query was {len(query):,} characters long; only its first {len(text):,} characters were searched "
        f"(at most {MAX_QUERY_CHARS:,} characters and {MAX_QUERY_WORDS} words are). Search with a short request.)"
    )
    return text, note


def json_depth(value: Any, limit: int) -> int:
    """How deeply ``value`` nests objects (dicts) and arrays (lists), walked level by level without recursion, so any
    depth is measured; the walk stops past ``limit``, so a result over ``limit`` means "more than ``limit``"."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level and depth <= limit:
        depth += 1
        below: list[Any] = []
        for item in level:
            # Containers only: a level of a million scalars costs one pass in C-speed comprehension, no stack entries.
            below += [c for c in (item.values() if isinstance(item, dict) else item) if type(c) in _CONTAINERS]
        level = below
    return depth


_CONTAINERS = (dict, list)
