"""How the gateway answers ``tools/call``: the access policy, routing, and promotion through results.

The list never changes for a task (see :mod:`prompt_composer.mcp.listing`), so what the loop would show by changing
the prompt reaches the model in results instead:

- ``fetch_tool_description`` (:func:`~prompt_composer.core.loading.answer_fetch`): the full text the first time in
  the task, one line after that; for a tool the list does not hold, how to call it through ``call_tool``.
- ``tool_search`` (:func:`~prompt_composer.discovery.tools.handle_tool_search`): the hits, then the full text of
  each one the model has not seen yet, callable through ``call_tool``.
- A first executed call of a tool the list does not show in full gets the tool's full text appended (the
  ``inline`` promotion policy; a mode set to ``task_start`` gets none), once per task. A request that stands
  alone gets none: nothing tells whether the model has that text already, and every call would carry it.
- A call of a briefly listed tool whose arguments fail its schema runs nothing and gets the tool's full text
  (:func:`~prompt_composer.core.loading.check_unseen`), once per task.

Refusals are the core's (:func:`~prompt_composer.discovery.tools.check_call`, built on
:func:`~prompt_composer.core.access.not_in_mode`): a tool outside the mode is never fetched, found or run. A task's
state (its FIFO, what it fetched or was shown) lives in a :class:`TaskSession` per connection and only shapes
answers.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.bounds import MAX_ECHOED_NAME, cut_note
from ..core.builtins import CALL_TOOL_NAME, FETCH_TOOL_NAME, TOOL_SEARCH_NAME
from ..core.fetch import fetch_tool_doc
from ..core.loading import answer_fetch, check_unseen
from ..core.promotion import DEFAULT_POLICY, inline_text
from ..core.session import TaskSession
from ..discovery.tools import CallResult, check_call, handle_tool_search, search_fields
from ..errors import ExecutorError, UpstreamError
from ..learn.events import EventLog
from ..safety.executors import ToolExecutor
from .listing import Version
from .upstreams import Upstreams


@dataclass
class ClientTask:
    """One connection's task: its session (FIFO, what it fetched or was shown) and the id events name it by.
    ``alone``: a request that no later one can be tied to (2026-07-28 over HTTP), whose task ends with it."""

    task: TaskSession
    task_id: str = field(default_factory=lambda: f"mcp-{uuid.uuid4().hex[:12]}")
    alone: bool = False


@dataclass
class _Call:
    """One call of a mode's tool: the tool meant (the inner one of ``call_tool``), the request as
    :func:`~prompt_composer.discovery.tools.check_call` reads it, and ``via`` (``call_tool`` or ``None``)."""

    tool: str
    request: Mapping[str, Any]
    via: str | None

    def arguments(self) -> Any:
        """The tool's arguments, a JSON string decoded (some models send the object as one)."""
        arguments = self.request.get("arguments", {})
        if isinstance(arguments, str):
            with contextlib.suppress(json.JSONDecodeError):
                arguments = json.loads(arguments)
        return arguments


