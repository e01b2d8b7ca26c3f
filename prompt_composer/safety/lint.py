"""Tool-poisoning lint: text in a tool doc that addresses the model instead of describing the tool.

A tool's description reaches the model verbatim, so a hostile (or compromised) server can smuggle orders into it:
read ``~/.ssh/id_rsa`` and pass it in a parameter, call another tool first, keep something from the user, ignore
earlier instructions. :func:`scan` looks for that in every string of a doc that the model may read (brief, full,
hint, queries, the tool's names, and every string and key of the input schema at any depth: descriptions and
titles, every branch, enum, default, const and example values, identifiers read as words, a ``pattern`` read as the
words it spells; past the walk's bounds an ``oversized`` finding; see :mod:`.fields`) and :func:`scan_registry`
does it for a whole registry, with the ``path:line`` of each finding when the docs were loaded from YAML files. A
sentence is as severe wherever it sits: a string with spaces or sentence punctuation where a name belongs, and a
``pattern``, are read as prose too (the stronger reading of each rule is kept).

Three layers read each text: the English phrases of ``rules.yaml``, the lexicons of ``languages.yaml`` (23 other
languages: concepts that make a finding together in one sentence; the concepts of claims, an authority waiving the
user's say or another tool declared retired and rerouted, hold English too and are read on every text) and, when
an encoder is handed in, the semantic layer (:mod:`.semantic`). docs/security.md says what each catches and why the
lexicons are the base.

Severities are outcomes:

- **high: quarantine.** ``invisible-unicode`` (zero-width, bidirectional and tag characters, variation
  selectors, control characters), ``homoglyph`` (a word mixing Latin with Cyrillic or Greek letters),
  ``hidden-markup`` (``<!-- … -->``, ``<IMPORTANT>``, ``<system>``, tags addressed to the assistant,
  chat-template tokens, elements styled invisible), ``secret-access`` in an order (read or pass on ``~/.ssh``,
  ``id_rsa``, ``.env``, ``mcp.json``, credentials, API keys, cookies …), ``exfiltration`` (put the conversation,
  system prompt, other tools' output or the user's data into a parameter; copy or send data to an address),
  ``conceal`` (do not tell the user, act silently, keep it out of the answer), ``override`` (ignore earlier
  instructions, take priority, restrictions do not apply), ``tool-shadowing`` (orders about how *other* tools
  behave; another tool declared deprecated, moved or compromised and its calls routed elsewhere),
  ``tool-chaining`` (call another server's tool first), ``coercion`` (threats, claimed consent),
  ``model-address`` (a note to "the AI"), authority claims that waive the user's say (``coercion``: "I authorize
  you", "pre-approved by the security team", "the change board signed off, so do not ask the user"),
  ``decode-instruction`` (decode this and apply it), ``url-exfil`` (a URL with data placeholders, a
  request-catcher host or a raw IP, a Markdown image), ``oversized`` (a full text over
  ``FULL_SIZE_FACTOR`` × the catalog's median and ``FULL_SIZE_FLOOR`` characters, or a parameter description or
  enum value far over any sensible length: too long for a person to have read, which is where orders are
  buried);
- **medium: review.** ``secret-access`` in a sentence that gives the model no order: a tool describing the
  secrets it legitimately handles (a credential scanner, a reader of ``~/.ssh/config``). Reported by ``audit
  --security`` (under "review") for a person to read; the doc is not quarantined; also another tool called
  compromised, or an authority with the tool's prompts skipped, in a sentence that gives no order;
- **low: a note.** ``url`` (any other link; ``example.*`` and loopback hosts are exempt), ``model-voice`` ("the
  assistant must …"), ``encoded-text`` (an encoded run that decodes to prose without any finding), ``comment``
  (an HTML comment of a word or two), ``tool-chaining``/``tool-shadowing`` that name a tool of the same server
  (its own workflow), and any phrase finding that a ``contexts`` entry of ``rules.yaml`` shows to be a mention
  rather than an order: "the path of the system prompt" names a file, not its text; a string quoted as data
  ("cases such as \"ignore previous instructions\"") in a sentence that gives the model no order; reported speech
  ("flags descriptions that tell the model to …"). A context covers only the words it matched: the rest of the
  sentence is read again.

The line between quarantine and the rest is whether the text *asks the model to act* (against the user): an
order about a secret quarantines, a sentence that only names one is reviewed, a quotation or a path is a note.
A parameter that says it takes a key, credential or dotenv file may default to one (a dotenv loader's ``path``
is ``.env``); a URL on an ``example.*`` host, or with a literal lower-case value (``?token=abc``), is an example;
a phrase naming the tool itself by name, or one of the doc's own snake_case property names or enum values, is its
own documentation; a parameter name of a few words is reviewed (``override_system_prompt``), one that spells a
sentence is read as one.

Phrases are matched on a normalised copy of the text (:func:`~prompt_composer.safety.text.normalise`: NFKC,
invisible characters dropped, tag characters read as the ASCII they encode, Cyrillic/Greek look-alikes read as
Latin), so smuggling does not hide an instruction from the phrase rules; excerpts are cut from the original text
with invisible characters shown escaped. Encoded runs (base64, URL-safe base64, hex, %-encoding) are decoded and
the decoded text linted too (:mod:`.encoded`, :mod:`.matching`): a finding there names its encoding and quotes
the decoded text, its excerpt shows the encoded original. Example values and example blocks (fenced code, "Example:"
paragraphs) are read with the example-only phrases as well: a placeholder for the conversation or a secret file
as an example argument is an order by example. The phrase rules are a lint, not a proof: they catch the published
patterns and close paraphrases, and miss attacks worded unlike any of them (see ``benchmarks/bench_security.py``
for measured recall and false positives, on tuned and blind cases).

Quarantine: importers scan every doc they write (see :func:`prompt_composer.importers.plan_import`). A doc with
a finding at ``QUARANTINE_SEVERITY`` (high) is written with ``quarantine: [rule ids]`` (and a comment on top
saying why); no mode allows such a tool (:func:`prompt_composer.core.modes.resolve_mode`, checked again when a
:class:`~prompt_composer.core.registry.Registry` is built), so it is never listed, fetched, found or called. A
person clears it by reviewing the doc (``prompt-composer --docs DIR audit --security`` shows each finding's
line), removing what addresses the model (or judging it harmless) and deleting the ``quarantine:`` key. A doc
whose worst finding is at ``REVIEW_SEVERITY`` (medium) stays usable and is listed for review
(:attr:`SecurityReport.review`).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.cards import ServerCard, card_path
from ..core.docs import ToolDoc
from ..core.registry import Registry
from ..errors import InputFileError
from ..shared.files import read_text
from ..shared.text import md_cell
from ..shared.yamlfile import LineMap, ScalarMap, yaml_files, yaml_layout
from .fields import Kind, Loc, doc_texts, label, line, pattern_words, schema_texts
from .matching import TextMatch, character_matches, excerpt_of, rule_match, scan_text
from .rules import QUARANTINE_SEVERITY, REVIEW_SEVERITY, RULES, SEVERITIES, Severity, at_least, lexicon_languages
from .semantic import SemanticLayer

__all__ = [
    "FULL_SIZE_FACTOR",
    "FULL_SIZE_FLOOR",
    "Finding",
    "SecurityReport",
    "SemanticLayer",
    "TextMatch",
    "full_size_limit",
    "layers_of",
    "quarantine_rules",
    "review_rules",
    "scan",
    "scan_card",
    "scan_registry",
    "scan_text",
    "sibling_names",
]

FULL_SIZE_FACTOR = 3.0  # a full text over FULL_SIZE_FACTOR × the registry's median full length …
FULL_SIZE_FLOOR = 8_000  # … and over this many characters is oversized
_FIELD_SIZE_LIMIT = 2_000  # one parameter description, title, hint or query
_ENUM_SIZE_LIMIT = 120  # one enum or const value (an example or default may be a paragraph: _FIELD_SIZE_LIMIT)


# --- docs ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One rule matching one field of one doc, located at ``path:line`` when the doc came from a file."""

    rule: str
    severity: Severity
    doc: str
    field: str  # "full", "brief", "input_schema.properties.path.description", "…enum[2]"
    excerpt: str  # the matched text with a little context, invisible characters escaped
    path: Path | None = None
    line: int | None = None
    note: str = ""  # what the invisible characters are, what tag characters spell, why a severity was lowered
    decoded: str = ""  # the encodings the finding was found under ("base64", "base64 > hex"); empty for plain text

    @property
    def summary(self) -> str:
        return RULES[self.rule].summary

    @property
    def location(self) -> str:
        if self.path is None:
            return f"<tool {self.doc}>"
        return f"{self.path}:{self.line or 1}"

    def __str__(self) -> str:
        note = f" ({self.note})" if self.note else ""
        return f"{self.location}: {self.severity} [{self.rule}] {self.doc} {self.field}: {self.excerpt}{note}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "doc": self.doc,
            "field": self.field,
            "path": str(self.path) if self.path is not None else None,
            "line": self.line,
            "location": self.location,
            "excerpt": self.excerpt,
            "note": self.note,
            "decoded": self.decoded,
            "summary": self.summary,
        }


