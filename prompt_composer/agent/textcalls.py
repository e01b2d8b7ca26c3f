"""Text-style tool calls: the fenced blocks a model writes instead of native tool calls, and the labelled results.

A text-style mode (``tool_style: text``) sends no native tools: the model calls a tool by answering with ::

    ```tool_call
    {"name": "read_file", "input": {"path": "README.md"}}
    ```

and each call's result comes back as text starting with a label line ``tool_result name=<tool> ok|error``.
A reply without such a block may still hold one call in another shape (a ```json block, the arguments alone):
:func:`read_loose_call` reads it when it names one tool beyond doubt.
Provider-neutral: the loop (``prompt_composer.agent.engine``) reads and answers these the same way over every API.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..shared.jsontext import decode_json


@dataclass(frozen=True)
class TextToolCall:
    """One ``tool_call`` block read from an assistant's text. ``error`` says why the block could not be read
    (``name`` and ``input`` are then whatever could be salvaged: ``""`` and ``{}`` at worst)."""

    name: str
    input: Mapping[str, Any]
    error: str | None = None


# The opening fence starts a line (indentation allowed) and may carry trailing spaces; the block runs to the
# next line that is only a fence, or to the end of the text when the model never closed it.
_OPEN_FENCE = re.compile(r"^[ \t]*```tool_call[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_CLOSE_FENCE = re.compile(r"^[ \t]*```[ \t]*$", re.MULTILINE)
_CALL_KEYS = frozenset({"name", "input"})
CALL_SHAPE = 'A ```tool_call block holds one JSON object: {"name": "<tool name>", "input": {<parameters>}}.'


def parse_tool_call_blocks(text: str) -> list[TextToolCall]:
    """Every ``tool_call`` fenced block of ``text``, in order (prose around them is ignored).

    A block must hold ``{"name": "<tool>", "input": {...}}``; ``input`` may be left out (no parameters). Bad
    JSON, another JSON type, a missing or empty ``name``, a non-object ``input`` or any other key give a
    :class:`TextToolCall` with ``error`` set, so the model can be told what to fix."""
    calls: list[TextToolCall] = []
    pos = 0
    while (opening := _OPEN_FENCE.search(text, pos)) is not None:
        closing = _CLOSE_FENCE.search(text, opening.end())
        body = text[opening.end() : closing.start() if closing else len(text)]
        pos = closing.end() if closing else len(text)
        calls.append(_read_call_block(body))
    return calls


def _read_call_block(body: str) -> TextToolCall:
    source = body.strip()
    if source.endswith("```"):  # the closing fence glued to the JSON's last line
        source = source[:-3].rstrip()
    if not source:
        return TextToolCall("", {}, "the tool_call block is empty")
    try:
        value = json.loads(source)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        return TextToolCall("", {}, f"the tool_call block is not valid JSON: {exc.msg} at {where}")
    except RecursionError:  # the decoder recurses once a level: "[[[[…" thousands deep exhausts the stack
        return TextToolCall("", {}, "the tool_call block is nested too deeply to read")
    if not isinstance(value, dict):
        return TextToolCall("", {}, f"the tool_call block holds a JSON {type(value).__name__}, not an object")
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        return TextToolCall("", {}, 'the tool_call block has no "name" string')
    name = name.strip()
    tool_input = value.get("input", {})
    if not isinstance(tool_input, dict):
        kind = type(tool_input).__name__
        return TextToolCall(name, {}, f'the "input" of the tool_call block is a JSON {kind}, not an object')
    extra = sorted(set(value) - _CALL_KEYS)
    if extra:
        keys = ", ".join(json.dumps(k) for k in extra)
        return TextToolCall(name, tool_input, f"the tool_call block has unexpected keys {keys}")
    return TextToolCall(name, tool_input)


# A line the loop itself writes to start a text-style result, or a fence around one: a reply holding such a line
# wrote its own "result" (small models do, after an error) instead of waiting for a real one.
_RESULT_LABEL = re.compile(r"^[ \t]*(?:```[ \t]*tool_result\b|tool_result[ \t]+name=)", re.MULTILINE)
IMITATION = (
    "Your last reply imitated a tool result; only the system writes those, and nothing was run. Do not write "
    "tool_result. Either call a tool with a ```tool_call block, or answer my question now in plain sentences "
    "from what the real results above showed."
)


def imitated_result(text: str) -> bool:
    """Whether an assistant's text imitates a tool result: a line that starts like the label the loop puts on
    results (``tool_result name=…``) or a fenced ``tool_result`` block."""
    return _RESULT_LABEL.search(text) is not None


def result_label(name: str, texts: Iterable[str], *, is_error: bool = False) -> str:
    """The text answering one text-style call: a label line ``tool_result name=<name> ok|error``, then the output
    (and any text appended after it, one blank line apart)."""
    status = "error" if is_error else "ok"
    body = "\n\n".join(text or "(no output)" for text in texts)
    return f"tool_result name={name or '?'} {status}\n{body}"


def text_tool_result(name: str, texts: Iterable[str], *, is_error: bool = False) -> dict[str, Any]:
    """:func:`result_label` as a text content block (``{"type": "text", "text": ...}``)."""
    return {"type": "text", "text": result_label(name, texts, is_error=is_error)}


# --- calls written in the wrong shape ----------------------------------------------------------------------------

# Any fenced block (```json, ```, ```tool_code …): a small model asked for ```tool_call often writes the call's JSON
# in another fence, or only its arguments. Told so, it invents the result; a note on the shape next to the result
# makes it call again and again; given the real result it answers from it. So the result goes back as for any call.
_ANY_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)
_WRAPPERS = ("input", "arguments", "parameters", "args")  # what other formats call a call's input


def read_loose_call(text: str, schemas: Mapping[str, Mapping[str, Any]]) -> TextToolCall | None:
    """The call a reply without ``tool_call`` blocks wrote in another shape, if it names one tool of ``schemas``
    (tool name → input schema) beyond doubt; else ``None``.

    The first fenced block whose JSON object either names a tool (``{"name": "read_file", "arguments": {...}}``,
    the shapes other APIs use; ``input``, ``parameters`` and ``args`` are read too, and without any of them the
    other keys are the input: ``{"name": "read_file", "path": "a.py"}``), or holds only parameters of
    some tool, all of its required ones included (``{"path": "README.md"}``). Arguments that fit several tools
    count only if the reply's prose names exactly one of them. A block that fits no tool (a config file, a JSON
    example) is not a call."""
    for match in _ANY_FENCE.finditer(text):
        if match.group(1).lower() in ("tool_call", "tool_result"):
            continue
        value, problem = decode_json(match.group(2))
        if problem is not None or not isinstance(value, dict) or not value:
            continue
        named = value.get("name")
        if isinstance(named, str) and named.strip() in schemas:
            wrapped = next((value[k] for k in _WRAPPERS if isinstance(value.get(k), dict)), None)
            flat = {k: v for k, v in value.items() if k != "name"}  # {"name": "read_file", "path": "x"}
            return TextToolCall(named.strip(), wrapped if wrapped is not None else flat)
        fits = [name for name, schema in schemas.items() if _fits(value, schema)]
        if len(fits) > 1:
            prose = text[: match.start()] + text[match.end() :]
            fits = [n for n in fits if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", prose)]
        if len(fits) == 1:
            return TextToolCall(fits[0], value)
    return None


def _fits(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> bool:
    """Whether ``arguments`` holds only parameters of ``schema`` and all of its required ones."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return False
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    return set(arguments) <= set(properties) and needed <= set(arguments)
