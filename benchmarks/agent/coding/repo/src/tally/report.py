"""Totals and tables over a list of expenses."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from tally.models import DEFAULT_CURRENCY, Category, Expense


def format_cents(cents: int, currency: str = DEFAULT_CURRENCY) -> str:
    """``123456`` → ``1,234.56 EUR``."""
    return f"{cents // 100:,}.{cents % 100:02d} {currency}"


def total_by_category(expenses: Iterable[Expense]) -> dict[Category, int]:
    """Cents spent per category, every category present (zero when unused)."""
    totals = dict.fromkeys(Category, 0)
    for expense in expenses:
        totals[expense.category] += expense.amount_cents
    return totals


def monthly_totals(expenses: Iterable[Expense]) -> dict[str, int]:
    """Cents spent per month (``YYYY-MM``), months in order."""
    totals: dict[str, int] = defaultdict(int)
    for expense in expenses:
        totals[expense.month] += expense.amount_cents
    return dict(sorted(totals.items()))


def largest(expenses: Iterable[Expense], count: int = 3) -> list[Expense]:
    """The ``count`` largest expenses, largest first (ties: earliest first)."""
    return sorted(expenses, key=lambda e: (-e.amount_cents, e.day))[:count]


def in_month(expenses: Iterable[Expense], month: str) -> list[Expense]:
    """The expenses of one month (``YYYY-MM``)."""
    return [e for e in expenses if e.month == month]


def format_table(rows: Sequence[tuple[str, str]], headers: tuple[str, str] = ("", "")) -> str:
    """Two columns, the first left-aligned and the second right-aligned."""
    all_rows = [headers, *rows] if any(headers) else list(rows)
    if not all_rows:
        return ""
    left = max(len(r[0]) for r in all_rows)
    right = max(len(r[1]) for r in all_rows)
    return "\n".join(f"{a.ljust(left)}  {b.rjust(right)}" for a, b in all_rows)


def summary(expenses: Sequence[Expense], month: str | None = None) -> str:
    """The text of ``tally report``: totals per category, then the largest expenses."""
    chosen = in_month(expenses, month) if month else list(expenses)
    if not chosen:
        return "No expenses."
    totals = total_by_category(chosen)
    rows = [(c.value, format_cents(cents)) for c, cents in totals.items() if cents]
    rows.append(("total", format_cents(sum(totals.values()))))
    lines = [format_table(rows, ("category", "spent")), "", "Largest:"]
    lines += [f"  {e.day}  {format_cents(e.amount_cents, e.currency)}  {e.note}".rstrip() for e in largest(chosen)]
    return "\n".join(lines)
