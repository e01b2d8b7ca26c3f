"""Expenses and the categories they fall into."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from enum import StrEnum

DEFAULT_CURRENCY = "EUR"


class Category(StrEnum):
    FOOD = "food"
    RENT = "rent"
    TRAVEL = "travel"
    FUN = "fun"
    OTHER = "other"


def parse_category(text: str) -> Category:
    """The category named by ``text`` (any case, surrounding spaces ignored)."""
    try:
        return Category(text.strip().lower())
    except ValueError:
        raise ValueError(f"unknown category: {text!r}") from None


def parse_amount(text: str) -> int:
    """An amount such as ``12.50`` or ``7`` as whole cents."""
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None
    if value < 0:
        raise ValueError("amount must not be negative")
    cents = value * 100
    if cents != cents.to_integral_value():
        raise ValueError(f"amount has more than two decimals: {text!r}")
    return int(cents)


@dataclass(frozen=True)
class Expense:
    day: date
    amount_cents: int
    category: Category
    note: str = ""
    currency: str = DEFAULT_CURRENCY

    def __post_init__(self) -> None:
        if self.amount_cents < 0:
            raise ValueError("amount must not be negative")

    @property
    def month(self) -> str:
        """The expense's month as ``YYYY-MM``."""
        return f"{self.day.year:04d}-{self.day.month:02d}"

    @classmethod
    def from_text(cls, day: str, amount: str, category: str, note: str = "") -> Expense:
        """An expense from the strings a user types on the command line."""
        return cls(date.fromisoformat(day), parse_amount(amount), parse_category(category), note.strip())