_NAME_RULES = frozenset({"invisible-unicode", "homoglyph"})  # names are identifiers: only hidden characters count
# What joins the words of an identifier: snake_case, kebab-case, dotted and slashed paths (a `$ref`).
_IDENTIFIER_JOINS = re.compile(r"[_\-./#$]")


_SENTENCE_WORDS = 4  # an identifier of this many words or more is a sentence, not a name
# What an identifier is made of (a property name, a `$ref`, a `$schema` URI, a format): letters of any script, digits
# and joins; a string with anything else (a space, "。", a comma) is prose, whatever place it sits in.
_IDENTIFIER = re.compile(r"[\w.\-/#$:@~+%=?&]*")


def _identifier_matches(text: str, siblings: Iterable[str], own: Iterable[str]) -> list[TextMatch]:
    """The phrase findings of an identifier read as words (``_``, ``-``, ``.``, ``/``, ``#``, ``$`` as spaces; same
    length, so positions hold): a sentence spelled in snake_case is still a sentence to the model. A short name that
    only names a thing (``override_system_prompt`` of a prompt-testing tool) is at most a finding to review; a
    longer one (``send_the_conversation_here``) keeps its severity."""
    words = _IDENTIFIER_JOINS.sub(" ", text)
    count = len(words.split())
    if count < 2:
        return []  # one word is no phrase (most names: ``path``, ``query``); its hidden characters are checked apart
    sentence = count >= _SENTENCE_WORDS
    out: list[TextMatch] = []
    for match in scan_text(words, siblings=siblings, own=own):
        if match.rule in _NAME_RULES:
            continue  # found on the identifier itself already
        match = replace(match, excerpt=excerpt_of(text, match.start, match.end))
        if not sentence and at_least(match.severity, QUARANTINE_SEVERITY):
            note = "a parameter name of a few words: review it"
            match = replace(match, severity=REVIEW_SEVERITY, note=note)
        out.append(match)
    return out


