"""The names of a server's other tools that a text can name: the siblings handed to the lint and the drafts.

The lint reads "call ``x`` first" as the server's own workflow when ``x`` is a tool of the same server (see
:func:`prompt_composer.safety.lint.scan_text`), and the brief drafts tell a sibling's quoted name from a detail.
Both take the server's names as a plain collection and go through all of them for every text, so handing each
of a server's 5,000 tools the other 9,998 names made an import quadratic (over a minute). A
:class:`SiblingIndex` hands each doc only the siblings its texts can name: those all of whose words (``\\w+``,
case-folded) occur among the words of the doc's texts, read both as written and as the lint reads them
(:func:`~prompt_composer.safety.text.normalise`). A name the text cannot spell out can match neither a tool the
lint reads out of it nor a quoted name; a name left out only ever leaves a finding at its own severity (never
lowers one), so the filter cannot hide anything the lint would report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..safety.text import invisible_kind, normalise

_WORD = re.compile(r"\w+")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # what invisible_kind finds in ASCII


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))


def text_words(texts: Iterable[str]) -> set[str]:
    """The case-folded words of ``texts`` as written, without invisible characters (as the drafts read them) and as
    the lint reads them (hidden markup is dropped for a space, which makes no new word)."""
    words: set[str] = set()
    for text in texts:
        words |= _words(text)
        if text.isascii():  # all the lint's normalising does to ASCII is drop control characters
            visible = _ASCII_CONTROL.sub("", text)
            if visible != text:
                words |= _words(visible)
            continue
        visible = "".join(ch for ch in text if invisible_kind(ch) is None or ch in "\t\n\r")
        words |= _words(visible) | _words(normalise(text)[0])
    return words


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value, keys included (the texts of a doc the lint may read)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item)


class SiblingIndex:
    """The tool names of one server, each with the tool (``owner``) it belongs to, looked up by their words."""

    def __init__(self, entries: Iterable[tuple[str, str]]) -> None:
        """``entries``: ``(owner, name)`` pairs, in the order the siblings are handed out (a tool's own name and
        its upstream name both belong to it)."""
        self._entries = list(entries)
        self._words = [_words(name) for _, name in self._entries]
        self._by_word: dict[str, list[int]] = {}
        self._wordless: list[int] = []  # names with no word at all ("--"): handed to every text
        for index, words in enumerate(self._words):
            if words:
                self._by_word.setdefault(max(words, key=len), []).append(index)
            else:
                self._wordless.append(index)

    def among(self, words: set[str], *, owner: str) -> list[str]:
        """The names of tools other than ``owner`` whose words all occur in ``words`` (see :func:`text_words`)."""
        found = set(self._wordless)
        for word in words:
            for index in self._by_word.get(word, ()):
                if self._words[index] <= words:
                    found.add(index)
        return [self._entries[i][1] for i in sorted(found) if self._entries[i][0] != owner]
