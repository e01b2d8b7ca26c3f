"""The folder an import writes to: loading what is there, the import state, and writing files all at once.

What the importers wrote last time is recorded in ``<folder>/.import-state.json``: per tool doc, its origin, its
group and a hash of the brief and of the full text as written (see :mod:`.plan`), and per mode a hash of its file
and of what it was made from (see :mod:`.roomodes`). Files are written to a staging folder and moved into place
only when everything is valid, through the journal of :mod:`prompt_composer.shared.journal`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.registry import Registry, load_registry
from ..errors import ImporterError, InputFileError, LoadError
from ..shared.files import read_text
from ..shared.journal import recover, write_all
from ..shared.jsontext import JsonDataError, strict_json

STATE_FILE = ".import-state.json"
STATE_VERSION = 1


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_output_folder(out: Path) -> Registry | None:
    """The registry already in an import's output folder (``None`` if the folder does not exist yet). Read only:
    an interrupted earlier import is recovered by :func:`recover_output_folder` first (not in a dry run)."""
    if not out.exists():
        return None
    if not out.is_dir():
        raise ImporterError(f"{out}: the output path exists and is not a folder")
    try:
        return load_registry(out)
    except LoadError as exc:
        raise ImporterError(f"the output folder does not load: {exc.summary()}") from None


def recover_output_folder(out: str | Path) -> None:
    """Finish or undo an interrupted earlier import into ``out`` (one this tool wrote; another is refused, see
    :mod:`prompt_composer.shared.journal`) before a new import reads the folder."""
    recover(out)


def empty_state() -> dict[str, Any]:
    return {"version": STATE_VERSION, "tools": {}, "modes": {}}


def read_state(out: Path) -> dict[str, Any]:
    """What the importers wrote into ``out`` last time (see the module docstring), checked: a state file that is
    not what an importer writes is an :class:`ImporterError` naming the file and the first thing wrong in it."""
    path = out / STATE_FILE
    if not os.path.lexists(path):
        return empty_state()
    try:
        data = strict_json(read_text(path, what="import state"))
    except InputFileError as exc:
        raise ImporterError(str(exc)) from None
    except JsonDataError as exc:
        raise ImporterError(f"{path}: unreadable import state: {exc}; {_REMOVE}") from None
    if not isinstance(data, dict) or type(data.get("version")) is not int or data["version"] != STATE_VERSION:
        raise ImporterError(f"{path}: unknown import state version; {_REMOVE}")
    data.setdefault("tools", {})
    data.setdefault("modes", {})
    problem = _state_problem(data)
    if problem:
        raise ImporterError(f"{path}: unreadable import state: {problem}; {_REMOVE}")
    return data


_REMOVE = "remove the file to treat every doc as edited"
# What a tool's record holds (see plan.py): text hashes and names, each a string (or null: written by an older
# version, or a record kept for an edit).
_TOOL_FIELDS = ("server", "name", "brief", "full", "group")


def _kind(value: Any) -> str:
    return (
        "null"
        if value is None
        else {dict: "an object", list: "a list", str: "a string", bool: "true or false"}.get(type(value), "a number")
    )


def _state_problem(data: Mapping[str, Any]) -> str | None:
    """The first thing in an import state that is not as the importers write it, or ``None``."""
    for key in ("tools", "modes"):
        if not isinstance(data[key], dict):
            return f"{key!r} is {_kind(data[key])}, not an object"
    for name, record in data["tools"].items():
        if not isinstance(record, dict):
            return f"tools.{name!r} is {_kind(record)}, not an object"
        for field in _TOOL_FIELDS:
            if field in record and not isinstance(record[field], str | None):
                return f"tools.{name!r}.{field} is {_kind(record[field])}, not a string"
        scan = record.get("scan")
        if scan is None:
            continue
        if not isinstance(scan, dict):
            return f"tools.{name!r}.scan is {_kind(scan)}, not an object"
        if not isinstance(scan.get("upstream"), str | None):
            return f"tools.{name!r}.scan.upstream is {_kind(scan['upstream'])}, not a string"
        rules = scan.get("quarantine", [])
        if not isinstance(rules, list) or not all(isinstance(rule, str) for rule in rules):
            return f"tools.{name!r}.scan.quarantine is not a list of rule ids"
    for slug, record in data["modes"].items():  # a bare string is an older, text-only record (roomodes.py)
        if isinstance(record, dict):
            bad = [f for f in ("text", "source") if not isinstance(record.get(f), str | None)]
            if bad:
                return f"modes.{slug!r}.{bad[0]} is {_kind(record[bad[0]])}, not a string"
        elif not isinstance(record, str):
            return f"modes.{slug!r} is {_kind(record)}, not an object"
    return None


def state_text(state: Mapping[str, Any]) -> str:
    """The import state file's text."""
    return json.dumps(state, indent=2, ensure_ascii=False) + "\n"


def files_summary(files: Mapping[str, str], out: Path, *, dry_run: bool) -> str:
    """The last line of an import report: how many files were (or would be) written."""
    written = [p for p in files if p != STATE_FILE]
    if dry_run:
        return f"dry run: would write {len(written)} file(s) to {out}; nothing written"
    return f"wrote {len(written)} file(s) to {out}"


def _no_check(doing: str) -> None:
    return None


def write_files(out: Path, files: Mapping[str, str], *, check: Callable[[str], None] = _no_check) -> None:
    """Write ``files`` (relative path → text) under ``out`` all at once, through a journal (see
    :mod:`prompt_composer.shared.journal`): killed at any moment, the folder is the old one or the new one once
    :func:`~prompt_composer.shared.journal.recover` has run (the next import, or ``import --recover``).

    ``check`` (a deadline's) is called before each file is staged and once more before the commit: if it raises,
    the staging folder is removed and nothing has been written.
    """
    if not files:
        return
    write_all(out, files, check=check)
