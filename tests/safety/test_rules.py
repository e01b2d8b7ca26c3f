"""The lint's rules file (prompt_composer/safety/rules.yaml): how it is read, and that a bad one says where."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prompt_composer.errors import LoadError
from prompt_composer.safety.rules import PHRASES, RULES, RULES_FILE, SEVERITIES, load_rules

GOOD = """\
rules:
  - id: conceal
    severity: high
    summary: keeps something from the user
fragments:
  user: |-
    (?:the\\s+)?user
phrases:
  - rule: conceal
    pattern: |-
      \\bdo\\s+not\\s+tell\\s+
      {user}{0,2}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(LoadError) as caught:
        load_rules(path)
    return [str(problem) for problem in caught.value.problems]


def test_the_shipped_rules_load_with_a_phrase_for_each_phrase_rule() -> None:
    assert RULES_FILE.name == "rules.yaml" and RULES_FILE.is_file()
    assert all(rule.severity in SEVERITIES for rule in RULES.values())
    assert {phrase.rule for phrase in PHRASES} <= set(RULES)
    assert all(phrase.pattern.flags & re.IGNORECASE for phrase in PHRASES)


def test_a_pattern_is_its_lines_joined_with_fragments_put_in(tmp_path: Path) -> None:
    rules, phrases = load_rules(write(tmp_path, GOOD))
    assert list(rules) == ["conceal"]
    assert [p.pattern.pattern for p in phrases] == [r"\bdo\s+not\s+tell\s+(?:the\s+)?user{0,2}"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("{user}{0,2}", "{someone}"), ":10: phrases.0.pattern: unknown fragment {someone}"),
        (("  - rule: conceal", "  - rule: hide"), ":9: phrases.0.rule: unknown rule 'hide'"),
        (("{user}{0,2}", "(unclosed"), ":10: phrases.0.pattern: not a valid regular expression: "),
        (("severity: high", "severity: severe"), ":3: rules.0.severity: "),
        (("    (?:the\\s+)?user", "    {user}"), ":6: fragments.user: names the fragment {user}"),
        (("phrases:", "phrases: ["), ": invalid YAML: "),
        (("  - id: conceal", "  - id: Conceal!"), ":2: rules.0.id: "),
    ],
)
def test_a_bad_rules_file_names_the_file_and_line(tmp_path: Path, change: tuple[str, str], expected: str) -> None:
    path = write(tmp_path, GOOD.replace(*change))
    found = problems(path)
    assert any(p.startswith(str(path)) and expected in p for p in found), found


def test_a_duplicate_rule_id_is_a_problem(tmp_path: Path) -> None:
    twice = GOOD.replace("fragments:", "  - id: conceal\n    severity: low\n    summary: again\nfragments:")
    path = write(tmp_path, twice)
    assert problems(path) == [f"{path}:5: duplicate rule id 'conceal'"]
