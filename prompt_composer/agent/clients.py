"""The composed clients every provider adapter builds on: an SDK namespace whose requests carry the composed
prompt (:class:`ComposedNamespace`), and the client bases whose ``run`` is the tool loop, sync
(:class:`SyncComposedClient`) and async (:class:`AsyncComposedClientBase`). An adapter module subclasses them with
its adapter and its SDK's namespaces; nothing here imports a provider SDK."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, ClassVar, Self, Unpack, cast

from ..core.builtins import TOOL_SEARCH_NAME
from ..core.composer import Composer
from ..core.fetch import FetchResult
from ..core.modes import Mode
from ..core.promotion import Policy
from ..core.prompt import ComposedPrompt
from ..core.session import TaskSession
from ..discovery.tools import SearchToolResult, handle_tool_search
from ..safety.executors import ToolExecutor
from .adapter import Adapter, Clock
from .drivers import drive, drive_async
from .engine import Loop, answer_fetch
from .preselection import pending_rewrite, request_messages, rewrite_pending
from .results import Iteration, LoopResult, PendingCall
from .state import TaskState, WrapOptions

Prepare = Callable[[TaskState, Mapping[str, Any]], tuple[dict[str, Any], ComposedPrompt]]


class ComposedNamespace:
    """An SDK namespace (``messages``, ``chat.completions``, ``responses``) whose ``create`` / ``stream`` /
    ``parse`` send the composed prompt (``prepare`` merges it into the caller's parameters); every other attribute
    is the SDK's. Sync and async alike: the SDK's own return value (a coroutine, for an async client) is returned."""

    def __init__(self, inner: Any, state: TaskState, prepare: Prepare) -> None:
        self._inner = inner
        self._state = state
        self._prepare = prepare

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, **params: Any) -> Any:
        """The SDK's ``create`` with the composed system prompt and tools (``stream=True`` works too)."""
        return self._call(self._inner.create, params)

    def stream(self, **params: Any) -> Any:
        """The SDK's ``stream`` helper (a context manager) with the composed system prompt and tools."""
        state = self._state.bound()
        pending = self._rewrite_first(state, params)
        if pending is not None:
            return _StreamAfterRewrite(self._inner.stream, state, params, self._prepare, pending)
        return self._inner.stream(**self._prepare(state, params)[0])

    def parse(self, **params: Any) -> Any:
        return self._call(self._inner.parse, params)

    def _call(self, method: Callable[..., Any], params: dict[str, Any]) -> Any:
        state = self._state.bound()
        pending = self._rewrite_first(state, params)
        if pending is not None:
            return _after_rewrite(method, state, params, self._prepare, pending)
        return method(**self._prepare(state, params)[0])

    def _rewrite_first(self, state: TaskState, params: Mapping[str, Any]) -> str | None:
        """The message this request waits on the rewriter for, when the SDK is async: its line is then awaited
        first (in a worker thread for a synchronous rewriter), not asked while the event loop waits."""
        if not inspect.iscoroutinefunction(inspect.unwrap(self._inner.create)):
            return None
        return pending_rewrite(state, state.session, request_messages(params))


async def _after_rewrite(
    method: Callable[..., Awaitable[Any]], state: TaskState, params: Mapping[str, Any], prepare: Prepare, text: str
) -> Any:
    await rewrite_pending(state, text)
    return await method(**prepare(state, params)[0])


class _StreamAfterRewrite:
    """An async SDK's stream manager, opened once the rewriter has answered (``async with`` only, as the SDK's)."""

    def __init__(
        self, stream: Callable[..., Any], state: TaskState, params: Mapping[str, Any], prepare: Prepare, text: str
    ):
        self._open = stream, state, params, prepare, text
        self._manager: Any = None

    async def __aenter__(self) -> Any:
        stream, state, params, prepare, text = self._open
        await rewrite_pending(state, text)
        self._manager = stream(**prepare(state, params)[0])
        return await self._manager.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any:
        return await self._manager.__aexit__(exc_type, exc, tb)


class ComposedClientBase:
    """What every composed client has, whatever the provider: the task it is bound to, and the loop's helpers.

    A subclass sets ``_adapter`` and ``_bind`` (which composes the SDK's namespaces, e.g. ``messages``); every
    other attribute is the wrapped SDK client's."""

    _adapter: ClassVar[Adapter]
    _client: Any
    _state: TaskState

    def __init__(self, client: Any, **options: Unpack[WrapOptions]) -> None:
        # An OpenAI client takes its own options (api, hosted_search) out before this; anywhere else they are wrong.
        wrong = [key for key in ("api", "hosted_search") if key in options]
        if wrong:
            raise TypeError(f"{wrong[0]}= is an option of OpenAI clients only")
        self._attach(client, TaskState(**cast(Any, options)))

    def _attach(self, client: Any, state: TaskState) -> None:
        self._client = client
        self._state = state
        self._bind()

    def _bind(self) -> None:
        raise NotImplementedError

    def _loop(
        self,
        task: str | Sequence[Mapping[str, Any]],
        executors: Mapping[str, ToolExecutor] | None,
        max_iterations: int,
        params: Mapping[str, Any],
        *,
        approving: bool,
        observing: bool,
    ) -> Loop:
        return Loop(
            self._run_adapter(),
            self._state,
            task,
            executors=executors,
            max_iterations=max_iterations,
            params=params,
            approving=approving,
            observing=observing,
        )

    def _run_adapter(self) -> Adapter:
        """The adapter of one run: the client's, or a fresh one when it keeps something from a request to the
        answers of its response (the Responses API's)."""
        return self._adapter

    def for_task(self, task_id: str, *, mode: str | None = None, policy: Policy | None = None) -> Self:
        """The same client, composer and session store for another task (or mode, or policy)."""
        other = object.__new__(type(self))
        other._inherit(self)
        other._attach(self._client, self._state.derive(task_id=task_id, mode=mode, policy=policy))
        return other

    def _inherit(self, source: Self) -> None:
        """Take a subclass's own options from ``source`` (a client for another task), before the task is bound."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    @property
    def client(self) -> Any:
        """The wrapped SDK client."""
        return self._client

    @property
    def composer(self) -> Composer:
        return self._state.composer

    @property
    def mode(self) -> Mode:
        """The mode as the next request will see it (a LiveRegistry's version, see :meth:`TaskState.bound`)."""
        return self._state.bound().mode

    @property
    def task_id(self) -> str:
        return self._state.task_id

    @property
    def policy(self) -> Policy:
        """The promotion policy in force: the wrapper's, else the mode's ``promotion``, else the default."""
        return self._state.policy

    @property
    def session(self) -> TaskSession:
        return self._state.session

    def prompt(self) -> ComposedPrompt:
        """The composed prompt the next request will carry."""
        return self._state.bound().prompt()

    def reset_task(self) -> TaskSession:
        """Start this task afresh: empty FIFO, no pinned prompt, nothing expanded."""
        return self._state.store.reset(self._state.task_id)

    def record_use(self, tool: str) -> None:
        """Record an executed tool call (for callers running their own loop over the SDK)."""
        self._state.session.record_use(tool)

    def answer_fetch(self, tool_input: Mapping[str, Any] | Any) -> FetchResult:
        """Answer a ``fetch_tool_description`` call in this mode (same access check as everything else)."""
        return answer_fetch(self._state.bound(), self._state.session, tool_input)

    def answer_tool_search(self, tool_input: Mapping[str, Any] | Any) -> SearchToolResult:
        """Answer a ``tool_search`` call (discovery modes): the tools found join this task's tool list from the
        next request on. Outside a discovery mode the result is an error."""
        state = self._state.bound()
        if not state.discovery:
            return SearchToolResult(f"Error: mode {state.mode.slug!r} has no {TOOL_SEARCH_NAME}.", True)
        return handle_tool_search(state.searcher.get(), state.mode, tool_input, session=state.session)


class SyncComposedClient(ComposedClientBase):
    """A composed client over a sync SDK client: :meth:`run` is the tool loop."""

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def run(
        self,
        task: str | Sequence[Mapping[str, Any]],
        *,
        model: str,
        max_tokens: int = 4096,
        executors: Mapping[str, ToolExecutor] | None = None,
        approve: Callable[[PendingCall], bool | Awaitable[bool]] | None = None,
        on_iteration: Callable[[Iteration], Awaitable[None] | None] | None = None,
        max_iterations: int = 25,
        stream: bool = False,
        **params: Any,
    ) -> LoopResult:
        """Run the tool loop: request → tool calls → tool results until the model answers without a call.

        In a text-style mode the calls are the assistant's ``tool_call`` blocks and their results go back as
        labelled text (see ``prompt_composer.agent.textcalls``); everything else is the same.

        ``task`` is the user's message (or a whole initial message list, in the provider's format).
        ``executors`` maps tool names to callables ``(input) -> output``; ``fetch_tool_description`` (and
        ``tool_search`` in a discovery mode) is answered here, and a ``call_tool`` call (``call_tool=True``) runs
        its inner tool's executor. ``approve`` runs before each tool (``False`` denies it); ``on_iteration`` sees
        each step (raising :class:`StopLoop` there ends the loop and returns the result so far). Other keyword
        arguments (``system`` on Anthropic, ``tools``, ``temperature`` …) go to every request. Raises
        :class:`MaxIterationsError` when the model still asks for tools after ``max_iterations`` requests, and
        lets SDK errors through with the partial result attached (see :func:`partial_result`).
        """
        loop = self._loop(
            task, executors, max_iterations, params, approving=approve is not None, observing=on_iteration is not None
        )

        def send(request: dict[str, Any], streaming: bool, clock: Clock) -> Any:
            return loop.adapter.send(self._client, request, stream=streaming, clock=clock)

        return drive(loop.steps(model=model, max_tokens=max_tokens, stream=stream), send, approve, on_iteration)


class AsyncComposedClientBase(ComposedClientBase):
    """A composed client over an async SDK client: :meth:`run` is the tool loop, awaited."""

    async def close(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def run(
        self,
        task: str | Sequence[Mapping[str, Any]],
        *,
        model: str,
        max_tokens: int = 4096,
        executors: Mapping[str, ToolExecutor] | None = None,
        approve: Callable[[PendingCall], bool | Awaitable[bool]] | None = None,
        on_iteration: Callable[[Iteration], Awaitable[None] | None] | None = None,
        max_iterations: int = 25,
        stream: bool = False,
        **params: Any,
    ) -> LoopResult:
        """The async tool loop (see :meth:`SyncComposedClient.run`). Executors, ``approve`` and ``on_iteration``
        may be sync or async; calls of one response are answered one after another, in order. Sync executors run
        in the event loop's thread: wrap blocking work in ``asyncio.to_thread`` yourself."""
        loop = self._loop(
            task, executors, max_iterations, params, approving=approve is not None, observing=on_iteration is not None
        )

        def send(request: dict[str, Any], streaming: bool, clock: Clock) -> Any:
            return loop.adapter.send_async(self._client, request, stream=streaming, clock=clock)

        return await drive_async(
            loop.steps(model=model, max_tokens=max_tokens, stream=stream), send, approve, on_iteration
        )
