"""What ``init`` prints for pyproject.toml, and ``init DIR --add-mode SLUG`` (a mode for a folder of imported tools).

``init DIR >> pyproject.toml`` appends what ``init`` prints to the pyproject.toml of the current folder. When that
file already has a ``[tool.prompt-composer]`` table, a second one would make it invalid TOML (and every command
would then fail on it), so nothing is printed to append: stderr says which keys to set in the table instead. A
file that does not end with a newline gets one first, so the table starts on a line of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import sys
from pathlib import Path
from typing import TextIO

from ..errors import InputFileError
from .settings import KEYS, TABLE, read_pyproject

TABLE_KEY = TABLE.removeprefix("tool.")
# A mode's slug as a mode file must spell it (core.modes.ModeConfig): checked before its name becomes a file name.
SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def existing_table(cwd: Path | None = None) -> dict[str, object] | None:
    """The ``[tool.prompt-composer]`` table of the pyproject.toml in ``cwd`` (the current folder), ``None``
    without the file or the table. The file is read as every pyproject.toml is (capped, a regular file, TOML
    nested within reason); one that cannot be read is an InputFileError, before ``init`` writes anything."""
    pyproject = (cwd or Path.cwd()) / "pyproject.toml"
    if not pyproject.is_file():
        return None
    try:
        data = read_pyproject(pyproject)
    except InputFileError as exc:
        raise InputFileError(f"{exc}; nothing was written", path=pyproject) from None
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


def print_settings(
    docs: Path,
    mode: str,
    *,
    table: dict[str, object] | None,
    cwd: Path | None = None,
    out: TextIO | None = None,
) -> None:
    """The ``[tool.prompt-composer]`` lines that make ``docs`` and ``mode`` the defaults, on stdout; or, when the
    current folder's pyproject.toml already has the table (``table``, read by :func:`existing_table` before
    anything was written), nothing there and on stderr the keys to set in it."""
    out = out if out is not None else sys.stdout
    pyproject = (cwd or Path.cwd()) / "pyproject.toml"
    wanted = {KEYS["docs"]: docs.as_posix(), KEYS["mode"]: mode}
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


def print_import_hint(docs: Path) -> None:
    """On stderr, after the settings: the one command that brings the MCP servers a user already runs into
    ``docs``, each with its card (what the server is for). Two lines, each printed whole: the message stream
    shows a newline inside one write as ``\\n``."""
    print(
        "# then import the MCP servers of your client's config (.mcp.json, .cursor/mcp.json, .vscode/mcp.json), "
        "each with its card (servers/<server>.yaml, what it is for):",
        file=sys.stderr,
    )
    print(
        f"#   prompt-composer import mcp --out {docs.as_posix()} --servers .mcp.json --prefix '{{server}}_'",
        file=sys.stderr,
    )


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
    from ..core.registry import load_registry
    from ..shared.nofollow import UnsafePath, lstat_at, opened_dir

    folder, slug = Path(args.dir), args.add_mode
    if not SLUG.fullmatch(slug):
        print(
            f"error: --add-mode {slug!r}: a mode's slug is lowercase letters, digits, '-' and '_' (at most 64, "
            "starting with a letter or digit); nothing was written",
            file=sys.stderr,
        )
        return 2
    table = existing_table()
    registry = load_registry(folder)  # a folder that does not load: its problems, exit 2, nothing written
    path = folder / "modes" / f"{slug}.yaml"
    groups = sorted({doc.group for doc in registry.tools.values() if not doc.quarantined})
    if slug in registry.modes:
        print(f"error: {path} exists: mode {slug!r} is already there; nothing was written", file=sys.stderr)
        return 1
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
    # DIR is the user's own argument; below it nothing is followed through a symlink (the folder may be a
    # checkout's): modes/ is opened with O_NOFOLLOW, the file is written under a fresh name that cannot already
    # exist and renamed into place, so it is whole or absent and nothing outside modes/ is touched.
    name = f"{slug}.yaml"
    try:
        with opened_dir(os.path.realpath(folder)) as folder_fd:
            made = lstat_at("modes", folder_fd) is None
            if made:
                os.mkdir("modes", 0o777, dir_fd=folder_fd)
            try:
                written = _write_mode(folder, name, text, folder_fd)
            except BaseException:
                if made:  # the modes/ folder this run made goes too
                    with contextlib.suppress(OSError):
                        os.rmdir("modes", dir_fd=folder_fd)
                raise
    except UnsafePath as exc:
        print(f"error: {folder}/{exc}; nothing was written", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {path}: cannot write the mode: {exc.strerror or exc}; nothing was written", file=sys.stderr)
        return 2
    if not written:
        print(f"error: {path} exists: mode {slug!r} is already there; nothing was written", file=sys.stderr)
        return 1
    print(f"# wrote {path}: mode {slug!r}, groups {', '.join(groups)}", file=sys.stderr)
    print_settings(folder, slug, table=table)
    return 0


def _write_mode(folder: Path, name: str, text: str, folder_fd: int) -> bool:
    """Write ``modes/NAME`` under ``folder_fd`` whole, then check that ``folder`` still loads (else remove it and
    raise); ``False`` when something is already at that name (nothing written)."""
    from ..core.registry import load_registry
    from ..shared.nofollow import lstat_at, opened_dir, remove_entry, write_new

    partial = f".{name}.{secrets.token_hex(4)}.partial"
    with opened_dir("modes", folder_fd) as modes_fd:
        if lstat_at(name, modes_fd) is not None:
            return False
        write_new(partial, modes_fd, text.encode("utf-8"))
        try:
            os.rename(partial, name, src_dir_fd=modes_fd, dst_dir_fd=modes_fd)
        except BaseException:
            remove_entry(partial, modes_fd)
            raise
        try:
            load_registry(folder)
        except BaseException:
            remove_entry(name, modes_fd)  # a mode the folder cannot load is not left behind
            raise
    return True
