"""Reading and writing the expenses file (CSV, one expense a row)."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from datetime import date
from pathlib import Path

from tally.models import Expense, parse_category

DEFAULT_PATH = Path("expenses.csv")
FIELDS = ("day", "amount_cents", "category", "note", "currency")


def db_path() -> Path:
    """The expenses file: ``$TALLY_DB`` if set, else ``expenses.csv`` in the current folder."""
    value = os.environ.get("TALLY_DB", "").strip()
    return Path(value) if value else DEFAULT_PATH


def load(path: Path | None = None) -> list[Expense]:
    """Every expense in the file, oldest first; a missing file holds none."""
    path = path or db_path()
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    expenses = [
        Expense(
            day=date.fromisoformat(row["day"]),
            amount_cents=int(row["amount_cents"]),
            category=parse_category(row["category"]),
            note=row.get("note", ""),
            currency=row.get("currency") or "EUR",
        )
        for row in rows
    ]
    return sorted(expenses, key=lambda e: e.day)


def save(expenses: Iterable[Expense], path: Path | None = None) -> None:
    """Write ``expenses`` to the file, replacing what it held."""
    path = path or db_path()
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        for expense in expenses:
            writer.writerow(
                {
                    "day": expense.day.isoformat(),
                    "amount_cents": expense.amount_cents,
                    "category": expense.category.value,
                    "note": expense.note,
                    "currency": expense.currency,
                }
            )


def append(expense: Expense, path: Path | None = None) -> None:
    """Add one expense to the file."""
    path = path or db_path()
    save([*load(path), expense], path)
