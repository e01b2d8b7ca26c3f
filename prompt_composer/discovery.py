"""The discovery tools: ``tool_search`` (find tools; the ones it returns become active for the task) and
``call_tool`` (call any tool of the mode through one fixed definition, so the tool list never changes).

Both answer bad requests from the model with error *results*, never exceptions, and both ask
:meth:`Mode.allows` before anything else: a tool outside the mode is never shown, activated or run, and error
texts name only tools the mode allows.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .fetch import FETCH_TOOL_NAME, closest_names
from .modes import Mode

if TYPE_CHECKING:
    from .registry import Registry
    from .search import SearchResult, ToolSearch
    from .session import TaskSession

__all__ = [
    "CALL_TOOL_NAME",
    "DISCOVERY_TOOL_NAMES",
    "TOOL_SEARCH_NAME",
    "CallResult",
    "SearchToolResult",
    "acall_tool",
    "call_tool",
    "call_tool_definition",
    "check_call",
    "handle_tool_search",
    "render_search_result",
    "tool_search_definition",
    "validate_arguments",
]

TOOL_SEARCH_NAME = "tool_search"
CALL_TOOL_NAME = "call_tool"
DISCOVERY_TOOL_NAMES = (TOOL_SEARCH_NAME, FETCH_TOOL_NAME)
DEFAULT_LIMIT = 5
MAX_LIMIT = 20

Executor = Callable[[Mapping[str, Any]], Any]


# --- tool_search ----------------------------------------------------------------------------------------


def tool_search_definition(mode: Mode | None = None) -> dict[str, Any]:
    """The native definition of ``tool_search``. It names no tools, so it never changes within a mode."""
    return {
        "name": TOOL_SEARCH_NAME,
        "description": (
            "Find the tools for a step of your task among the many this mode has: describe what you want to do "
            "in a few words, in any language. The tools it returns become available to call for the rest of "
            "the task, with their workflow guidance. Search again with other words when nothing fits."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What you want to do, e.g. 'find where a function is used'.",
                },
                "limit": {
                    "type": "integer",
                    "description": f"How many tools to return (default {DEFAULT_LIMIT}).",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                },
            },
            "required": ["query"],
        },
    }


@dataclass(frozen=True)
class SearchToolResult:
    """A ``tool_search`` answer: the text for the model, and which tools it made active."""

    content: str
    is_error: bool
    activated: tuple[str, ...] = ()
    result: SearchResult | None = None


def render_search_result(
    result: SearchResult, registry: Registry, *, not_activated: Sequence[str] = (), activates: bool = True
) -> str:
    """The text a model reads: each hit's name, group, brief and hint, then its groups' workflow.

    ``activates`` says whether the hits joined the tool list (tool_search in a discovery mode) or were only
    listed (the ``search`` command, or a mode without discovery)."""
    if result.miss is not None:
        lines = [result.miss.message]
        if result.miss.nearest:
            lines.append(f"Nearest tools: {', '.join(result.miss.nearest)}.")
        if result.miss.groups:
            groups = ", ".join(f"{g} ({n} tool{'' if n == 1 else 's'})" for g, n in result.miss.groups)
            lines.append(f"Tool groups of this mode: {groups}.")
        lines.append("Search again with other words (what you want to achieve, or a group name).")
        return "\n".join(lines)
    count = len(result.hits)
    head = f"{count} tool{'s' if count != 1 else ''} for {result.query!r}"
    if result.truncated:
        head += (
            f" (the best {count} of {result.total} matches; search with more specific words or a larger limit "
            "to see others)"
        )
    lines = [head + ":"]
    for hit in result.hits:
        lines.append(f"- {hit.name} ({hit.group}): {hit.brief}")
        if hit.hint:
            lines.append(f"  Hint: {hit.hint}")
    if not_activated:
        lines.append(
            f"Not added to your tools (the task's limit of active tools is reached): {', '.join(not_activated)}."
        )
    elif activates:
        lines.append("These tools are now available to call.")
    seen: list[str] = []
    for hit in result.hits:
        if hit.group not in seen and hit.group in registry.groups:
            seen.append(hit.group)
    for group in seen:
        lines.append(f"\nWorkflow for {group} tools: {registry.groups[group].workflow}")
    return "\n".join(lines)


def handle_tool_search(
    search: ToolSearch,
    mode: Mode,
    tool_input: Mapping[str, Any] | Any,
    *,
    session: TaskSession | None = None,
    strategy: Any = None,
) -> SearchToolResult:
    """Answer a ``tool_search`` call in ``mode``; the tools found become active in ``session``.

    Permanent tools are already present and are not recorded again. Activation keeps discovery order and is
    bounded by the session (see :meth:`TaskSession.discover`).
    """
    query = tool_input.get("query") if isinstance(tool_input, Mapping) else None
    if not isinstance(query, str) or not query.strip():
        return SearchToolResult(
            f'Error: {TOOL_SEARCH_NAME} needs {{"query": "<what you want to do>"}}, for example '
            '{"query": "find where a function is called"}.',
            is_error=True,
        )
    raw_limit = tool_input.get("limit", DEFAULT_LIMIT)
    if isinstance(raw_limit, bool) or not isinstance(raw_limit, int) or raw_limit < 1:
        return SearchToolResult(f"Error: limit must be a whole number from 1 to {MAX_LIMIT}.", is_error=True)
    limit = min(raw_limit, MAX_LIMIT)
    result = search.search(query.strip(), mode, limit=limit, strategy=strategy)
    activated: tuple[str, ...] = ()
    refused: list[str] = []
    if session is not None and result.hits:
        permanent = set(mode.permanent)
        wanted = [h.name for h in result.hits if h.name not in permanent and mode.allows(h.name)]
        added = session.discover(wanted)
        active = set(session.discovered())
        activated = tuple(added)
        refused = [n for n in wanted if n not in active]
    content = render_search_result(result, search.registry, not_activated=refused)
    if raw_limit > MAX_LIMIT:
        content += f"\n(limit {raw_limit} was lowered to the maximum, {MAX_LIMIT}.)"
    return SearchToolResult(content, is_error=False, activated=activated, result=result)


# --- call_tool ------------------------------------------------------------------------------------------


def call_tool_definition(mode: Mode) -> dict[str, Any]:
    """The native definition of ``call_tool``: one fixed entry through which any tool of the mode is called."""
    return {
        "name": CALL_TOOL_NAME,
        "description": (
            "Call a tool of this mode by name, with its arguments as an object that matches the tool's input "
            f"schema. Read the tool's parameters first with {FETCH_TOOL_NAME} if you have not seen them."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's exact name.", "enum": list(mode.allowed)},
                "arguments": {"type": "object", "description": "The tool's input, as its schema describes."},
            },
            "required": ["name", "arguments"],
        },
    }


@dataclass(frozen=True)
class CallResult:
    """What goes back to the model for a ``call_tool`` call."""

    tool: str
    content: str
    is_error: bool


def check_call(
    registry: Registry, mode: Mode, tool_input: Mapping[str, Any] | Any
) -> tuple[str, dict[str, Any]] | CallResult:
    """Validate a ``call_tool`` input: the mode allows the tool, the arguments match its schema, and the mode's
    file restrictions admit its paths. Returns ``(name, arguments)`` or the error result to send back."""
    name = tool_input.get("name") if isinstance(tool_input, Mapping) else None
    if not isinstance(name, str) or not name.strip():
        needs = f'Error: {CALL_TOOL_NAME} needs {{"name": "<tool name>", "arguments": {{...}}}}.'
        return CallResult("", needs, is_error=True)
    name = name.strip()
    if not mode.allows(name):
        suggestions = ", ".join(closest_names(name, mode.allowed))
        return CallResult(
            name,
            f"Error: there is no tool {name!r} in mode {mode.slug!r}. Tools of this mode, closest first: "
            f"{suggestions}. Nothing was run.",
            is_error=True,
        )
    arguments = tool_input.get("arguments", {})
    if isinstance(arguments, str):  # some models send the object as a JSON string
        with contextlib.suppress(json.JSONDecodeError):
            arguments = json.loads(arguments)
    if not isinstance(arguments, Mapping):
        return CallResult(name, f"Error: arguments for {name} must be an object. Nothing was run.", is_error=True)
    doc = registry.tools[name]
    problems = validate_arguments(doc.input_schema, arguments)
    if problems:
        listed = "\n".join(f"- {p}" for p in problems[:10])
        more = f"\n- … and {len(problems) - 10} more" if len(problems) > 10 else ""
        return CallResult(
            name,
            f"Error: the arguments do not match {name}'s input schema; nothing was run:\n{listed}{more}\n"
            f'Call {FETCH_TOOL_NAME} with {{"name": "{name}"}} to read its parameters.',
            is_error=True,
        )
    refusal = mode.check_paths(doc, arguments) if hasattr(mode, "check_paths") else None
    if refusal:
        return CallResult(name, refusal, is_error=True)
    return name, dict(arguments)


def _executor_for(name: str, executors: Mapping[str, Executor]) -> Executor | CallResult:
    executor = executors.get(name)
    if executor is None:
        return CallResult(name, f"Error: tool {name} has no executor here. Nothing was run.", is_error=True)
    return executor


def _output(name: str, value: Any) -> CallResult:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return CallResult(name, text, is_error=False)


def _prepare_call(
    registry: Registry, mode: Mode, tool_input: Mapping[str, Any] | Any, executors: Mapping[str, Executor]
) -> tuple[str, dict[str, Any], Executor] | CallResult:
    """The checked tool name, arguments and executor of a call_tool call, or the refusal."""
    checked = check_call(registry, mode, tool_input)
    if isinstance(checked, CallResult):
        return checked
    name, arguments = checked
    executor = _executor_for(name, executors)
    if isinstance(executor, CallResult):
        return executor
    return name, arguments, executor


def call_tool(
    registry: Registry,
    mode: Mode,
    tool_input: Mapping[str, Any] | Any,
    executors: Mapping[str, Executor],
    *,
    session: TaskSession | None = None,
) -> CallResult:
    """Check and run a ``call_tool`` call; a successful run is recorded in the session's recent-use FIFO.

    The executor's exception becomes an error result (its message, not a traceback). For async executors use
    :func:`acall_tool`.
    """
    prepared = _prepare_call(registry, mode, tool_input, executors)
    if isinstance(prepared, CallResult):
        return prepared
    name, arguments, executor = prepared
    try:
        value = executor(arguments)
        if inspect.isawaitable(value):
            _close(value)
            return CallResult(name, f"Error: tool {name} is asynchronous; use acall_tool.", is_error=True)
    except Exception as exc:
        return CallResult(name, f"Error: {name} failed: {exc}", is_error=True)
    if session is not None:
        session.record_use(name)
    return _output(name, value)


async def acall_tool(
    registry: Registry,
    mode: Mode,
    tool_input: Mapping[str, Any] | Any,
    executors: Mapping[str, Executor],
    *,
    session: TaskSession | None = None,
) -> CallResult:
    """:func:`call_tool` for executors that may return awaitables."""
    prepared = _prepare_call(registry, mode, tool_input, executors)
    if isinstance(prepared, CallResult):
        return prepared
    name, arguments, executor = prepared
    try:
        value = executor(arguments)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        return CallResult(name, f"Error: {name} failed: {exc}", is_error=True)
    if session is not None:
        session.record_use(name)
    return _output(name, value)


def _close(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()


# --- a small JSON Schema validator ----------------------------------------------------------------------
# The subset tool schemas use (type, properties, required, additionalProperties, items, enum, const, anyOf,
# oneOf, allOf, not, minimum/maximum (exclusive too), minLength/maxLength, minItems/maxItems, pattern,
# uniqueItems, local $ref). Unknown keywords (format, default, title…) are ignored, as JSON Schema says.

_TYPES: Mapping[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, Mapping),
    "null": lambda v: v is None,
}


_BOUNDS = (
    ("minimum", "less than"),
    ("maximum", "greater than"),
    ("exclusiveMinimum", "at most"),
    ("exclusiveMaximum", "at least"),
)


def _within(key: str, value: float, bound: float) -> bool:
    if key == "minimum":
        return value >= bound
    if key == "maximum":
        return value <= bound
    if key == "exclusiveMinimum":
        return value > bound
    return value < bound


def validate_arguments(schema: Mapping[str, Any], value: Any) -> list[str]:
    """Every way ``value`` breaks ``schema``, as ``path: problem`` lines (empty when it conforms)."""
    problems: list[str] = []
    _check(schema, value, "arguments", problems, schema, 0)
    return problems


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref.lstrip("#").split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def _kind(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


def _check(schema: Any, value: Any, path: str, out: list[str], root: Mapping[str, Any], depth: int) -> None:
    if not isinstance(schema, Mapping) or depth > 32:
        if schema is False:
            out.append(f"{path}: not allowed here")
        return
    if "$ref" in schema:
        target = _resolve_ref(str(schema["$ref"]), root)
        if target is not None:
            _check(target, value, path, out, root, depth + 1)
    expected = schema.get("type")
    if expected is not None:
        kinds = [expected] if isinstance(expected, str) else list(expected)
        if not any(_TYPES.get(k, lambda _v: True)(value) for k in kinds):
            out.append(f"{path}: expected {' or '.join(kinds)}, got {_kind(value)}")
            return
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: must be one of {json.dumps(schema['enum'], ensure_ascii=False)}")
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: must be {json.dumps(schema['const'], ensure_ascii=False)}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            out.append(f"{path}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append(f"{path}: longer than {schema['maxLength']} characters")
        if "pattern" in schema:
            try:
                if re.search(schema["pattern"], value) is None:
                    out.append(f"{path}: does not match the pattern {schema['pattern']}")
            except re.error:
                pass
    if _TYPES["number"](value):
        for key, words in _BOUNDS:
            bound = schema.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool) and not _within(key, value, bound):
                out.append(f"{path}: {value} is {words} {bound}")
    if isinstance(value, list | tuple):
        if "minItems" in schema and len(value) < schema["minItems"]:
            out.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(f"{path}: more than {schema['maxItems']} items")
        if schema.get("uniqueItems"):
            seen = [json.dumps(v, sort_keys=True, default=str) for v in value]
            if len(set(seen)) != len(seen):
                out.append(f"{path}: items must be unique")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                _check(items, item, f"{path}[{index}]", out, root, depth + 1)
    if isinstance(value, Mapping):
        properties = schema.get("properties", {})
        properties = properties if isinstance(properties, Mapping) else {}
        for name in schema.get("required", []):
            if name not in value:
                out.append(f"{path}: missing required {name!r}")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                _check(properties[key], item, f"{path}.{key}", out, root, depth + 1)
            elif extra is False:
                allowed = ", ".join(properties) or "none"
                out.append(f"{path}: unknown parameter {key!r} (allowed: {allowed})")
            elif isinstance(extra, Mapping):
                _check(extra, item, f"{path}.{key}", out, root, depth + 1)
    for sub in schema.get("allOf", []):
        _check(sub, value, path, out, root, depth + 1)
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if isinstance(options, list) and options:
            matches = 0
            for option in options:
                trial: list[str] = []
                _check(option, value, path, trial, root, depth + 1)
                matches += not trial
            if matches == 0:
                out.append(f"{path}: matches none of the allowed forms ({keyword})")
            elif keyword == "oneOf" and matches > 1:
                out.append(f"{path}: matches more than one of the allowed forms (oneOf)")
    if "not" in schema:
        trial = []
        _check(schema["not"], value, path, trial, root, depth + 1)
        if not trial:
            out.append(f"{path}: matches a form that is not allowed")
