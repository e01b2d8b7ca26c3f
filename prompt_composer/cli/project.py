"""The project subcommands: ``config`` (every effective setting and where it came from) and ``init`` (a starter
docs folder, and the pyproject.toml lines that point the command at it)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import PromptComposerError
from .settings import DEFAULTS, ENV, KEYS, TABLE, Settings, resolve

LOG_WRITERS = frozenset({"run", "serve"})  # the commands whose --log the event-log setting fills
STARTER_MODE = "helper"  # the one mode of the starter docs (prompt_composer/cli/starter/modes/helper.yaml)


def register(sub: Any) -> None:
    p = sub.add_parser("config", help="print every effective setting and where it came from")
    p.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")
    p.set_defaults(handler=cmd_config)

    p = sub.add_parser("init", help="write a starter tool docs folder and print the pyproject.toml lines for it")
    p.add_argument(
        "dir", nargs="?", default="tool_docs", metavar="DIR", help="the folder to create (default: tool_docs)"
    )
    p.set_defaults(handler=cmd_init)


def settings_of(args: argparse.Namespace) -> Settings:
    """The settings, with this command line's flags first."""
    mode = getattr(args, "mode", None)
    log = getattr(args, "log", None)
    return resolve(
        {
            "docs": getattr(args, "docs", None),
            "mode": mode if isinstance(mode, str) else None,
            "overlay": getattr(args, "overlay", None),
            "event_log": log if isinstance(log, str) else None,
        }
    )


def apply_settings(args: argparse.Namespace) -> None:
    """Fill what the command line left out from the settings: ``args.docs`` and ``args.overlay`` for every
    command that loads a registry, ``args.mode`` where a mode is needed. A needed mode that no setting supplies
    is an error naming the ways to give one."""
    settings = settings_of(args)
    args.docs = settings.docs.value
    args.overlay = settings.overlay.value
    # `bench --results FILE` renders a saved run and needs no mode.
    needs_mode = getattr(args, "mode_from_settings", False) and getattr(args, "results", None) is None
    if needs_mode and args.mode is None:
        if settings.mode.value is None and args.command != "bench":  # bench names every option it lacks itself
            raise PromptComposerError(
                f"{args.command} needs a mode: --mode SLUG, ${ENV['mode']}, or {KEYS['mode']} in [{TABLE}] of "
                "pyproject.toml"
            )
        args.mode = settings.mode.value
    if args.command in LOG_WRITERS and getattr(args, "log", None) is None:
        args.log = settings.event_log.value
    if args.command == "tune" and args.log is None and args.traces is None:  # tune reads one source, or the log
        args.log = settings.event_log.value


def cmd_config(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    if args.format == "json":
        out: dict[str, Any] = {s.name: s.as_dict() for s in settings.all()}
        out["pyproject"] = str(settings.pyproject) if settings.pyproject else None
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    for s in settings.all():
        value = s.value if s.value is not None else f"({DEFAULTS[s.name]})"
        print(f"{s.name}\t{value}\t{s.source}")
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    target = Path(args.dir)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        print(f"error: {target} already exists and is not an empty folder; nothing was written", file=sys.stderr)
        return 1
    starter = resources.files("prompt_composer.cli") / "starter"
    with resources.as_file(starter) as source:
        # Copied to a sibling first and renamed, so an interrupted init leaves no half-written folder.
        partial = target.with_name(f".{target.name}.init-partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(source, partial, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        if target.exists():
            target.rmdir()
        partial.rename(target)
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*.yaml"))
    print(f"# wrote {target}: {', '.join(files)}", file=sys.stderr)
    print("# add to pyproject.toml (the docs path is relative to that file's folder):", file=sys.stderr)
    print(f"[{TABLE}]")
    print(f"docs = {json.dumps(target.as_posix())}")
    print(f'{KEYS["mode"]} = "{STARTER_MODE}"')
    # The servers a user already runs, each with its card (what it is for), in one import.
    print(
        f"# then import the MCP servers of your client's config (.mcp.json, .cursor/mcp.json, .vscode/mcp.json), each "
        f"with its card (servers/<server>.yaml, what it is for):\n#   prompt-composer import mcp --out {target} "
        "--servers .mcp.json --prefix '{server}_'",
        file=sys.stderr,
    )
    return 0
