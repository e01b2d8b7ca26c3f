"""OpenAI Responses adapter: the composed ``responses.create`` request, and the tool loop over the Responses API.

Chosen with ``wrap(openai.OpenAI(), api="responses", ...)`` (see :mod:`prompt_composer.agent.openai`, which holds
the wrapped clients; this module only spells the loop's requests and replies in the Responses wire format).

Request layout: ``instructions`` are the composed stable part, then the caller's ``instructions``, then the part
that changes within a task (text-style modes only); ``tools`` are the caller's, unchanged and first, then the
mode's as function tools (the caller's win on a name clash). The loop sends the whole conversation as ``input``
items on every request (no ``previous_response_id``): a response's output items go back as they came, a function's
result as a ``function_call_output`` item (an error's text starts with ``Error:``), text-style results as one user
message. ``max_tokens`` is sent as ``max_output_tokens``.

Native deferral (``native=True``): the permanent and the task's recent tools are eager functions; every other tool
of the mode is a function with ``defer_loading: true`` and its brief, in ``namespace`` tools (by MCP server or
group, at most 10 functions each); a ``tool_search`` tool with ``"execution": "client"`` is answered by the loop's
own search: a ``tool_search_output`` item carrying the full definitions of the deferred tools it found (a search
that loads nothing also gets a developer message with its text: the nearest tools, or what was wrong). A fetch
of a deferred tool (or a call the loop refused because its schema was never seen) loads the tool the same way: a
``tool_search_call`` / ``tool_search_output`` pair after the answers. The declared tools and the instructions stay
byte-identical for the whole task. With ``hosted_search=True`` the tool is ``{"type": "tool_search"}`` and OpenAI
searches the declared deferred tools itself; what it loads is recorded in the task, like the loop's own loads.
``native="emulate"`` sends the same conversation as plain functions, the loop appending what is loaded.

Usage: ``input_tokens_details.cached_tokens`` is read as cached input and ``cache_write_tokens`` as cache writes;
``input_tokens`` is the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import openai
from openai.types.responses import Response

from ..core.builtins import TOOL_SEARCH_NAME
from ..core.prompt import ComposedPrompt
from ..core.session import TaskSession
from ..shared.jsontext import decode_json
from .adapter import Answer, Call, Clock, Reply, narrowed, without_fetch
from .preselection import annotated
from .providers import loaded_namespaces, responses_native_tools, to_responses_tool
from .results import TokenUsage
from .state import TaskState, tool_name

LOADED_NOTE = "{name} is loaded: it is in your tools now."  # the loop's emulation of deferral says so
_FIRST_CONTENT = ("response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta")
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")
_PARSED_ONLY = ("parsed_arguments", "parsed")  # fields the SDK's stream helper adds, which the API does not take
_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


# ------------------------------------------------------------------------------------ request shaping


def _given(value: Any) -> bool:
    return value is not None and not isinstance(value, openai.Omit | openai.NotGiven)


def prepare_responses(
    state: TaskState, params: Mapping[str, Any], *, session: TaskSession | None = None, hosted: bool = False
) -> tuple[dict[str, Any], ComposedPrompt]:
    """Responses API request parameters with the composed ``instructions`` and tools merged in (under
    ``state.native == "provider"``, the native deferral layout; ``hosted`` picks OpenAI's own search)."""
    out = dict(params)
    session = session if session is not None else state.session
    if state.mode.config.preselect is not None and _given(out.get("input")):
        given = out["input"]
        items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given)
        out["input"] = annotated(state, session, items, block_type="input_text")
    prompt = state.prompt(session)
    caller = [str(out["instructions"])] if _given(out.get("instructions")) else []
    instructions = "\n\n".join(part for part in (prompt.system_stable, *caller, prompt.system_recent) if part)
    out.pop("instructions", None)
    if instructions:
        out["instructions"] = instructions
    caller_tools = list(out.pop("tools")) if _given(out.get("tools")) else []
    out.pop("tools", None)
    composed = state.composed_tools(prompt, (tool_name(t) for t in caller_tools))
    if state.native == "provider":
        mine = responses_native_tools(composed, prompt.deferred, state.composer, hosted=hosted)
    else:
        mine = [to_responses_tool(t) for t in composed]
    tools = [*caller_tools, *mine]
    if tools:
        out["tools"] = tools
    return out, prompt


def declared_deferred(tools: Sequence[Any]) -> list[str]:
    """The deferred functions a request's ``tools`` declare inside namespaces, in order."""
    names: list[str] = []
    for tool in tools:
        if isinstance(tool, Mapping) and tool.get("type") == "namespace":
            inner = tool.get("tools") or []
            names += [str(f.get("name")) for f in inner if isinstance(f, Mapping) and f.get("defer_loading")]
    return names


