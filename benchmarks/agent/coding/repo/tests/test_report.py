from datetime import date

from tally.models import Category, Expense
from tally.report import format_cents, format_table, largest, monthly_totals, summary, total_by_category

EXPENSES = [
    Expense(date(2024, 2, 28), 90000, Category.RENT, "February rent"),
    Expense(date(2024, 3, 2), 1250, Category.FOOD, "lunch"),
    Expense(date(2024, 3, 5), 4599, Category.FUN, "concert"),
    Expense(date(2024, 3, 9), 1250, Category.FOOD, "lunch again"),
]


def test_format_cents() -> None:
    assert format_cents(123456) == "1,234.56 EUR"
    assert format_cents(5, "USD") == "0.05 USD"


def test_total_by_category_lists_every_category() -> None:
    totals = total_by_category(EXPENSES)
    assert totals[Category.FOOD] == 2500
    assert totals[Category.TRAVEL] == 0
    assert set(totals) == set(Category)


def test_monthly_totals_in_order() -> None:
    assert monthly_totals(EXPENSES) == {"2024-02": 90000, "2024-03": 7099}


def test_largest_breaks_ties_by_day() -> None:
    assert [e.note for e in largest(EXPENSES, 3)] == ["February rent", "concert", "lunch"]


def test_format_table_aligns_columns() -> None:
    assert format_table([("a", "1"), ("bbb", "22")]) == "a     1\nbbb  22"


def test_summary_of_one_month() -> None:
    text = summary(EXPENSES, "2024-03")
    assert "rent" not in text
    assert "total" in text and "70.99 EUR" in text
    assert summary([], None) == "No expenses."
