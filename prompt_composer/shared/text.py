"""Plain-text output shared by the commands and reports: counted nouns, aligned tables, and outside strings made
safe to show.

Outside strings (paths, tool and mode names, values read from files) reach a terminal, a CI log and Markdown.
:func:`visible` writes their control characters as escapes (``\\x1b``, ``\\n``), so an escape sequence cannot
recolour, hide or overwrite what the terminal shows and a newline cannot start a line of its own; :func:`shown`
also keeps them from being read as a CI runner's workflow command; :func:`md_cell` makes them literal Markdown.
"""

from __future__ import annotations

from collections.abc import Sequence

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    cp = ord(ch)
    return f"\\x{cp:02x}" if cp <= 0xFF else f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def visible(text: str) -> str:
    """``text`` with every character Python's ``repr`` would escape written as its escape: control characters
    (``\\x1b``, ``\\n``, ``\\r``, ``\\t``, C1 controls), format characters (bidirectional overrides,
    zero-width ones), separators other than the space, and lone surrogates (a file name that is not UTF-8).
    Backslashes stay as they are: this is for reading, not for parsing back."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else _escape(ch) for ch in text)


def shown(text: str) -> str:
    """:func:`visible`, and unable to act as a GitHub Actions workflow command, which the runner reads from every
    line a step prints: a line that starts with ``::`` (after leading whitespace) and ``##[`` anywhere in it.
    Their first character is written as an escape (``\\x3a:error::``, ``#\\x23[``)."""
    text = visible(text).replace("##[", "#\\x23[")
    stripped = text.lstrip(" ")
    if stripped.startswith("::"):
        text = text[: len(text) - len(stripped)] + "\\x3a" + stripped[1:]
    return text


_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\|`*[]"} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def md_cell(text: str) -> str:
    """``text`` as literal Markdown inline text on one line (a table cell, a heading): :func:`shown`, then
    backslash-escaped where Markdown would read it (``|`` ends a cell; ``` ` ```, ``*``, ``[``, ``]`` start code,
    emphasis or a link; ``\\`` escapes) and ``&``, ``<``, ``>`` as HTML entities (GitHub renders a raw tag)."""
    return shown(text).translate(_MARKDOWN)


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 tool``, ``2 tools``, ``12,000 lines``; ``plural_form`` for irregular nouns (``plural(n, "entry",
    "entries")``)."""
    return f"{count:,} {noun if count == 1 else plural_form or noun + 's'}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, markdown: bool, left: int = 1) -> list[str]:
    """The lines of a table whose first ``left`` columns are text (left-aligned) and the rest numbers
    (right-aligned): a Markdown table, or columns padded with spaces under a rule of dashes. Cells may hold outside
    strings: each is :func:`md_cell` in Markdown, :func:`shown` otherwise."""
    rows = [[md_cell(c) if markdown else shown(c) for c in row] for row in rows]
    if markdown:
        rule = "|" + "|".join("---" if i < left else "---:" for i in range(len(headers))) + "|"
        return ["| " + " | ".join(headers) + " |", rule, *("| " + " | ".join(row) + " |" for row in rows)]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        padded = (c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
        return "  ".join(padded).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]
