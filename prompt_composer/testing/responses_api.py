"""The OpenAI Responses API as the test server speaks it: a scripted reply's response body and its server-sent
events, and the documented rules of tool deferral it enforces, so protocol tests fail the way the real API would.

Output items, in order: one ``message`` (the reply's text blocks joined), then one item per other block: a
``tool_use`` block is a ``function_call`` (with the ``namespace`` the request declares it in, as the API names it),
a ``tool_search_call`` block a ``tool_search_call`` item, a ``tool_search_output`` block (hosted search) a
``tool_search_output`` item carrying the request's own declarations of the functions it loads.

The rules (:func:`responses_problem`, a 400 ``invalid_request_error`` that uses up no reply):

- ``defer_loading`` belongs on the functions inside a namespace, not on the namespace; a request with deferred
  functions declares a ``tool_search`` tool; not every tool may be deferred;
- in ``input``, every ``function_call`` / ``custom_tool_call`` / client ``tool_search_call`` is answered by a later
  output item with its ``call_id``; every ``function_call_output`` answers an earlier call, and every
  ``tool_search_output`` an earlier ``tool_search_call`` with its ``call_id``;
- a ``tool_search_output`` loads only functions the request declares with ``defer_loading`` (in the same namespace).

And what a script cannot make a model do (:func:`script_problem`, a 500 naming the script's mistake): call a
deferred function the conversation never loaded, answer with a client ``tool_search_call`` when the request has no
client ``tool_search`` tool, or load through hosted search what the request does not declare deferred.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from typing import Any

from .scripted import ScriptedReply as Reply

_CREATED = 1_700_000_000  # a fixed ``created_at`` keeps responses reproducible
_CALLS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}


# --------------------------------------------------------------------------- what the request declares


def _functions(tools: Any) -> Iterator[tuple[str | None, Mapping[str, Any]]]:
    """(namespace or None, function) for every function a ``tools`` list declares."""
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping):
            continue
        if tool.get("type") == "function":
            yield None, tool
        elif tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                if isinstance(inner, Mapping) and inner.get("type") == "function":
                    yield str(tool.get("name")), inner


def _deferred(tools: Any) -> dict[str, str | None]:
    """Deferred function name -> the namespace it is declared in (None at the top level)."""
    return {str(f.get("name")): space for space, f in _functions(tools) if f.get("defer_loading") is True}


def _search_execution(tools: Any) -> str | None:
    """``client`` or ``server`` for the request's ``tool_search`` tool; None without one."""
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, Mapping) and tool.get("type") == "tool_search":
            return "client" if tool.get("execution") == "client" else "server"
    return None


