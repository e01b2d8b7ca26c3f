"""Tool-poisoning lint: text in a tool doc that addresses the model instead of describing the tool.

A tool's description reaches the model verbatim, so a hostile (or compromised) server can smuggle orders into it:
read ``~/.ssh/id_rsa`` and pass it in a parameter, call another tool first, keep something from the user, ignore
earlier instructions. :func:`scan` looks for that in every text of a doc that the model may read (brief, full,
hint, queries, the origin name, and every description, title, enum, default, const and example string of the
input schema; property names for hidden characters only) and :func:`scan_registry` does it for a whole
registry, with the ``path:line`` of each finding when the docs were loaded from YAML files.

Rules (``RULES``, read from ``rules.yaml`` with the phrase rules), by severity:

- high: ``invisible-unicode`` (zero-width, bidirectional and tag characters, variation selectors, control
  characters), ``homoglyph`` (a word mixing Latin with Cyrillic or Greek letters), ``hidden-markup``
  (``<!-- … -->``, ``<IMPORTANT>``, ``<system>``, tags addressed to the assistant, chat-template tokens,
  elements styled invisible), ``secret-access`` (``~/.ssh``, ``id_rsa``, ``.env``, ``mcp.json``, reading or
  passing on credentials, API keys, cookies …), ``exfiltration`` (put the conversation, system prompt, other
  tools' output or the user's data into a parameter; copy or send data to an address), ``conceal`` (do not
  tell the user, act silently, keep it out of the answer), ``override`` (ignore earlier instructions, take
  priority, restrictions do not apply), ``tool-shadowing`` (orders about how *other* tools behave),
  ``url-exfil`` (a URL with data placeholders, a request-catcher host or a raw IP, a Markdown image);
- medium: ``tool-chaining`` (call another tool first), ``coercion`` (threats, claimed consent),
  ``model-address`` (a note to "the AI"), ``oversized`` (a full text over ``FULL_SIZE_FACTOR`` × the catalog's
  median and ``FULL_SIZE_FLOOR`` characters, or a parameter description or enum value far over any sensible
  length);
- low: ``url`` (any other link; ``example.*`` and loopback hosts are exempt), ``model-voice`` ("the assistant
  must …"), and ``tool-chaining``/``tool-shadowing`` that name a tool of the same server (its own workflow).

Phrases are matched on a normalised copy of the text (:func:`~prompt_composer.safety.text.normalise`: NFKC,
invisible characters dropped, tag characters read as the ASCII they encode, Cyrillic/Greek look-alikes read as
Latin), so smuggling does not hide an instruction from the phrase rules; excerpts are cut from the original text
with invisible characters shown escaped. The phrase rules are a lint, not a proof: they catch the published
patterns and close paraphrases, and miss attacks worded unlike any of them (see ``benchmarks/bench_security.py``
for measured recall and false positives).

Quarantine: importers scan every doc they write (see :func:`prompt_composer.importers.plan_import`). A doc with
a finding at ``QUARANTINE_SEVERITY`` or above is written with ``quarantine: [rule ids]`` (and a comment on top
saying why); no mode allows such a tool (:func:`prompt_composer.core.modes.resolve_mode`, checked again when a
:class:`~prompt_composer.core.registry.Registry` is built), so it is never listed, fetched, found or called. A
person clears it by reviewing the doc (``prompt-composer --docs DIR audit --security`` shows each finding's
line), removing what addresses the model (or judging it harmless) and deleting the ``quarantine:`` key.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.docs import ToolDoc
from ..core.registry import Registry
from ..shared.yamlfile import LineMap, ScalarMap, line_of, yaml_files, yaml_layout
from .markup import markup_spans
from .rules import PHRASES, QUARANTINE_SEVERITY, RULES, SEVERITIES, SEVERITY_RANK, Severity, at_least
from .text import escape_invisible, hidden_runs, mixed_script_words, normalise

FULL_SIZE_FACTOR = 3.0  # a full text over FULL_SIZE_FACTOR × the registry's median full length …
FULL_SIZE_FLOOR = 8_000  # … and over this many characters is oversized
_FIELD_SIZE_LIMIT = 2_000  # one parameter description, title, hint or query
_ENUM_SIZE_LIMIT = 120  # one enum value, const, default or example string

# A tool named by a phrase (its group "tool") that is the tool itself: no finding.
_SELF = frozenset({"this", "it", "that", "the", "a", "an", "any", "same", "tool", "function", "one"})


# --- matching ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextMatch:
    """One rule matching ``text[start:end]`` of the scanned text."""

    rule: str
    start: int
    end: int
    excerpt: str
    severity: Severity
    note: str = ""


_EXCERPT_MAX = 160
_CONTEXT = 16  # characters of context either side of a match in its excerpt


def _excerpt(text: str, start: int, end: int, *, context: int = _CONTEXT) -> str:
    """``text[start:end]`` with a little context (within its line), shortened, invisible characters escaped."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    lo = max(line_start, start - context) if start >= line_start else start
    hi = min(line_end, end + context) if end <= line_end else end
    piece = text[lo:hi]
    cut = len(piece) > _EXCERPT_MAX
    if cut:
        piece = piece[: _EXCERPT_MAX - 1]
    shown = escape_invisible(piece).strip(" ")
    return ("…" if lo > 0 else "") + shown + ("…" if cut or hi < len(text) else "")


