"""The lint's rule table, read from ``rules.yaml`` once, when this module is imported: each rule's id, severity and
summary, and the phrase rules compiled.

A phrase in the file is a regular expression that may name a shared fragment as ``{name}``; it is compiled with
``re.IGNORECASE`` after the fragments are put in. A bad rules file is a :class:`~prompt_composer.errors.LoadError`
naming the file and the line of each problem.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import LoadError, Problem
from ..shared.yamlfile import LineMap, line_of, load_model

Severity = Literal["high", "medium", "low"]
SEVERITIES: tuple[Severity, ...] = ("high", "medium", "low")
SEVERITY_RANK: Mapping[str, int] = {"low": 1, "medium": 2, "high": 3}
QUARANTINE_SEVERITY: Severity = "medium"  # findings at or above this quarantine an imported doc (and fail an audit)

RULES_FILE = Path(__file__).with_name("rules.yaml")


def at_least(severity: str, threshold: str) -> bool:
    """Whether ``severity`` is ``threshold`` or more severe (high > medium > low)."""
    return SEVERITY_RANK[severity] >= SEVERITY_RANK[threshold]


@dataclass(frozen=True)
class Rule:
    """A rule the lint reports: its id, how severe its findings are, and what it finds, in a line."""

    id: str
    severity: Severity
    summary: str


@dataclass(frozen=True)
class Phrase:
    """A phrase rule: text matching ``pattern`` (in the normalised text) is a finding of ``rule``."""

    rule: str
    pattern: re.Pattern[str]


# --- the file's shape ---------------------------------------------------------------------------------------


class _RuleEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")  # as a doc's quarantine key takes them
    severity: Severity
    summary: str


class _PhraseEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    pattern: str


class _RulesFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[_RuleEntry]
    fragments: dict[str, str] = Field(default_factory=dict)
    phrases: list[_PhraseEntry] = Field(default_factory=list)


# A fragment named in a pattern; counted repeats such as {0,2} and an escaped \{ are left alone.
_PLACEHOLDER = re.compile(r"(?<!\\)\{([A-Za-z_]\w*)\}")


def _joined(pattern: str) -> str:
    """A pattern as written in the file, its lines joined (a long pattern is broken over the lines of a block)."""
    return "".join(pattern.splitlines())


def _rule_table(path: Path, lines: LineMap, spec: _RulesFile) -> tuple[dict[str, Rule], list[Problem]]:
    rules: dict[str, Rule] = {}
    problems: list[Problem] = []
    for index, entry in enumerate(spec.rules):
        if entry.id in rules:
            problems.append(Problem(path, line_of(lines, ("rules", index, "id")), f"duplicate rule id {entry.id!r}"))
        rules.setdefault(entry.id, Rule(entry.id, entry.severity, entry.summary))
    return rules, problems


def _fragments(path: Path, lines: LineMap, spec: _RulesFile) -> tuple[dict[str, str], list[Problem]]:
    fragments = {name: _joined(text) for name, text in spec.fragments.items()}
    problems = [
        Problem(
            path,
            line_of(lines, ("fragments", name)),
            f"fragments.{name}: names the fragment {{{inner}}}; a fragment cannot name another",
        )
        for name, text in fragments.items()
        for inner in _PLACEHOLDER.findall(text)
    ]
    return fragments, problems


def _phrase(
    path: Path, lines: LineMap, index: int, entry: _PhraseEntry, rules: Mapping[str, Rule], fragments: Mapping[str, str]
) -> Phrase | Problem:
    """The compiled phrase ``phrases[index]``, or the problem with it."""
    where = ("phrases", index)
    if entry.rule not in rules:
        return Problem(path, line_of(lines, (*where, "rule")), f"phrases.{index}.rule: unknown rule {entry.rule!r}")
    pattern = _joined(entry.pattern)
    unknown = [name for name in _PLACEHOLDER.findall(pattern) if name not in fragments]
    if unknown:
        message = f"phrases.{index}.pattern: unknown fragment {{{unknown[0]}}}"
        return Problem(path, line_of(lines, (*where, "pattern")), message)
    source = _PLACEHOLDER.sub(lambda m: fragments[m[1]], pattern)
    try:
        return Phrase(entry.rule, re.compile(source, re.IGNORECASE))
    except re.error as exc:
        message = f"phrases.{index}.pattern: not a valid regular expression: {exc}"
        return Problem(path, line_of(lines, (*where, "pattern")), message)


def load_rules(path: Path = RULES_FILE) -> tuple[Mapping[str, Rule], tuple[Phrase, ...]]:
    """The rules of ``path`` by id, in file order, and its phrase rules compiled, in file order. Raises
    :class:`~prompt_composer.errors.LoadError` listing every problem of the file at its line."""
    spec, lines, problems = load_model(path, _RulesFile)
    if spec is None:
        raise LoadError(problems)
    rules, problems = _rule_table(path, lines, spec)
    fragments, more = _fragments(path, lines, spec)
    problems += more
    phrases: list[Phrase] = []
    for index, entry in enumerate(spec.phrases):
        phrase = _phrase(path, lines, index, entry, rules, fragments)
        if isinstance(phrase, Problem):
            problems.append(phrase)
        else:
            phrases.append(phrase)
    if problems:
        raise LoadError(problems)
    return rules, tuple(phrases)


RULES, PHRASES = load_rules()
