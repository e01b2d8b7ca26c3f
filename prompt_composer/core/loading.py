"""Getting a tool's schema in front of the model without its cooperation: fetch answers, loading, and recovery.

A small model rarely fetches before calling a briefly described tool, and sometimes fetches the same tool again and
again instead of calling it. These answers do the right thing whatever it does, for the tool loop and the gateway:

- :func:`answer_fetch`: the full text once per task; a second fetch of the same tool answers with one line that
  says to call it. In a tiered mode, fetching a catalog or name tool also loads it (its definition is appended to
  the tool list from the next request on).
- :func:`check_unseen`: a call to a tool whose schema the model has not seen is not run when it cannot be right.
  A catalog or name tool that is not loaded is loaded, and the call answered with its documentation and a request
  to call again (so is a tool a discovery mode's preselection shortlisted); so is a stub whose text the task has not
  shown; a brief tool called with arguments that fail its schema gets the same answer, once per task.
  What the model now has seen is remembered (:meth:`TaskSession.mark_expanded`), so each text goes out once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .fetch import FetchResult, fetch_tool_doc, handle_fetch
from .modes import Mode
from .prompt import ComposedPrompt
from .registry import Registry
from .schema import validate_arguments
from .session import TaskSession

_MAX_PROBLEMS = 10


def answer_fetch(
    registry: Registry,
    mode: Mode,
    session: TaskSession,
    tool_input: Mapping[str, Any] | Any,
    hidden: frozenset[str] = frozenset(),
) -> FetchResult:
    """A ``fetch_tool_description`` call: refused outside the mode; the full text the first time in the task; one
    line after that. A ``hidden`` tool (a tiered mode's catalog or name tool, a deferred one) is loaded by its
    fetch (see :meth:`ComposedPrompt.hidden`)."""
    raw = tool_input.get("name") if isinstance(tool_input, Mapping) else None
    name = raw.strip() if isinstance(raw, str) else ""
    if name and mode.allows(name) and name in session.expanded():
        return FetchResult(
            name,
            f"{name} is already documented in full above in this conversation. Do not fetch it again: call {name} "
            "now, with arguments that match its schema.",
            is_error=False,
            repeat=True,
        )
    result = handle_fetch(registry, mode, tool_input, session=session)
    if result.is_error:
        return result
    session.mark_expanded(result.tool)
    if result.tool in hidden:
        session.discover([result.tool])
        return FetchResult(
            result.tool, f"{result.content}\n\n{result.tool} is now loaded: it is in your tools.", is_error=False
        )
    return result


def check_unseen(
    registry: Registry,
    mode: Mode,
    prompt: ComposedPrompt,
    session: TaskSession,
    name: str,
    arguments: Mapping[str, Any] | Any,
) -> str | None:
    """The error text for a call that must not run because the model has not seen the tool's schema, or ``None``.

    ``prompt`` is what the call's request was composed with; ``name`` is a tool of ``mode``. Loads the tool (one
    that ``prompt`` hides) and marks its full text as expanded when it answers."""
    doc = registry.tools.get(name)
    if doc is None or not mode.allows(name):
        return None
    seen = session.expanded()
    if name in prompt.stubs and name not in seen:
        # A stub declares no parameters: a call before its text was shown is a blind guess, and a right guess of
        # a tool that writes should not run either.
        session.mark_expanded(name)
        return (
            f"Error: you have not seen {name}'s parameters yet, so nothing was run. Call {name} again with arguments "
            f"that match its schema:\n\n{fetch_tool_doc(doc)}"
        )
    # A discovery mode lists only what searches found; a tool its preselection only named (the shortlist) is called
    # the way a catalog tool is: loaded, and answered with its documentation.
    shortlisted = (
        prompt.discovery and name not in prompt.full and name not in prompt.brief and name in session.shortlisted()
    )
    if (name in prompt.hidden() or shortlisted) and name not in seen and name not in session.discovered(mode):
        session.discover([name])
        session.mark_expanded(name)
        return (
            f"Error: {name} was not loaded, so you have not seen its parameters; nothing was run. It is loaded now "
            f"(in your tools from your next message on). Call {name} again with arguments that match its schema:"
            f"\n\n{fetch_tool_doc(doc)}"
        )
    if name not in prompt.brief or name in seen:
        return None
    problems = validate_arguments(doc.input_schema, arguments if isinstance(arguments, Mapping) else {})
    if not problems:
        return None
    session.mark_expanded(name)
    listed = "\n".join(f"- {p}" for p in problems[:_MAX_PROBLEMS])
    more = f"\n- … and {len(problems) - _MAX_PROBLEMS} more" if len(problems) > _MAX_PROBLEMS else ""
    return (
        f"Error: the arguments do not match {name}'s input schema; nothing was run:\n{listed}{more}\n"
        f"Its full documentation, so that your next call can be right:\n\n{fetch_tool_doc(doc)}"
    )