def _pattern_matches(pattern: str, siblings: Iterable[str], own: Iterable[str]) -> list[TextMatch]:
    """The findings of a regular expression (a schema's ``pattern``) read as the words it spells
    (:func:`~prompt_composer.safety.fields.pattern_words`), located and quoted in the pattern as written. Hidden
    characters count as written."""
    words, where = pattern_words(pattern)
    words = _IDENTIFIER_JOINS.sub(" ", words)  # ^send_the_history$ spells words too (same length: positions hold)
    out = character_matches(pattern)
    for match in scan_text(words, siblings=siblings, own=own):
        if match.rule in _NAME_RULES or not where:
            continue
        start = where[min(match.start, len(where) - 1)]
        end = where[min(max(match.end - 1, match.start), len(where) - 1)] + 1
        out.append(replace(match, start=start, end=end, excerpt=excerpt_of(pattern, start, end)))
    return out


def _as_prose_too(text: str, read: list[TextMatch], siblings: Iterable[str], own: Iterable[str]) -> list[TextMatch]:
    """``read`` (the findings of a string read as an identifier or a pattern) with the findings of the string read
    as prose, as a description is: a sentence where a name or a regular expression belongs is still a sentence, and
    its severity does not depend on the place it was put in. Hidden characters are found once; a rule found both
    ways is kept at the stronger reading."""
    prose = [m for m in scan_text(text, siblings=siblings, own=own) if m.rule not in _NAME_RULES]
    strongest = {m.rule: m.severity for m in prose}
    kept = [m for m in read if m.rule in _NAME_RULES or m.rule not in strongest]
    kept += [m for m in read if m.rule in strongest and not at_least(strongest[m.rule], m.severity)]
    return sorted([*kept, *prose], key=lambda m: m.start)


