from datetime import date
from pathlib import Path

import pytest
from tally import storage
from tally.models import Category, Expense


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "db.csv"
    expenses = [Expense(date(2024, 3, 2), 1250, Category.FOOD, "lunch, with Sam")]
    storage.save(expenses, path)
    assert storage.load(path) == expenses


def test_missing_file_is_empty(tmp_path: Path) -> None:
    assert storage.load(tmp_path / "nothing.csv") == []


def test_append_keeps_days_in_order(tmp_path: Path) -> None:
    path = tmp_path / "db.csv"
    storage.append(Expense(date(2024, 3, 9), 100, Category.OTHER), path)
    storage.append(Expense(date(2024, 3, 1), 200, Category.OTHER), path)
    assert [e.day.day for e in storage.load(path)] == [1, 9]


def test_db_path_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TALLY_DB", str(tmp_path / "mine.csv"))
    assert storage.db_path() == tmp_path / "mine.csv"
    monkeypatch.delenv("TALLY_DB")
    assert storage.db_path() == storage.DEFAULT_PATH
