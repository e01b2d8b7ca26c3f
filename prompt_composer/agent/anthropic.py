"""Anthropic adapter: a wrapped ``anthropic`` client that composes each request, and the tool loop over it.

The loop's decisions live in ``prompt_composer.agent.engine`` (shared with the OpenAI adapter); this module only
spells them in the Messages API, and is the only one that imports the ``anthropic`` SDK. Wrap a client,
instructor-style::

    client = wrap(anthropic.Anthropic(), composer=Composer(load_registry()), mode="code", task_id="t-1")
    reply = client.messages.create(model=..., max_tokens=1024, messages=[{"role": "user", "content": "..."}])
    result = client.run("Fix the failing test", model=..., executors=workspace_executors("."))

``messages.create`` / ``stream`` / ``parse`` / ``count_tokens`` get the composed system prompt and tools;
every other attribute (``models``, ``beta``, ``messages.batches``, ``close`` ...) is the real client's.

Request layout (Anthropic caches the prefix tools → system → messages, so the most stable parts go first):

- ``tools``: the caller's tools, unchanged and first (they are the same in every mode and task), then the
  composed tools of the mode (a composed tool whose name the caller also defines is dropped: the caller's wins).
- ``system``: a list of text blocks: the composed stable part, then the caller's own ``system`` (a string
  becomes one text block; a list of blocks comes through as is), then the composed part that changes within a
  task (text-style modes only).
- ``cache_control`` breakpoints (``{"type": "ephemeral"}``), at most 4 counting the caller's own, in this
  priority: the newest message's last block; the stable system block; the last tool. The system and tool
  breakpoints are set only when that part cannot change within the task: always under ``task_start`` and
  ``inline``, under ``every_turn`` only when the mode's ``recent_size`` is 0.

Breakpoints in a discovery mode: the system block (its text never changes; its cached prefix is rewritten only
when a search adds tools), and on the tool list the last *permanent* tool, the end of the part that never changes.

What the loop decides (promotion policies, text-style calls, discovery, ``call_tool``, refusals) is the same for
every provider: see ``prompt_composer.agent.engine``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, Unpack, cast

import anthropic
from anthropic.types import Message

from ..core.prompt import ComposedPrompt
from ..core.session import TaskSession
from ..shared.net import is_loopback_url
from .adapter import Answer, Call, Clock, Reply, narrowed, without_fetch
from .clients import AsyncComposedClientBase, ComposedClientBase, ComposedNamespace, SyncComposedClient
from .preselection import annotated
from .providers import Sdk, anthropic_native_tools
from .results import TokenUsage
from .state import TaskState, WrapOptions, tool_name

MAX_BREAKPOINTS = 4  # the Messages API allows at most four cache_control breakpoints per request
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

_ClientT = TypeVar("_ClientT", anthropic.Anthropic, anthropic.AsyncAnthropic)


# ------------------------------------------------------------------------------------ request shaping


def _count_breakpoints(value: Any) -> int:
    """``cache_control`` markers already in a (nested) request part."""
    if isinstance(value, Mapping):
        own = 1 if value.get("cache_control") else 0
        return own + sum(_count_breakpoints(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list | tuple):
        return sum(_count_breakpoints(v) for v in value)
    return 0


def _system_blocks(system: Any) -> list[Any]:
    if system is None or isinstance(system, anthropic.Omit | anthropic.NotGiven):
        return []
    if isinstance(system, str):
        return [{"type": "text", "text": system}] if system else []
    return list(system)


def _with_breakpoint(message: Any) -> Any | None:
    """A copy of ``message`` with a breakpoint on its last content block, or None when it cannot take one."""
    if not isinstance(message, Mapping):
        return None
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return None
        return {**message, "content": [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]}
    if isinstance(content, list | tuple) and content and isinstance(content[-1], Mapping):
        last = {**content[-1], "cache_control": dict(EPHEMERAL)}
        return {**message, "content": [*content[:-1], last]}
    return None


def prepare(
    state: TaskState, params: Mapping[str, Any], *, breakpoints: bool = True, session: TaskSession | None = None
) -> tuple[dict[str, Any], ComposedPrompt]:
    """The Messages API request parameters with the composed system prompt and tools merged in.

    The tool loop passes its own ``session``: it must compose from the session it records into, even if the store
    has meanwhile expired or evicted that task."""
    out = dict(params)
    session = session if session is not None else state.session
    # Preselection first: what it loads is in this request's tools.
    messages = annotated(state, session, list(out.get("messages") or []))
    prompt = state.prompt(session)
    stable = state.stable
    caller_system = _system_blocks(out.pop("system", None))
    raw_tools = out.pop("tools", None)
    given = raw_tools is not None and not isinstance(raw_tools, anthropic.Omit | anthropic.NotGiven)
    caller_tools = list(raw_tools) if given else []
    budget = MAX_BREAKPOINTS - _count_breakpoints([caller_system, caller_tools, messages]) if breakpoints else 0

    if budget > 0 and messages:
        marked = _with_breakpoint(messages[-1])
        if marked is not None and not _count_breakpoints(messages[-1]):
            messages[-1] = marked
            budget -= 1
    out["messages"] = messages

    system: list[Any] = []
    if prompt.system_stable:
        block: dict[str, Any] = {"type": "text", "text": prompt.system_stable}
        if stable and budget > 0:
            block["cache_control"] = dict(EPHEMERAL)
            budget -= 1
        system.append(block)
    system += caller_system
    if prompt.system_recent:
        system.append({"type": "text", "text": prompt.system_recent})
    if system:
        out["system"] = system

    composed = state.composed_tools(prompt, (tool_name(t) for t in caller_tools))
    if state.native == "provider":  # the provider keeps these out of the prompt until a tool_reference loads one
        composed = anthropic_native_tools(composed, prompt.deferred)
    elif state.native == "emulate":  # a server that cannot defer: the references it would read become notes
        out["messages"] = [_emulated(m) for m in out["messages"]]
    if state.native == "provider":  # the breakpoint goes on the last eager tool, before the deferred ones
        deferred = set(prompt.deferred)
        fixed = [i for i, t in enumerate(composed) if t["name"] not in deferred]
        mark = fixed[-1] if fixed else None
    elif state.mode.config.discovery:  # its list only grows after the permanent tools: the breakpoint is on the last
        permanent = set(state.mode.permanent)
        fixed = [i for i, t in enumerate(composed) if t["name"] in permanent]
        mark = fixed[-1] if fixed else None
    elif prompt.tiered or prompt.loaded:  # loaded tools are appended at the end: the breakpoint is on the last before
        appended = prompt.appended()  # (and the shortlist's stubs after them)
        fixed = [i for i, t in enumerate(composed) if t["name"] not in appended]
        mark = fixed[-1] if fixed else None
    else:
        mark = len(composed) - 1 if composed else None
    if mark is not None and stable and budget > 0:
        composed[mark]["cache_control"] = dict(EPHEMERAL)
    tools = [*caller_tools, *composed]
    if tools:
        out["tools"] = tools
    return out, prompt


def _emulated(message: Any) -> Any:
    """``message`` with each ``tool_reference`` block of its tool results written as a text note (what the loop's
    emulation of deferral sends to a server that does not read references; the loaded tools are in ``tools``)."""
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list) or not any(_has_reference(b) for b in content):
        return message
    blocks = []
    for block in content:
        if _has_reference(block):
            inner = [
                {"type": "text", "text": f"{part['tool_name']} is loaded: it is in your tools now."}
                if isinstance(part, Mapping) and part.get("type") == "tool_reference"
                else part
                for part in block["content"]
            ]
            block = {**block, "content": inner}
        blocks.append(block)
    return {**message, "content": blocks}


def _has_reference(block: Any) -> bool:
    if (
        not isinstance(block, Mapping)
        or block.get("type") != "tool_result"
        or not isinstance(block.get("content"), list)
    ):
        return False
    return any(isinstance(p, Mapping) and p.get("type") == "tool_reference" for p in block["content"])


class MessagesAdapter:
    """The loop's requests and replies in the Messages API."""

    def loop_request(
        self, state: TaskState, params: Mapping[str, Any], *, model: str, max_tokens: int, session: TaskSession
    ) -> tuple[dict[str, Any], ComposedPrompt]:
        return prepare(state, {**params, "model": model, "max_tokens": max_tokens}, session=session)

    def forced(self, request: dict[str, Any], tool: str | None) -> dict[str, Any] | None:
        if tool is None:
            return without_fetch(request, {"type": "none"})
        thinking = request.get("thinking")
        # Extended thinking refuses a forced choice: the narrowed list alone must do.
        thinks = isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")
        return narrowed(request, tool, None if thinks else {"type": "tool", "name": tool})

    def answer_only(self, request: dict[str, Any]) -> dict[str, Any]:
        return {**request, "tool_choice": {"type": "none"}}

    def read(self, response: Any) -> Reply:
        message = cast(Message, response)
        content: list[str | Call] = []
        for block in message.content:
            if block.type == "text":
                content.append(block.text)
            elif block.type == "tool_use" and message.stop_reason == "tool_use":
                tool_input = cast(Mapping[str, Any], block.input) if isinstance(block.input, dict) else {}
                content.append(Call(block.id, block.name, tool_input))
        return Reply(
            message={"role": "assistant", "content": [block.to_dict(mode="json") for block in message.content]},
            content=tuple(content),
            stop_reason=message.stop_reason,
            usage=TokenUsage.of(message.usage),
        )

    def answers(self, native: Sequence[Answer], text: Sequence[str]) -> list[dict[str, Any]]:
        """One user message: a tool_result block per native call (first, as the API wants them), then a text
        block per text-style call."""
        content: list[dict[str, Any]] = []
        for answer in native:
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": answer.call_id,
                "content": [
                    *({"type": "text", "text": part or "(no output)"} for part in answer.texts),
                    *({"type": "tool_reference", "tool_name": name} for name in answer.references),
                ],
            }
            if answer.is_error:
                result["is_error"] = True
            content.append(result)
        content += [{"type": "text", "text": part} for part in text]
        return [{"role": "user", "content": content}]

    def user_message(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "text", "text": text}]}

    def send(self, client: Any, request: dict[str, Any], *, stream: bool, clock: Clock) -> Any:
        if not stream:
            return client.messages.create(**request)
        with client.messages.stream(**request) as events:
            for event in events:
                _saw(event, clock)
            return events.get_final_message()

    async def send_async(self, client: Any, request: dict[str, Any], *, stream: bool, clock: Clock) -> Any:
        if not stream:
            return await client.messages.create(**request)
        async with client.messages.stream(**request) as events:
            async for event in events:
                _saw(event, clock)
            return await events.get_final_message()


