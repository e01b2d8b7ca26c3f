"""Mode-clean prompts: doc text shown in a mode must not name a tool the mode does not allow.

A brief, a full text, a hint, a parameter description or a group's workflow that says "use search_files" tells the
model to call a tool it cannot call, in every mode that shows that text without allowing that tool. The audit
reports each such mention (:func:`foreign_mentions`) for the shipped docs, imported ones and the user's own;
``validate`` makes each an error of the mode (:func:`mention_problems`), and the CLI commands that compose a mode
refuse one that has any (docs/tool-docs-and-modes.md says why refusing rather than cutting the name out).

A mention is a tool's name in backticks, or written bare when the name is an identifier no prose word would be
(it has ``_``, ``-``, a digit or an inner capital: ``search_files``, ``browser_navigate``); a bare plain word
(``glob``) is not counted, since prose uses it for other things ("a glob pattern").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Problem
from .composer import Composer
from .modes import Mode

_CODE_SPAN = re.compile(r"`([^`\n]+)`")


@dataclass(frozen=True)
class ForeignMention:
    """``where`` (a doc field, a group workflow or the system prompt) shown in ``mode`` names ``tool``."""

    mode: str
    where: str
    tool: str

    def __str__(self) -> str:
        return f"mode {self.mode!r}: {self.where} names {self.tool!r}, a tool the mode does not allow"


def _distinctive(name: str) -> bool:
    return any(c in name for c in "_-") or any(c.isdigit() for c in name) or any(c.isupper() for c in name[1:])


_RUN = re.compile(r"[\w-]+")


class _Names:
    """Tool names, looked up in a text by its words: linear in the text, whatever the number of names (a regex
    per name and text made the audit of a 5,000-tool registry take hours)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        distinctive = {name for name in self.names if _distinctive(name)}
        # A name made of word characters and "-" (every valid tool name) stands bare exactly where it is a whole
        # run of them; any other name is looked for with its own regex.
        self.bare = frozenset(name for name in distinctive if _RUN.fullmatch(name))
        self.other = sorted(distinctive - self.bare)

    def in_text(self, text: str) -> set[str]:
        found = {span.strip() for span in _CODE_SPAN.findall(text)} & self.names
        found |= self.bare.intersection(_RUN.findall(text))
        found.update(n for n in self.other if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text))
        return found


def named_tools(text: str, names: Iterable[str]) -> set[str]:
    """The tools of ``names`` that ``text`` mentions (see the module docstring)."""
    return _Names(names).in_text(text)


def _schema_texts(schema: Any) -> Iterator[str]:
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if key in ("description", "title") and isinstance(value, str):
                yield value
            else:
                yield from _schema_texts(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _schema_texts(item)


def _shown_texts(composer: Composer, mode: Mode) -> Iterator[tuple[str, str]]:
    """Every text the model may see in ``mode``: the system prompt, each allowed tool's texts (a brief tool's full
    text is one fetch or one use away) and the workflow of each group whose tools tool_search may return."""
    registry = composer.registry
    yield "the system prompt", composer.compose(mode, recent=()).system
    groups: dict[str, None] = {}
    for name in mode.allowed:
        doc = registry.tools[name]
        groups[doc.group] = None
        yield f"{name}'s brief", doc.brief
        yield f"{name}'s full text", doc.full
        if doc.hint:
            yield f"{name}'s hint", doc.hint
        for text in _schema_texts(doc.input_schema):
            yield f"{name}'s input schema", text
    for group in groups:
        if group in registry.groups:
            yield f"the {group} group's workflow", registry.groups[group].workflow


def foreign_mentions(composer: Composer, mode: Mode) -> list[ForeignMention]:
    """Each (text, tool) where a text shown in ``mode`` names a registry tool the mode does not allow."""
    foreign = _Names(name for name in composer.registry.tools if not mode.allows(name))
    if not foreign.names:  # the mode allows every tool: no text can name one it lacks
        return []
    found: dict[tuple[str, str], None] = {}
    for where, text in _shown_texts(composer, mode):
        for tool in sorted(foreign.in_text(text)):
            found[(where, tool)] = None
    return [ForeignMention(mode.slug, where, tool) for where, tool in found]


def mention_problems(composer: Composer, mode: Mode) -> list[Problem]:
    """:func:`foreign_mentions` as problems of the mode's file: each names the text, the tool it names, and the
    two ways out."""
    path = mode.path or Path(f"<mode {mode.slug}>")
    return [
        Problem(
            path,
            1,
            f"mode {mode.slug!r} shows {m.where}, which names {m.tool!r}, a tool the mode does not allow: add "
            f"{m.tool!r} to the mode (include:), or remove the mention from the text",
        )
        for m in foreign_mentions(composer, mode)
    ]