def _semantic_matches(semantic: SemanticLayer, text: str, found: Iterable[TextMatch]) -> list[TextMatch]:
    """The semantic layer's findings in ``text`` that no quarantining finding of the other layers covers already."""
    held = [(m.start, m.end) for m in found if at_least(m.severity, QUARANTINE_SEVERITY)]
    return [m for m in semantic.matches(text) if not any(lo < m.end and m.start < hi for lo, hi in held)]


# A snake_case word: a name a phrase could take for another tool's.
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")


def _vocabulary(doc: ToolDoc) -> tuple[str, ...]:
    """The doc's own snake_case words: its property names and its enum and const values. A phrase that names one of
    them ("`insert_content` is deprecated; use `update_content` instead", of an enum's values) speaks of the doc's own
    parameters, not of another server's tool."""
    words = {
        text
        for loc, kind, text in schema_texts(doc.input_schema, ("input_schema",))
        if _SNAKE.fullmatch(text)
        and ((kind == "key" and len(loc) > 1 and loc[-2] == "properties") or {"enum", "const"} & set(loc))
    }
    return tuple(sorted(words))


def full_size_limit(docs: Iterable[ToolDoc]) -> int:
    """The ``oversized`` threshold of a catalog: ``FULL_SIZE_FACTOR`` × its median full length, at least
    ``FULL_SIZE_FLOOR`` characters."""
    sizes = [len(d.full) for d in docs]
    median = statistics.median(sizes) if sizes else 0
    return max(FULL_SIZE_FLOOR, int(FULL_SIZE_FACTOR * median))


def _layout(path: str | Path | None, source: str | None, what: str) -> tuple[Path | None, LineMap, ScalarMap]:
    """The file findings are located in, and its lines (read from ``path`` when ``source`` is not given)."""
    file = Path(path) if path is not None else None
    if file is not None and source is None:
        try:
            source = read_text(file, what=what)  # a regular file within the size limit, never a FIFO
        except (InputFileError, OSError):
            source = None
    lines, scalars = yaml_layout(source) if source is not None else ({}, {})
    return file, lines, scalars


