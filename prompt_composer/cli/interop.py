"""Import subcommands: ``import mcp``, ``import json``, ``import roomodes``.

Each is all or nothing: on bad input nothing is written, one line goes to stderr and the exit code is 2. SIGINT
and SIGTERM stop an import at once (exit 130 and 143) with the docs folder as it was, or, when the signal came
during the final renames, with the whole import applied; the stderr line says which. A killed import is finished
or undone by the next import into the folder, or by ``import --recover --docs DIR``; commands that only read the
folder never touch it (see :mod:`prompt_composer.shared.journal`).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ..errors import PromptComposerError
from ..shared.journal import (
    Interrupted,
    applied_writes,
    clear_interrupted,
    discard,
    interrupt,
    interrupted_by,
    recover,
    stop_if_interrupted,
)
from ._common import say_recovered


def register(sub: Any) -> None:
    p = sub.add_parser("import", help="import tool docs (MCP server, JSON tool list) or Roo Code modes")
    p.add_argument(
        "--recover",
        action="store_true",
        help="instead of importing: complete or undo an interrupted import into --docs DIR (only one this tool "
        "recorded writing; another staging folder is refused)",
    )
    p.add_argument(
        "--discard",
        action="store_true",
        help="with --recover: delete every staging folder of --docs DIR without applying it, whoever wrote it "
        "(never following a symlink)",
    )
    p.add_argument("--docs", metavar="DIR", default=argparse.SUPPRESS, help="the docs folder of --recover")
    p.set_defaults(handler=cmd_import_recover, import_kind=None)
    kinds = p.add_subparsers(dest="import_kind", required=False, metavar="SOURCE")

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--out", required=True, metavar="DIR", help="tool docs folder to write (created if missing)")
        q.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
        q.add_argument(
            "--format", choices=("text", "json"), default="text", help="the report as text (default) or json"
        )

    def tool_options(q: argparse.ArgumentParser) -> None:
        common(q)
        q.add_argument("--group", default="mcp", help="group of new read-only tool docs (default: mcp)")
        q.add_argument(
            "--write-group",
            default=None,
            metavar="W",
            help="group of new tool docs that write or delete, or may (default: the --group value + '-write', e.g. "
            "mcp-write); --write-group mcp puts them beside the read-only ones",
        )
        q.add_argument("--prefix", default="", help="prepend this to every tool name (avoids clashes)")

    def card_options(q: argparse.ArgumentParser) -> None:
        q.add_argument(
            "--server-description",
            default=None,
            metavar="TEXT",
            help="what the server is for, one to three sentences: its card (servers/<server>.yaml), which search, "
            "catalogs and the gateway read (default: what the server says of itself, else drafted from its tools)",
        )
        q.add_argument("--server-title", default=None, metavar="TITLE", help="the server's title on its card")

    q = kinds.add_parser(
        "mcp",
        help="start an MCP server over stdio (or every server of a client's config) and import its tools",
        usage="prompt-composer import mcp --out DIR [--group G] [--write-group W] [--prefix P] [--timeout S] "
        "[--server NAME] [--server-description TEXT] [--dry-run] -- COMMAND [ARGS...]\n"
        "       prompt-composer import mcp --out DIR --servers FILE [--prefix P] [--timeout S] [--dry-run]",
    )
    tool_options(q)
    card_options(q)
    q.add_argument(
        "--servers",
        default=None,
        metavar="FILE",
        help="import every enabled server of an MCP client's config in one import: mcpServers (Claude Code's "
        ".mcp.json, Cursor, Claude Desktop) or VS Code's servers (.vscode/mcp.json); stdio and Streamable HTTP. "
        "Each server's key is its name; --prefix '{server}_' prefixes each server's tools with it",
    )
    q.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="bound on the whole import: start, listing, drafting, scanning and writing (default 30)",
    )
    q.add_argument("--server", default=None, help="origin server name (default: the name the server reports)")
    q.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS", help="the server command")
    q.set_defaults(handler=_interruptible(cmd_import_mcp))

    q = kinds.add_parser("json", help="import an Anthropic, OpenAI or MCP tools/list JSON tool list")
    q.add_argument("file", help="the JSON tool list")
    tool_options(q)
    q.add_argument("--server", default=None, help="origin server name (default: the file's stem)")
    card_options(q)
    q.add_argument(
        "--server-card",
        default=None,
        metavar="SERVER_JSON",
        help="the server's entry in the MCP registry (server.json): its title and description make the card",
    )
    q.set_defaults(handler=_interruptible(cmd_import_json))

    q = kinds.add_parser("roomodes", help="import Roo Code custom modes (.roomodes, YAML or JSON) as mode files")
    q.add_argument("file", help="the .roomodes file (YAML or JSON)")
    common(q)
    q.add_argument("--permanent", default="", help="comma-separated tools kept in full (where a mode allows them)")
    q.add_argument("--recent-size", type=int, default=6, help="recent-use FIFO length (default 6)")
    q.add_argument(
        "--budget-tokens",
        type=int,
        default=None,
        help="token budget, at least each mode's worst case (default: the worst case, rounded up)",
    )
    q.add_argument(
        "--replace",
        action="store_true",
        help="replace mode files a person wrote or edited when the .roomodes defines the same slug, as Roo Code "
        "does (unedited built-in and imported modes are replaced without it)",
    )
    q.set_defaults(handler=_interruptible(cmd_import_roomodes))


_CANCEL_GRACE = 5.0  # seconds the listing has, once its tasks are cancelled, to end before its loop is stopped


def _cancel_all(loop: Any) -> None:
    import asyncio

    for task in asyncio.all_tasks(loop):
        task.cancel()


@contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` (SIGTERM would otherwise end the process with no clean-up)."""

    import asyncio

    def handler(signum: int, frame: FrameType | None) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            interrupt(signum)
            return
        # Inside the MCP SDK's event loop (import mcp listing a server) an exception raised here lands in a
        # callback and is swallowed; cancelling the loop's tasks is what stops the listing at once. Through
        # call_soon_threadsafe, which wakes the loop: a handler runs while the loop waits in select(), which Python
        # resumes after it, so a cancel scheduled with call_soon would wait for the server's next byte, or for the
        # --timeout (an import waiting on a slow server did, 300 s).
        interrupt(signum, raise_now=False)
        loop.call_soon_threadsafe(_cancel_all, loop)
        # A cancellation the SDK absorbs (a shielded clean-up waiting on the server) must not keep the import
        # running: past a grace period the loop is stopped, and the import ends as interrupted (see run below).
        loop.call_soon_threadsafe(loop.call_later, _CANCEL_GRACE, loop.stop)

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous_hook = sys.unraisablehook

    def unraisable(info: Any) -> None:
        # A signal that lands while Python runs a weakref callback or a __del__ (an import lock's, mid-import) has
        # its Interrupted printed as "Exception ignored in …" with a traceback. interrupt() recorded it, and the
        # import's next checkpoint raises it again: the one line it then prints is the whole story.
        if not isinstance(info.exc_value, Interrupted):
            previous_hook(info)

    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for sig, previous in old.items():
            signal.signal(sig, previous)