def _saw(event: Any, clock: Clock) -> None:
    if getattr(event, "type", "") in ("content_block_start", "content_block_delta"):
        clock.first_content()


# -------------------------------------------------------------------------------------------- wrappers


class ComposedMessages(ComposedNamespace):
    """``client.messages`` of a composed client: ``create`` / ``stream`` / ``parse`` / ``count_tokens`` get the
    composed system prompt and tools (``async with client.messages.stream(...)`` for an async client)."""

    def count_tokens(self, **params: Any) -> Any:
        """``Messages.count_tokens`` for the request as it would be sent (no breakpoints added)."""
        return self._inner.count_tokens(**prepare(self._state.bound(), params, breakpoints=False)[0])


class _MessagesClient(ComposedClientBase):
    _adapter = MessagesAdapter()
    messages: ComposedMessages

    def _bind(self) -> None:
        self.messages = ComposedMessages(self._client.messages, self._state, prepare)


class ComposedClient(_MessagesClient, SyncComposedClient):
    """An ``anthropic.Anthropic`` whose ``messages`` are composed for one task and mode. See :func:`wrap`."""


class AsyncComposedClient(_MessagesClient, AsyncComposedClientBase):
    """An ``anthropic.AsyncAnthropic`` whose ``messages`` are composed for one task and mode."""