def scan(
    doc: ToolDoc,
    *,
    path: str | Path | None = None,
    source: str | None = None,
    full_limit: int | None = FULL_SIZE_FLOOR,
    siblings: Iterable[str] = (),
    semantic: SemanticLayer | None = None,
) -> list[Finding]:
    """Every finding in ``doc``, in field order.

    ``path`` (and ``source``, its text; read from ``path`` when omitted) locate findings at ``path:line``.
    ``full_limit`` is the ``oversized`` threshold for the full text (see :func:`full_size_limit`; ``None`` skips
    the check). ``siblings`` names the other tools of the doc's server (see :func:`scan_text`). ``semantic`` adds
    the semantic layer (:mod:`.semantic`): a sentence close in meaning to an attack that no phrase caught.
    """
    file, lines, scalars = _layout(path, source, "tool doc")
    siblings = tuple(siblings)
    findings: list[Finding] = []

    def add(loc: Loc, kind: Kind, text: str, match: TextMatch) -> None:
        at = line(lines, scalars, loc, kind, text, match.start) if file is not None else None
        findings.append(
            Finding(
                match.rule, match.severity, doc.name, label(loc), match.excerpt, file, at, match.note, match.decoded
            )
        )

    def too_long(loc: Loc, kind: Kind, text: str, limit: int) -> None:
        excerpt = excerpt_of(text, 0, 0, context=60)
        note = f"{len(text)} characters, over {limit}"
        add(loc, kind, text, rule_match("oversized", text, 0, 0, excerpt=excerpt, note=note))

    names = (doc.name, doc.origin.name) if doc.origin is not None else (doc.name,)
    own = (*names, *_vocabulary(doc))
    for loc, kind, text in doc_texts(doc):
        if kind == "unread":  # past the walk's bounds: not read, so not cleared either
            add(loc, kind, text, rule_match("oversized", "", 0, 0, excerpt="", note=f"{text}: not read"))
            continue
        if kind in ("name", "key"):
            read = [*character_matches(text), *_identifier_matches(text, siblings, own)]
            if _IDENTIFIER.fullmatch(text) is None:  # spaces, sentence punctuation: a sentence where a name belongs
                read = _as_prose_too(text, read, siblings, own)
            for match in read:
                add(loc, kind, text, match)
            continue
        if kind == "pattern":
            for match in _as_prose_too(text, _pattern_matches(text, siblings, own), siblings, own):
                add(loc, kind, text, match)
            continue
        value = kind in ("value", "secret-value")
        secret = kind == "secret-value"
        matches = scan_text(text, siblings=siblings, example=value, holds_secret=secret, own=own)
        if value and not any(ch.isspace() for ch in text):  # an enum value in snake_case reads as its words
            matches += _identifier_matches(text, siblings, own)
        for match in matches:
            add(loc, kind, text, match)
        if semantic is not None:
            for match in _semantic_matches(semantic, text, matches):
                add(loc, kind, text, match)
        if loc == ("full",):
            if full_limit is not None and len(text) > full_limit:
                too_long(loc, kind, text, full_limit)
        elif kind == "text" and loc != ("brief",) and len(text) > _FIELD_SIZE_LIMIT:
            too_long(loc, kind, text, _FIELD_SIZE_LIMIT)
        elif value:
            limit = _ENUM_SIZE_LIMIT if {"enum", "const"} & set(loc) else _FIELD_SIZE_LIMIT
            if len(text) > limit:
                too_long(loc, kind, text, limit)
    return findings


def card_label(server: str) -> str:
    """How a server card is named in findings (``server:memory``): no tool name holds a colon."""
    return f"server:{server}"


def scan_card(
    card: ServerCard,
    *,
    path: str | Path | None = None,
    source: str | None = None,
    siblings: Iterable[str] = (),
    semantic: SemanticLayer | None = None,
) -> list[Finding]:
    """Every finding in a server card's ``title``, ``description`` and ``instructions``: a model reads them (tiered
    catalogs and namespaces are headed by the card, the gateway passes the instructions on to every client), and
    a person may write a card by hand, where no import fitted it. ``siblings``: the names of the server's tools (an
    instruction about them is the server's own workflow). A card is not quarantined; a finding at the threshold
    fails ``audit --security`` like a tool's."""
    file, lines, scalars = _layout(path, source, "server card")
    findings: list[Finding] = []
    for key in ("title", "description", "instructions"):
        text = getattr(card, key)
        if not text:
            continue
        matches = scan_text(text, siblings=siblings, own=(card.name,))
        if semantic is not None:
            matches += _semantic_matches(semantic, text, matches)
        for match in matches:
            at = line(lines, scalars, (key,), "text", text, match.start) if file is not None else None
            findings.append(
                Finding(
                    match.rule, match.severity, card_label(card.name), key, match.excerpt, file, at, match.note,
                    match.decoded,
                )
            )  # fmt: skip
    return findings