def search_output(call_id: str, loaded: Sequence[str], deferred: Sequence[str], state: TaskState) -> dict[str, Any]:
    """The ``tool_search_output`` item loading ``loaded`` (those of the request's ``deferred`` tools), in full."""
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": loaded_namespaces(loaded, deferred, state.composer),
    }


# ------------------------------------------------------------------------------------ reading replies


def usage_of_response(response: Any) -> TokenUsage:
    """A Responses usage: cached input from ``input_tokens_details.cached_tokens``, cache writes from
    ``cache_write_tokens``; ``input_tokens`` is the rest of the input."""
    usage = getattr(response, "usage", None)
    total = int(getattr(usage, "input_tokens", 0) or 0)
    details = getattr(usage, "input_tokens_details", None)
    cached = min(int(getattr(details, "cached_tokens", 0) or 0), total)
    written = min(int(getattr(details, "cache_write_tokens", 0) or 0), total - cached)
    return TokenUsage(
        input_tokens=total - cached - written,
        output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        cache_creation_input_tokens=written,
        cache_read_input_tokens=cached,
    )


def _arguments(call_id: str, name: str, raw: Any) -> Call:
    """A call from its raw arguments (a JSON string, or an object): a problem when they are not a JSON object."""
    arguments = raw
    if isinstance(raw, str):
        arguments, problem = decode_json(raw) if raw.strip() else ({}, None)
        if problem is not None:
            return Call(call_id, name, {}, problem=f"the arguments of the {name} call are {problem}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        kind = _JSON_TYPES.get(type(arguments), "not an object")
        return Call(call_id, name, {}, problem=f"the arguments of the {name} call are {kind}, not a JSON object")
    return Call(call_id, name, arguments)


def _item(item: Any) -> dict[str, Any]:
    """An output item as an input item of the next request (API field names, nothing the SDK added)."""
    data = item.to_dict(mode="json", exclude_none=True)
    return {key: value for key, value in data.items() if key not in _PARSED_ONLY}


def _loaded(item: Any) -> list[str]:
    """The functions a hosted ``tool_search_output`` item loaded (top-level or inside namespaces)."""
    names: list[str] = []
    for tool in getattr(item, "tools", None) or []:
        if getattr(tool, "type", None) == "namespace":
            names += [str(getattr(f, "name", "")) for f in getattr(tool, "tools", None) or []]
        elif getattr(tool, "type", None) == "function":
            names.append(str(getattr(tool, "name", "")))
    return names


class ResponsesAdapter:
    """The loop's requests and replies in the Responses API. One per run: it keeps, from a request to the answers
    of its response, the state the request was composed on (to spell loaded definitions), the output items after
    the first (the loop appends one message per response; the rest go before the answers) and which calls were
    tool searches."""

    def __init__(self, *, hosted: bool = False) -> None:
        self.hosted = hosted
        self._state: TaskState | None = None
        self._session: TaskSession | None = None
        self._deferred: list[str] = []
        self._rest: list[dict[str, Any]] = []
        self._kinds: dict[str, str] = {}  # call id -> "search" or "custom" (a function call otherwise)

    def loop_request(
        self, state: TaskState, params: Mapping[str, Any], *, model: str, max_tokens: int, session: TaskSession
    ) -> tuple[dict[str, Any], ComposedPrompt]:
        request = {key: value for key, value in params.items() if key != "messages"}
        request.update(model=model, max_output_tokens=max_tokens, input=list(params.get("messages") or []))
        out, prompt = prepare_responses(state, request, session=session, hosted=self.hosted)
        self._state, self._session = state, session
        self._deferred = declared_deferred(out.get("tools") or [])
        return out, prompt

    def forced(self, request: dict[str, Any], tool: str | None) -> dict[str, Any] | None:
        if tool is None:
            return without_fetch(request, "none")
        return narrowed(request, tool, {"type": "function", "name": tool})

    def answer_only(self, request: dict[str, Any]) -> dict[str, Any]:
        return {**request, "tool_choice": "none"}

    def read(self, response: Any) -> Reply:
        resp = cast(Response, response)
        items = [_item(item) for item in resp.output or []]
        content: list[str | Call] = []
        loads: list[str] = []
        for item in resp.output or []:
            if item.type == "message":
                parts = [getattr(p, "text", None) or getattr(p, "refusal", None) for p in item.content]
                content += [part for part in parts if part]
            elif item.type == "function_call":
                content.append(_arguments(item.call_id, item.name, item.arguments))
            elif item.type == "custom_tool_call":
                self._kinds[item.call_id] = "custom"
                problem = "custom tool calls are not supported here"
                content.append(Call(item.call_id, item.name, {}, problem=problem))
            elif item.type == "tool_search_call" and item.execution == "client":
                call_id = item.call_id or item.id
                self._kinds[call_id] = "search"
                content.append(_arguments(call_id, TOOL_SEARCH_NAME, item.arguments))
            elif item.type == "tool_search_output" and item.execution == "server":
                loads += _loaded(item)
        if loads and self._session is not None and self._state is not None:  # OpenAI's search loaded these
            self._session.discover(n for n in loads if n in set(self._deferred))
        calls = any(isinstance(part, Call) for part in content)
        message, self._rest = self._message(items, content, calls)
        return Reply(message, tuple(content), _stop_reason(resp), usage_of_response(resp))

    @staticmethod
    def _message(
        items: list[dict[str, Any]], content: Sequence[str | Call], calls: bool
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The item the loop appends for a response, and the rest (appended before the answers). Every item goes
        back when there are calls to answer; a final answer keeps its message (reasoning is not needed to go on)."""
        if calls:
            return items[0], items[1:]
        messages = [item for item in items if item.get("type") == "message"]
        if len(items) == 1 or len(messages) == 1:
            return (items if len(items) == 1 else messages)[0], []
        text = "".join(part for part in content if isinstance(part, str))
        return {"role": "assistant", "content": text}, []

    def answers(self, native: Sequence[Answer], text: Sequence[str]) -> list[dict[str, Any]]:
        """The rest of the response's items, then an output item per native call, in order (a tool search's is a
        ``tool_search_output``), then one ``tool_search_call`` / ``tool_search_output`` pair loading what the other
        answers reference, then one user message with the text-style results."""
        out, self._rest = self._rest, []
        loads: list[str] = []
        for answer in native:
            kind = self._kinds.pop(answer.call_id, "function")
            body = "\n\n".join(part or "(no output)" for part in answer.texts)
            if kind == "search":
                out += self._searched(answer, body)
            elif kind == "custom":
                out.append({"type": "custom_tool_call_output", "call_id": answer.call_id, "output": body})
            else:
                if answer.references and self._emulated:
                    body = "\n\n".join([body, *(LOADED_NOTE.format(name=n) for n in answer.references)])
                elif answer.references:
                    loads += answer.references
                out.append({"type": "function_call_output", "call_id": answer.call_id, "output": body})
        if loads and self._state is not None:
            call_id = f"load_{native[0].call_id}"
            query = {"query": ", ".join(dict.fromkeys(loads))}
            out.append({"type": "tool_search_call", "call_id": call_id, "execution": "client", "status": "completed",
                        "arguments": query})  # fmt: skip
            out.append(search_output(call_id, list(dict.fromkeys(loads)), self._deferred, self._state))
        if text:
            out.append({"role": "user", "content": "\n\n".join(text)})
        return out

    @property
    def _emulated(self) -> bool:
        return self._state is None or self._state.native != "provider"

    def _searched(self, answer: Answer, body: str) -> list[dict[str, Any]]:
        """A client tool search's answer: what it loads, and its text when it loads nothing (a miss, an error)."""
        assert self._state is not None  # set by the request this answers
        out = [search_output(answer.call_id, answer.references, self._deferred, self._state)]
        if not answer.references:
            out.append({"role": "developer", "content": f"{TOOL_SEARCH_NAME}: {body}"})
        return out

    def user_message(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    def send(self, client: Any, request: dict[str, Any], *, stream: bool, clock: Clock) -> Any:
        if not stream:
            return client.responses.create(**request)
        final: Any = None
        with client.responses.stream(**request) as events:
            for event in events:
                final = _saw(event, clock) or final
        return _final(final)

    async def send_async(self, client: Any, request: dict[str, Any], *, stream: bool, clock: Clock) -> Any:
        if not stream:
            return await client.responses.create(**request)
        final: Any = None
        async with client.responses.stream(**request) as events:
            async for event in events:
                final = _saw(event, clock) or final
        return _final(final)


def _saw(event: Any, clock: Clock) -> Any:
    """Time the first content of a stream; the response a terminal event carries, else None."""
    kind = getattr(event, "type", "")
    if kind in _FIRST_CONTENT or (kind == "response.output_item.added" and event.item.type != "reasoning"):
        clock.first_content()
    return event.response if kind in _TERMINAL else None


def _final(response: Any) -> Any:
    if response is None:
        raise ValueError("the stream ended before the response was complete")
    return response


def _stop_reason(response: Response) -> str | None:
    """``completed``, or why a response is incomplete (``max_output_tokens``, ``content_filter``), or its status."""
    details = response.incomplete_details
    if response.status == "incomplete" and details is not None and details.reason:
        return details.reason
    return response.status
