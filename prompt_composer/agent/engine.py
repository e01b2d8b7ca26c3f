"""The tool loop, whatever the provider: every decision it makes, written once for sync and async.

:class:`Loop` is one generator that yields the effects it needs (send a request, ask ``approve``, run an
executor, show an iteration); the drivers (:mod:`.drivers`) perform them with or without ``await``. It imports no
provider SDK: adapters (:mod:`.anthropic`, :mod:`.openai`, :mod:`.responses`) translate wire formats. What it
decides (promotion policies, text-style calls, discovery, ``call_tool``): docs/architecture.md, "The tool loop".
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..core.access import not_in_mode
from ..core.builtins import CALL_TOOL_NAME, FETCH_TOOL_NAME, TOOL_SEARCH_NAME
from ..core.fetch import FetchResult
from ..core.loading import answer_fetch as answer_tool_fetch
from ..core.loading import check_unseen
from ..core.promotion import inline_text
from ..core.prompt import ComposedPrompt
from ..core.session import TaskSession
from ..discovery.tools import CallResult, SearchToolResult, check_call, handle_tool_search, search_fields
from ..errors import ExecutorError
from ..safety.executors import ToolExecutor
from .adapter import Adapter, Answer, Call, Clock, Reply
from .drivers import AskApproval, AskRewriter, Effect, RunExecutor, SendRequest, ShowIteration, Steps
from .preselection import message_key, pending_rewrite
from .results import (
    Iteration,
    LoopResult,
    MaxIterationsError,
    PendingCall,
    StopLoop,
    TokenUsage,
    ToolCallRecord,
    ToolLoopError,
)
from .state import TaskState, tool_name
from .textcalls import CALL_SHAPE, IMITATION, imitated_result, parse_tool_call_blocks, read_loose_call, result_label

# Iteration.forced of a request that offered no fetch tool (after fetches in a row; see Loop.force).
NO_FETCH = ""
# Iteration.forced of a request that asked for an answer, not a call (after the same calls twice; see Loop.force).
ANSWER = "(answer)"
# The end of a result that repeats the iteration before's (the same call, the same result).
REPEATED = (
    "[prompt-composer] You made this same call in your previous step and got the same result. Do not make it "
    "again: answer the user now from the results above."
)


def answer_fetch(
    state: TaskState, session: TaskSession, tool_input: Mapping[str, Any] | Any, prompt: ComposedPrompt | None = None
) -> FetchResult:
    """A ``fetch_tool_description`` call in the state's mode: the full text once a task, one line after that; a
    tool that ``prompt`` hides (a tiered mode's catalog tool, a deferred one) is loaded (see
    :func:`~prompt_composer.core.loading.answer_fetch`)."""
    prompt = prompt if prompt is not None else state.prompt(session)
    return answer_tool_fetch(state.registry, state.mode, session, tool_input, prompt.hidden())


class Loop:
    """One run of the tool loop: its state, and :meth:`steps`, the generator that makes every decision."""

    def __init__(
        self,
        adapter: Adapter,
        state: TaskState,
        task: str | Sequence[Mapping[str, Any]],
        *,
        executors: Mapping[str, ToolExecutor] | None,
        max_iterations: int,
        params: Mapping[str, Any],
        approving: bool,
        observing: bool,
    ) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        self.adapter = adapter
        self.base = state
        self.state = state  # this iteration's: bound to one registry version from its request to its answers
        self.session = state.session  # composed from and recorded into, even if the store evicts the task
        self.executors = dict(executors or {})
        self.max_iterations = max_iterations
        self.params = dict(params)
        self.approving = approving
        self.observing = observing
        self.caller_tools = {tool_name(t) for t in self.params.get("tools") or []}
        self.events = state.events
        # Events name the wire format; the adapter's module is it (prompt_composer.agent.anthropic / .openai).
        self.provider = type(adapter).__module__.rpartition(".")[2]
        self.prompt: ComposedPrompt | None = None  # this iteration's: how each called tool was listed
        # What the next request asks for after repeated fetches (see force): a tool's name, or NO_FETCH.
        self.forcing: str | None = None
        self.forced: str | None = None  # this iteration's
        self.fetches_in_a_row = 0  # with no other call between
        self.last_round: tuple[tuple[str, str, str], ...] = ()  # the calls and results of the iteration before
        initial: list[dict[str, Any]] = (
            [{"role": "user", "content": task}] if isinstance(task, str) else [dict(m) for m in task]
        )
        self.result = LoopResult(messages=initial)

    @property
    def text_style(self) -> bool:
        return self.state.mode.config.tool_style == "text"

    # The tools the loop answers itself (a caller's tool of the same name is the caller's).
    @property
    def searching(self) -> bool:
        return self.state.discovery and TOOL_SEARCH_NAME not in self.caller_tools

    @property
    def unwrapping(self) -> bool:
        return self.state.call_tool and CALL_TOOL_NAME not in self.caller_tools

    def steps(self, *, model: str, max_tokens: int, stream: bool) -> Steps:
        """The loop: request → tool calls → results, until the model answers without a call."""
        for index in range(1, self.max_iterations + 1):
            self.state = self.base.bound(self.session)
            params = {**self.params, "messages": self.result.messages}
            asked = pending_rewrite(self.state, self.session, self.result.messages)
            if asked is not None and self.state.rewriter is not None:  # a driver's effect: awaited by the async one
                start = time.perf_counter()
                line = yield AskRewriter(self.state.rewriter, asked)
                self.state.rewrites[message_key(asked)] = line, time.perf_counter() - start
            request, prompt = self.adapter.loop_request(
                self.state, params, model=model, max_tokens=max_tokens, session=self.session
            )
            self.prompt = prompt
            request = self.force(request)
            clock = Clock()
            try:
                response = yield SendRequest(request, stream, clock)
            except Exception as exc:  # the SDK's error (after its own retries): carry what was done so far
                self._request_event(index, model, stream, clock.elapsed(), None, None, error=type(exc).__name__)
                with contextlib.suppress(AttributeError):
                    exc.loop_result = self.result  # type: ignore[attr-defined]
                raise
            latency = clock.elapsed()  # the request alone, not the approvals and executors that follow
            try:
                reply = self.adapter.read(response)
            except ValueError as exc:  # e.g. an OpenAI-compatible response without a choice
                self._request_event(index, model, stream, latency, clock.first, None, error=type(exc).__name__)
                raise ToolLoopError(f"the model's response could not be read: {exc}", self.result) from exc
            self._request_event(index, model, stream, latency, clock.first, reply)
            calls = self.receive(response, reply, index)
            answered: list[tuple[Call, ToolCallRecord]] = []
            for call in calls:
                answered.append((call, (yield from self.answer(call, index))))
            answered = self.watch_repeats(answered)
            iteration = self.close(index, response, reply, prompt, answered, latency, clock.first)
            if self.observing:
                try:
                    yield ShowIteration(iteration)
                except StopLoop:
                    return self.result
            if iteration.correction is None and not calls:
                return self.result
        raise self.exhausted()

    def force(self, request: dict[str, Any]) -> dict[str, Any]:
        """Repeated fetches without a call: a small model may fetch until ``max_iterations`` runs out (the same
        tool again, tools its mode lacks, or one tool after another down the list). For one request after it
        (:meth:`Adapter.forced`):

        - a second fetch of a tool (answered in one line: call it now): the request offers that tool alone and
          names it as the tool choice. The model calls it, with the schema it has read twice, and ``approve``
          still sees the call.
        - any other second fetch in a row: the request offers no fetch tool (the tool choice ``none`` where it
          is the only tool). The model calls a tool it has read about, or answers.
        - the same calls with the same results as the iteration before (:meth:`watch_repeats`): the request asks
          for an answer (the tool choice ``none``, the tool list unchanged), from the results the model has.

        That request's tool list differs from its neighbours': the provider's prompt cache misses from the tool
        list on, for it alone; the request after has every tool again."""
        self.forced, self.forcing = self.forcing, None
        if self.forced is None:
            return request
        if self.forced == ANSWER:
            return self.adapter.answer_only(request)
        changed = self.adapter.forced(request, None if self.forced == NO_FETCH else self.forced)
        if changed is None:  # the request does not offer it (a caller's tool list, a hidden tool): nothing to force
            self.forced = None
            return request
        return changed

    def watch_repeats(self, answered: list[tuple[Call, ToolCallRecord]]) -> list[tuple[Call, ToolCallRecord]]:
        """A small model at temperature 0 can make one call again and again, reading the same result each time,
        until ``max_iterations`` runs out. When an iteration's native calls (fetches and searches aside) and their
        results are those of the iteration before, each result says so (:data:`REPEATED`) and the next request
        asks for an answer (see :meth:`force`; a server may ignore that choice, so the text is there too). A call
        whose result changed (polling a job) is not a repeat."""
        skip = (FETCH_TOOL_NAME, TOOL_SEARCH_NAME)
        calls = tuple(
            (call.name, _json(call.input), record.output)
            for call, record in answered
            if call.style == "native" and call.name not in skip
        )
        repeated = bool(calls) and calls == self.last_round
        self.last_round = calls
        if not repeated:
            return answered
        if self.forcing is None:
            self.forcing = ANSWER
        return [(call, replace(record, output=f"{record.output}\n\n{REPEATED}")) for call, record in answered]

    def receive(self, response: Any, reply: Reply, iteration: int) -> list[Call]:
        """Record the assistant's message; the calls it asks for, in order: its native calls and, in a
        text-style mode, the ``tool_call`` blocks of its text (or, when it has none, the one call it wrote in another
        shape, if any)."""
        self.result.messages.append(reply.message)
        self.result.final_message = response
        self.result.stop_reason = reply.stop_reason
        self.result.text = "".join(reply.texts)
        calls: list[Call] = []
        written = 0  # text-style calls so far: their ids are text_<iteration>_<n>
        for part in reply.content:
            if isinstance(part, Call):
                calls.append(part)
            elif self.text_style:
                for parsed in parse_tool_call_blocks(part):
                    written += 1
                    calls.append(Call(f"text_{iteration}_{written}", parsed.name, parsed.input, "text", parsed.error))
        if self.text_style and not calls:
            tools = self.state.registry.tools
            schemas = {name: tools[name].input_schema for name in self.state.mode.allowed if name in tools}
            loose = read_loose_call(self.result.text, schemas)
            if loose is not None:
                calls.append(Call(f"text_{iteration}_1", loose.name, loose.input, "text"))
        return calls

    # -- answering one call ------------------------------------------------------------------------

    def answer(self, call: Call, iteration: int) -> Generator[Effect, Any, ToolCallRecord]:
        """Answer one call, whatever its style: checks, then approval, then the executor."""
        if call.name != FETCH_TOOL_NAME:
            self.fetches_in_a_row = 0
        resolved = self.resolve(call, iteration)
        if isinstance(resolved, ToolCallRecord):
            return resolved
        if self.approving:
            approved = yield AskApproval(
                PendingCall(resolved.id, resolved.name, resolved.input, iteration, resolved.via)
            )
            if not approved:
                reason = f"the call to {resolved.name!r} was denied by the user; it was not run"
                return self._record(resolved, iteration, f"Error: {reason}.", reason, 0.0, "denied")
        start = time.perf_counter()
        try:
            value = yield RunExecutor(self.executors[resolved.name], resolved.input)
        except Exception as exc:
            detail = str(exc) if isinstance(exc, ExecutorError) else f"{type(exc).__name__}: {exc}"
            text = f"Error: {resolved.name} failed: {detail}"
            return self._record(resolved, iteration, text, detail, time.perf_counter() - start, "error")
        return self._executed(resolved, iteration, value, time.perf_counter() - start)

    def resolve(self, call: Call, iteration: int) -> Call | ToolCallRecord:
        """The call to approve and run (a ``call_tool`` call unwrapped to its inner call), or the record of a
        call answered here without an executor."""
        if call.problem is None and call.name == CALL_TOOL_NAME and self.unwrapping:
            checked = check_call(self.state.registry, self.state.mode, call.input)
            if isinstance(checked, CallResult):  # no name, not in the mode, bad arguments, a refused path
                inner = call.input.get("name")
                refused = inner if isinstance(inner, str) and inner else CALL_TOOL_NAME
                reason = checked.content.removeprefix("Error: ")
                return self._refused(call, iteration, checked.content, reason, tool=refused, via=CALL_TOOL_NAME)
            name, arguments = checked
            call = replace(call, name=name, input=arguments, via=CALL_TOOL_NAME)
        record = self.precheck(call, iteration)
        return call if record is None else record

    def precheck(self, call: Call, iteration: int) -> ToolCallRecord | None:
        """The record of a call answered without running an executor (unreadable call, fetch, refusal), or None
        to run it."""
        mode = self.state.mode
        if call.problem is not None:
            shape = CALL_SHAPE if call.style == "text" else "Call the tool again with a JSON object as its arguments."
            text = f"Error: {call.problem}; nothing was run. {shape}"
            return self._record(call, iteration, text, call.problem, 0.0, "error")
        if call.name == FETCH_TOOL_NAME and call.name not in self.caller_tools:
            fetched = answer_fetch(self.state, self.session, call.input, self.prompt)
            outcome = "refused" if fetched.is_error else "ok"
            self._emit("fetch", iteration=iteration, call_id=call.id, tool=fetched.tool, outcome=outcome)
            if fetched.is_error:
                reason = fetched.content.removeprefix("Error: ")
                self._emit(
                    "refusal", iteration=iteration, call_id=call.id, tool=fetched.tool, via="fetch", reason=reason
                )
            self.fetches_in_a_row += 1
            if call.style == "native" and fetched.repeat:
                self.forcing = fetched.tool
            elif call.style == "native" and self.fetches_in_a_row >= 2 and self.forcing is None:
                self.forcing = NO_FETCH
            error = "fetch refused" if fetched.is_error else None
            loads = self._references([fetched.tool]) if not fetched.is_error else ()
            return self._record(call, iteration, fetched.content, error, 0.0, outcome, references=loads)
        if call.name == TOOL_SEARCH_NAME and self.searching and call.via is None:
            # The tools found join the session; the next request's prompt lists them (see TaskState.prompt).
            found = handle_tool_search(self.state.searcher.get(), mode, call.input, session=self.session)
            self._search_events(call, iteration, found)
            error = found.content if found.is_error else None
            loads = self._references(found.result.names if found.result is not None else ())
            outcome = "error" if found.is_error else "ok"
            return self._record(call, iteration, found.content, error, 0.0, outcome, references=loads)
        if call.name not in self.caller_tools and not mode.allows(call.name):
            text = not_in_mode(call.name, mode, consequence="Nothing was run.")
            return self._refused(call, iteration, text, text.removeprefix("Error: "))
        doc = self.state.registry.tools.get(call.name)
        if doc is not None and call.name not in self.caller_tools:
            refusal = mode.check_paths(doc, call.input)
            if refusal is not None:
                return self._refused(call, iteration, refusal, refusal.removeprefix("Error: "))
            if self.prompt is not None:
                unseen = check_unseen(self.state.registry, mode, self.prompt, self.session, call.name, call.input)
                if unseen is not None:
                    self._emit("promotion", iteration=iteration, tool=call.name, kind="recovery")
                    loads = self._references([call.name])
                    return self._record(call, iteration, unseen, "schema not seen", 0.0, "error", references=loads)
        if call.name not in self.executors:
            reason = f"tool {call.name!r} has no executor here; it was not run"
            return self._refused(call, iteration, f"Error: {reason}.", reason)
        return None

    def _executed(self, call: Call, iteration: int, value: Any, duration: float) -> ToolCallRecord:
        """A successful call: recorded in the FIFO; under ``inline`` maybe expanded once."""
        output = value if isinstance(value, str) else _json(value)
        # The FIFO view before the use, read only for the event log (a store round trip in Redis).
        before = self.session.recent(self.state.mode) if self.events is not None else ()
        self.session.record_use(call.name)
        if self.events is not None and call.name not in before and call.name in self.session.recent(self.state.mode):
            self._emit("promotion", iteration=iteration, tool=call.name, kind="fifo")
        expanded = (
            self.state.policy == "inline"
            and call.name in self.state.registry.tools
            and call.name in self.state.prompt(self.session).brief
            and self.session.mark_expanded(call.name)
        )
        if expanded:
            self._emit("promotion", iteration=iteration, tool=call.name, kind="inline")
        record = ToolCallRecord(
            call.id,
            call.name,
            call.input,
            output,
            False,
            None,
            duration,
            iteration,
            executed=True,
            expanded=expanded,
            via=call.via,
        )
        self._call_event(record, "ok")
        return record

    def _references(self, names: Iterable[str]) -> tuple[str, ...]:
        """The deferred tools of a native-deferral prompt among ``names``: an answer that loads them carries a
        reference to each (a ``tool_reference`` block for a provider that defers, a note when the loop emulates it)."""
        deferred = set(self.prompt.deferred) if self.prompt is not None else set()
        return tuple(n for n in dict.fromkeys(names) if n in deferred)

    def _record(
        self,
        call: Call,
        iteration: int,
        text: str,
        error: str | None,
        duration: float,
        outcome: str,
        *,
        references: tuple[str, ...] = (),
    ) -> ToolCallRecord:
        """The record of a call that ran no executor, or whose executor failed (``outcome`` is for the log)."""
        record = ToolCallRecord(
            call.id,
            call.name,
            call.input,
            text,
            error is not None,
            error,
            duration,
            iteration,
            via=call.via,
            references=references,
        )
        self._call_event(record, outcome)
        return record

    def _refused(
        self, call: Call, iteration: int, text: str, reason: str, *, tool: str | None = None, via: str | None = None
    ) -> ToolCallRecord:
        """A refused call (or fetch): a ``refusal`` event naming the tool refused, then its record."""
        refused = call.name if tool is None else tool
        self._emit("refusal", iteration=iteration, call_id=call.id, tool=refused, via=via or call.via, reason=reason)
        return self._record(call, iteration, text, reason, 0.0, "refused")

    # -- the event log -----------------------------------------------------------------------------

    def _emit(self, kind: str, /, **fields: Any) -> None:
        """Hand one event to the wrapper's log, if any (it never blocks and never raises)."""
        if self.events is not None:
            self.events.emit(
                kind,
                task=self.base.task_id,
                mode=self.state.mode.slug,
                fingerprint=self.state.registry.fingerprint,
                provider=self.provider,
                **fields,
            )

    def _request_event(
        self,
        index: int,
        model: str,
        stream: bool,
        latency: float,
        first_token: float | None,
        reply: Reply | None,
        *,
        error: str | None = None,
    ) -> None:
        if self.events is None:
            return
        prompt = self.prompt
        self._emit(
            "request",
            iteration=index,
            model=model,
            stream=stream,
            policy=self.state.policy,
            outcome="ok" if error is None else "error",
            **({} if error is None else {"error": error}),
            latency_s=latency,
            first_token_s=first_token,
            **({"forced": self.forced} if self.forced is not None else {}),
            usage=(reply.usage if reply is not None else TokenUsage()).as_dict(),
            stop_reason=reply.stop_reason if reply is not None else None,
            composed_tokens=prompt.tokens.total if prompt is not None else 0,
            full=len(prompt.full) if prompt is not None else 0,
            brief=len(prompt.brief) if prompt is not None else 0,
        )

    def _call_event(self, record: ToolCallRecord, outcome: str) -> None:
        if self.events is None:
            return
        prompt = self.prompt
        listed = None
        if prompt is not None and record.name in prompt.full:
            listed = "full"
        elif prompt is not None and record.name in prompt.brief:
            listed = "brief"
        content = {"input": record.input, "output": record.output} if self.events.include_content else {}
        self._emit(
            "tool_call",
            iteration=record.iteration,
            call_id=record.id,
            tool=record.name,
            via=record.via,
            outcome=outcome,
            duration_s=record.duration,
            listed=listed,
            expanded=record.expanded,
            **content,
        )

    def _search_events(self, call: Call, iteration: int, found: SearchToolResult) -> None:
        if self.events is None or found.result is None:
            return
        fields = search_fields(found, include_content=self.events.include_content)
        self._emit("search", iteration=iteration, call_id=call.id, **fields)
        for tool in found.activated:
            self._emit("promotion", iteration=iteration, tool=tool, kind="discovered")

    # -- closing one iteration ---------------------------------------------------------------------

    def close(
        self,
        index: int,
        response: Any,
        reply: Reply,
        prompt: ComposedPrompt,
        answered: Sequence[tuple[Call, ToolCallRecord]],
        latency: float,
        first_token: float | None,
    ) -> Iteration:
        """Send the answers back: native results first (as the APIs want them), then a labelled text per
        text-style call. A text-style reply with no call that imitates a tool result is not final: the loop says
        so in a user message (see :func:`~prompt_composer.agent.textcalls.imitated_result`)."""
        correction = None
        if not answered and self.text_style and imitated_result(self.result.text):
            correction = IMITATION
            self.result.messages.append(self.adapter.user_message(correction))
        if answered:
            native: list[Answer] = []
            text: list[str] = []
            for call, record in answered:
                texts = [record.output]
                if record.expanded:
                    texts.append(inline_text(self.state.registry, record.name))
                if call.style == "text":  # labelled with the name the model called (call_tool, not its inner tool)
                    text.append(result_label(call.name, texts, is_error=record.is_error))
                else:
                    native.append(Answer(record.id, call.name, tuple(texts), record.is_error, record.references))
            self.result.messages.extend(self.adapter.answers(native, text))
        records = tuple(record for _, record in answered)
        iteration = Iteration(
            index, response, reply.usage, records, prompt, latency, first_token, correction, forced=self.forced
        )
        self.result.iterations.append(iteration)
        return iteration

    def exhausted(self) -> MaxIterationsError:
        last = self.result.iterations[-1] if self.result.iterations else None
        if last is not None and last.correction is not None:
            what = "still imitated tool results instead of answering"
        else:
            what = "still asked for tools"
        calls = len(self.result.tool_calls)
        return MaxIterationsError(
            f"the model {what} after max_iterations={self.max_iterations} requests "
            f"({calls} tool call{'' if calls == 1 else 's'} answered); the partial result is on .result",
            self.result,
        )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
