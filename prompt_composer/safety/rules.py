"""The lint's rule table, read from ``rules.yaml`` once, when it is first used: each rule's id, severity and
summary, the phrase rules compiled, the order patterns (what makes a sentence an order to the model) and the
contexts (what makes a phrase finding a mention rather than an order: a note, not a quarantine). With it, the
lexicons of other languages in ``languages.yaml``: concepts (what "the user", "ignore", "instructions" … are
called in each language) and the combinations of concepts in one sentence that are a rule's finding (see
:func:`load_languages`). Every pattern of the lint is compiled here and nowhere else. The shipped parts
(``RULES``, ``PHRASES``, ``ORDERS``, ``CONTEXTS``, ``CONCEPTS``, ``NATIVE_ORDERS``, ``GATE``) are loaded at
their first access: compiling them costs most of a tenth of a second, which a module that wants only the
severities should not pay.

A phrase or order in the file is a regular expression that may name a shared fragment as ``{name}``; it is compiled
with ``re.IGNORECASE`` after the fragments are put in. A bad rules file is a
:class:`~prompt_composer.errors.LoadError` naming the file and the line of each problem.

Severities are outcomes (see :mod:`prompt_composer.safety.lint`): ``high`` quarantines an imported doc,
``medium`` asks a person to review it (reported, not quarantined), ``low`` is a note.
"""

from __future__ import annotations

import functools
import itertools
import re
import sys
import threading
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import LoadError, Problem
from ..shared.yamlfile import LineMap, line_of, load_model

Severity = Literal["high", "medium", "low"]
SEVERITIES: tuple[Severity, ...] = ("high", "medium", "low")
SEVERITY_RANK: Mapping[str, int] = {"low": 1, "medium": 2, "high": 3}
QUARANTINE_SEVERITY: Severity = "high"  # findings at or above this quarantine an imported doc (and fail an audit)
REVIEW_SEVERITY: Severity = "medium"  # findings at this severity ask a person to review the doc; no quarantine
Scope = Literal["any", "example"]
# Where a context pattern is looked for: in the matched words; next to the quotation that holds the match (a string
# quoted as data); or in the words of its sentence just before it (reported speech: "descriptions that tell the
# model to …").
Where = Literal["match", "quoted", "before"]
# How far the concepts of a combination may stand apart: within one sentence, or across sentence ends and list items
# (a claim made in one sentence and acted on in the next; a changelog bullet and the one after it).
Reach = Literal["sentence", "near"]

RULES_FILE = Path(__file__).with_name("rules.yaml")
LANGUAGES_FILE = Path(__file__).with_name("languages.yaml")


def at_least(severity: str, threshold: str) -> bool:
    """Whether ``severity`` is ``threshold`` or more severe (high > medium > low)."""
    return SEVERITY_RANK[severity] >= SEVERITY_RANK[threshold]


@dataclass(frozen=True)
class Rule:
    """A rule the lint reports: its id, how severe its findings are, and what it finds, in a line."""

    id: str
    severity: Severity
    summary: str
    described: Severity | None = None  # the severity in a sentence that gives the model no order (see ORDERS)


