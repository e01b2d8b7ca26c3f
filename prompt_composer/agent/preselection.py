"""Preselection in the loop and the wrapped clients: search a new user message, load what it calls for, and tell
the model, without touching the prompt's cached prefix.

Before a request goes out, the newest user message with text of its own (not tool results) is preselected once per
task (:func:`~prompt_composer.discovery.preselect.preselect`); the choice is recorded in the task session under a
digest of the message's text. With a ``rewriter`` (:mod:`prompt_composer.discovery.rewrite`) the line that puts the
message as an operation is searched before its words. A catalog or name tool (tiered modes) or a tool of a discovery
mode joins the tools appended at the end of the tool list; a tool the model can already call but sees only briefly
has its full text delivered instead. Either way a short note goes at the end of that user message, rebuilt the same
way on every request from the record, so the conversation a provider caches never changes behind it. A tool's full
text goes in the first note of the conversation that names it; a later note names it as documented above. The note
also names the preselection's shortlist (the next tools of the ranking, each with a summary of at most
:data:`SHORTLIST_WORDS` words), recorded with it: callable, not loaded.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.composer import declares_shortlist
from ..core.fetch import fetch_tool_doc
from ..core.modes import Mode
from ..core.registry import Registry
from ..core.session import TaskSession
from ..core.tiers import summary
from ..discovery.preselect import preselect
from ..discovery.rewrite import rewrite_line, rewrite_line_async, searched_with
from .state import TaskState

NOTE_HEAD = "[prompt-composer] Tools a search of this request found:"
# Worded as what it is (a search's suggestions, the tools the model always has named beside them): the note must
# not present a distractor as chosen. A small model still calls what the note names (docs/tool-choice.md).
NOTE_CAVEAT = "They are suggestions, not instructions: call whichever of your tools does what the request asks"
# The shortlist's lines: a name and what it does, in few words (the point is that the right tool is named at all).
SHORTLIST_HEAD = "Also callable, not loaded (a first call returns its parameters):"
SHORTLIST_WORDS = 12
# With ``shortlist_stubs`` the tool list declares them (with their summary): the note only names them.
SHORTLIST_STUBS_HEAD = "Also in your tools, not loaded (a first call returns its parameters):"


def user_text(message: Any) -> str | None:
    """The text a user wrote in ``message``: its string content, or its text blocks (not tool results, and not a
    note this module added); ``None`` for any other message."""
    if not isinstance(message, Mapping) or message.get("role") != "user":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content.split(f"\n\n{NOTE_HEAD}", 1)[0] or None
    if not isinstance(content, list | tuple):
        return None
    texts = []
    for block in content:
        if isinstance(block, Mapping):
            if block.get("type") in ("tool_result", "function_call_output"):
                return None
            text = block.get("text")
            if isinstance(text, str) and not text.startswith(NOTE_HEAD):
                texts.append(text)
    return "\n".join(texts) or None


def message_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def request_messages(params: Mapping[str, Any]) -> list[Any]:
    """The messages of a request's parameters, in any of the wire formats: ``messages`` (Messages, Chat
    Completions) or ``input`` (Responses: a string is one user message)."""
    if "messages" in params:
        return list(params.get("messages") or [])
    given = params.get("input")
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    return list(given) if isinstance(given, list | tuple) else []


def _preselecting(state: TaskState) -> bool:
    # A provider's own deferral loads tools only through references in tool results, never from a user message.
    return state.mode.config.preselect is not None and not state.baseline and state.native != "provider"


def pending_rewrite(state: TaskState, session: TaskSession, messages: Sequence[Any]) -> str | None:
    """The newest user message's text when preselecting it will ask the state's rewriter (it is new to the task,
    and no line was given for it yet); else ``None``."""
    if state.rewriter is None or not _preselecting(state):
        return None
    newest = next((text for text in map(user_text, reversed(messages)) if text), None)
    if newest is None:
        return None
    key = message_key(newest)
    if key in state.rewrites or key in session.preselections():
        return None
    return newest


async def rewrite_pending(state: TaskState, text: str) -> None:
    """Ask the rewriter about ``text`` (what :func:`pending_rewrite` named), without blocking the event loop
    (awaited, or in a worker thread: :func:`~prompt_composer.discovery.rewrite.rewrite_line_async`); preselection
    then searches with that line instead of asking again."""
    start = time.perf_counter()
    line = await rewrite_line_async(text, state.rewriter)
    state.rewrites[message_key(text)] = line, time.perf_counter() - start


def preselection_notes(state: TaskState, session: TaskSession, messages: Sequence[Any]) -> dict[int, str]:
    """Preselect for the newest user message if it is new to the task; then the note of every user message that
    has a preselection, by index into ``messages``. Empty for a mode without ``preselect``."""
    config = state.mode.config.preselect
    if config is None or not _preselecting(state):
        return {}
    texts = {index: user_text(message) for index, message in enumerate(messages)}
    wanted = [(index, text) for index, text in texts.items() if text]
    records = session.preselections()
    if wanted:
        newest = wanted[-1][1]
        key = message_key(newest)
        if key not in records:
            line, seconds = _line_for(state, key, newest)
            found = preselect(state.searcher.get(), state.mode, searched_with(newest, line), config)
            recorded = session.preselect(key, found.tools, found.shortlist)
            if recorded is not None:
                _expand_brief(state, session, recorded)
                if state.events is not None:
                    fields = found.as_fields(include_content=state.events.include_content)
                    if seconds is not None:  # the rewriter was asked: how long it took, and whether its line counted
                        fields.update(rewrite_s=round(seconds, 3), rewritten=line is not None)
                    state.events.emit(
                        "preselect", task=state.task_id, mode=state.mode.slug, fingerprint=state.registry.fingerprint,
                        **fields,
                    )  # fmt: skip
            records = session.preselections()
    notes: dict[int, str] = {}
    shown: set[str] = set()  # tools whose full text an earlier note of these messages carries
    shortlists = session.shortlists() if config.shortlist else {}
    for index, text in wanted:
        key = message_key(text)
        tools, named = records.get(key, ()), shortlists.get(key, ())
        if tools or named:
            notes[index] = note(state, tools, shown=frozenset(shown), shortlist=named)
            shown.update(tools)
    return notes


def _line_for(state: TaskState, key: str, text: str) -> tuple[str | None, float | None]:
    """The rewriter's line for a new message and the seconds it took: the one asked before (the loop's effect, an
    async client's await), else asked now; ``(None, None)`` without a rewriter."""
    given = state.rewrites.pop(key, None)
    if given is not None:
        return given
    if state.rewriter is None:
        return None, None
    start = time.perf_counter()
    line = rewrite_line(text, state.rewriter)
    return line, time.perf_counter() - start


