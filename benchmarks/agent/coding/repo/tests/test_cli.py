from pathlib import Path

import pytest
from tally.cli import main


def test_add_then_report(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TALLY_DB", str(tmp_path / "db.csv"))
    assert main(["add", "2024-03-02", "12.50", "food", "lunch"]) == 0
    assert main(["report"]) == 0
    assert "12.50 EUR" in capsys.readouterr().out


def test_bad_input_exits_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TALLY_DB", str(tmp_path / "db.csv"))
    assert main(["add", "2024-03-02", "lots", "food"]) == 2
    assert "not an amount" in capsys.readouterr().err
