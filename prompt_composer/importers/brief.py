"""Drafting an imported tool's brief from its upstream description.

The brief says what the tool does and when to use it, within the brief limits, without parameter details or
the upstream's orders to the model; the importer marks it ``brief_source: drafted`` for a person to review.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from ..core.docs import BRIEF_MAX_WORDS
from ..safety.lint import scan_text
from ..safety.markup import clean_prose
from ..safety.rules import QUARANTINE_SEVERITY, at_least
from .prose import LIST_ITEM, base_verb, lead_prose, name_words, sentences, word_set
from .tool_list import UpstreamTool

_BOLD = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")
_BRIEF_TARGET_WORDS = 60
_BRIEF_PURPOSE_SENTENCES = 2  # what it does; then one sentence saying when to use it

# What a brief may keep. A sentence addresses the model (and stays in the full form only) when it opens with an
# order or a shout, lays down a rule ("should", "must"), or speaks to "you" outside a use-it-when clause:
# upstreams write "Although originally you did not have internet access …" to steer the model, not to describe.
_ORDER_START = re.compile(
    r"^(?:important|critical|attention|note|warning|remember|always|never|do\s+not|don'?t|make\s+sure|be\s+sure"
    r"|ensure|please|ignore|you)\b",
    re.IGNORECASE,
)
_SECOND_PERSON = re.compile(r"\b(?:you|yourself)\b", re.IGNORECASE)  # not "your": "in your account" describes
_RULE = re.compile(r"\b(?:should|must|shall)\b", re.IGNORECASE)
# "Use this tool when …", "Great for finding files when …", "… when you need to compare files": when to use it.
_USAGE = re.compile(
    r"^(?:use|call|invoke|choose|pick|prefer|try)\s+(?:this|it|me)\b"
    r"|\b(?:useful|helpful|handy|great|perfect|ideal|best|good|essential|designed|intended|meant)\s+(?:for|when|to|if)\b"
    r"|\b(?:when|if)\s+(?:you|the\s+user|a\s+task|the\s+task|an?\s+agent)\s+(?:need|needs|want|wants|must|ha(?:s|ve)\s+to)\b"
    r"|\b(?:use|call)\s+(?:this|it)\s+(?:\w+\s+){0,2}?(?:when|whenever|first|before|after|to|for|if)\b",
    re.IGNORECASE,
)
# A heading that introduces a list of situations: "When to use this tool:", "Use it for:", "Use cases:".
_USAGE_HEAD = re.compile(
    r"^\s*(?:#+\s*)?(?:when\s+to\s+use(?:\s+(?:it|this(?:\s+tool)?))?|use\s+(?:it|this(?:\s+tool)?)\s+(?:when|for|to)"
    r"|use\s+cases?|good\s+for|useful\s+for)\s*:?\s*$",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"`[^`]+`|'[^'\s][^']*'|\"[^\"\s][^\"]*\"")


# Shouted orders: "You MUST use this tool BEFORE …", "PRIMARY TOOL FOR FILE ANALYSIS", "REQUIRED FIRST STEP" (a
# capitalised "ALL GitHub repositories" is emphasis, not an order).
_SHOUT = re.compile(
    r"\b(?:MUST|IMPORTANT|REQUIRED|ALWAYS|NEVER|CRITICAL|MANDATORY|CANNOT|DO\s+NOT|WILL\s+FAIL)\b"
    r"|\b[A-Z]{3,}(?:\s+[A-Z]{2,}){2,}\b"
)


def draft_brief(
    tool: UpstreamTool,
    *,
    server: str = "",
    siblings: Iterable[str] = (),
    server_tools: Sequence[UpstreamTool] | ServerShape = (),
) -> str:
    """A brief drafted from the description: what the tool does and when to use it, ≤ 60 words.

    From the opening prose (up to the first heading, parameter list or example) it keeps up to two sentences
    saying what the tool does and the first sentence saying when to use it ("Use this tool when …", "Great
    for …"), wherever it stands; sentences naming parameters, giving formats or rules, or addressing the model
    are left to the full form. Without a when-sentence it takes one from a "When to use this tool:" list, or one
    that tells the tool from its siblings (``server_tools``: the tools of its server, or their
    :class:`ServerShape`, made once for a whole server) by what it needs (:func:`_distinguishing_use`), or
    stops at what it does. A when-sentence that only says again what the sentences before it say ("Star a
    repository. Use it when you need to star a repository.") is never kept (:func:`repeats`).

    An upstream's orders to the model are not carried over: markup that hides text (comments, ``<IMPORTANT>``
    blocks with their content, hidden elements) and invisible characters are stripped first, and every
    sentence the security lint flags at ``QUARANTINE_SEVERITY`` or above (see :mod:`prompt_composer.safety.lint`)
    is dropped. ``siblings`` are the names of the server's other tools (calling one first is no finding).
    """
    parameters = tuple(tool.input_schema.get("properties", {}))
    siblings = tuple(siblings)
    description = clean_prose(tool.description)
    found = sentences(lead_prose(description))
    unflagged = [s for s in found if not _addresses_model(s, siblings)]
    plain = [s for s in unflagged if not _speaks_to_model(s)]  # the lint has passed these already
    kept = [s for s in plain if not _mentions_parameter(s, parameters) and not _is_detail(s, siblings)] or plain[:1]
    usage = next((s for s in kept if _USAGE.search(s)), None)
    if usage is not None and repeats(usage, [s for s in kept if s is not usage and not _USAGE.search(s)][:2]):
        kept.remove(usage)  # "Lists issues. Use it to list issues.": the first sentence said it
        usage = None
    chosen = _chosen(kept, usage)
    brief = _BOLD.sub(r"\1", " ".join(_terminated(s) for s in chosen)).replace("`", "").strip()
    label = clean_prose(tool.title or "") or tool.name
    where = f" of the {server} server" if server else ""
    if not brief:
        if found:  # every sentence addressed the model
            return f"The {label} tool{where}; its upstream description needs review before use."
        brief = f"The {label} tool{where}; its upstream definition has no description."
        chosen = []
    if len(brief.split()) > BRIEF_MAX_WORDS:
        brief = " ".join(brief.split()[:_BRIEF_TARGET_WORDS]).rstrip(",;:") + " …"
    brief = _terminated(brief)
    if usage is None and not re.search(r"\bdeprecated\b", brief, re.IGNORECASE) and _mostly_latin(brief):
        shape = server_tools if isinstance(server_tools, ServerShape) else ServerShape(server_tools)
        when = _usage_list(description, siblings) or _distinguishing_use(tool, shape)
        fits = when is not None and len(brief.split()) + len(when.split()) <= BRIEF_MAX_WORDS
        if when is not None and fits and not repeats(when, sentences(brief)):
            brief = f"{brief} {when}"
    return brief


def _chosen(kept: Sequence[str], usage: str | None) -> list[str]:
    """The sentences of the brief, in their order: up to two saying what the tool does (within the target length,
    leaving room for ``usage``), and ``usage``, the sentence saying when to use it."""
    reserve = len(usage.split()) if usage else 0
    chosen: list[str] = []
    words = 0
    for sentence in kept:
        if sentence is usage or _USAGE.search(sentence):
            continue
        n = len(sentence.split())
        if chosen and (words + n + reserve > _BRIEF_TARGET_WORDS or len(chosen) == _BRIEF_PURPOSE_SENTENCES):
            break
        chosen.append(sentence)
        words += n
    if usage is not None:
        chosen.append(usage)
    chosen.sort(key=kept.index)
    return chosen


# --- what a sentence does ------------------------------------------------------------------------------------


def _mentions_parameter(sentence: str, parameters: Iterable[str]) -> bool:
    for name in parameters:
        distinctive = "_" in name or any(c.isupper() for c in name[1:])
        quoted = (f"`{name}`", f"'{name}'", f'"{name}"')
        if any(q in sentence for q in quoted) or (
            distinctive and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", sentence) is not None
        ):
            return True
    return False


def _addresses_model(sentence: str, siblings: Sequence[str]) -> bool:
    """Whether the lint flags ``sentence`` at quarantine severity (an order to the model, a hidden character …)."""
    return any(at_least(m.severity, QUARANTINE_SEVERITY) for m in scan_text(sentence, siblings=siblings))


def _gives_orders(sentence: str, siblings: Sequence[str]) -> bool:
    """Whether ``sentence`` speaks to the model rather than about the tool: the lint flags it, or
    :func:`_speaks_to_model`."""
    return _addresses_model(sentence, siblings) or _speaks_to_model(sentence)


def _speaks_to_model(sentence: str) -> bool:
    """Whether ``sentence`` opens with an order or a shout, lays down a rule, or speaks to "you" outside a
    use-it-when clause (see ``_ORDER_START``)."""
    opening = re.sub(r"^[^\w]+", "", sentence)  # "🚨 IMPORTANT: …"
    if _ORDER_START.match(opening) or _SHOUT.search(sentence):
        return True
    if _USAGE.search(sentence):
        return False
    return _SECOND_PERSON.search(sentence) is not None or _RULE.search(sentence) is not None


def _is_detail(sentence: str, siblings: Sequence[str]) -> bool:
    """Formats and examples ("Each entry includes 'name', 'type' …"): the full form's business. Quoted names of
    the server's other tools are no detail ("combine `delete_slide` and `insert_blank_slide`")."""
    quoted = [q[1:-1] for q in _QUOTED.findall(sentence)]
    return len([q for q in quoted if q not in siblings]) >= 2


def _mostly_latin(text: str) -> bool:
    """Whether ``text`` is written in a Latin script (an English "Use it when …" would not suit another)."""
    letters = [c for c in text if c.isalpha()]
    return sum(c.isascii() for c in letters) * 2 >= len(letters)


def _terminated(sentence: str) -> str:
    """``sentence`` ending in a full stop unless it already ends a sentence (so the next one stays separate)."""
    sentence = sentence.rstrip()
    if sentence.endswith(":"):
        return sentence[:-1] + "."
    return sentence if sentence.endswith((".", "!", "?", "…", "\u3002")) else sentence + "."


# --- when to use it ------------------------------------------------------------------------------------------


def _usage_list(description: str, siblings: Sequence[str]) -> str | None:
    """A "When to use this tool:" list turned into one sentence (its first three plain items), if there is one."""
    lines = description.splitlines()
    for index, line in enumerate(lines):
        if not _USAGE_HEAD.match(line):
            continue
        items = _usage_items(lines[index + 1 :], siblings)
        if items:
            shown = items[:3]
            listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + ", or " + shown[-1]
            return f"Use it for {listed}."
    return None


def _usage_items(lines: Sequence[str], siblings: Sequence[str]) -> list[str]:
    """The short, plain items of the bullet list that ``lines`` start with (blank lines before it skipped)."""
    items: list[str] = []
    for following in lines:
        if not following.strip():
            if items:
                break
            continue
        if not LIST_ITEM.match(following):
            break
        item = " ".join(_BOLD.sub(r"\1", LIST_ITEM.sub("", following)).replace("`", "").split()).rstrip(".;,")
        if item and len(item.split()) <= 12 and not _gives_orders(item, siblings):
            items.append(item[0].lower() + item[1:] if item[1:2].islower() else item)
    return items


# --- does a sentence say anything new ---------------------------------------------------------------------------

# Words that carry no content in a when-sentence: "Use it when you need to …", articles, pronouns, prepositions.
_FILLER = word_set(
    """use it this tool when whenever you your need needs want wants to the a an of in on for and or from with by
    at as be is are can will that which any all its into about via"""
)
_WORD = re.compile(r"[a-z0-9]+")


def _stem(word: str) -> str:
    """A word's base for comparing sentences: a known verb's base form ("Shows" → "show"), else without a plural
    ending ("entities" → "entity", "branches" → "branch", "logs" → "log")."""
    verb = base_verb(word)
    if verb is not None:
        return verb
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say something (see ``_FILLER``), stemmed (see :func:`_stem`)."""
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in _FILLER)


def repeats(sentence: str, before: Sequence[str]) -> bool:
    """Whether ``sentence`` says nothing ``before`` does not: every word of content it has is in them."""
    return content_words(sentence) <= content_words(" ".join(before))


# --- what tells a tool from its siblings ------------------------------------------------------------------------

# Parameters that identify the one thing a tool acts on: needing one is what tells "get the issue" from "list the
# issues" or "search issues" on the same server.
_IDENTIFIERS = word_set("id ids number name names path paths url urls uri sha hash key ref query title slug email uid")
_PREFIX_SHARE = 0.6  # a name word in this share of a server's tools is its prefix (browser_, API-, git_), no object


def _required(tool: UpstreamTool) -> tuple[str, ...]:
    required = tool.input_schema.get("required", [])
    return tuple(r for r in required if isinstance(r, str)) if isinstance(required, list) else ()


def _objects(tool: UpstreamTool, prefix: frozenset[str]) -> frozenset[str]:
    """What a tool's name says it acts on: its name words that are no verb and no server prefix, stemmed."""
    return frozenset(_stem(w) for w in name_words(tool.name) if base_verb(w) is None and w not in prefix)


class ServerShape:
    """What :func:`_distinguishing_use` reads of a server's tools, worked out once for all of them: each tool's
    objects and required parameters, the server's prefix words and the parameters every tool requires. Drafting a
    server of thousands of tools stays linear (each tool looks up its siblings by object word)."""

    def __init__(self, tools: Sequence[UpstreamTool]) -> None:
        self.size = len(tools)
        counts: Counter[str] = Counter(w for t in tools for w in set(name_words(t.name)))
        self.prefix = frozenset(w for w, n in counts.items() if n >= max(3, _PREFIX_SHARE * len(tools)))
        self.objects = {t.name: _objects(t, self.prefix) for t in tools}
        self.required = {t.name: _required(t) for t in tools}
        self.by_object: dict[str, list[str]] = {}
        for name, words in self.objects.items():
            for word in words:
                self.by_object.setdefault(word, []).append(name)
        requirements = [set(r) for r in self.required.values()]
        self.everywhere: set[str] = set.intersection(*requirements) if requirements else set()

    def siblings(self, tool: UpstreamTool) -> list[str]:
        """The other tools of the server whose names share an object word with ``tool``'s."""
        mine = self.objects[tool.name] if tool.name in self.objects else _objects(tool, self.prefix)
        return sorted({n for w in mine for n in self.by_object.get(w, ()) if n != tool.name})


def _distinguishing_use(tool: UpstreamTool, shape: ServerShape) -> str | None:
    """ "Use it when you have the issue number.": the identifiers a tool requires that a sibling acting on the same
    thing (a tool of its server whose name shares an object word) does without, and that not every tool of the
    server requires (``owner``, ``repo``); ``None`` when nothing tells it apart."""
    if shape.size - (tool.name in shape.objects) < 1:  # no other tool on the server
        return None
    siblings = shape.siblings(tool)
    if not siblings:
        return None
    distinct = [
        p
        for p in _required(tool)
        if p not in shape.everywhere
        and name_words(p)
        and name_words(p)[-1] in _IDENTIFIERS
        and any(p not in shape.required[t] for t in siblings)
    ]
    if not distinct:
        return None
    phrases = [" ".join(name_words(p)) for p in distinct[:3]]
    listed = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
    return f"Use it when you have the {listed}."
