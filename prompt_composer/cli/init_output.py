"""What ``init`` prints for pyproject.toml, and ``init DIR --add-mode SLUG`` (a mode for a folder of imported tools).

``init DIR >> pyproject.toml`` appends what ``init`` prints to the pyproject.toml of the current folder. When that
file already has a ``[tool.prompt-composer]`` table, a second one would make it invalid TOML (and every command
would then fail on it), so nothing is printed to append: stderr says which keys to set in the table instead. A
file that does not end with a newline gets one first, so the table starts on a line of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from pathlib import Path
from typing import TextIO

from ..core.registry import load_registry
from ..errors import InputFileError
from .settings import KEYS, TABLE

TABLE_KEY = TABLE.removeprefix("tool.")


def existing_table(pyproject: Path) -> dict[str, object] | None:
    """The ``[tool.prompt-composer]`` table of ``pyproject`` (``None`` without the file or the table)."""
    if not pyproject.is_file():
        return None
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(f"{pyproject}: cannot read: {exc}", path=pyproject) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError(f"{pyproject}: not valid TOML, so nothing is printed to add to it: {exc}") from None
    tool = data.get("tool")
    table = tool.get(TABLE_KEY) if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else ({} if table is not None else None)


def appending_to(out: TextIO, path: Path) -> bool:
    """Whether ``out`` is the file ``path`` (``init DIR >> pyproject.toml``)."""
    try:
        mine, theirs = os.fstat(out.fileno()), os.stat(path)
    except (OSError, ValueError, AttributeError):
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def print_settings(docs: Path, mode: str, *, cwd: Path | None = None, out: TextIO | None = None) -> None:
    """The ``[tool.prompt-composer]`` lines that make ``docs`` and ``mode`` the defaults, on stdout; or, when the
    current folder's pyproject.toml already has the table, nothing there and on stderr the keys to set in it."""
    out = out if out is not None else sys.stdout
    pyproject = (cwd or Path.cwd()) / "pyproject.toml"
    wanted = {KEYS["docs"]: docs.as_posix(), KEYS["mode"]: mode}
    table = existing_table(pyproject)
    if table is not None:
        unset = {key: value for key, value in wanted.items() if table.get(key) != value}
        if not unset:
            print(f"# {pyproject} already points at {docs.as_posix()} and mode {mode}", file=sys.stderr)
            return
        settings = ", ".join(f"{key} = {json.dumps(value)}" for key, value in unset.items())
        print(
            f"# {pyproject} already has [{TABLE}], so nothing is printed to append (a second table would make it "
            f"invalid TOML): set {settings} in it to use {docs.as_posix()}",
            file=sys.stderr,
        )
        return
    print("# add to pyproject.toml (the docs path is relative to that file's folder):", file=sys.stderr)
    if appending_to(out, pyproject) and not _ends_with_newline(pyproject):
        print(file=out)
    print(f"[{TABLE}]", file=out)
    for key, value in wanted.items():
        print(f"{key} = {json.dumps(value)}", file=out)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as file:
        if file.seek(0, os.SEEK_END) == 0:
            return True
        file.seek(-1, os.SEEK_END)
        return file.read(1) == b"\n"


MODE_TEMPLATE = """\
# A mode for the tools of this folder, written by `prompt-composer init {folder} --add-mode {slug}`.
slug: {slug}
name: {name}
# The role opens the system prompt: say who the agent is and how it works.
role: >-
  You are a careful assistant. Use the tools below when they help, and say plainly when you are unsure.
# The groups of the tools here{writes}.
groups: [{groups}]
# Always sent in full; every other allowed tool is sent as its brief until it is used or fetched.
permanent: []
# recent_size (default 4) and budget_tokens (default 10000) may be set here: `prompt-composer audit` shows the
# worst case of this mode, to choose a budget.
tool_style: native
"""


def cmd_add_mode(args: argparse.Namespace) -> int:
    """``init DIR --add-mode SLUG``: a mode allowing every group of DIR's tool docs (quarantined ones aside)."""
    folder, slug = Path(args.dir), args.add_mode
    registry = load_registry(folder)  # a folder that does not load: its problems, exit 2, nothing written
    path = folder / "modes" / f"{slug}.yaml"
    if slug in registry.modes or path.exists():
        print(f"error: {path} exists: mode {slug!r} is already there; nothing was written", file=sys.stderr)
        return 1
    groups = sorted({doc.group for doc in registry.tools.values() if not doc.quarantined})
    if not groups:
        print(f"error: {folder} has no tool docs a mode could allow; nothing was written", file=sys.stderr)
        return 1
    writing = [g for g in groups if g.endswith("-write") or g in ("edit", "command")]
    text = MODE_TEMPLATE.format(
        folder=folder.as_posix(),
        slug=slug,
        name=slug.replace("-", " ").replace("_", " ").title(),
        groups=", ".join(groups),
        writes=f" ({', '.join(writing)}: tools that change things; drop a group to keep its tools out)"
        if writing
        else "",
    )
    path.parent.mkdir(exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)  # whole or not at all
    try:
        load_registry(folder)
    except Exception:
        path.unlink()  # a mode the folder cannot load is not left behind
        raise
    print(f"# wrote {path}: mode {slug!r}, groups {', '.join(groups)}", file=sys.stderr)
    print_settings(folder, slug)
    return 0