class LazyPattern:
    """A combination's regular expression, compiled at its first use (``search``, ``finditer``): the lint reads a
    combination only on a text that holds all its concepts, and compiling every combination (each an alternation of
    every order of its concepts' words in every language, up to 86 KB of pattern) took ~4 s, in every process that
    lints. ``pattern`` is its source, as a compiled pattern's is."""

    __slots__ = ("_compiled", "flags", "pattern")

    _lock = threading.Lock()

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled once, whichever thread asks first)."""
        if self._compiled is None:
            with self._lock:
                if self._compiled is None:
                    self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def __eq__(self, other: object) -> bool:  # as compiled patterns compare: by source and flags
        return isinstance(other, LazyPattern) and (self.pattern, self.flags) == (other.pattern, other.flags)

    def __hash__(self) -> int:
        return hash((self.pattern, self.flags))

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern[:40]!r}…, compiled={self._compiled is not None})"

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().search(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(string, pos, endpos)


@dataclass(frozen=True)
class Phrase:
    """A phrase rule: text matching ``pattern`` (in the normalised text) is a finding of ``rule``.

    ``scope`` "example" matches only in example values and example blocks (what the model copies into a call);
    ``always`` keeps the rule's severity even where the sentence gives no order (see :attr:`Rule.described`);
    ``described`` gives this phrase a severity of its own in a sentence that gives no order (a rule's ``high``
    phrase "skip every confirmation" may be a parameter's description: reviewed unless the sentence orders it)."""

    rule: str
    pattern: re.Pattern[str] | LazyPattern
    scope: Scope = "any"
    always: bool = False
    described: Severity | None = None
    needs: tuple[str, ...] = ()  # concepts of languages.yaml that must all be in the text (checked in this order)
    native: bool = False  # matched on the text without look-alike folding (Cyrillic and Greek read as themselves)
    # A combination read on every text, not only those the gate opens for: on the others (English prose) this phrase
    # reads them instead, its concepts' English parts (`authority_en` for `authority`), at a fraction of the cost.
    english: Phrase | None = None


@dataclass(frozen=True)
class Context:
    """A context that turns a phrase finding of one of ``rules`` into a ``low`` note: ``pattern`` found in the
    matched words (``where`` "match": "the path of the system prompt" names a file, not its text) or, for a match
    inside a quotation, in its sentence (``where`` "quoted": a string quoted as data, "cases such as …").
    ``note`` says why, on the finding."""

    rules: frozenset[str]
    where: Where
    pattern: re.Pattern[str]
    note: str


# --- the file's shape ---------------------------------------------------------------------------------------


class _RuleEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")  # as a doc's quarantine key takes them
    severity: Severity
    summary: str
    described: Severity | None = None


class _PhraseEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    pattern: str
    scope: Scope = "any"
    always: bool = False
    described: Severity | None = None


class _ContextEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[str]
    where: Where
    pattern: str
    note: str


class _CombinationEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    all: list[str] = Field(min_length=1, max_length=3)
    within: int = Field(default=80, ge=0, le=400)
    described: Severity | None = None
    always: bool = False
    english: bool = False
    reach: Reach = "sentence"


class _GateEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    foreign: str
    english: list[str]
    share: float = Field(default=0.15, gt=0, lt=1)


class _LanguagesFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    languages: list[str] = Field(min_length=1)
    gate: _GateEntry
    concepts: dict[str, str]
    combinations: list[_CombinationEntry] = Field(default_factory=list)
    orders: list[str] = Field(default_factory=list)


class _RulesFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[_RuleEntry]
    fragments: dict[str, str] = Field(default_factory=dict)
    phrases: list[_PhraseEntry] = Field(default_factory=list)
    orders: list[str] = Field(default_factory=list)
    contexts: list[_ContextEntry] = Field(default_factory=list)


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
        rules.setdefault(entry.id, Rule(entry.id, entry.severity, entry.summary, entry.described))
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


def _compiled(
    path: Path, lines: LineMap, where: tuple[str | int, ...], text: str, fragments: Mapping[str, str]
) -> re.Pattern[str] | Problem:
    """The pattern ``text`` (at ``where`` in the file) with its fragments put in, compiled; or the problem."""
    label = ".".join(str(part) for part in where)
    pattern = _joined(text)
    unknown = [name for name in _PLACEHOLDER.findall(pattern) if name not in fragments]
    if unknown:
        return Problem(path, line_of(lines, where), f"{label}: unknown fragment {{{unknown[0]}}}")
    source = _PLACEHOLDER.sub(lambda m: fragments[m[1]], pattern)
    try:
        return re.compile(source, re.IGNORECASE)
    except re.error as exc:
        return Problem(path, line_of(lines, where), f"{label}: not a valid regular expression: {exc}")


def _phrase(
    path: Path, lines: LineMap, index: int, entry: _PhraseEntry, rules: Mapping[str, Rule], fragments: Mapping[str, str]
) -> Phrase | Problem:
    """The compiled phrase ``phrases[index]``, or the problem with it."""
    where = ("phrases", index)
    if entry.rule not in rules:
        return Problem(path, line_of(lines, (*where, "rule")), f"phrases.{index}.rule: unknown rule {entry.rule!r}")
    pattern = _compiled(path, lines, (*where, "pattern"), entry.pattern, fragments)
    if isinstance(pattern, Problem):
        return pattern
    return Phrase(entry.rule, pattern, entry.scope, entry.always, entry.described)


def _context(
    path: Path,
    lines: LineMap,
    index: int,
    entry: _ContextEntry,
    rules: Mapping[str, Rule],
    fragments: Mapping[str, str],
) -> Context | Problem:
    """The compiled context ``contexts[index]``, or the problem with it."""
    where = ("contexts", index)
    unknown = [rule for rule in entry.rules if rule not in rules]
    if unknown:
        return Problem(path, line_of(lines, (*where, "rules")), f"contexts.{index}.rules: unknown rule {unknown[0]!r}")
    pattern = _compiled(path, lines, (*where, "pattern"), entry.pattern, fragments)
    if isinstance(pattern, Problem):
        return pattern
    return Context(frozenset(entry.rules), entry.where, pattern, entry.note)


@dataclass(frozen=True)
class Gate:
    """Which texts the lexicons read: a text with a ``foreign`` match (a letter of another script, a word of another
    language), or one whose words are less than ``share`` English function words (``english``). A text of English
    prose is read by the phrases alone; the gate spares the lexicons' cost there, not their findings."""

    foreign: re.Pattern[str]
    english: frozenset[str]
    share: float

    def opens(self, text: str) -> bool:
        if self.foreign.search(text) is not None:
            return True
        words = _ASCII_WORD.findall(text)
        if len(words) < _FEWEST_WORDS:
            return False  # a name or a value of a word or two: no sentence in any language that uses these letters
        common = sum(1 for word in words if word.lower() in self.english)
        return common < self.share * len(words)


_ASCII_WORD = re.compile(r"[A-Za-z]+")
_FEWEST_WORDS = 3
_CLOSED = Gate(re.compile(r"(?!)"), frozenset(), 0.5)  # no lexicons: a gate that never opens (see RuleSet.gate)


@dataclass(frozen=True)
class RuleSet:
    """What ``rules.yaml`` holds: the rules by id, the phrase rules, the order patterns and the contexts,
    compiled; and what ``languages.yaml`` adds: its concepts, its order concepts (matched on the unfolded text)
    and its combinations as phrases (``needs`` and ``native`` set)."""

    rules: Mapping[str, Rule]
    phrases: tuple[Phrase, ...]
    orders: tuple[re.Pattern[str], ...]
    contexts: tuple[Context, ...] = ()
    concepts: Mapping[str, re.Pattern[str]] = field(default_factory=dict)
    native_orders: tuple[re.Pattern[str], ...] = ()
    gate: Gate = _CLOSED
    languages: tuple[str, ...] = ()  # the languages the lexicons read (ISO 639-1)


# Between two concepts of a combination: any characters of one sentence (a "." inside a path or a number is none
# of its ends), at most ``within`` of them; with ``reach: near``, any characters at all, at most ``within``.
_GAP = r"(?:[^.!?\n\u3002\uff01\uff1f\u0964]|\.(?=\S)){{0,{within}}}?"
_NEAR_GAP = r"[\s\S]{{0,{within}}}?"


def _combination(
    path: Path,
    lines: LineMap,
    index: int,
    entry: _CombinationEntry,
    rules: Mapping[str, Rule],
    concepts: Mapping[str, str],
    check: bool = True,
) -> Phrase | Problem:
    """The combination ``combinations[index]`` as a phrase: its concepts in one sentence, in any order. With
    ``check`` its pattern is compiled now (a problem at its line if it does not compile); without, at its first
    use (:class:`LazyPattern`: the shipped file, whose every combination a test compiles)."""
    where = ("combinations", index)
    if entry.rule not in rules:
        message = f"combinations.{index}.rule: unknown rule {entry.rule!r}"
        return Problem(path, line_of(lines, (*where, "rule")), message)
    unknown = [name for name in entry.all if name not in concepts]
    if unknown:
        message = f"combinations.{index}.all: unknown concept {unknown[0]!r}"
        return Problem(path, line_of(lines, (*where, "all")), message)
    gap = (_NEAR_GAP if entry.reach == "near" else _GAP).format(within=entry.within)

    def compiled(names: tuple[str, ...]) -> re.Pattern[str] | LazyPattern | Problem:
        orders = list(itertools.permutations(names)) if len(names) > 1 else [names]

        def part(name: str, order: int) -> str:
            # A concept that names a tool holds the group "tool" the matcher reads; each alternative (each order of the
            # concepts) gets its own name for it: `tool`, `tool1` …
            group = f"(?P<tool{order}>" if order else "(?P<tool>"
            return f"(?:{concepts[name].replace('(?P<tool>', group)})"

        source = "|".join(gap.join(part(name, i) for name in order) for i, order in enumerate(orders))
        if not check:
            return LazyPattern(source, re.IGNORECASE)
        try:
            return re.compile(source, re.IGNORECASE)
        except re.error as exc:
            return Problem(path, line_of(lines, where), f"combinations.{index}: not a valid regular expression: {exc}")

    needs = tuple(entry.all)
    pattern = compiled(needs)
    if isinstance(pattern, Problem):
        return pattern
    english = None
    if entry.english:
        en_needs = tuple(f"{name}_en" if f"{name}_en" in concepts else name for name in needs)
        en_pattern = compiled(en_needs)
        if isinstance(en_pattern, Problem):
            return en_pattern
        english = Phrase(entry.rule, en_pattern, "any", entry.always, entry.described, en_needs, native=True)
    return Phrase(entry.rule, pattern, "any", entry.always, entry.described, needs, native=True, english=english)


def load_languages(
    path: Path, rules: Mapping[str, Rule], fragments: Mapping[str, str], *, check: bool = True
) -> tuple[tuple[str, ...], Gate, dict[str, re.Pattern[str]], list[Phrase], list[re.Pattern[str]]]:
    """The lexicons of ``path``: the languages they read, the gate, each concept compiled (a concept is one regular
    expression, its alternatives the words of every language; it may name a fragment of ``rules.yaml`` or a concept
    defined above it), each
    combination as a phrase, and the order concepts. Raises :class:`~prompt_composer.errors.LoadError` listing every
    problem at its line."""
    spec, lines, problems = load_model(path, _LanguagesFile)
    if spec is None:
        raise LoadError(problems)
    gate = _CLOSED
    try:  # case-sensitive: under IGNORECASE a range of accented letters would take in "i" (dotless ı) and "s" (ſ)
        gate = Gate(
            re.compile(_joined(spec.gate.foreign)), frozenset(w.lower() for w in spec.gate.english), spec.gate.share
        )
    except re.error as exc:
        problems.append(
            Problem(path, line_of(lines, ("gate", "foreign")), f"gate.foreign: not a valid regular expression: {exc}")
        )
    sources: dict[str, str] = {}
    concepts: dict[str, re.Pattern[str]] = {}
    for name, text in spec.concepts.items():
        # a concept may name a fragment of rules.yaml or a concept above it (``waive: {ask_not}|{skip_prompts}``); a
        # fragment's name wins (`{user}` is the English fragment, the concept `user` holds the other languages' words)
        named = {**{other: f"(?:{source})" for other, source in sources.items()}, **fragments}
        # the text is read after NFKC (text.normalise_both), so are its words: Thai "ำ" is "ํา" there
        compiled = _compiled(path, lines, ("concepts", name), unicodedata.normalize("NFKC", text), named)
        if isinstance(compiled, Problem):
            problems.append(compiled)
        else:
            concepts[name] = compiled
            sources[name] = compiled.pattern
    phrases: list[Phrase] = []
    for index, entry in enumerate(spec.combinations):
        phrase = _combination(path, lines, index, entry, rules, sources, check)
        if isinstance(phrase, Problem):
            problems.append(phrase)
        else:
            phrases.append(phrase)
    orders: list[re.Pattern[str]] = []
    for index, name in enumerate(spec.orders):
        if name not in concepts:
            problems.append(
                Problem(path, line_of(lines, ("orders", index)), f"orders.{index}: unknown concept {name!r}")
            )
        else:
            orders.append(concepts[name])
    if problems:
        raise LoadError(problems)
    return tuple(spec.languages), gate, concepts, phrases, orders


def load_rule_set(
    path: Path = RULES_FILE, languages: Path | None = LANGUAGES_FILE, *, check_combinations: bool = True
) -> RuleSet:
    """The rules of ``path`` by id, its phrase rules and order patterns compiled, each in file order, and the
    lexicons of ``languages`` (none when it is ``None``). Raises :class:`~prompt_composer.errors.LoadError` listing
    every problem of the file at its line. ``check_combinations=False`` compiles the lexicons' combinations at
    their first use instead (see :class:`LazyPattern`), leaving a pattern that does not compile to fail there:
    for the shipped files, which the tests compile whole."""
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
    orders: list[re.Pattern[str]] = []
    for index, text in enumerate(spec.orders):
        order = _compiled(path, lines, ("orders", index), text, fragments)
        if isinstance(order, Problem):
            problems.append(order)
        else:
            orders.append(order)
    contexts: list[Context] = []
    for index, context_entry in enumerate(spec.contexts):
        context = _context(path, lines, index, context_entry, rules, fragments)
        if isinstance(context, Problem):
            problems.append(context)
        else:
            contexts.append(context)
    if problems:
        raise LoadError(problems)
    if languages is None:
        return RuleSet(rules, tuple(phrases), tuple(orders), tuple(contexts))
    codes, gate, concepts, combined, native_orders = load_languages(
        languages, rules, fragments, check=check_combinations
    )
    return RuleSet(
        rules, (*phrases, *combined), tuple(orders), tuple(contexts), concepts, tuple(native_orders), gate, codes
    )


def load_rules(path: Path = RULES_FILE) -> tuple[Mapping[str, Rule], tuple[Phrase, ...]]:
    """The rules of ``path`` by id and its phrase rules compiled (see :func:`load_rule_set`; no lexicons)."""
    rule_set = load_rule_set(path, None)
    return rule_set.rules, rule_set.phrases


def lexicon_languages() -> tuple[str, ...]:
    """The languages the lexicons read, by their ISO 639-1 codes (``languages`` of ``languages.yaml``)."""
    return shipped_rule_set().languages


@functools.cache
def shipped_rule_set() -> RuleSet:
    """The shipped ``rules.yaml`` and ``languages.yaml``, loaded once; each combination compiled at its first use."""
    return load_rule_set(check_combinations=False)


# The shipped rule set's parts, by name: loaded at the first access (a module-level __getattr__, PEP 562).
RULES: Mapping[str, Rule]
PHRASES: tuple[Phrase, ...]
ORDERS: tuple[re.Pattern[str], ...]
CONTEXTS: tuple[Context, ...]
CONCEPTS: Mapping[str, re.Pattern[str]]
NATIVE_ORDERS: tuple[re.Pattern[str], ...]
GATE: Gate
_PARTS = {
    "RULES": "rules",
    "PHRASES": "phrases",
    "ORDERS": "orders",
    "CONTEXTS": "contexts",
    "CONCEPTS": "concepts",
    "NATIVE_ORDERS": "native_orders",
    "GATE": "gate",
}


def __getattr__(name: str) -> Any:
    if name in _PARTS:
        return getattr(shipped_rule_set(), _PARTS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