def _loads(item: Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    """(namespace or None, function name) for every function a ``tool_search_output`` item loads."""
    for space, function in _functions(item.get("tools")):
        yield space, str(function.get("name"))


# --------------------------------------------------------------------------- the rules


def responses_problem(body: Mapping[str, Any]) -> str | None:
    """Why the real Responses API would answer this request with a 400, as far as tools and their items go; None
    when it is fine."""
    return _tools_problem(body.get("tools")) or (
        None if body.get("previous_response_id") else _input_problem(body.get("input"), body.get("tools"))
    )


def _tools_problem(tools: Any) -> str | None:
    listed = [t for t in tools if isinstance(t, Mapping)] if isinstance(tools, list) else []
    for index, tool in enumerate(listed):
        if tool.get("type") == "namespace" and "defer_loading" in tool:
            return f"tools[{index}]: defer_loading applies to the functions inside a namespace, not to the namespace"
    deferred = _deferred(listed)
    if not deferred:
        return None
    if _search_execution(listed) is None:
        return "tools: deferred functions (defer_loading) need a tool_search tool to load them"
    eager = [t for t in listed if t.get("type") not in ("namespace", "tool_search") and not t.get("defer_loading")]
    eager += [f for space, f in _functions(listed) if space is not None and not f.get("defer_loading")]
    if not eager:
        return "tools: at least one tool must not be deferred (defer_loading)"
    return None


def _input_problem(given: Any, tools: Any) -> str | None:
    items = [i for i in given if isinstance(i, Mapping)] if isinstance(given, list) else []
    deferred = _deferred(tools)
    calls: dict[str, str] = {}  # call id -> the output type that answers it
    answered: set[str] = set()
    for index, item in enumerate(items):
        kind, call_id = item.get("type"), str(item.get("call_id"))
        if kind in _CALLS or (kind == "tool_search_call" and item.get("execution") == "client"):
            calls[call_id] = _CALLS.get(str(kind), "tool_search_output")
        elif kind in _CALLS.values() or (kind == "tool_search_output" and item.get("execution", "client") == "client"):
            if calls.get(call_id) != kind:
                what = "tool search call" if kind == "tool_search_output" else "tool call"
                return f"input[{index}]: no {what} found for {kind} with call_id {call_id}"
            answered.add(call_id)
        if kind == "tool_search_output":
            for space, name in _loads(item):
                if name not in deferred or deferred[name] != space:
                    where = f" in namespace {space!r}" if space else ""
                    return (
                        f"input[{index}]: tool_search_output loads {name!r}{where}, which the request's tools do not "
                        "declare there with defer_loading"
                    )
    missing = [call_id for call_id in calls if call_id not in answered]
    if missing:
        return f"input: no output found for the call with call_id {missing[0]}"
    return None


def script_problem(reply: Reply, body: Mapping[str, Any]) -> str | None:
    """Why ``reply`` is not something a model could answer ``body`` with (the script's mistake), or None."""
    tools = body.get("tools")
    deferred = _deferred(tools)
    outputs = [item for item in _input_items(body) if item.get("type") == "tool_search_output"]
    loaded = {name for item in outputs for _, name in _loads(item)}
    for block in reply.content:
        kind = block.get("type")
        if kind == "tool_search_call" and block.get("execution", "client") == "client":
            if _search_execution(tools) != "client":
                return "the reply makes a client tool_search_call, but the request declares no client tool_search tool"
        elif kind == "tool_search_output":
            if _search_execution(tools) != "server":
                return "the reply loads tools through hosted search, but the request declares no hosted tool_search"
            unknown = [name for name in block.get("load", ()) if name not in deferred]
            if unknown:
                return f"hosted search cannot load {unknown[0]!r}: the request does not declare it deferred"
            loaded.update(block.get("load", ()))
        elif kind == "tool_use" and block.get("name") in deferred and block.get("name") not in loaded:
            return f"the reply calls {block.get('name')!r}, a deferred function this conversation never loaded"
    return None


def _input_items(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    given = body.get("input")
    return [i for i in given if isinstance(i, Mapping)] if isinstance(given, list) else []


# --------------------------------------------------------------------------- the response


def _hosted_output(block: Mapping[str, Any], tools: Any) -> list[dict[str, Any]]:
    """The request's own declarations of the functions a hosted search loads, in their namespaces."""
    wanted = set(block.get("load", ()))
    out: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping):
            continue
        if tool.get("type") == "namespace":
            inner = [copy.deepcopy(dict(f)) for f in tool.get("tools") or [] if f.get("name") in wanted]
            if inner:
                out.append({**{k: v for k, v in tool.items() if k != "tools"}, "tools": inner})
        elif tool.get("type") == "function" and tool.get("name") in wanted:
            out.append(copy.deepcopy(dict(tool)))
    return out


def response_output(
    reply: Reply, *, suffix: str, status: str, request: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A Responses ``output``: a ``message`` item when there is text, then an item per other block, in order."""
    request = request or {}
    spaces = {str(f.get("name")): space for space, f in _functions(request.get("tools")) if space is not None}
    output: list[dict[str, Any]] = []
    text = reply.text
    if text is not None:
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        output.append(
            {"type": "message", "id": f"msg_{suffix}", "role": "assistant", "status": status, "content": [part]}
        )
    for number, block in enumerate((b for b in reply.content if b.get("type") != "text"), start=1):
        kind = block.get("type")
        if kind == "tool_use":
            name = str(block["name"])
            item = {"type": "function_call", "id": f"fc_{suffix}_{number}", "call_id": str(block["id"]),
                    "name": name, "arguments": json.dumps(block.get("input", {})), "status": "completed"}  # fmt: skip
            output.append({**item, **({"namespace": spaces[name]} if name in spaces else {})})
        elif kind == "tool_search_call":
            output.append(
                {"type": "tool_search_call", "id": f"tsc_{suffix}_{number}", "call_id": block.get("id"),
                 "execution": block.get("execution", "client"), "arguments": block.get("arguments", {}),
                 "status": "completed"}
            )  # fmt: skip
        elif kind == "tool_search_output":
            output.append(
                {"type": "tool_search_output", "id": f"tso_{suffix}_{number}", "call_id": block.get("id"),
                 "execution": "server", "status": "completed", "tools": _hosted_output(block, request.get("tools"))}
            )  # fmt: skip
    return output


def response_body(
    reply: Reply, *, response_id: str, model: str, request: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The full Responses API body for ``reply``; ``request`` supplies the echoed settings (``tools``,
    ``tool_choice``, ``instructions``, ...). Item ids share ``response_id``'s suffix: ``msg_<suffix>``,
    ``fc_<suffix>_<n>``, ``tsc_<suffix>_<n>``, ``tso_<suffix>_<n>``."""
    request = request or {}
    incomplete = reply.stop_reason == "max_tokens"
    status = "incomplete" if incomplete else "completed"
    suffix = response_id.removeprefix("resp_")
    return {
        "id": response_id,
        "object": "response",
        "created_at": _CREATED,
        "status": status,
        "completed_at": None if incomplete else _CREATED,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": model,
        "output": response_output(reply, suffix=suffix, status=status, request=request),
        "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
        "previous_response_id": request.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "temperature": request.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice") or "auto",
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": reply.usage.responses_usage(),
        "user": None,
        "metadata": request.get("metadata") or {},
    }


# --------------------------------------------------------------------------- streaming


def _pieces(text: str, parts: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _started(item: Mapping[str, Any]) -> dict[str, Any]:
    """An output item as ``response.output_item.added`` shows it: in progress, with no content yet."""
    if item["type"] == "message":
        return {**item, "status": "in_progress", "content": []}
    if item["type"] == "function_call":
        return {**item, "status": "in_progress", "arguments": ""}
    return {**item, "status": "in_progress"}


def _item_events(index: int, item: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The events of one output item, from ``response.output_item.added`` to ``response.output_item.done``."""
    yield {"type": "response.output_item.added", "output_index": index, "item": _started(item)}
    item_id = str(item.get("id"))
    if item["type"] == "message":
        for number, part in enumerate(item["content"]):
            where = {"item_id": item_id, "output_index": index, "content_index": number}
            yield {"type": "response.content_part.added", **where, "part": {**part, "text": ""}}
            for piece in _pieces(part["text"], 2):
                yield {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
            yield {"type": "response.output_text.done", **where, "text": part["text"], "logprobs": []}
            yield {"type": "response.content_part.done", **where, "part": part}
    elif item["type"] == "function_call":
        where = {"item_id": item_id, "output_index": index}
        for piece in _pieces(item["arguments"], 3):
            yield {"type": "response.function_call_arguments.delta", **where, "delta": piece}
        yield {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def response_events(
    reply: Reply, *, response_id: str, model: str, request: Mapping[str, Any] | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs the real API streams for ``reply``: ``response.created`` and
    ``response.in_progress`` (no output yet), each output item's events (text in two deltas, arguments in three),
    then ``response.completed`` (``response.incomplete`` when cut at the token limit) with the whole response."""
    body = response_body(reply, response_id=response_id, model=model, request=request)
    pending = {**body, "status": "in_progress", "completed_at": None, "output": [], "usage": None,
               "incomplete_details": None}  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending},
    ]
    for index, item in enumerate(body["output"]):
        events += _item_events(index, item)
    events.append({"type": f"response.{body['status']}", "response": body})
    for number, event in enumerate(events):
        yield str(event["type"]), {**event, "sequence_number": number}