def quarantine_rules(findings: Iterable[Finding], threshold: Severity = QUARANTINE_SEVERITY) -> tuple[str, ...]:
    """The sorted rule ids of the findings at ``threshold`` or above: what a doc's ``quarantine`` key lists."""
    return tuple(sorted({f.rule for f in findings if at_least(f.severity, threshold)}))


def review_rules(findings: Iterable[Finding]) -> tuple[str, ...]:
    """The sorted rule ids of the findings that ask a person to review a doc (at ``REVIEW_SEVERITY``, below
    quarantine): the doc stays usable, the audit lists it."""
    return tuple(
        sorted(
            {
                f.rule
                for f in findings
                if at_least(f.severity, REVIEW_SEVERITY) and not at_least(f.severity, QUARANTINE_SEVERITY)
            }
        )
    )


# --- registries --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SecurityReport:
    """The findings of a registry, which of its tools are quarantined (``tool → rule ids``), and which ask for
    review (:attr:`review`)."""

    fingerprint: str
    tools: int
    findings: tuple[Finding, ...]
    quarantined: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    full_limit: int = FULL_SIZE_FLOOR
    layers: tuple[str, ...] = ()  # what read the docs: "phrases", "lexicons (…)", "semantic (encoder)"
    cards: int = 0  # server cards read (their findings name ``server:<name>``, see :func:`scan_card`)

    def failing(self, threshold: Severity = QUARANTINE_SEVERITY) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if at_least(f.severity, threshold))

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}

    @property
    def review(self) -> dict[str, tuple[str, ...]]:
        """``tool → rule ids`` of the tools a person should review: a finding at ``REVIEW_SEVERITY`` and none
        that quarantines. They stay usable."""
        by_tool: dict[str, list[Finding]] = {}
        for f in self.findings:
            by_tool.setdefault(f.doc, []).append(f)
        out = {name: review_rules(found) for name, found in by_tool.items() if not quarantine_rules(found)}
        return {name: rules for name, rules in sorted(out.items()) if rules and name not in self.quarantined}

    def as_dict(self, threshold: Severity = QUARANTINE_SEVERITY) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "tools": self.tools,
            "cards": self.cards,
            "fail_on": threshold,
            "full_limit": self.full_limit,
            "layers": list(self.layers),
            "counts": self.counts(),
            "flagged_tools": sorted({f.doc for f in self.failing(threshold)}),
            "quarantined": {name: list(rules) for name, rules in sorted(self.quarantined.items())},
            "review": {name: list(rules) for name, rules in self.review.items()},
            "findings": [f.as_dict() for f in self.findings],
        }

    def to_json(self, threshold: Severity = QUARANTINE_SEVERITY) -> str:
        return json.dumps(self.as_dict(threshold), indent=2, ensure_ascii=False)

    def to_lines(self, threshold: Severity = QUARANTINE_SEVERITY) -> list[str]:
        lines = [str(f) for f in self.findings]
        for name, rules in sorted(self.quarantined.items()):
            lines.append(f"quarantined: {name} ({', '.join(rules)}); no mode allows it until a person clears it")
        review = self.review
        for name, rules in review.items():
            lines.append(f"review: {name} ({', '.join(rules)}); not quarantined, a person should read these findings")
        counts = self.counts()
        flagged = len({f.doc for f in self.failing(threshold)})
        if self.layers:
            lines.append(f"read by: {'; '.join(self.layers)}")
        cards = f" and {self.cards} server card(s)" if self.cards else ""
        lines.append(
            f"{len(self.findings)} finding(s) in {self.tools} tool(s){cards}: {counts['high']} high, "
            f"{counts['medium']} medium, {counts['low']} low; {flagged} tool(s) at {threshold} or above; "
            f"{len(review)} to review"
        )
        return lines

    def to_markdown(self, threshold: Severity = QUARANTINE_SEVERITY) -> str:
        lines = [
            f"## Security findings (registry {self.fingerprint})",
            "",
            "| location | severity | rule | tool | field | excerpt |",
            "|---|---|---|---|---|---|",
        ]
        for f in self.findings:  # a doc's path and text are outside strings: each cell literal Markdown
            cells = (f.location, f.severity, f.rule, f.doc, f.field, f.excerpt)
            lines.append("| " + " | ".join(md_cell(cell) for cell in cells) + " |")
        lines += ["", self.to_lines(threshold)[-1]]
        if self.layers:
            lines += ["", f"Read by: {'; '.join(self.layers)}."]
        return "\n".join(lines)


