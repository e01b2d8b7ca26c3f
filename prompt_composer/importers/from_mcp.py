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

from ..errors import ImporterError
from ..mcp.client import ServerSpec, list_server_tools, sdk_installed
from ..shared.extras import needs_extra
from ..shared.journal import stop_if_interrupted
from .deadline import Deadline
from .folder import recover_output_folder
from .plan import ImportPlan, apply_plan, plan_tools
from .tool_list import UpstreamTool, parse_tool_list


@dataclass(frozen=True)
class McpListing:
    server: str  # the server's self-declared name (initialize → serverInfo.name)
    version: str | None
    tools: tuple[UpstreamTool, ...]


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
    if not sdk_installed():
        raise ImporterError(needs_extra("import mcp", "mcp"))
    shown = " ".join(command)
    # Not validated: a command that cannot run is reported when it fails to start, like any other.
    spec = ServerSpec.model_construct(
        command=command[0], args=tuple(command[1:]), env=dict(env or {}), cwd=None if cwd is None else str(cwd)
    )
    with _quiet_sdk_log(), tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            listing = list_server_tools(spec, timeout=timeout, errlog=errlog)
        except Exception as exc:
            stop_if_interrupted()  # the listing failed because a signal's exception broke the SDK's event loop
            raise _failure(exc, shown, timeout, errlog) from None
    tools = list(listing.tools)
    parsed = parse_tool_list({"tools": tools}, source=f"MCP server {shown!r}")[1] if tools else []
    name = listing.name or Path(command[0]).name
    return McpListing(name, listing.version, tuple(parsed))


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
) -> ImportPlan:
    """List an MCP server's tools over stdio and import them into ``out`` (all or nothing; merges).

    Read-only tools go to ``group``, writing ones to ``write_group`` (default ``<group>-write``). ``timeout``
    bounds the whole import: starting the server, listing, drafting, scanning and writing (see
    :mod:`.deadline`); past it the import stops with one ImporterError line, and nothing is written.
    """
    if not dry_run:  # a journal that cannot be recovered stops the import before a server is started
        recover_output_folder(out)
    deadline = Deadline(timeout, what=f"MCP server {' '.join(command)!r}")
    listing = list_mcp_tools(command, timeout=timeout)
    if not listing.tools:
        raise ImporterError(f"MCP server {' '.join(command)!r} lists no tools")
    server = server or listing.server
    plan = plan_tools(
        listing.tools, out, server=server, group=group, write_group=write_group, prefix=prefix, deadline=deadline
    )
    if not dry_run:
        apply_plan(plan, deadline=deadline)
    return plan


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
