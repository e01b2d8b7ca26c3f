"""``prompt-composer serve``: one mode as an MCP server (see :mod:`prompt_composer.mcp.gateway`)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ._common import (
    OVERLAY_ENV,
    add_learn_from,
    add_mode_option,
    checked_mode,
    drops_line,
    log_failing,
    registry_of,
    search_for,
    warn_over_budget,
)
from .serve_http import add_http_options, security_from, session_store

if TYPE_CHECKING:
    from ..core.live import LiveRegistry
    from ..core.registry import Registry
    from ..discovery.search import ToolSearch
    from ..errors import LoadError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="serve a mode to any MCP client: brief/full tools, fetch, search, calls routed to upstream MCP servers",
    )
    add_mode_option(p, "the mode whose tools are served")
    p.add_argument(
        "--servers",
        metavar="FILE",
        default=None,
        help='upstream MCP servers of imported tools ({"mcpServers": {NAME: {"command", "args", "env"} or {"url"}}})',
    )
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="HTTP address: a host name, an IPv4 or an IPv6 address (::1 or [::1]); default 127.0.0.1",
    )
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default: 8000; 0 picks a free one)")
    p.add_argument(
        "--workspace",
        default=None,
        metavar="DIR",
        help="run the built-in read-only tools (read_file, list_files, search_files…) in this folder; without it "
        "they are refused",
    )
    p.add_argument(
        "--call-timeout", type=float, default=60.0, metavar="SECONDS", help="bound on one upstream call (60)"
    )
    p.add_argument(
        "--log",
        metavar="FILE",
        default=None,
        help="append one JSON line per tools/list, tool call, fetch, search, refusal and promotion (read it with "
        "stats); no tool input or output unless --log-content",
    )
    p.add_argument("--log-content", action="store_true", help="with --log: also log tool inputs, outputs and queries")
    p.add_argument(
        "--watch",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="follow the docs folder: poll it every SECONDS, serve an edit once it loads cleanly, and announce a "
        "changed tool list (notifications/tools/list_changed; subscriptions/listen for 2026-07-28 clients)",
    )
    add_learn_from(p)
    add_http_options(p)
    p.set_defaults(handler=cmd_serve)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def _served(args: argparse.Namespace, registry: Registry) -> Registry | LiveRegistry | None:
    """What serve serves: the registry, or with --watch a LiveRegistry of the same folder (``None``, said on stderr,
    when the folder cannot be followed)."""
    if args.watch is None:
        return registry
    if getattr(args, "overlay", None) or os.environ.get(OVERLAY_ENV):
        print("error: --watch follows a docs folder as it is; it cannot apply an overlay", file=sys.stderr)
        return None

    def report(exc: LoadError) -> None:  # a line each: stderr shows a newline inside a message escaped
        print("# serve --watch: the edited docs do not load, the last good version keeps serving:", file=sys.stderr)
        for problem in exc.problems:
            print(problem, file=sys.stderr)

    from ..core.live import LiveRegistry

    return LiveRegistry(args.docs, on_error=report, cache=getattr(args, "cache", True))


def _announce(url: str) -> None:
    print(f"READY {url}", flush=True)


@contextlib.contextmanager
def _gateway_notices(args: argparse.Namespace) -> Iterator[None]:
    """The gateway's notices (a reload, a version refused) on stderr while it serves, one line each. With -v or -q
    the command's own handler on the package logger decides what is shown, so this one stays out of its way."""
    if getattr(args, "verbose", 0) or getattr(args, "quiet", 0):
        yield
        return
    logger = logging.getLogger("prompt_composer.mcp.gateway")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def unrouted_servers(registry: Registry, slug: str, servers: Mapping[str, Any]) -> str | None:
    """Said when serving starts: the MCP servers that tools of mode ``slug`` were imported from and that the
    servers file does not name (all of them without one), so their calls will be refused; else ``None``."""
    mode = registry.mode(slug)
    missing = sorted(
        {
            doc.origin.server
            for name in mode.allowed
            if (doc := registry.tools[name]).origin is not None and doc.origin.server not in servers
        }
    )
    if not missing:
        return None
    names = ", ".join(repr(s) for s in missing)
    given = "the servers file does not name them" if servers else "no servers file was given"
    return (
        f"mode {slug!r} has tools imported from MCP server(s) {names}, and {given}: their calls are refused "
        "until --servers FILE has an mcpServers entry for each"
    )


def cmd_serve(args: argparse.Namespace) -> int:
    from ..mcp.client import require_sdk

    require_sdk("serve")  # before anything loads: a missing extra is one line (exit 2)
    from ..errors import AuthConfigError, ExecutorError
    from ..learn.events import EventLog
    from ..mcp.auth import check_exposure
    from ..mcp.upstreams import Upstreams, load_servers
    from ..safety.executors import workspace_executors
    from ..shared.net import bare_host

    if args.transport == "http":
        try:  # "[::1]" as a URL writes it is "::1" to a socket; what is no host at all exits 2 here
            args.host = bare_host(args.host)
        except ValueError as exc:
            print(f"error: --host {exc}", file=sys.stderr)
            return 2
    registry = registry_of(args)
    # an unknown mode, or one showing text that names a tool it lacks, exits 2 before anything starts
    warn_over_budget(registry, checked_mode(registry, args.mode))
    try:  # so do unusable auth settings, and a public address without them
        security = security_from(args)
        if args.transport == "http":
            check_exposure(args.host, security)
    except AuthConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    servers = load_servers(args.servers) if args.servers is not None else {}
    search = search_for(args, registry)  # an unreadable log exits 2 before anything starts
    served = _served(args, registry)
    if served is None:
        return 2
    unrouted = unrouted_servers(registry, args.mode, servers)
    if unrouted:
        print(f"warning: {unrouted}", file=sys.stderr)
    # The MCP SDK (about a second to import) only once every option and file has been checked: a mistake is said
    # at once.
    import anyio

    from ..mcp.gateway import Gateway, serve_http, serve_stdio

    def learned(version: Registry) -> ToolSearch | None:  # the --learn-from search of a reloaded version
        return search if version.fingerprint == registry.fingerprint else search_for(args, version)

    try:
        executors = workspace_executors(args.workspace) if args.workspace is not None else {}
    except ExecutorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    async def serve(gateway: Gateway) -> None:
        if args.transport == "http":
            await serve_http(
                gateway, host=args.host, port=args.port, watch=args.watch, security=security, ready=_announce
            )
        else:
            await serve_stdio(gateway, watch=args.watch)

    try:
        events = (
            EventLog(args.log, include_content=args.log_content, on_sink_error=log_failing(args.log))
            if args.log is not None
            else None
        )
    except OSError as exc:
        print(f"error: cannot open the event log: {exc}", file=sys.stderr)
        return 2

    sessions = session_store(args.session_store)
    if sessions is False:
        return 2

    async def main() -> None:
        def gateway(upstreams: Upstreams | None) -> Gateway:
            return Gateway(
                served,
                args.mode,
                upstreams=upstreams,
                executors=executors,
                events=events,
                search=learned,
                sessions=sessions or None,
            )

        if args.servers is None:  # imported tools are refused, saying that no servers file was given
            await serve(gateway(None))
            return
        async with Upstreams(servers, call_timeout=args.call_timeout, source=args.servers) as upstreams:
            await serve(gateway(upstreams))

    try:
        with contextlib.suppress(KeyboardInterrupt), _gateway_notices(args):  # Ctrl-C is how a user stops a server
            anyio.run(main)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if events is not None and (drops := events.close()).total:
            print(f"# event log {args.log}: {drops_line(drops)}", file=sys.stderr)
    return 0
