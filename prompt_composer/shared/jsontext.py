"""JSON written by a model or a peer: decoded without letting its shape crash the reader."""

from __future__ import annotations

import json
from typing import Any


def decode_json(text: str) -> tuple[Any, str | None]:
    """The value ``text`` holds, or ``None`` and why it holds none (``"not valid JSON (Expecting value, column
    3)"``, ``"nested too deeply to read"``): a problem to report back, never an exception, whatever the text."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg}, column {exc.colno})"
    except RecursionError:  # the decoder recurses once a level: "[[[[…" thousands deep exhausts the stack
        return None, "nested too deeply to read"
