"""Importing a live MCP server's tools: start it over stdio, list its tools, stop it, and import them.

The client itself is :mod:`prompt_composer.mcp.client`'s; this module turns what can go wrong (a command that
does not start, a server that hangs, exits or answers badly) into one :class:`ImporterError` line, with the
server's last stderr line when it has one. Needs the optional ``mcp`` SDK (``pip install
'prompt-composer-tooldocs[mcp]'``).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..core.cards import ServerCard
from ..errors import ImporterError
from ..mcp.client import ServerSpec, list_server_tools, sdk_installed
from ..shared.extras import needs_extra
from ..shared.journal import stop_if_interrupted
from .cards import check_server_name, drafted_card, fit_instructions, given_card, server_card
from .deadline import Deadline
from .folder import recover_output_folder
from .plan import ImportPlan, apply_plan, plan_tools
from .tool_list import UpstreamTool, parse_tool_list


@dataclass(frozen=True)
class McpListing:
    server: str  # the server's self-declared name (initialize → serverInfo.name)
    version: str | None
    tools: tuple[UpstreamTool, ...]
    # What the server says it is for (initialize → serverInfo.title / description, and its instructions).
    title: str | None = None
    description: str | None = None
    instructions: str | None = None


def list_mcp_tools(
    command: Sequence[str],
    *,
    timeout: float = 30.0,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> McpListing:
    """Start the MCP server ``command`` over stdio, list every tool (following pagination), stop it.

    ``timeout`` bounds the start and the listing together. The server inherits this process's environment
    (plus ``env``). Needs the optional ``mcp`` SDK (``pip install 'prompt-composer-tooldocs[mcp]'``).
    """
    if not command:
        raise ImporterError("no MCP server command given (put it after --)")
    # Not validated: a command that cannot run is reported when it fails to start, like any other.
    spec = ServerSpec.model_construct(
        command=command[0], args=tuple(command[1:]), env=dict(env or {}), cwd=None if cwd is None else str(cwd)
    )
    return list_server(spec, timeout=timeout)


def list_server(spec: ServerSpec, *, timeout: float = 30.0) -> McpListing:
    """:func:`list_mcp_tools` for a server of a client's config: started over stdio, or reached over Streamable
    HTTP (``url``, with its ``headers``)."""
    if not sdk_installed():
        raise ImporterError(needs_extra("import mcp", "mcp"))
    shown = spec.describe()
    command = [spec.command or spec.url or ""]
    with _quiet_sdk_log(), tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            listing = list_server_tools(spec, timeout=timeout, errlog=errlog)
        except Exception as exc:
            stop_if_interrupted()  # the listing failed because a signal's exception broke the SDK's event loop
            raise _failure(exc, shown, timeout, errlog) from None
    tools = list(listing.tools)
    parsed = parse_tool_list({"tools": tools}, source=f"MCP server {shown!r}")[1] if tools else []
    name = listing.name or Path(command[0]).name
    return McpListing(name, listing.version, tuple(parsed), listing.title, listing.description, listing.instructions)


def listing_card(listing: McpListing, server: str) -> tuple[ServerCard, list[str]]:
    """The card of what a listed server says about itself (see :func:`~.cards.server_card`), with notes for the
    report; drafted from its tools' names when it gives no description (keeping its instructions, if any)."""
    what = " ".join(p for p in (listing.server, listing.version) if p)
    card, notes = server_card(
        server,
        title=listing.title,
        description=listing.description,
        instructions=listing.instructions,
        reference=f"initialize of {what}" if what else "initialize",
    )
    if card is not None:
        return card, notes
    drafted = drafted_card(server, listing.tools)
    kept, _flagged = fit_instructions(listing.instructions or "")  # a flagged text is noted by server_card
    if kept:
        drafted = drafted.model_copy(update={"instructions": kept})
    return drafted, [*notes, "the server's initialize gives no description: the card is drafted from its tools"]


