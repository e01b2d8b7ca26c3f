"""OpenAI adapter: a wrapped ``openai`` client that composes each request, and the tool loop over it.

For the OpenAI API and every server that copies its wire format (llama.cpp's server, vLLM, Ollama, LM Studio,
LiteLLM, OpenRouter). The loop's decisions live in ``prompt_composer.agent.engine`` (shared with the Anthropic
adapter); this module spells them in Chat Completions and holds the wrapped clients; the Responses API's spelling
is ``prompt_composer.agent.responses``. Only these two import the ``openai`` SDK (the ``openai``
extra)::

    client = wrap(openai.OpenAI(), mode="code", task_id="t-1")
    reply = client.chat.completions.create(model=..., messages=[{"role": "user", "content": "..."}])
    result = client.run("Fix the failing test", model=..., executors=workspace_executors("."))

    client = wrap(openai.OpenAI(), mode="code", task_id="t-2", api="responses", native=True)
    result = client.run("Fix the failing test", model=..., executors=workspace_executors("."))

``api`` ("chat_completions", the default, or "responses") is chosen once per wrapped client, as the OpenAI Agents
SDK chooses it per model: a conversation's items, and under ``native=True`` its declared tools, belong to one API.

``chat.completions.create`` (``stream=True`` too), ``chat.completions.stream`` / ``parse`` and
``responses.create`` / ``stream`` / ``parse`` get the composed system prompt and tools; every other attribute is
the real client's, and responses are the SDK's own objects. (The SDK's ``stream`` / ``parse`` helpers accept
only ``strict`` function tools, which composed tools are not: use ``create(stream=True)``.)

Request layout. OpenAI-compatible caches are automatic prefix caches (OpenAI: prompts of 1,024+ tokens, matched
in 128-token steps; llama.cpp: the slot's KV cache); there are no breakpoints to place, so the only lever is a
prefix that does not change:

- Chat Completions: one leading system message (``developer`` when the caller's own leading message is a developer
  message): the composed stable part, then the text of the caller's leading system/developer messages, then the
  composed part that changes within a task (text-style modes only), joined by blank lines. One message, not
  several: many chat templates accept a system message only in first place. ``tools``: the caller's, unchanged and
  first, then the composed ones as function tools (the caller's wins on a name clash).
- Responses: ``instructions`` built the same way from the caller's ``instructions``; ``tools`` likewise, in the
  Responses format (``{"type": "function", "name", "description", "parameters"}``; under ``native=True`` the
  deferral layout, see :mod:`prompt_composer.agent.responses`).

Over Chat Completions, tool calls come back as ``tool`` messages (an error's text starts with ``Error:``: the API
has no error flag), text-style results as one user message. A call whose ``arguments`` are not a JSON object gets
an error result and the loop goes on. Usage: ``prompt_tokens_details.cached_tokens`` (or llama.cpp's
``timings.cache_n``) is read as cached input (see :class:`~prompt_composer.agent.results.TokenUsage`). Chat
Completions has no tool deferral: ``native=True`` needs ``api="responses"``; ``native="emulate"`` works (a loaded
tool's answer says so in a line of its own).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Self, TypeVar, Unpack, cast

import openai
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion

from ..core.prompt import ComposedPrompt
from ..core.session import TaskSession
from ..shared.jsontext import decode_json
from ..shared.net import is_loopback_url
from .adapter import Adapter, Answer, Call, Clock, Reply, narrowed, without_fetch
from .clients import AsyncComposedClientBase, ComposedClientBase, ComposedNamespace, SyncComposedClient
from .preselection import annotated
from .providers import Sdk, to_openai_tool
from .responses import LOADED_NOTE, ResponsesAdapter, prepare_responses, search_output
from .results import TokenUsage
from .state import TaskState, WrapOptions, tool_name

Api = Literal["chat_completions", "responses"]
APIS: tuple[Api, ...] = ("chat_completions", "responses")

_ClientT = TypeVar("_ClientT", openai.OpenAI, openai.AsyncOpenAI)
_SYSTEM_ROLES = ("system", "developer")


# ------------------------------------------------------------------------------------ request shaping


def _given(value: Any) -> bool:
    return value is not None and not isinstance(value, openai.Omit | openai.NotGiven)


def _text_of(content: Any) -> str:
    """A message's content as text: a string, or the text of its text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _instructions(prompt: ComposedPrompt, caller: Sequence[str]) -> str:
    parts = [prompt.system_stable, *caller, prompt.system_recent]
    return "\n\n".join(part for part in parts if part)