def sibling_names(doc: ToolDoc, docs: Iterable[ToolDoc]) -> list[str]:
    """The names (ours and upstream's) of the other tools imported from ``doc``'s server; none for a tool
    written by hand."""
    if doc.origin is None:
        return []
    server = doc.origin.server
    names: list[str] = []
    for other in docs:
        if other.origin is not None and other.origin.server == server and other.name != doc.name:
            names += [other.name, other.origin.name]
    return names


def _doc_files(root: Path | None) -> dict[str, Path]:
    """Each tool doc file of a registry folder by its stem (= the tool's name)."""
    return {p.stem: p for p in yaml_files(root)} if root is not None else {}


def layers_of(semantic: SemanticLayer | None) -> tuple[str, ...]:
    """The layers a scan runs, as a report names them."""
    out = ("phrases (English)", f"lexicons ({', '.join(lexicon_languages())})")
    if semantic is None:
        return (*out, "no semantic layer")
    return (*out, f"semantic ({semantic.name}, threshold {semantic.threshold:.2f})")


def scan_registry(registry: Registry, *, semantic: SemanticLayer | None = None) -> SecurityReport:
    """Scan every tool doc of ``registry``, quarantined ones too, and every server card (:func:`scan_card`);
    findings carry ``path:line`` when the registry was loaded from a folder (its ``root``). ``semantic`` adds the
    semantic layer (every sentence of the registry is encoded in one batch first)."""
    tools = registry.tools
    limit = full_size_limit(tools.values())
    files = _doc_files(registry.root)
    if semantic is not None:
        semantic.prime(text for doc in tools.values() for _, _, text in doc_texts(doc))
        semantic.prime(text for card in registry.servers.values() for text in _card_texts(card))
    findings: list[Finding] = []
    for name, doc in tools.items():
        siblings = sibling_names(doc, tools.values())
        findings += scan(doc, path=files.get(name), full_limit=limit, siblings=siblings, semantic=semantic)
    for server, card in registry.servers.items():
        path = card_path(registry.root, server) if registry.root is not None else None
        own = [n for d in tools.values() if d.origin is not None and d.origin.server == server for n in _names(d)]
        findings += scan_card(card, path=path, siblings=own, semantic=semantic)
    quarantined = {name: doc.quarantine for name, doc in tools.items() if doc.quarantined}
    return SecurityReport(
        registry.fingerprint,
        len(tools),
        tuple(findings),
        quarantined,
        limit,
        layers_of(semantic),
        len(registry.servers),
    )


def _card_texts(card: ServerCard) -> list[str]:
    return [text for text in (card.title, card.description, card.instructions) if text]


def _names(doc: ToolDoc) -> tuple[str, ...]:
    return (doc.name, doc.origin.name) if doc.origin is not None else (doc.name,)