def import_mcp(
    command: Sequence[str],
    out: str | Path,
    *,
    server: str | None = None,
    group: str = "mcp",
    write_group: str | None = None,
    prefix: str = "",
    timeout: float = 30.0,
    dry_run: bool = False,
    server_description: str | None = None,
    server_title: str | None = None,
) -> ImportPlan:
    """List an MCP server's tools over stdio and import them into ``out`` (all or nothing; merges).

    Read-only tools go to ``group``, writing ones to ``write_group`` (default ``<group>-write``). ``timeout``
    bounds the whole import: starting the server, listing, drafting, scanning and writing (see
    :mod:`.deadline`); past it the import stops with one ImporterError line, and nothing is written.

    The server's card (``servers/<server>.yaml``) is ``server_description`` (and ``server_title``) when given,
    else what the server's ``initialize`` says (``serverInfo.title`` and ``description``, ``instructions``), else
    one drafted from its tools' names.
    """
    if not dry_run:  # a journal that cannot be recovered stops the import before a server is started
        recover_output_folder(out)
    deadline = Deadline(timeout, what=f"MCP server {' '.join(command)!r}")
    listing = list_mcp_tools(command, timeout=timeout)
    plan = plan_listing(
        listing,
        out,
        server=server,
        group=group,
        write_group=write_group,
        prefix=prefix,
        deadline=deadline,
        server_description=server_description,
        server_title=server_title,
        shown=" ".join(command),
    )
    if not dry_run:
        apply_plan(plan, deadline=deadline)
    return plan


def plan_listing(
    listing: McpListing,
    out: str | Path,
    *,
    server: str | None,
    group: str,
    write_group: str | None,
    prefix: str,
    deadline: Deadline,
    server_description: str | None = None,
    server_title: str | None = None,
    shown: str = "",
    base: ImportPlan | None = None,
) -> ImportPlan:
    """The import plan of a listed server, with its card (see :func:`import_mcp`); ``base``: the plan of the
    servers before it in the same import."""
    if not listing.tools:
        raise ImporterError(f"MCP server {shown or listing.server!r} lists no tools")
    server = check_server_name(server or listing.server)
    notes: list[str] = []
    if server_description is not None:
        card = given_card(server, server_description, title=server_title)
        kept, flagged = fit_instructions(listing.instructions or "")  # the person's words, the server's instructions
        card = card.model_copy(update={"instructions": kept}) if kept else card
        notes = ["instructions left out: the security lint flags them (they would reach every model served)"] * flagged
    else:
        card, notes = listing_card(listing, server)
    return plan_tools(
        listing.tools,
        out,
        server=server,
        group=group,
        write_group=write_group,
        prefix=prefix,
        deadline=deadline,
        card=card,
        card_notes=notes,
        base=base,
    )


# --- what went wrong, in one line ------------------------------------------------------------------------------


@contextmanager
def _quiet_sdk_log() -> Iterator[None]:
    """The SDK's log records dropped while the server is listed: the one-line error says what went wrong."""
    logger = logging.getLogger("mcp")
    sink = logging.NullHandler()
    propagate = logger.propagate
    logger.addHandler(sink)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(sink)
        logger.propagate = propagate


def _exceptions(exc: BaseException) -> Iterable[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _exceptions(inner)
    else:
        yield exc


def _one_line(exc: BaseException) -> str:
    """An exception as one short line (pydantic's multi-line reports reduced to their first error)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            return f"invalid answer from the server: {where}: {first['msg']}"
        except (TypeError, IndexError, KeyError):
            pass
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def _stderr_tail(errlog: TextIO) -> str:
    errlog.seek(0)
    lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    return f"; its last stderr line: {lines[-1][:200]}" if lines else ""


def _failure(exc: Exception, shown: str, timeout: float, errlog: TextIO) -> ImporterError:
    """The one-line error for a listing that failed with ``exc`` (often an exception group from the SDK)."""
    if isinstance(exc, TimeoutError):
        return ImporterError(
            f"MCP server {shown!r} did not list its tools within {timeout:g} s (--timeout){_stderr_tail(errlog)}"
        )
    if isinstance(exc, OSError):
        return ImporterError(f"cannot start MCP server {shown!r}: {exc}")
    inner = list(_exceptions(exc))
    if any(isinstance(e, TimeoutError) for e in inner):
        return ImporterError(f"MCP server {shown!r} did not list its tools within {timeout:g} s{_stderr_tail(errlog)}")
    error = next((e for e in inner if isinstance(e, OSError)), None)
    if error is not None:
        return ImporterError(f"cannot start MCP server {shown!r}: {error}")
    detail = "; ".join(dict.fromkeys(_one_line(e) for e in inner)) or _one_line(exc)
    if "closed" in detail.lower():
        detail = "it exited or closed its output before listing its tools"
    return ImporterError(f"MCP server {shown!r} failed: {detail}{_stderr_tail(errlog)}")