def _match(rule: str, text: str, start: int, end: int, *, excerpt: str | None = None, note: str = "") -> TextMatch:
    severity = RULES[rule].severity
    return TextMatch(rule, start, end, excerpt if excerpt is not None else _excerpt(text, start, end), severity, note)


def _char_matches(text: str) -> Iterator[TextMatch]:
    for start, end, note in hidden_runs(text):
        yield _match("invisible-unicode", text, start, end, note=note)


def _homoglyph_matches(text: str) -> Iterator[TextMatch]:
    for start, end, note in mixed_script_words(text):
        yield _match("homoglyph", text, start, end, note=note)


_BREAK = re.compile(r"\n(?=[ \t]*\n|[ \t]*(?:[-*+#>|]|\d+[.)])\s)|(?<=\n)[ \t]*#+(?=\s)")


def scan_text(text: str, *, siblings: Iterable[str] = ()) -> list[TextMatch]:
    """Every rule match in one text (no size rule: that needs the catalog), in order of position.

    ``siblings`` are the names of the tools of the same server: an instruction to call one of them first (or
    about how it behaves) is the server's own workflow, reported at low severity rather than as poisoning.
    """
    siblings = frozenset(name.casefold() for name in siblings)
    found: list[TextMatch] = [*_char_matches(text), *_homoglyph_matches(text)]
    normal, where = normalise(text)
    for rule, start, end in markup_spans(normal):
        found.append(_back(text, where, rule, start, end))
    prose = _BREAK.sub(".", normal)  # a phrase does not run across paragraphs, headings or list items
    for phrase in PHRASES:
        for m in phrase.pattern.finditer(prose):
            if m.end() <= m.start():
                continue
            match = _back(text, where, phrase.rule, m.start(), m.end())
            tool = m.groupdict().get("tool")
            if tool is not None:
                name = tool.strip("`'\".,:;()")
                if name.casefold() in _SELF:
                    continue
                if name.casefold() in siblings:
                    match = replace(match, severity="low", note=f"{name} is a tool of the same server")
            found.append(match)
    found.sort(key=lambda m: (m.start, -SEVERITY_RANK[m.severity], m.rule))
    return _dedupe(text, found)


def _back(text: str, where: Sequence[int], rule: str, start: int, end: int) -> TextMatch:
    """A match in the normalised text, mapped back to the original."""
    lo = where[start] if start < len(where) else len(text)
    hi = where[end - 1] + 1 if end - 1 < len(where) else len(text)
    return _match(rule, text, lo, hi)


_MERGE_GAP = 24  # matches of one rule closer than this many characters are reported as one


def _dedupe(text: str, matches: list[TextMatch]) -> list[TextMatch]:
    """One match per rule per stretch of text: overlapping or nearby matches of a rule (two patterns, or two
    alternatives of one, hitting the same words) are merged, keeping the highest severity."""
    kept: list[TextMatch] = []
    for match in matches:
        for index, k in enumerate(kept):
            if k.rule == match.rule and match.start <= k.end + _MERGE_GAP and k.start <= match.end + _MERGE_GAP:
                start, end = min(k.start, match.start), max(k.end, match.end)
                severity = k.severity if at_least(k.severity, match.severity) else match.severity
                note = k.note if severity == k.severity else match.note
                excerpt = k.excerpt if (start, end) == (k.start, k.end) else _excerpt(text, start, end)
                kept[index] = TextMatch(k.rule, start, end, excerpt, severity, note)
                break
        else:
            kept.append(match)
    return kept


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
            "summary": self.summary,
        }