def prepare_chat(
    state: TaskState, params: Mapping[str, Any], *, session: TaskSession | None = None
) -> tuple[dict[str, Any], ComposedPrompt]:
    """Chat Completions request parameters with the composed system message and tools merged in."""
    out = dict(params)
    session = session if session is not None else state.session
    # Preselection first: what it loads is in this request's tools.
    messages = annotated(state, session, list(out.get("messages") or []))
    prompt = state.prompt(session)
    leading = 0
    while leading < len(messages) and isinstance(messages[leading], Mapping):
        if messages[leading].get("role") not in _SYSTEM_ROLES:
            break
        leading += 1
    role = "developer" if leading and messages[0].get("role") == "developer" else "system"
    system = _instructions(prompt, [_text_of(m.get("content")) for m in messages[:leading]])
    out["messages"] = ([{"role": role, "content": system}] if system else []) + messages[leading:]

    caller_tools = list(out.pop("tools")) if _given(out.get("tools")) else []
    out.pop("tools", None)
    composed = state.composed_tools(prompt, (tool_name(t) for t in caller_tools))
    tools = [*caller_tools, *(to_openai_tool(t) for t in composed)]
    if tools:
        out["tools"] = tools
    return out, prompt


# ------------------------------------------------------------------------------------ reading replies


def usage_of(response: Any) -> TokenUsage:
    """A Chat Completions response's usage (:meth:`~.results.TokenUsage.of_chat_completion`)."""
    return TokenUsage.of_chat_completion(response)


def _call(tool_call: Any) -> Call:
    name = str(tool_call.function.name or "")
    raw = tool_call.function.arguments or ""
    arguments, problem = decode_json(raw) if raw.strip() else ({}, None)
    if problem is not None:
        return Call(tool_call.id, name, {}, problem=f"the arguments of the {name} call are {problem}")
    if arguments is None:  # "null": no arguments
        arguments = {}
    if not isinstance(arguments, dict):
        kind = _JSON_TYPES.get(type(arguments), "not an object")
        problem = f"the arguments of the {name} call are {kind}, not a JSON object"
        return Call(tool_call.id, name, {}, problem=problem)
    return Call(tool_call.id, name, arguments)


def _unsupported(tool_call: Any) -> Call:
    name = str(getattr(getattr(tool_call, "custom", None), "name", "") or "")
    return Call(tool_call.id, name, {}, problem=f"{tool_call.type} tool calls are not supported here")


_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