class Answers:
    """Answers calls for a gateway: ``upstreams`` routes imported tools, ``executors`` run the others, ``events``
    receives what happened (see :mod:`prompt_composer.learn.events`)."""

    def __init__(
        self, upstreams: Upstreams | None, executors: Mapping[str, ToolExecutor], events: EventLog | None
    ) -> None:
        self.upstreams = upstreams
        self.executors = dict(executors)
        self.events = events

    async def answer(
        self, version: Version, client: ClientTask, name: str, arguments: Mapping[str, Any]
    ) -> tuple[list[Any], bool]:
        """A call's content blocks and error flag. Never raises for anything the model or an upstream did."""
        if name == FETCH_TOOL_NAME:
            return self._fetch(version, client, arguments)
        if name == TOOL_SEARCH_NAME and version.listing.searches:
            return self._search(version, client, arguments)
        call = _Call(name, {"name": name, "arguments": arguments}, None)
        if name == CALL_TOOL_NAME and version.listing.routes:
            inner = arguments.get("name")
            call = _Call(inner.strip() if isinstance(inner, str) and inner.strip() else name, arguments, name)
        return await self._call(version, client, call)

    # -- the tools the gateway answers itself ----------------------------------------------------------

    def _fetch(self, version: Version, client: ClientTask, arguments: Mapping[str, Any]) -> tuple[list[Any], bool]:
        fetched = answer_fetch(version.registry, version.mode, client.task, arguments)
        outcome = "refused" if fetched.is_error else "ok"
        self.emit(version, client, "fetch", call_id=None, tool=fetched.tool, outcome=outcome)
        if fetched.is_error:
            self._refusal(version, client, fetched.tool, "fetch", fetched.content)
        content = fetched.content
        if not fetched.is_error and version.listing.listed(fetched.tool) is None and version.listing.routes:
            content += f"\n\n{fetched.tool} is not in your tool list: call it through {_call_example(fetched.tool)}."
        self._call_event(version, client, FETCH_TOOL_NAME, None, outcome, 0.0, arguments, content)
        return [_text(content)], fetched.is_error

    def _search(self, version: Version, client: ClientTask, arguments: Mapping[str, Any]) -> tuple[list[Any], bool]:
        # No session: the list never changes, so nothing is "activated"; what the model was shown is marked below.
        found = handle_tool_search(version.search.get(), version.mode, arguments)
        content, shown = found.content, list[str]()
        if not found.is_error and found.result is not None and found.result.hits:
            docs, shown = self._found_docs(version, client, found.result.names)
            content += docs
        if self.events is not None and found.result is not None:
            fields = search_fields(found, include_content=self.events.include_content)
            self.emit(version, client, "search", call_id=None, **fields)
        for name in shown:
            self.emit(version, client, "promotion", tool=name, kind="inline")
        outcome = "error" if found.is_error else "ok"
        self._call_event(version, client, TOOL_SEARCH_NAME, None, outcome, 0.0, arguments, content)
        return [_text(content)], found.is_error

    def _found_docs(self, version: Version, client: ClientTask, names: tuple[str, ...]) -> tuple[str, list[str]]:
        """How to call the tools a search found, then the full text of each the task has not been shown yet; and
        the names of those shown now."""
        mode, listing = version.mode, version.listing
        wanted = [n for n in names if mode.allows(n) and listing.listed(n) != "full"]
        if not wanted:
            return "", []
        shown: list[str] = []
        seen: list[str] = []
        for name in wanted:
            (shown if client.task.mark_expanded(name) else seen).append(name)
        how = f"call them through {_call_example(wanted[0])}" if listing.routes else "call them by name"
        parts = [f"\n\nHow to use them: {how}."]
        if listing.routes and any(listing.listed(n) is not None for n in wanted):
            parts.append("The ones in your tool list can also be called directly.")
        if seen:
            parts.append(f"Documented above in this conversation: {', '.join(seen)}.")
        for name in shown:
            parts.append(f"\n## {name}\n{fetch_tool_doc(version.registry.tools[name])}")
        return "\n".join(parts), shown

    # -- the mode's tools ------------------------------------------------------------------------------

    async def _call(self, version: Version, client: ClientTask, call: _Call) -> tuple[list[Any], bool]:
        registry, mode, listing = version.registry, version.mode, version.listing
        arguments = call.arguments()
        if mode.allows(call.tool) and listing.listed(call.tool) == "brief":
            prompt = version.composer.compose(mode)  # the list's own composition (a cache hit)
            unseen = check_unseen(registry, mode, prompt, client.task, call.tool, arguments)
            if unseen is not None:
                self.emit(version, client, "promotion", tool=call.tool, kind="recovery")
                self._call_event(version, client, call.tool, call.via, "error", 0.0, call.request, unseen)
                return [_text(unseen)], True
        checked = check_call(registry, mode, call.request)
        if isinstance(checked, CallResult):
            self._refusal(version, client, call.tool, call.via, checked.content)
            self._call_event(version, client, call.tool, call.via, "refused", 0.0, call.request, checked.content)
            return [_text(checked.content)], True
        tool, tool_input = checked
        start = time.perf_counter()
        content, outcome = await self._execute(version, tool, tool_input)
        duration = time.perf_counter() - start
        expanded = False
        if outcome == "ok":
            expanded = self._executed(version, client, tool)
        elif outcome == "refused":
            self._refusal(version, client, tool, call.via, _texts(content))
        self._call_event(version, client, tool, call.via, outcome, duration, tool_input, _texts(content), expanded)
        if expanded:
            content = [*content, _text(inline_text(registry, tool))]
        return content, outcome != "ok"

    def _executed(self, version: Version, client: ClientTask, tool: str) -> bool:
        """Record a successful call in the task's FIFO; whether the tool's full text goes with its result (the
        first use of a tool the list does not show in full, unless the mode promotes at task start only)."""
        mode = version.mode
        before = client.task.recent(mode) if self.events is not None else ()
        client.task.record_use(tool)
        if self.events is not None and tool not in before and tool in client.task.recent(mode):
            self.emit(version, client, "promotion", tool=tool, kind="fifo")
        policy = mode.config.promotion or DEFAULT_POLICY
        expanded = (
            policy != "task_start"
            and not client.alone
            and version.listing.listed(tool) != "full"
            and client.task.mark_expanded(tool)
        )
        if expanded:
            self.emit(version, client, "promotion", tool=tool, kind="inline")
        return expanded

    async def _execute(self, version: Version, tool: str, arguments: dict[str, Any]) -> tuple[list[Any], str]:
        """The call's content blocks and its outcome: ``ok``, ``error`` (it failed) or ``refused`` (nothing can
        run it here)."""
        doc = version.registry.tools[tool]
        if doc.origin is not None and self.upstreams is not None:
            try:
                result = await self.upstreams.call(doc.origin.server, doc.origin.name, arguments)
            except UpstreamError as exc:
                return [_text(f"Error: {tool} failed: {exc}")], "error"
            return list(result.content), "error" if result.is_error else "ok"
        executor = self.executors.get(tool)
        if executor is None:
            where = (
                f"it comes from MCP server {doc.origin.server!r}, and no servers file was given (--servers FILE, "
                f"with an mcpServers entry named {doc.origin.server!r})"
                if doc.origin is not None
                else "it has no executor in this gateway"
            )
            return [_text(f"Error: {tool} cannot be run here: {where}. Nothing was run.")], "refused"
        try:
            import anyio

            value = await anyio.to_thread.run_sync(executor, arguments)
            if inspect.isawaitable(value):  # an async executor called from the thread returned a coroutine
                value = await value
        except ExecutorError as exc:
            return [_text(f"Error: {tool} failed: {exc}")], "error"
        except Exception as exc:  # an executor bug is the model's error result, not a dead gateway
            return [_text(f"Error: {tool} failed: {type(exc).__name__}: {exc}")], "error"
        return [_text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))], "ok"

    # -- the event log (see prompt_composer.learn.events) ----------------------------------------------

    def emit(self, version: Version, client: ClientTask, kind: str, /, **fields: Any) -> None:
        tool = fields.get("tool")
        if isinstance(tool, str) and len(tool) > MAX_ECHOED_NAME:  # a name the model made up can be megabytes
            fields["tool"] = tool[:MAX_ECHOED_NAME] + cut_note(len(tool))
        if self.events is not None:
            self.events.emit(
                kind,
                task=client.task_id,
                mode=version.mode.slug,
                fingerprint=version.registry.fingerprint,
                provider="mcp",
                **fields,
            )

    def _refusal(self, version: Version, client: ClientTask, tool: str, via: str | None, text: str) -> None:
        self.emit(version, client, "refusal", call_id=None, tool=tool, via=via, reason=text.removeprefix("Error: "))

    def _call_event(
        self,
        version: Version,
        client: ClientTask,
        tool: str,
        via: str | None,
        outcome: str,
        duration: float,
        arguments: Mapping[str, Any],
        output: str,
        expanded: bool = False,
    ) -> None:
        if self.events is None:
            return
        content = {"input": arguments, "output": output} if self.events.include_content else {}
        self.emit(
            version,
            client,
            "tool_call",
            call_id=None,
            tool=tool,
            via=via,
            outcome=outcome,
            duration_s=duration,
            listed=version.listing.listed(tool),
            expanded=expanded,
            **content,
        )


def _call_example(name: str) -> str:
    return f'{CALL_TOOL_NAME}, {{"name": {json.dumps(name)}, "arguments": {{...}}}}'


def _text(text: str) -> Any:
    return text_block(text)


def text_block(text: str) -> Any:
    """An MCP text content block."""
    import mcp_types as types

    return types.TextContent(type="text", text=text)


def _texts(content: list[Any]) -> str:
    """The text of a result's content blocks (what the log keeps of an upstream's output)."""
    return "\n".join(str(getattr(block, "text", "")) for block in content)