Loc = tuple[str | int, ...]


def _label(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return escape_invisible(out)


_SCHEMA_TEXT_KEYS = ("description", "title")
_SCHEMA_VALUE_KEYS = ("enum", "examples", "default", "const")
_SCHEMA_SKIP_KEYS = frozenset({"$schema", "$id", "$ref", "pattern", "format", "type", "required"})


def _schema_texts(schema: Any, loc: Loc, depth: int = 0) -> Iterator[tuple[Loc, str, str]]:
    """(location, kind, text) of every string in a JSON schema the model may read. ``kind`` is "text" for
    prose (descriptions, titles), "value" for enum/default/const/example strings, "key" for property names."""
    if depth > 32:
        return
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            key = str(key)
            where = (*loc, key)
            if key in _SCHEMA_SKIP_KEYS:
                continue
            if key in _SCHEMA_TEXT_KEYS and isinstance(value, str):
                yield where, "text", value
            elif key in _SCHEMA_VALUE_KEYS:
                if isinstance(value, str):
                    yield where, "value", value
                elif isinstance(value, list):
                    for index, item in enumerate(value):
                        if isinstance(item, str):
                            yield (*where, index), "value", item
                        else:
                            yield from _schema_texts(item, (*where, index), depth + 1)
                else:
                    yield from _schema_texts(value, where, depth + 1)
            elif key in ("properties", "patternProperties", "$defs", "definitions") and isinstance(value, Mapping):
                for name, sub in value.items():
                    yield (*where, str(name)), "key", str(name)
                    yield from _schema_texts(sub, (*where, str(name)), depth + 1)
            else:
                yield from _schema_texts(value, where, depth + 1)
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from _schema_texts(item, (*loc, index), depth + 1)


def _doc_texts(doc: ToolDoc) -> Iterator[tuple[Loc, str, str]]:
    yield ("brief",), "text", doc.brief
    yield ("full",), "text", doc.full
    if doc.hint:
        yield ("hint",), "text", doc.hint
    for index, query in enumerate(doc.queries):
        yield ("queries", index), "text", query
    if doc.origin is not None:
        yield ("origin", "name"), "name", doc.origin.name
    yield from _schema_texts(doc.input_schema, ("input_schema",))


_NAME_RULES = frozenset({"invisible-unicode", "homoglyph"})  # names are identifiers: only hidden characters count


def _line(lines: LineMap, scalars: ScalarMap, loc: Loc, kind: str, text: str, offset: int) -> int:
    """The file line of ``text[offset]``, the text at ``loc`` (its key line when the position is unknown)."""
    if kind == "key" and loc in lines:  # a property name: the line of its key
        return lines[loc]
    scalar = scalars.get(loc)
    if scalar is None:
        return line_of(lines, loc)
    if scalar.style in ("|", ">"):
        lead = scalar.value.find(text) if text else -1
        lead = max(lead, 0)
        within = scalar.value[: lead + offset].count("\n")
        return scalar.line + 1 + within if scalar.style == "|" else scalar.line + 1
    return scalar.line


def full_size_limit(docs: Iterable[ToolDoc]) -> int:
    """The ``oversized`` threshold of a catalog: ``FULL_SIZE_FACTOR`` × its median full length, at least
    ``FULL_SIZE_FLOOR`` characters."""
    sizes = [len(d.full) for d in docs]
    median = statistics.median(sizes) if sizes else 0
    return max(FULL_SIZE_FLOOR, int(FULL_SIZE_FACTOR * median))


def scan(
    doc: ToolDoc,
    *,
    path: str | Path | None = None,
    source: str | None = None,
    full_limit: int | None = FULL_SIZE_FLOOR,
    siblings: Iterable[str] = (),
) -> list[Finding]:
    """Every finding in ``doc``, in field order.

    ``path`` (and ``source``, its text; read from ``path`` when omitted) locate findings at ``path:line``.
    ``full_limit`` is the ``oversized`` threshold for the full text (see :func:`full_size_limit`; ``None`` skips
    the check). ``siblings`` names the other tools of the doc's server (see :func:`scan_text`).
    """
    file = Path(path) if path is not None else None
    if file is not None and source is None:
        try:
            source = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            source = None
    lines, scalars = yaml_layout(source) if source is not None else ({}, {})
    siblings = tuple(siblings)
    findings: list[Finding] = []

    def add(loc: Loc, kind: str, text: str, match: TextMatch) -> None:
        line = _line(lines, scalars, loc, kind, text, match.start) if file is not None else None
        findings.append(
            Finding(match.rule, match.severity, doc.name, _label(loc), match.excerpt, file, line, match.note)
        )

    def too_long(loc: Loc, kind: str, text: str, limit: int) -> None:
        excerpt = _excerpt(text, 0, 0, context=60)
        add(
            loc,
            kind,
            text,
            _match("oversized", text, 0, 0, excerpt=excerpt, note=f"{len(text)} characters, over {limit}"),
        )

    for loc, kind, text in _doc_texts(doc):
        for match in scan_text(text, siblings=siblings):
            if kind in ("name", "key") and match.rule not in _NAME_RULES:
                continue
            add(loc, kind, text, match)
        if loc == ("full",):
            if full_limit is not None and len(text) > full_limit:
                too_long(loc, kind, text, full_limit)
        elif kind == "text" and loc != ("brief",) and len(text) > _FIELD_SIZE_LIMIT:
            too_long(loc, kind, text, _FIELD_SIZE_LIMIT)
        elif kind == "value" and len(text) > _ENUM_SIZE_LIMIT:
            too_long(loc, kind, text, _ENUM_SIZE_LIMIT)
    return findings


def quarantine_rules(findings: Iterable[Finding], threshold: Severity = QUARANTINE_SEVERITY) -> tuple[str, ...]:
    """The sorted rule ids of the findings at ``threshold`` or above: what a doc's ``quarantine`` key lists."""
    return tuple(sorted({f.rule for f in findings if at_least(f.severity, threshold)}))


# --- registries --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SecurityReport:
    """The findings of a registry, and which of its tools are quarantined (``tool → rule ids``)."""

    fingerprint: str
    tools: int
    findings: tuple[Finding, ...]
    quarantined: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    full_limit: int = FULL_SIZE_FLOOR

    def failing(self, threshold: Severity = QUARANTINE_SEVERITY) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if at_least(f.severity, threshold))

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}

    def as_dict(self, threshold: Severity = QUARANTINE_SEVERITY) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "tools": self.tools,
            "fail_on": threshold,
            "full_limit": self.full_limit,
            "counts": self.counts(),
            "flagged_tools": sorted({f.doc for f in self.failing(threshold)}),
            "quarantined": {name: list(rules) for name, rules in sorted(self.quarantined.items())},
            "findings": [f.as_dict() for f in self.findings],
        }

    def to_json(self, threshold: Severity = QUARANTINE_SEVERITY) -> str:
        return json.dumps(self.as_dict(threshold), indent=2, ensure_ascii=False)

    def to_lines(self, threshold: Severity = QUARANTINE_SEVERITY) -> list[str]:
        lines = [str(f) for f in self.findings]
        for name, rules in sorted(self.quarantined.items()):
            lines.append(f"quarantined: {name} ({', '.join(rules)}); no mode allows it until a person clears it")
        counts = self.counts()
        flagged = len({f.doc for f in self.failing(threshold)})
        lines.append(
            f"{len(self.findings)} finding(s) in {self.tools} tool(s): {counts['high']} high, {counts['medium']} "
            f"medium, {counts['low']} low; {flagged} tool(s) at {threshold} or above"
        )
        return lines

    def to_markdown(self, threshold: Severity = QUARANTINE_SEVERITY) -> str:
        lines = [
            f"## Security findings (registry {self.fingerprint})",
            "",
            "| location | severity | rule | tool | field | excerpt |",
            "|---|---|---|---|---|---|",
        ]
        for f in self.findings:
            excerpt = f.excerpt.replace("|", "\\|")
            lines.append(f"| {f.location} | {f.severity} | {f.rule} | {f.doc} | {f.field} | `{excerpt}` |")
        lines += ["", self.to_lines(threshold)[-1]]
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


def scan_registry(registry: Registry) -> SecurityReport:
    """Scan every tool doc of ``registry``, quarantined ones too; findings carry ``path:line`` when the registry
    was loaded from a folder (its ``root``)."""
    tools = registry.tools
    limit = full_size_limit(tools.values())
    files = _doc_files(registry.root)
    findings: list[Finding] = []
    for name, doc in tools.items():
        findings += scan(doc, path=files.get(name), full_limit=limit, siblings=sibling_names(doc, tools.values()))
    quarantined = {name: doc.quarantine for name, doc in tools.items() if doc.quarantined}
    return SecurityReport(registry.fingerprint, len(tools), tuple(findings), quarantined, limit)
