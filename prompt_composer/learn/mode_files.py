"""Writing a tuned mode setting as YAML: into the mode file, shown as a unified diff, or into a per-user overlay.

Only the ``permanent`` and ``recent_size`` values are regenerated, in place, and every other byte of the file
(other keys, comments, blank lines) stays; a comment *inside* a replaced block list is dropped, one on its last
line stays. :func:`mode_file_diff` shows the change to a mode file; :func:`write_overlay` writes it to a per-user
overlay file (see :class:`~prompt_composer.core.modes.ModeOverlay`) that ``load_registry(overlay=...)`` /
``prompt-composer --overlay FILE`` apply over the shipped modes.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..core.modes import Mode
from ..errors import InputFileError
from ..shared.files import read_text
from .tune import Setting

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _scalar(name: str) -> str:
    """A tool name as YAML: plain when it reads back as the same string (not ``null``, ``yes``, ``1``…)."""
    if _PLAIN.fullmatch(name) and yaml.safe_load(name) == name:
        return name
    return json.dumps(name)  # a JSON string is a YAML double-quoted scalar


def _flow_list(names: Sequence[str]) -> str:
    return "[" + ", ".join(_scalar(n) for n in names) + "]"


def _content_end(node: yaml.Node) -> int:
    """Where a value's own text ends. A block collection's end mark runs to the next key, over the comment and
    blank lines before it; its last item's end does not, so those lines stay."""
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and not node.flow_style and node.value:
        last = node.value[-1]
        return _content_end(last[1] if isinstance(last, tuple) else last)
    return int(node.end_mark.index)


def _top_mapping(text: str, what: str) -> yaml.MappingNode | None:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise InputFileError(f"{what}: invalid YAML: {exc}") from None
    if node is None:
        return None
    if not isinstance(node, yaml.MappingNode) or node.flow_style:
        raise InputFileError(f"{what}: expected a block mapping of keys at the top level")
    return node


def _edit(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        while end > start and text[end - 1] == "\n":  # a block scalar's end includes its newlines: keep them
            end -= 1
        text = text[:start] + new + text[end:]
    return text


def _check(new: str, expected: Any, what: str) -> str:
    """Never hand back text that does not read as intended (an odd layout the in-place edit did not foresee)."""
    if yaml.safe_load(new) != expected:
        raise InputFileError(f"{what}: could not rewrite the file in place; edit it by hand")
    return new


def rewrite_mode_text(text: str, permanent: Sequence[str], recent_size: int, *, what: str = "mode file") -> str:
    """The mode file ``text`` with its ``permanent`` and ``recent_size`` values regenerated in place (flow style),
    every other line kept byte for byte. A missing ``permanent`` key is added before ``recent_size``."""
    node = _top_mapping(text, what)
    if node is None:
        raise InputFileError(f"{what}: the file is empty")
    keys = {str(k.value): (k, v) for k, v in node.value}
    if "recent_size" not in keys:
        raise InputFileError(f"{what}: no recent_size key")
    values = {"permanent": _flow_list(permanent), "recent_size": str(recent_size)}
    edits = []
    for key, value in values.items():
        if key in keys:
            key_node, value_node = keys[key]
            edits.append((int(key_node.end_mark.index), _content_end(value_node), f": {value}"))
    if "permanent" not in keys:
        anchor = int(keys["recent_size"][0].start_mark.index)
        edits.append((anchor, anchor, f"permanent: {values['permanent']}\n"))
    expected = {**yaml.safe_load(text), "permanent": list(permanent), "recent_size": recent_size}
    return _check(_edit(text, edits), expected, what)


def mode_file_diff(mode: Mode, setting: Setting) -> str:
    """The unified diff that puts ``setting`` into ``mode``'s file (empty when nothing changes)."""
    if mode.path is not None and mode.path.is_file():
        name = str(mode.path)
        before = read_text(mode.path, what="mode file")
    else:  # a mode built in memory: diff its configuration as YAML
        name = f"modes/{mode.slug}.yaml"
        before = yaml.safe_dump(mode.config.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    after = rewrite_mode_text(before, setting.permanent, setting.recent_size, what=name)
    return unified_diff(before, after, name)


def unified_diff(before: str, after: str, name: str) -> str:
    """The unified diff from ``before`` to ``after``, both sides named ``name`` (empty when they are equal)."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), name, name))


OVERLAY_HEADER = (
    "# prompt-composer overlay: per-user permanent tools and recent-use sizes, applied over the modes at load\n"
    "# (prompt-composer --overlay FILE, PROMPT_COMPOSER_OVERLAY=FILE, or load_registry(overlay=FILE)).\n"
)


def overlay_text(text: str | None, slug: str, setting: Setting, *, what: str = "overlay file") -> str:
    """An overlay file's ``text`` (None: a new file) with ``slug``'s entry set to ``setting``: the entry's value
    is rewritten in place, every other entry and comment kept; a new entry goes at the end."""
    entry = f"  permanent: {_flow_list(setting.permanent)}\n  recent_size: {setting.recent_size}"
    if text is None:
        text = OVERLAY_HEADER
    node = _top_mapping(text, what)
    data = yaml.safe_load(text) or {}
    expected = {**data, slug: setting.as_dict()}
    keys = {str(k.value): (k, v) for k, v in node.value} if node is not None else {}
    if slug in keys:
        key_node, value_node = keys[slug]
        new = _edit(text, [(int(key_node.end_mark.index), _content_end(value_node), f":\n{entry}")])
    else:
        new = f"{text}{'' if not text or text.endswith(chr(10)) else chr(10)}{_scalar(slug)}:\n{entry}\n"
    return _check(new, expected, what)


def write_overlay(
    path: str | Path, slug: str, setting: Setting, *, validate: Callable[[Path], object] | None = None
) -> str:
    """Set ``slug``'s entry of the overlay file at ``path`` (created if missing), atomically; the new text.

    ``validate`` gets the new file before it replaces the old one (e.g. ``lambda p: load_registry(docs,
    overlay=p)``); if it raises, the old file stays."""
    target = Path(path)
    # Read safely (a FIFO or a device is refused, not replaced by the rename below); InputFileError names it.
    before = read_text(target, what="overlay file") if target.exists() else None
    after = overlay_text(before, slug, setting, what=str(target))
    # Written beside the target and renamed over it, so a crash never leaves half an overlay for the next load.
    fd, temp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(after)
        if before is not None:
            os.chmod(temp, target.stat().st_mode & 0o777)  # mkstemp makes 0600: keep the file's own mode
        if validate is not None:
            validate(Path(temp))
        os.replace(temp, target)
    except OSError as exc:
        raise InputFileError(f"{target}: cannot write overlay: {exc}") from None
    finally:
        Path(temp).unlink(missing_ok=True)  # gone already after the rename
    return after
