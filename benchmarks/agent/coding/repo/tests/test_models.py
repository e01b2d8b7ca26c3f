from datetime import date

import pytest
from tally.models import Category, Expense, parse_amount, parse_category


def test_amounts_are_whole_cents() -> None:
    assert parse_amount("12.50") == 1250
    assert parse_amount("7") == 700
    assert parse_amount(" 0.05 ") == 5


@pytest.mark.parametrize(
    ("text", "message"), [("abc", "not an amount"), ("-1", "negative"), ("1.005", "more than two decimals")]
)
def test_bad_amounts_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_amount(text)


def test_categories_ignore_case() -> None:
    assert parse_category(" Food ") is Category.FOOD
    with pytest.raises(ValueError, match="unknown category"):
        parse_category("snacks")


def test_expense_from_text() -> None:
    expense = Expense.from_text("2024-03-02", "12.50", "food", " lunch ")
    assert expense == Expense(date(2024, 3, 2), 1250, Category.FOOD, "lunch")
    assert expense.month == "2024-03"
    assert expense.currency == "EUR"