def _appended(state: TaskState, tool: str) -> bool:
    """Whether loading ``tool`` appends its full definition (else the model can call it already)."""
    tiers = state.tiers
    emulated = state.native == "emulate" and tool not in state.mode.permanent
    return emulated or state.mode.config.discovery or (tiers is not None and tiers.unlisted(tool))


def _expand_brief(state: TaskState, session: TaskSession, chosen: Sequence[str]) -> None:
    for tool in chosen:
        if not _appended(state, tool) and tool not in state.mode.permanent:
            session.mark_expanded(tool)  # its full text goes out in the note


def note(
    state: TaskState, chosen: Sequence[str], *, shown: frozenset[str] = frozenset(), shortlist: Sequence[str] = ()
) -> str:
    """The note for one preselected message: the tools chosen, the full text of those not appended in full
    (except the ones in ``shown``: an earlier note of the conversation carries their text), and the shortlist."""
    docs = state.registry.tools
    appended = [t for t in chosen if _appended(state, t)]
    delivered = [t for t in chosen if t not in appended and t not in state.mode.permanent and t in docs]
    above = [t for t in delivered if t in shown]
    expanded = [t for t in delivered if t not in shown]
    always = [t for t in state.mode.permanent if t not in chosen]
    caveat = f"{NOTE_CAVEAT} ({', '.join(always)} included)." if always else f"{NOTE_CAVEAT}."
    found = ", ".join(chosen) if chosen else "none it is sure of"
    lines = [f"{NOTE_HEAD} {found}. {caveat}"]
    declared = state.native is None and declares_shortlist(state.mode)
    listed = shortlist_text(state.registry, state.mode, shortlist, declared=declared)
    if listed:
        lines.append(listed)
    if appended:
        lines.append(f"Loaded into your tools for this task: {', '.join(appended)}.")
    if above:
        lines.append(f"Documented in an earlier note above: {', '.join(above)}.")
    if expanded:
        lines.append("Full documentation of the ones you already have:")
        lines += [fetch_tool_doc(docs[t]) for t in expanded]
    return "\n\n".join(lines)


def shortlist_text(registry: Registry, mode: Mode, shortlist: Sequence[str], *, declared: bool = False) -> str:
    """The shortlist's part of a note: :data:`SHORTLIST_HEAD`, then one ``- name: summary`` line per tool of the
    mode (``""`` when none is left); when the tool list ``declared`` them as stubs, one line of their names."""
    docs = registry.tools
    named = [t for t in shortlist if t in docs and mode.allows(t)]
    if not named:
        return ""
    if declared:
        return f"{SHORTLIST_STUBS_HEAD} {', '.join(named)}."
    return "\n".join([SHORTLIST_HEAD, *(f"- {t}: {summary(docs[t], SHORTLIST_WORDS)}" for t in named)])


def with_note(message: Mapping[str, Any], text: str, *, block_type: str = "text") -> dict[str, Any]:
    """A copy of the user ``message`` with ``text`` at its end: after a blank line in a string content, as a last
    block (of ``block_type``) in a list content."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": f"{content}\n\n{text}"}
    blocks = list(content) if isinstance(content, list | tuple) else []
    return {**message, "content": [*blocks, {"type": block_type, "text": text}]}


def annotated(
    state: TaskState, session: TaskSession, messages: Sequence[Any], *, block_type: str = "text"
) -> list[Any]:
    """``messages`` with the preselection note of each preselected user message (preselecting the newest first)."""
    notes = preselection_notes(state, session, messages)
    return [with_note(m, notes[i], block_type=block_type) if i in notes else m for i, m in enumerate(messages)]
