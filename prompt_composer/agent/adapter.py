"""The adapter protocol: how one provider's API spells the loop's requests and replies (:class:`Adapter`), and the
small provider-neutral types it speaks in (:class:`Call`, :class:`Reply`, :class:`Answer`, :class:`Clock`).
An adapter translates and decides nothing; the loop (``prompt_composer.agent.engine``) decides."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..core.builtins import FETCH_TOOL_NAME
from ..core.prompt import ComposedPrompt
from ..core.session import TaskSession
from .results import TokenUsage
from .state import TaskState, tool_name


@dataclass(frozen=True)
class Call:
    """A call to answer: a native tool call or a text-style ``tool_call`` block (``problem`` set when it could not
    be read); ``via`` is ``"call_tool"`` for the inner call a ``call_tool`` call unwrapped to (same id, style)."""

    id: str
    name: str
    input: Mapping[str, Any]
    style: Literal["native", "text"] = "native"
    problem: str | None = None
    via: str | None = None


@dataclass(frozen=True)
class Reply:
    """A provider's response as the loop reads it (built by an adapter)."""

    message: dict[str, Any]  # the assistant message to append to the conversation, in the provider's format
    content: tuple[str | Call, ...]  # its text parts and the native calls the loop must answer, in order
    stop_reason: str | None
    usage: TokenUsage

    @property
    def texts(self) -> list[str]:
        return [part for part in self.content if isinstance(part, str)]


@dataclass(frozen=True)
class Answer:
    """The result of one native call, for an adapter to spell (``texts`` one or more parts, in order)."""

    call_id: str
    name: str
    texts: tuple[str, ...]
    is_error: bool
    references: tuple[str, ...] = ()  # deferred tools the answer loads (native deferral)


class Clock:
    """Times one request: the whole response and, when streaming, the first content (the adapter says when)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.first: float | None = None

    def first_content(self) -> None:
        if self.first is None:
            self.first = time.perf_counter() - self.start

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


class Adapter(Protocol):
    """How one provider's API spells the loop's requests and replies. Pure translation: no decisions."""

    def loop_request(
        self, state: TaskState, params: Mapping[str, Any], *, model: str, max_tokens: int, session: TaskSession
    ) -> tuple[dict[str, Any], ComposedPrompt]:
        """The request of one loop step (``params`` holds the caller's arguments and ``messages``)."""

    def forced(self, request: dict[str, Any], tool: str | None) -> dict[str, Any] | None:
        """``request`` changed to ask for a call of ``tool``: the tool choice names it and, unless the request
        relies on the provider's deferral, the tool list holds it alone (a server that ignores a named choice,
        llama.cpp, can then call nothing else). ``None`` when the request does not offer ``tool``. For ``tool``
        ``None``, the request without the fetch tool (:func:`without_fetch`)."""

    def answer_only(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` changed to ask for an answer in text: the tool choice ``none``, the tool list unchanged (a
        conversation holding tool calls must still offer tools, and the provider's cache keeps the list)."""

    def read(self, response: Any) -> Reply: ...

    def answers(self, native: Sequence[Answer], text: Sequence[str]) -> list[dict[str, Any]]:
        """The message(s) answering one response: native results, then text-style results (labelled texts)."""

    def user_message(self, text: str) -> dict[str, Any]: ...

    def send(self, client: Any, request: dict[str, Any], *, stream: bool, clock: Clock) -> Any:
        """Send one request with the sync SDK client; the SDK's response object."""

    async def send_async(self, client: Any, request: dict[str, Any], *, stream: bool, clock: Clock) -> Any: ...


def narrowed(request: dict[str, Any], tool: str, choice: Any) -> dict[str, Any] | None:
    """The shared rule of :meth:`Adapter.forced` for ``tool``: ``choice`` is the tool choice that names it (``None``:
    the request's own stays). A request whose tools use the provider's deferral keeps its list, since a tool
    reference in the conversation must still resolve. ``None`` when the request does not offer ``tool``."""
    tools = list(request.get("tools") or [])
    matches = [t for t in tools if tool_name(t) == tool]
    if not matches:
        return None
    out = dict(request) if choice is None else {**request, "tool_choice": choice}
    if not _deferring(tools):
        out["tools"] = matches[:1]
    return out


def without_fetch(request: dict[str, Any], none: Any) -> dict[str, Any]:
    """The shared rule of :meth:`Adapter.forced` for no tool: the list without the fetch tool. Where nothing else
    would remain (a conversation with tool calls must still offer tools), or the request uses the provider's
    deferral (whose references must resolve), the list stays and the tool choice is ``none`` (the provider's
    spelling)."""
    tools = list(request.get("tools") or [])
    rest = [t for t in tools if tool_name(t) != FETCH_TOOL_NAME]
    if rest and not _deferring(tools):
        return {**request, "tools": rest}
    return {**request, "tool_choice": none}


def _deferring(tools: Sequence[Any]) -> bool:
    return any(isinstance(t, Mapping) and t.get("defer_loading") for t in tools)