def cmd_import_recover(args: argparse.Namespace) -> int:
    """``import --recover --docs DIR [--discard]`` (``import`` without a SOURCE lands here too)."""
    if args.discard and not args.recover:
        raise PromptComposerError("--discard goes with --recover: import --recover --discard --docs DIR")
    if not args.recover:
        raise PromptComposerError(
            "import needs a SOURCE (mcp, json or roomodes), or --recover --docs DIR to finish an interrupted import"
        )
    if args.docs is None:
        raise PromptComposerError("import --recover needs --docs DIR: the folder the interrupted import wrote to")
    done = discard(args.docs) if args.discard else recover(args.docs)
    say_recovered(done)
    if not done:
        print(f"{args.docs}: no interrupted import to {'discard' if args.discard else 'recover'}", file=sys.stderr)
    return 0


def _interruptible(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        import asyncio

        if args.recover or args.discard:
            raise PromptComposerError("--recover and --discard go without a SOURCE: import --recover --docs DIR")
        before = applied_writes()
        try:
            with _signals_raise():
                if not args.dry_run:
                    say_recovered(recover(args.out))
                code = command(args)
                stop_if_interrupted()  # a signal whose exception Python swallowed after the last checkpoint
                return code
        except (Interrupted, asyncio.CancelledError, RuntimeError) as exc:
            # RuntimeError: the event loop stopped by the signal handler's grace period ("Event loop stopped
            # before Future completed"); without a signal delivered, any RuntimeError is raised as it was.
            signum = exc.signum if isinstance(exc, Interrupted) else interrupted_by()
            if signum is None:
                raise
            clear_interrupted()
            # The signal may land while the MCP SDK has created coroutines it never started: collected at exit,
            # each would print "coroutine ... was never awaited" after the one line that says what happened.
            warnings.filterwarnings("ignore", message=r"coroutine .* was never awaited", category=RuntimeWarning)
            name = signal.Signals(signum).name
            if (isinstance(exc, Interrupted) and exc.applied) or applied_writes() > before:
                print(f"interrupted by {name} after the import was applied: {args.out} holds it", file=sys.stderr)
            else:
                print(f"interrupted by {name}: nothing written; {args.out} is as it was", file=sys.stderr)
            return 128 + signum

    return run


def _print(lines: list[str]) -> int:
    for line in lines:
        print(line)
    return 0


def cmd_import_mcp(args: argparse.Namespace) -> int:
    from ..importers.from_mcp import import_mcp
    from . import json_out

    command = list(args.server_command)
    if command and command[0] == "--":
        command = command[1:]
    if args.servers is not None:
        return _import_servers(args, command)
    plan = import_mcp(
        command,
        args.out,
        server=args.server,
        group=args.group,
        write_group=args.write_group,
        prefix=args.prefix,
        timeout=args.timeout,
        dry_run=args.dry_run,
        server_description=args.server_description,
        server_title=args.server_title,
    )
    if args.format == "json":
        return _print([json_out.dumps(json_out.tool_import("mcp", plan, dry_run=args.dry_run))])
    return _print(plan.report(dry_run=args.dry_run))


def _import_servers(args: argparse.Namespace, command: list[str]) -> int:
    """``import mcp --servers FILE``: every server of a client's config (see :mod:`..importers.servers_file`)."""
    given = [flag for flag, value in (("a command", command), ("--server", args.server)) if value]
    given += [
        f for f, v in (("--server-description", args.server_description), ("--server-title", args.server_title)) if v
    ]
    if given:
        print(f"error: --servers imports each server of the file under its own name and card: drop {', '.join(given)}",
              file=sys.stderr)  # fmt: skip
        return 2
    from ..importers.servers_file import import_mcp_servers
    from . import json_out

    plan = import_mcp_servers(
        args.servers,
        args.out,
        group=args.group,
        write_group=args.write_group,
        prefix=args.prefix,
        timeout=args.timeout,
        dry_run=args.dry_run,
    )
    if args.format == "json":
        return _print([json_out.dumps(json_out.servers_import(plan, dry_run=args.dry_run))])
    return _print(plan.report(dry_run=args.dry_run))


def cmd_import_json(args: argparse.Namespace) -> int:
    from ..importers.from_json import import_json
    from . import json_out

    plan = import_json(
        args.file,
        args.out,
        server=args.server,
        group=args.group,
        write_group=args.write_group,
        prefix=args.prefix,
        dry_run=args.dry_run,
        server_description=args.server_description,
        server_title=args.server_title,
        server_card=args.server_card,
    )
    if args.format == "json":
        return _print([json_out.dumps(json_out.tool_import("json", plan, dry_run=args.dry_run))])
    return _print(plan.report(dry_run=args.dry_run))


def cmd_import_roomodes(args: argparse.Namespace) -> int:
    from ..importers.roomodes import RooModesError, import_roomodes
    from . import json_out

    permanent = [n.strip() for n in args.permanent.split(",") if n.strip()]
    try:
        plan = import_roomodes(
            args.file,
            args.out,
            permanent=permanent,
            recent_size=args.recent_size,
            budget_tokens=args.budget_tokens,
            replace=args.replace,
            dry_run=args.dry_run,
        )
    except RooModesError as exc:  # every problem of the file and the options, one line each
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.format == "json":
        return _print([json_out.dumps(json_out.mode_import(plan, dry_run=args.dry_run))])
    return _print(plan.report(dry_run=args.dry_run))
