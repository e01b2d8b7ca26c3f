"""JSON written for people: ``json.dumps(value, indent=2, ensure_ascii=False)``, the same text, in half the time.

The standard library encodes with its C encoder only without ``indent``; with it, a generator per nesting level
writes each token, which is most of what printing a composed tool list costs (a large mode's ``compose``
prints ~1 MB of it). :func:`indented` writes the same text by one recursive walk into a list, with the standard
library's own string and number encoders; a value outside JSON's own data (a key that is not a string, a type
JSON has no form for) is left to ``json.dumps``, which writes or refuses it as it always has.
"""

from __future__ import annotations

import json
from json.encoder import INFINITY, encode_basestring
from typing import Any

_MAX_DEPTH = 500  # json.dumps recurses too: past this, it decides (it raises RecursionError near the limit)


class _Unwritable(Exception):
    """A value :func:`indented` leaves to ``json.dumps``."""


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == INFINITY:
        return "Infinity"
    if value == -INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _write(value: Any, level: int, out: list[str]) -> None:
    kind = type(value)
    if kind is str:
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float:
        out.append(_float(value))
    elif kind is list or kind is tuple or kind is dict:
        if not value:
            out.append("{}" if kind is dict else "[]")
            return
        if level >= _MAX_DEPTH:
            raise _Unwritable
        inner = "\n" + "  " * (level + 1)
        separator = "," + inner
        if kind is dict:
            out.append("{")
            for index, (key, item) in enumerate(value.items()):
                if type(key) is not str:
                    raise _Unwritable  # json.dumps turns numbers and booleans into keys, or refuses
                out.append(separator if index else inner)
                out.append(encode_basestring(key))
                out.append(": ")
                _write(item, level + 1, out)
            out.append("\n" + "  " * level + "}")
        else:
            out.append("[")
            for index, item in enumerate(value):
                out.append(separator if index else inner)
                _write(item, level + 1, out)
            out.append("\n" + "  " * level + "]")
    else:
        raise _Unwritable  # a subclass of str, int or float, a set, an object: json.dumps's rules apply


def indented(value: Any) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``, exactly."""
    out: list[str] = []
    try:
        _write(value, 0, out)
    except _Unwritable:
        return json.dumps(value, indent=2, ensure_ascii=False)
    return "".join(out)
