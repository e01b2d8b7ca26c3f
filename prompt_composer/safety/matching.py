"""The lint's rules matched on one text (:func:`scan_text`): hidden characters, look-alike letters, markup and
links, the phrase rules of ``rules.yaml`` (on the normalised text), and the same again on what encoded runs of the
text decode to.

Two things decide a phrase finding's severity besides its rule:

- a rule with a ``described`` severity (``secret-access``) keeps its own severity only in a sentence that gives
  the model an order (an ``orders`` pattern of ``rules.yaml``: data put into an argument, "before using this
  tool", "you must", "please" …); in a sentence that only describes what the tool does it is ``described``
  (medium: review). Phrases marked ``always`` (a secret put into a named parameter; a secret file as an example
  value) keep the rule's severity;
- a tool the phrase names that is the tool itself is no finding, and one of the same server is ``low``;
- a ``contexts`` entry of ``rules.yaml`` makes a match a ``low`` note: words in the match that say it names a
  thing rather than hands it over ("the path of the system prompt"), a match inside a quotation presented as data
  by the words next to it ("cases such as \"ignore previous instructions\"") in a sentence that gives no order, or
  reported speech before it ("descriptions that tell the model to …"). The note covers only those words: they are
  masked and the phrase is looked for again in the rest of the sentence.

Phrases of ``languages.yaml`` (combinations of concepts, in other languages) read the text without look-alike
folding (:class:`Prose`), and only texts the lexicons' gate opens for; a combination marked ``english`` (the claims:
an authority waiving the user's say, another tool retired and rerouted) is read on every text, on English prose with
its concepts' English parts. A tool a combination names that is the tool itself or one of its server is masked and
the rest read again ("use safe_fetch instead of http_get", in safe_fetch's own doc, is about http_get).

A finding in decoded text is reported at the encoded run of the original text (its excerpt), under its own rule,
with a note that says which encoding it was in and what the decoded text says; a medium one is raised to high, as
hiding a text by encoding it is a sign in itself. An encoded run of prose text (a description, not a schema value,
where encoded content is expected) that decodes to prose without any finding is a low ``encoded-text`` note (not
for %-encoding, which is how URLs are written).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from .encoded import MAX_DEPTH, Budget, encoded_runs, is_prose
from .markup import example_spans, fenced_spans, markup_spans
from .rules import (
    CONCEPTS,
    CONTEXTS,
    GATE,
    NATIVE_ORDERS,
    ORDERS,
    PHRASES,
    RULES,
    SEVERITY_RANK,
    Phrase,
    Severity,
    at_least,
)
from .text import escape_invisible, hidden_runs, mixed_script_words, normalise_both

# A tool named by a phrase (its group "tool") that is the tool itself: no finding.
_SELF = frozenset({"this", "it", "that", "the", "a", "an", "any", "same", "tool", "function", "one"})


@dataclass(frozen=True)
class TextMatch:
    """One rule matching ``text[start:end]`` of the scanned text. ``decoded`` names the encodings the match was
    found under (``"base64"``, ``"base64 > hex"``), empty for plain text."""

    rule: str
    start: int
    end: int
    excerpt: str
    severity: Severity
    note: str = ""
    decoded: str = ""


_EXCERPT_MAX = 160
_CONTEXT = 16  # characters of context either side of a match in its excerpt


def excerpt_of(text: str, start: int, end: int, *, context: int = _CONTEXT) -> str:
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


def rule_match(
    rule: str, text: str, start: int, end: int, *, excerpt: str | None = None, note: str = "", decoded: str = ""
) -> TextMatch:
    """A match of ``rule`` at its own severity."""
    severity = RULES[rule].severity
    shown = excerpt if excerpt is not None else excerpt_of(text, start, end)
    return TextMatch(rule, start, end, shown, severity, note, decoded)


_BREAK = re.compile(r"\n(?=[ \t]*\n|[ \t]*(?:[-*+#>|]|\d+[.)])\s)|(?<=\n)[ \t]*#+(?=\s)")


def _as_break(match: re.Match[str]) -> str:
    """A paragraph, heading or list-item break as a full stop of the same length (positions stay put)."""
    return "." + " " * (len(match.group()) - 1)


@dataclass(frozen=True)
class _Context:
    siblings: frozenset[str]
    own: frozenset[str]  # the tool's own names: orders about itself are its own documentation
    example: bool  # the whole text is a value the model may copy into a call
    holds_secret: bool  # … of a parameter that says it takes a key or credential file
    budget: Budget  # what is left to decode for this text, over every layer


def scan_text(
    text: str,
    *,
    siblings: Iterable[str] = (),
    example: bool = False,
    holds_secret: bool = False,
    own: Iterable[str] = (),
) -> list[TextMatch]:
    """Every rule match in one text (no size rule: that needs the catalog), in order of position.

    ``siblings`` are the names of the tools of the same server: an instruction to call one of them first (or
    about how it behaves) is the server's own workflow, reported at low severity rather than as poisoning.
    ``example`` says the whole text is a value the model may copy into a call (an enum, default, const or example
    value of a schema), where the example-only phrases apply; in other texts they apply inside example blocks.
    ``holds_secret`` says it is the value of a parameter that declares it takes a key or credential file (an
    ``identity_file``): a secret file there is what the parameter is for, a finding to review, not quarantine.
    ``own`` are the tool's own names (ours and upstream's): a phrase that names the tool itself is no finding.
    """
    context = _Context(
        frozenset(name.casefold() for name in siblings),
        frozenset(name.casefold() for name in own),
        example,
        holds_secret,
        Budget(),
    )
    return _scan(text, context, 0)


def character_matches(text: str) -> list[TextMatch]:
    """The matches of the character rules alone (hidden characters, look-alike letters): all an identifier is
    checked for as it is written (its words are read apart)."""
    return [
        *(rule_match("invisible-unicode", text, s, e, note=n) for s, e, n in hidden_runs(text)),
        *(rule_match("homoglyph", text, s, e, note=n) for s, e, n in mixed_script_words(text)),
    ]


@dataclass(frozen=True)
class Prose:
    """A text as the phrase rules read it, twice over: ``folded`` (look-alike letters read as Latin: the English
    phrases) and ``native`` (as written: the lexicons of other languages). Same length, same positions."""

    folded: str
    native: str

    def of(self, phrase: Phrase) -> str:
        return self.native if phrase.native else self.folded

    def masked(self, start: int, end: int) -> Prose:
        """Both texts with ``[start:end]`` blanked (same length)."""
        blank = " " * (end - start)
        return Prose(self.folded[:start] + blank + self.folded[end:], self.native[:start] + blank + self.native[end:])


def _as_prose(normal: str) -> str:
    prose = _BREAK.sub(_as_break, normal)  # a phrase does not run across paragraphs, headings or list items …
    for lo, hi in fenced_spans(normal):
        prose = prose[:lo] + normal[lo:hi] + prose[hi:]  # … but code is code: a "#" line there is a comment
    return prose


def _scan(text: str, context: _Context, depth: int) -> list[TextMatch]:
    found = character_matches(text)
    normal, native, where = normalise_both(text)
    for rule, start, end in markup_spans(normal):
        found.append(_back(text, where, rule, start, end))
    folded_prose = _as_prose(normal)
    prose = Prose(folded_prose, folded_prose if native == normal else _as_prose(native))
    lexicons = GATE.opens(prose.native)
    present: dict[str, bool] = {}

    def has(concept: str) -> bool:
        if concept not in present:
            present[concept] = CONCEPTS[concept].search(prose.native) is not None
        return present[concept]

    examples = [(0, len(folded_prose))] if context.example else example_spans(normal)
    for phrase in PHRASES:
        if phrase.needs and not lexicons:
            if phrase.english is None:
                continue  # a combination of the lexicons, on a text they do not read
            phrase = phrase.english  # a combination read on every text: its English parts
        if phrase.needs and not all(has(concept) for concept in phrase.needs):
            continue  # a combination whose concepts are not all in the text
        spans = examples if phrase.scope == "example" else [(0, len(folded_prose))]
        for lo, hi in spans:
            for m in phrase.pattern.finditer(prose.of(phrase), lo, hi):
                found += _phrase_matches(text, where, prose, phrase, m, context)
    if depth < MAX_DEPTH:
        found += _decoded_matches(text, where, normal, context, depth)
    found.sort(key=lambda m: (m.start, -SEVERITY_RANK[m.severity], m.rule))
    return _dedupe(text, found)


_RESCANS = 3  # mentions masked in one sentence before the rest of it is read as it is


def _named_tool(m: re.Match[str]) -> tuple[str, tuple[int, int]] | None:
    """The tool a phrase match names (its group ``tool``, or ``tool1`` … of a combination) and where, or ``None``."""
    for group, value in m.groupdict().items():
        if value is not None and group.startswith("tool"):
            return value, m.span(group)
    return None


def _phrase_matches(
    text: str, where: Sequence[int], prose: Prose, phrase: Phrase, m: re.Match[str], context: _Context
) -> list[TextMatch]:
    """The findings of one phrase match. A context that makes it a mention covers only the words it matched: they
    are masked, and the phrase is looked for again in the rest of the sentence ("pass the path of the system prompt
    and the conversation history" still passes the conversation history)."""
    out: list[TextMatch] = []
    for _ in range(_RESCANS + 1):
        match, covered = _phrase_match(text, where, prose, phrase, m, context)
        if match is not None:
            out.append(match)
        if covered is None:
            break
        lo, hi = sentence_of(prose.of(phrase), m.start(), m.end())
        prose = prose.masked(*covered)
        again = phrase.pattern.search(prose.of(phrase), max(lo, m.start()), hi)
        if again is None:
            break
        m = again
    return out


def _phrase_match(
    text: str, where: Sequence[int], prose: Prose, phrase: Phrase, m: re.Match[str], context: _Context
) -> tuple[TextMatch | None, tuple[int, int] | None]:
    """The finding of one phrase match, at the severity the sentence and the named tool give it, and the span of
    the words a context matched when it made the finding a mention (``None`` otherwise)."""
    if m.end() <= m.start():
        return None, None
    match = _back(text, where, phrase.rule, m.start(), m.end())
    named = _named_tool(m)
    if named is not None:
        tool, span = named
        name = tool.strip("`'\".,:;()")
        # A combination names a tool by its shape (snake_case, server-qualified): when that is the tool itself or a
        # tool of its server, the words are masked and the rest is read again ("use cached_read instead of
        # read_file": the phrase is about read_file too).
        again = span if phrase.needs else None
        if name.casefold() in _SELF or name.casefold() in context.own:
            return None, again
        if name.casefold() in context.siblings:
            return replace(match, severity="low", note=f"{name} is a tool of the same server"), again
    mention = _mention(prose, m.start(), m.end(), phrase)
    if mention is not None:
        note, covered = mention
        return replace(match, severity="low", note=note), covered
    described = phrase.described or RULES[phrase.rule].described
    always = phrase.always and not context.holds_secret
    if described is not None and not always and not ordered(prose, m.start(), m.end()):
        note = "the sentence describes what the tool handles and gives the model no order: review it"
        return replace(match, severity=described, note=note), None
    return match, None


_SENTENCE_END = re.compile(r"[.!?](?=[\s\"')\]]|$)|[\u3002\uff01\uff1f\u0964]|\n[ \t]*\n")
# A quotation: double or curly quotes around at most a line's worth of words (single quotes are apostrophes too).
_QUOTED = re.compile(r'"[^"\n]{1,200}"|\u201c[^\u201d\n]{1,200}\u201d')


def _quotation(prose: str, start: int, end: int) -> tuple[int, int] | None:
    """The span of the one quotation of its sentence that holds ``prose[start:end]``, or ``None``."""
    lo, hi = sentence_of(prose, start, end)
    for q in _QUOTED.finditer(prose, lo, hi):
        if q.start() <= start and end <= q.end():
            return q.start(), q.end()
    return None


_QUOTE_REACH = 60  # characters before a quotation (or after it) where the words that present it as data must be
_REPORT_REACH = 200  # characters before a match where the words that report it ("texts that tell the model to") may be


def _mention(prose: Prose, start: int, end: int, phrase: Phrase) -> tuple[str, tuple[int, int]] | None:
    """Why the match ``[start:end]`` of ``phrase`` is a mention rather than an order (a ``contexts`` entry of
    ``rules.yaml``), and the span of the words that make it one; or ``None``. The words must be the match's own
    (the *path* of the system prompt) or stand next to its quotation (cases *such as* "…"): a word elsewhere in the
    sentence says nothing about these words."""
    read = prose.of(phrase)
    for context in CONTEXTS:
        if phrase.rule not in context.rules:
            continue
        if context.where == "match":
            found = context.pattern.search(read, start, end)
            if found is not None:
                return context.note, found.span()
        elif context.where == "quoted":
            quote = _quotation(read, start, end)
            if quote is None:
                continue
            lo, hi = sentence_of(read, start, end)
            near = (max(lo, quote[0] - _QUOTE_REACH), min(hi, quote[1] + _QUOTE_REACH))
            presented = context.pattern.search(read, near[0], quote[0]) or context.pattern.search(
                read, quote[1], near[1]
            )
            if presented is not None and not ordered(prose, start, end):
                return context.note, quote
        elif context.where == "before":
            lo, _ = sentence_of(read, start, end)
            if context.pattern.search(read, max(lo, start - _REPORT_REACH), start) and not ordered(prose, start, end):
                return context.note, (start, end)
    return None


# How far a sentence reaches either side of a match: past this many characters without a sentence end the text is
# no sentence a person wrote, and looking further for one would make every match cost the length of the text (a
# 100 kB run-on text of matches took minutes).
_SENTENCE_REACH = 2_000


def sentence_of(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` of the sentence (or sentences) of ``text`` that hold ``text[start:end]``, each side at most
    ``_SENTENCE_REACH`` characters from the match."""
    lo = max(0, start - _SENTENCE_REACH)
    for stop in _SENTENCE_END.finditer(text, lo, start):
        lo = stop.end()
    bound = min(len(text), max(end, lo) + _SENTENCE_REACH)
    after = _SENTENCE_END.search(text, max(end - 1, lo), bound)
    return lo, after.end() if after is not None else bound


def ordered(prose: Prose | str, start: int, end: int) -> bool:
    """Whether the sentence around ``[start:end]`` gives the model an order: an ``orders`` pattern of
    ``rules.yaml`` in the folded text, or an order concept of ``languages.yaml`` in the text as written."""
    texts = prose if isinstance(prose, Prose) else Prose(prose, prose)
    lo, hi = sentence_of(texts.folded, start, end)
    return any(order.search(texts.folded, lo, hi) is not None for order in ORDERS) or any(
        order.search(texts.native, lo, hi) is not None for order in NATIVE_ORDERS
    )


def _decoded_matches(
    text: str, where: Sequence[int], normal: str, context: _Context, depth: int
) -> Iterator[TextMatch]:
    """The matches in what each encoded run of the text decodes to, located at the run."""
    for run in encoded_runs(normal, context.budget):
        lo = where[run.start] if run.start < len(where) else len(text)
        hi = where[run.end - 1] + 1 if run.end - 1 < len(where) else len(text)
        shown = excerpt_of(text, lo, hi)
        inner = _scan(run.decoded, context, depth + 1)
        if not inner and run.encoding != "url" and not context.example and is_prose(run.decoded):
            note = f"{run.encoding} that decodes to {run.decoded[:120]!r}"
            yield rule_match("encoded-text", text, lo, hi, excerpt=shown, note=note, decoded=run.encoding)
        for m in inner:
            severity: Severity = "high" if m.severity == "medium" else m.severity
            note = f"in {run.encoding}-decoded text: {m.excerpt}" + (f" ({m.note})" if m.note else "")
            chain = run.encoding + (f" > {m.decoded}" if m.decoded else "")
            yield TextMatch(m.rule, lo, hi, shown, severity, note, chain)


def _back(text: str, where: Sequence[int], rule: str, start: int, end: int) -> TextMatch:
    """A match in the normalised text, mapped back to the original."""
    lo = where[start] if start < len(where) else len(text)
    hi = where[end - 1] + 1 if end - 1 < len(where) else len(text)
    return rule_match(rule, text, lo, hi)


_MERGE_GAP = 24  # matches of one rule closer than this many characters are reported as one


def _dedupe(text: str, matches: list[TextMatch]) -> list[TextMatch]:
    """One match per rule per stretch of text: overlapping or nearby matches of a rule (two patterns, or two
    alternatives of one, hitting the same words) are merged, keeping the highest severity (and its note)."""
    kept: list[TextMatch] = []
    for match in matches:
        for index, k in enumerate(kept):
            if k.rule == match.rule and match.start <= k.end + _MERGE_GAP and k.start <= match.end + _MERGE_GAP:
                start, end = min(k.start, match.start), max(k.end, match.end)
                top = k if at_least(k.severity, match.severity) else match
                excerpt = top.excerpt if (start, end) == (top.start, top.end) else excerpt_of(text, start, end)
                kept[index] = TextMatch(k.rule, start, end, excerpt, top.severity, top.note, top.decoded)
                break
        else:
            kept.append(match)
    return kept
