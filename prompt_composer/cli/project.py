"""The project subcommands: ``config`` (every effective setting and where it came from) and ``init`` (a starter
docs folder, and the pyproject.toml lines that point the command at it)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import PromptComposerError
from .settings import DEFAULTS, ENV, KEYS, SWITCHES, TABLE, Settings, resolve

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
    p.add_argument(
        "--add-mode",
        metavar="SLUG",
        help="instead, add a mode to DIR, an existing docs folder (such as an import's): it allows every group of "
        "DIR's tool docs",
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
            "registry_cache": "off" if getattr(args, "no_cache", None) else None,
        }
    )


def apply_settings(args: argparse.Namespace) -> None:
    """Fill what the command line left out from the settings: ``args.docs`` and ``args.overlay`` for every
    command that loads a registry, ``args.mode`` where a mode is needed. A needed mode that no setting supplies
    is an error naming the ways to give one."""
    settings = settings_of(args)
    args.docs = settings.docs.value
    args.overlay = settings.overlay.value
    switch = (settings.registry_cache.value or "on").strip().lower()
    if switch not in SWITCHES:
        raise PromptComposerError(
            f"the registry-cache setting ({settings.registry_cache.source}) is on or off, not "
            f"{settings.registry_cache.value!r}"
        )
    args.cache = SWITCHES[switch]
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
    from .init_output import cmd_add_mode, existing_table, print_import_hint, print_settings

    if args.add_mode is not None:
        return cmd_add_mode(args)
    target = Path(args.dir)
    table = existing_table()  # a pyproject.toml here that cannot be read is an error before anything is written
    try:
        code = _init(target)
    except OSError as exc:
        reason = exc.strerror or exc
        print(f"error: {target}: cannot write the starter docs: {reason}; nothing was written", file=sys.stderr)
        return 2
    if code == 0:
        print_settings(target, STARTER_MODE, table=table)
        print_import_hint(target)
    return code


def _init(target: Path) -> int:
    """Write the starter folder at ``target``: a new folder, or an empty one filled in place. Everything is built
    in a staging folder this run makes (a fresh name, never an existing one) and moved into place at the end; on
    any failure what this run made is removed, and nothing else is touched."""
    whole = Path(os.path.abspath(target))
    too_long = next((part for part in whole.parts if len(os.fsencode(part)) > 255), None)
    if too_long is not None:
        print(f"error: {target}: a folder name of {len(os.fsencode(too_long))} bytes; at most 255", file=sys.stderr)
        return 2
    if target.is_symlink():
        print(f"error: {target} is a symlink; init writes a real folder (name the folder itself)", file=sys.stderr)
        return 2
    if os.path.lexists(target) and (not target.is_dir() or any(target.iterdir())):
        print(f"error: {target} already exists and is not an empty folder; nothing was written", file=sys.stderr)
        return 1
    in_place = target.is_dir()  # an empty folder (`init .`) is filled where it is: its inode is the user's
    made = [] if in_place else _make_parents(whole.parent)
    home = whole if in_place else whole.parent
    staging = home / f".prompt-composer-init-{os.urandom(4).hex()}"
    moved: list[Path] = []
    try:
        os.mkdir(staging)
        starter = resources.files("prompt_composer.cli") / "starter"
        with resources.as_file(starter) as source:
            shutil.copytree(source, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        if in_place:
            for name in sorted(os.listdir(staging)):
                os.rename(staging / name, whole / name)
                moved.append(whole / name)
            os.rmdir(staging)
        else:
            os.rename(staging, whole)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # this run's own staging folder, and what it moved: nothing else
        for path in moved:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    files = sorted(p.relative_to(whole).as_posix() for p in whole.rglob("*.yaml"))
    print(f"# wrote {target}: {', '.join(files)}", file=sys.stderr)
    return 0


def _make_parents(folder: Path) -> list[Path]:
    """Make ``folder`` and its missing parents; the ones made, outermost first (removed again on a failure)."""
    missing = []
    for path in (folder, *folder.parents):
        if os.path.lexists(path):
            break
        missing.append(path)
    made = []
    try:
        for path in reversed(missing):
            os.mkdir(path)
            made.append(path)
    except BaseException:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    return made
