"""The tool-poisoning lint's findings in the formats CI reads: SARIF 2.1.0 (GitHub code scanning) and GitHub
Actions workflow annotations (``::error file=…,line=…::…``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..shared.annotations import annotation_path, github_annotation, relative_uri
from ..shared.version import VERSION
from .lint import Finding, SecurityReport
from .rules import QUARANTINE_SEVERITY, RULES, Severity, at_least

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

# SARIF's result levels for our severities.
_SARIF_LEVEL: dict[str, str] = {"high": "error", "medium": "warning", "low": "note"}


def _message(finding: Finding) -> str:
    note = f" ({finding.note})" if finding.note else ""
    return f"{finding.summary}: tool {finding.doc}, field {finding.field}: {finding.excerpt}{note}"


def to_sarif(report: SecurityReport, base: Path | None = None) -> dict[str, Any]:
    """One SARIF 2.1.0 log with one run: every rule the lint knows, every finding as a result at ``path:line``
    (a finding of a doc not loaded from a file has no location)."""
    rules = sorted(RULES.values(), key=lambda r: r.id)
    index = {rule.id: i for i, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for f in report.findings:
        result: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": _message(f)},
            "properties": {"severity": f.severity, "tool": f.doc, "field": f.field},
        }
        if f.path is not None:
            result["locations"] = [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": relative_uri(f.path, base)},
                        "region": {"startLine": f.line or 1},
                    }
                }
            ]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "prompt-composer",
                        "version": VERSION,
                        "rules": [
                            {
                                "id": rule.id,
                                "shortDescription": {"text": rule.summary},
                                "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
                                "properties": {"severity": rule.severity},
                            }
                            for rule in rules
                        ],
                    }
                },
                "results": results,
            }
        ],
    }


def to_sarif_json(report: SecurityReport, base: Path | None = None) -> str:
    return json.dumps(to_sarif(report, base), indent=2, ensure_ascii=False)


def to_github(report: SecurityReport, threshold: Severity = QUARANTINE_SEVERITY, base: Path | None = None) -> list[str]:
    """One annotation per finding: ``error`` for those at ``threshold`` or above (they fail the check), else
    ``warning`` or ``notice`` by severity."""
    lines = []
    for f in report.findings:
        failing = at_least(f.severity, threshold)
        command = "error" if failing else "notice" if f.severity == "low" else "warning"
        file = annotation_path(f.path, base) if f.path is not None else None
        line = (f.line or 1) if file is not None else None
        lines.append(github_annotation(command, _message(f), file=file, line=line, title=f"{f.severity} [{f.rule}]"))
    return lines
