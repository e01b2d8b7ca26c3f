"""Plain-text output shared by the commands and reports: counted nouns and aligned tables."""

from __future__ import annotations

from collections.abc import Sequence


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 tool``, ``2 tools``, ``12,000 lines``; ``plural_form`` for irregular nouns (``plural(n, "entry",
    "entries")``)."""
    return f"{count:,} {noun if count == 1 else plural_form or noun + 's'}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, markdown: bool, left: int = 1) -> list[str]:
    """The lines of a table whose first ``left`` columns are text (left-aligned) and the rest numbers
    (right-aligned): a Markdown table, or columns padded with spaces under a rule of dashes."""
    if markdown:
        rule = "|" + "|".join("---" if i < left else "---:" for i in range(len(headers))) + "|"
        return ["| " + " | ".join(headers) + " |", rule, *("| " + " | ".join(row) + " |" for row in rows)]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        padded = (c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
        return "  ".join(padded).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]
