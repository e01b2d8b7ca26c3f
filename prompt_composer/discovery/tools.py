"""The discovery tools: ``tool_search`` (find tools; the ones it returns become active for the task) and
``call_tool`` (call any tool of the mode through one fixed definition, so the tool list never changes).

Both answer bad requests from the model with error *results*, never exceptions, and both ask
:meth:`Mode.allows` before anything else: a tool outside the mode is never shown, activated or run, and error
texts name only tools the mode allows.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.access import not_in_mode
from ..core.bounds import cap_query
from ..core.builtins import CALL_TOOL_NAME, DEFAULT_LIMIT, FETCH_TOOL_NAME, MAX_LIMIT, TOOL_SEARCH_NAME
from ..core.modes import Mode
from ..core.schema import validate_arguments
from ..shared.jsontext import decode_json

if TYPE_CHECKING:
    from ..core.registry import Registry
    from ..core.session import TaskSession
    from .results import SearchResult
    from .search import ToolSearch


Executor = Callable[[Mapping[str, Any]], Any]


# --- tool_search ----------------------------------------------------------------------------------------


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
    # Cut before searching: the time a search takes and what its answer echoes are bounded by the cut.
    query, cut = cap_query(query.strip())
    result = search.search(query, mode, limit=limit, strategy=strategy)
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
    if cut is not None:
        content += f"\n{cut}"
    return SearchToolResult(content, is_error=False, activated=activated, result=result)


# --- call_tool ------------------------------------------------------------------------------------------


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
        return CallResult(name, not_in_mode(name, mode, consequence="Nothing was run."), is_error=True)
    arguments = tool_input.get("arguments", {})
    if isinstance(arguments, str):  # some models send the object as a JSON string
        decoded, problem = decode_json(arguments)
        arguments = arguments if problem is not None else decoded
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


def search_fields(found: SearchToolResult, *, include_content: bool) -> dict[str, Any]:
    """The fields of a ``search`` event for a ``tool_search`` answer, the same from the loop and the gateway (the
    query text only with content)."""
    assert found.result is not None
    result = found.result
    return {
        "hits": list(result.names),
        "hit_count": len(result.hits),
        "total": result.total,
        "miss": result.miss is not None,
        "confidence": result.confidence,
        "strategy": result.strategy,
        "activated": list(found.activated),
        **({"query": result.query} if include_content else {}),
    }