def wrap(client: _ClientT, **options: Unpack[WrapOptions]) -> Any:
    """Wrap ``anthropic.Anthropic`` (→ :class:`ComposedClient`) or ``AsyncAnthropic`` (→ :class:`AsyncComposedClient`)
    for one task and mode: ``wrap(client, mode="code", task_id="t-1", ...)``; the options are
    :class:`~prompt_composer.agent.state.WrapOptions`."""
    if isinstance(client, anthropic.AsyncAnthropic):
        return AsyncComposedClient(client, **options)
    if isinstance(client, anthropic.Anthropic):
        return ComposedClient(client, **options)
    raise TypeError(f"wrap() takes an anthropic.Anthropic or anthropic.AsyncAnthropic, not {type(client).__name__}")


def sdk_client(base_url: str | None, *, timeout: float | None = None) -> Sdk | str:
    """An ``anthropic.Anthropic`` client (the key from ANTHROPIC_API_KEY; a placeholder for a server on this
    machine), or why there is none."""
    options: dict[str, Any] = {"base_url": base_url} if timeout is None else {"base_url": base_url, "timeout": timeout}
    local = is_loopback_url(base_url or os.environ.get("ANTHROPIC_BASE_URL")) and not os.environ.get(
        "ANTHROPIC_API_KEY"
    )
    try:
        sdk = anthropic.Anthropic(api_key="local" if local else None, **options)
    except anthropic.AnthropicError as exc:
        return str(exc)
    if not sdk.api_key and not sdk.auth_token:
        sdk.close()
        return "no API key: set ANTHROPIC_API_KEY"
    return Sdk(sdk, anthropic.APIError)
