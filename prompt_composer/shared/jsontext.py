"""JSON written by a model, a peer or a file of a checkout: decoded without letting its shape crash the reader."""

from __future__ import annotations

import json
import math
from typing import Any

# Past 2**53 a JSON number is no longer exact in most readers (RFC 8259, section 6); no count or size this project
# reads comes near it, so a larger one is a damaged or hostile file, refused before any arithmetic overflows.
MAX_JSON_INT = 2**53
# As deep as YAML files may nest (shared/yamlfile.py); the files read strictly here nest 4 levels at most.
MAX_JSON_DEPTH = 100


def decode_json(text: str) -> tuple[Any, str | None]:
    """The value ``text`` holds, or ``None`` and why it holds none (``"not valid JSON (Expecting value, column
    3)"``, ``"nested too deeply to read"``): a problem to report back, never an exception, whatever the text."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg}, column {exc.colno})"
    except RecursionError:  # the decoder recurses once a level: "[[[[…" thousands deep exhausts the stack
        return None, "nested too deeply to read"


class JsonDataError(ValueError):
    """Why :func:`strict_json` refused a text; ``line`` is where, when the decoder knows."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _constant(name: str) -> Any:
    raise JsonDataError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400
        raise JsonDataError(f"the number {text[:40]} is too large")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 16 or abs(int(text)) > MAX_JSON_INT:  # the length first: int() of 10**400 digits
        raise JsonDataError(f"the number {text[:40]}{'…' if len(text) > 40 else ''} is over 2**53")
    return int(text)


def strict_json(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The value of a JSON data file (results, import state), or :class:`JsonDataError` naming what is wrong:
    not JSON, ``NaN`` or ``Infinity`` (Python's decoder accepts them; JSON does not), a number that is not finite
    or whole numbers past ±2**53, or nesting deeper than ``max_depth``."""
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except json.JSONDecodeError as exc:
        raise JsonDataError(f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", exc.lineno) from None
    except RecursionError:  # the decoder recurses once a level
        raise JsonDataError(f"nested more than {max_depth} levels deep") from None
    if depth_over(value, max_depth):
        raise JsonDataError(f"nested more than {max_depth} levels deep")
    return value


def depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` (decoded JSON) nests lists and objects more than ``limit`` deep; iterative, so any depth
    is measured without recursing."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False