class ChatAdapter:
    """The loop's requests and replies in Chat Completions."""

    def loop_request(
        self, state: TaskState, params: Mapping[str, Any], *, model: str, max_tokens: int, session: TaskSession
    ) -> tuple[dict[str, Any], ComposedPrompt]:
        # max_completion_tokens: OpenAI's name (reasoning models refuse max_tokens); llama.cpp and vLLM honour it.
        request = {**params, "model": model, "max_completion_tokens": max_tokens}
        return prepare_chat(state, request, session=session)

    def forced(self, request: dict[str, Any], tool: str | None) -> dict[str, Any] | None:
        if tool is None:
            return without_fetch(request, "none")
        return narrowed(request, tool, {"type": "function", "function": {"name": tool}})

    def answer_only(self, request: dict[str, Any]) -> dict[str, Any]:
        return {**request, "tool_choice": "none"}

    def read(self, response: Any) -> Reply:
        completion = cast(ChatCompletion, response)
        if not completion.choices:
            raise ValueError("the response holds no choice")
        choice = completion.choices[0]
        text = choice.message.content or ""
        tool_calls = list(choice.message.tool_calls or [])
        # Every tool call in the assistant message must be answered before the next request, whatever the
        # finish_reason or the call's type: the API refuses a conversation with an unanswered call.
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if tool_calls:
            message["tool_calls"] = [tc.model_dump(mode="json", exclude_none=True) for tc in tool_calls]
        else:
            message["content"] = text
        content: list[str | Call] = [text] if text else []
        content += [_call(tc) if tc.type == "function" else _unsupported(tc) for tc in tool_calls]
        return Reply(message, tuple(content), choice.finish_reason, usage_of(completion))

    def answers(self, native: Sequence[Answer], text: Sequence[str]) -> list[dict[str, Any]]:
        """A ``tool`` message per native call, in order; then one user message with the text-style results."""
        # Chat Completions cannot defer: references are only the loop's emulation of it, said in a line each.
        messages: list[dict[str, Any]] = []
        for answer in native:
            notes = [LOADED_NOTE.format(name=name) for name in answer.references]
            parts = [*(p or "(no output)" for p in answer.texts), *notes]
            messages.append({"role": "tool", "tool_call_id": answer.call_id, "content": "\n\n".join(parts)})
        if text:
            messages.append({"role": "user", "content": "\n\n".join(text)})
        return messages

    def user_message(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    def send(self, client: Any, request: dict[str, Any], *, stream: bool, clock: Clock) -> Any:
        if not stream:
            return client.chat.completions.create(**request)
        state = _Accumulator()
        with client.chat.completions.create(**_streaming(request)) as chunks:
            for chunk in chunks:
                state.add(chunk, clock)
        return state.final()

    async def send_async(self, client: Any, request: dict[str, Any], *, stream: bool, clock: Clock) -> Any:
        if not stream:
            return await client.chat.completions.create(**request)
        state = _Accumulator()
        async with await client.chat.completions.create(**_streaming(request)) as chunks:
            async for chunk in chunks:
                state.add(chunk, clock)
        return state.final()


class _Accumulator:
    """A streamed completion put back together by the SDK's own accumulator, plus what it drops: llama.cpp's
    ``timings`` (its cache counts), which arrive on the last chunks."""

    def __init__(self) -> None:
        self.state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        self.chunks = 0
        self.timings: Any = None

    def add(self, chunk: Any, clock: Clock) -> None:
        self.chunks += 1
        for event in self.state.handle_chunk(chunk):
            if event.type in ("content.delta", "refusal.delta", "tool_calls.function.arguments.delta"):
                clock.first_content()
        self.timings = (chunk.model_extra or {}).get("timings", self.timings)

    def final(self) -> ChatCompletion:
        if not self.chunks:
            raise ValueError("the stream ended before its first chunk")
        # The snapshot, not get_final_completion(): that raises on finish_reason "length", which the loop reports
        # as a stop reason like the non-streamed path does.
        completion = self.state.current_completion_snapshot
        if self.timings is not None and "timings" not in (completion.model_extra or {}):
            completion.timings = self.timings  # type: ignore[attr-defined]  # an allowed extra: usage_of reads it
        return completion


def _streaming(request: Mapping[str, Any]) -> dict[str, Any]:
    """A streamed request that ends with a usage chunk (the loop counts tokens)."""
    options = dict(request.get("stream_options") or {})
    options.setdefault("include_usage", True)
    return {**request, "stream": True, "stream_options": options}


# -------------------------------------------------------------------------------------------- wrappers


class ComposedChat:
    """``client.chat`` of a composed client: its ``completions`` are composed; the rest is the SDK's."""

    def __init__(self, inner: Any, state: TaskState) -> None:
        self._inner = inner
        self.completions = ComposedNamespace(inner.completions, state, prepare_chat)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _OpenAIClient(ComposedClientBase):
    _adapter = ChatAdapter()
    _api: Api = "chat_completions"
    _hosted_search = False
    chat: ComposedChat
    responses: ComposedNamespace

    def __init__(self, client: Any, **options: Unpack[WrapOptions]) -> None:
        api = options.pop("api", "chat_completions")
        hosted = options.pop("hosted_search", False)
        if api not in APIS:
            raise ValueError(f"api is 'chat_completions' or 'responses', not {api!r}")
        if options.get("native") is True and api != "responses":
            raise ValueError(
                "native=True needs tool deferral, which only the Responses API has: wrap(..., api='responses', "
                "native=True); native='emulate' works over Chat Completions"
            )
        if hosted and (api != "responses" or options.get("native") is not True):
            raise ValueError("hosted_search=True needs api='responses' and native=True")
        self._api, self._hosted_search = api, bool(hosted)
        super().__init__(client, **options)

    @property
    def api(self) -> Api:
        """The API ``run()`` speaks: ``chat_completions`` or ``responses``."""
        return self._api

    def _bind(self) -> None:
        self.chat = ComposedChat(self._client.chat, self._state)
        prepare = functools.partial(prepare_responses, hosted=self._hosted_search)
        self.responses = ComposedNamespace(self._client.responses, self._state, prepare)

    def _run_adapter(self) -> Adapter:
        return ResponsesAdapter(hosted=self._hosted_search) if self._api == "responses" else self._adapter

    def _inherit(self, source: Self) -> None:
        self._api, self._hosted_search = source._api, source._hosted_search

    def tool_search_output(self, call: Mapping[str, Any] | Any) -> dict[str, Any]:
        """Answer a ``tool_search_call`` item (``"execution": "client"``) of a native Responses conversation you run
        yourself over ``responses.create``: the ``tool_search_output`` item to send back, with the full definitions
        of the deferred tools the search found (of this mode only; they join the task, as in ``run()``)."""
        keys = ("call_id", "id", "arguments")
        fields = call if isinstance(call, Mapping) else {key: getattr(call, key, None) for key in keys}
        arguments = fields.get("arguments")
        if isinstance(arguments, str):
            arguments = decode_json(arguments)[0]
        found = self.answer_tool_search(arguments if isinstance(arguments, Mapping) else {})
        state = self._state.bound()
        prompt = state.prompt()
        declared = [str(t["name"]) for t in state.composed_tools(prompt, ()) if t["name"] in set(prompt.deferred)]
        names = found.result.names if found.result is not None else ()
        loaded = [n for n in dict.fromkeys(names) if n in set(declared)]
        return search_output(str(fields.get("call_id") or fields.get("id")), loaded, declared, state)


class ComposedOpenAI(_OpenAIClient, SyncComposedClient):
    """An ``openai.OpenAI`` whose ``chat.completions`` and ``responses`` are composed for one task and mode."""


class AsyncComposedOpenAI(_OpenAIClient, AsyncComposedClientBase):
    """An ``openai.AsyncOpenAI`` whose ``chat.completions`` and ``responses`` are composed for one task and mode."""


def wrap(client: _ClientT, **options: Unpack[WrapOptions]) -> Any:
    """Wrap ``openai.OpenAI`` (→ :class:`ComposedOpenAI`) or ``AsyncOpenAI`` (→ :class:`AsyncComposedOpenAI`) for one
    task and mode: ``wrap(client, mode="code", task_id="t-1", ...)``; the options are
    :class:`~prompt_composer.agent.state.WrapOptions` (``api="responses"`` runs the loop over the Responses API)."""
    if isinstance(client, openai.AsyncOpenAI):
        return AsyncComposedOpenAI(client, **options)
    if isinstance(client, openai.OpenAI):
        return ComposedOpenAI(client, **options)
    raise TypeError(f"wrap() takes an openai.OpenAI or openai.AsyncOpenAI, not {type(client).__name__}")


def sdk_client(base_url: str | None, *, timeout: float | None = None) -> Sdk | str:
    """An ``openai.OpenAI`` client (the key from OPENAI_API_KEY; a placeholder for a server on this machine), or why
    there is none."""
    options: dict[str, Any] = {"base_url": base_url} if timeout is None else {"base_url": base_url, "timeout": timeout}
    local = is_loopback_url(base_url or os.environ.get("OPENAI_BASE_URL")) and not os.environ.get("OPENAI_API_KEY")
    try:
        return Sdk(openai.OpenAI(api_key="local" if local else None, **options), openai.APIError)
    except openai.OpenAIError:  # the only thing the constructor checks is the key
        return "no API key: set OPENAI_API_KEY"
