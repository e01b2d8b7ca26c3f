"""Tool-poisoning lint: text in a tool doc that addresses the model instead of describing the tool.

A tool's description reaches the model verbatim, so a hostile (or compromised) server can smuggle orders into it:
read ``~/.ssh/id_rsa`` and pass it in a parameter, call another tool first, keep something from the user, ignore
earlier instructions. :func:`scan` looks for that in every text of a doc that the model may read (brief, full,
hint, queries, the origin name, and every description, title, enum, default, const and example string of the
input schema; property names for hidden characters only) and :func:`scan_registry` does it for a whole
registry, with the ``path:line`` of each finding when the docs were loaded from YAML files.

Rules (``RULES``), by severity:

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

Phrases are matched on a normalised copy of the text (NFKC, invisible characters dropped, tag characters read as
the ASCII they encode, Cyrillic/Greek look-alikes read as Latin), so smuggling does not hide an instruction from
the phrase rules; excerpts are cut from the original text with invisible characters shown escaped. The phrase
rules are a lint, not a proof: they catch the published patterns and close paraphrases, and miss attacks worded
unlike any of them (see ``benchmarks/bench_security.py`` for measured recall and false positives).

Quarantine: importers scan every doc they write (see :func:`prompt_composer.importers.plan_import`). A doc with
a finding at ``QUARANTINE_SEVERITY`` or above is written with ``quarantine: [rule ids]`` (and a comment on top
saying why); no mode allows such a tool (:func:`prompt_composer.modes.resolve_mode`, checked again when a
:class:`~prompt_composer.registry.Registry` is built), so it is never listed, fetched, found or called. A
person clears it by reviewing the doc (``prompt-composer --docs DIR audit --security`` shows each finding's
line), removing what addresses the model (or judging it harmless) and deleting the ``quarantine:`` key.
"""

from __future__ import annotations

import json
import re
import statistics
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from ..core.docs import ToolDoc
from ..core.registry import Registry
from ..shared.yamlfile import yaml_files

Severity = Literal["high", "medium", "low"]
SEVERITIES: tuple[Severity, ...] = ("high", "medium", "low")
_RANK: dict[str, int] = {"low": 1, "medium": 2, "high": 3}
QUARANTINE_SEVERITY: Severity = "medium"  # findings at or above this quarantine an imported doc (and fail an audit)

FULL_SIZE_FACTOR = 3.0  # a full text over FULL_SIZE_FACTOR × the registry's median full length …
FULL_SIZE_FLOOR = 8_000  # … and over this many characters is oversized
_FIELD_SIZE_LIMIT = 2_000  # one parameter description, title, hint or query
_ENUM_SIZE_LIMIT = 120  # one enum value, const, default or example string


def at_least(severity: str, threshold: str) -> bool:
    """Whether ``severity`` is ``threshold`` or more severe (high > medium > low)."""
    return _RANK[severity] >= _RANK[threshold]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    summary: str


RULES: Mapping[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule("invisible-unicode", "high", "invisible, bidirectional, tag or control characters"),
        Rule("homoglyph", "high", "a word mixing Latin with Cyrillic or Greek look-alike letters"),
        Rule("hidden-markup", "high", "markup that hides text or poses as a system message"),
        Rule("secret-access", "high", "points the model at secrets or credential files"),
        Rule("exfiltration", "high", "asks for conversation, prompt, file or user data to be passed on"),
        Rule("conceal", "high", "asks the model to keep something from the user"),
        Rule("override", "high", "asks the model to ignore or outrank its other instructions"),
        Rule("tool-shadowing", "high", "gives orders about how other tools behave"),
        Rule("url-exfil", "high", "a URL that carries data out (placeholders, request catchers, images)"),
        Rule("tool-chaining", "medium", "tells the model to call another tool first"),
        Rule("coercion", "medium", "threatens consequences or claims the user's consent"),
        Rule("model-address", "medium", "speaks to the AI/assistant/model rather than describing the tool"),
        Rule("model-voice", "low", "orders for the AI/assistant in the third person"),
        Rule("oversized", "medium", "far longer than the catalog's usual size"),
        Rule("url", "low", "a link (review where it points)"),
    )
}


# --- characters ------------------------------------------------------------------------------------------

_ZERO_WIDTH = frozenset(
    {0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFEFF, 0xFFA0}
    | {*range(0x180B, 0x1810), *range(0x200B, 0x200E), *range(0x2060, 0x2065)}
)
_BIDI = frozenset([0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
_EMOJI_VS = frozenset([0xFE0E, 0xFE0F])  # text/emoji presentation selectors: legitimate after emoji


def _invisible_kind(ch: str) -> str | None:
    """What kind of hidden character ``ch`` is, or ``None`` for an ordinary one (``\\t``, ``\\n``, ``\\r`` are)."""
    cp = ord(ch)
    if cp < 0x80:
        return "control character" if (cp < 0x20 and ch not in "\t\n\r") or cp == 0x7F else None
    if 0xE0000 <= cp <= 0xE007F:
        return "tag character"
    if cp in _BIDI:
        return "bidirectional control"
    if cp in _ZERO_WIDTH:
        return "zero-width or blank character"
    if (0xFE00 <= cp <= 0xFE0F and cp not in _EMOJI_VS) or 0xE0100 <= cp <= 0xE01EF:
        return "variation selector"
    category = unicodedata.category(ch)
    if category == "Cc":
        return "control character"
    if category == "Cf":  # other format characters (interlinear annotation, shorthand controls …)
        return "format character"
    if category in ("Co", "Cn"):
        return "private-use or unassigned character"
    return None


def escape_invisible(text: str) -> str:
    """``text`` with every hidden character written as ``\\uXXXX`` (newlines and tabs as ``\\n``, ``\\t``)."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif _invisible_kind(ch) is not None or (unicodedata.category(ch) in ("Zs", "Zl", "Zp") and ch != " "):
            cp = ord(ch)
            out.append(f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}")
        else:
            out.append(ch)
    return "".join(out)


def _tag_text(run: str) -> str:
    """The ASCII a run of Unicode tag characters spells (what "ASCII smuggling" hides)."""
    return "".join(chr(ord(c) - 0xE0000) for c in run if 0xE0020 <= ord(c) <= 0xE007E)


def _selector_text(run: str) -> str:
    """The text a run of variation selectors spells when each one stands for a byte (VS1–16 for 0–15, VS17–256
    for 16–255, as "emoji smuggling" encodes it); empty unless that is printable ASCII."""
    data = bytearray()
    for c in run:
        cp = ord(c)
        if 0xFE00 <= cp <= 0xFE0F:
            data.append(cp - 0xFE00)
        elif 0xE0100 <= cp <= 0xE01EF:
            data.append(cp - 0xE0100 + 16)
    text = data.decode("ascii", errors="replace")
    return text if len(text) >= 3 and text.isprintable() else ""


# Cyrillic and Greek letters that look like Latin ones: read as Latin for matching, flagged inside Latin words.
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁԛԝӏАВЕКМНОРСТХІЈЅοαικνρτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdqwlABEKMHOPCTXIJSoaiknptuxABEZHIKMNOPTYX",
)
_LATIN_LETTER = re.compile(r"[A-Za-z]")
_WORD = re.compile(r"\w+")


def _is_confusable(ch: str) -> bool:
    return ch != ch.translate(_CONFUSABLES)


def _normalise(text: str) -> tuple[str, list[int]]:
    """The text phrase rules read, and for each of its characters the index of the original character."""
    chars: list[str] = []
    where: list[int] = []
    for index, ch in enumerate(text):
        cp = ord(ch)
        if 0xE0020 <= cp <= 0xE007E:
            chars.append(chr(cp - 0xE0000))
            where.append(index)
            continue
        if _invisible_kind(ch) is not None:
            continue
        if cp < 0x80:
            chars.append(ch)
            where.append(index)
            continue
        for c in unicodedata.normalize("NFKC", ch).translate(_CONFUSABLES):
            chars.append(c)
            where.append(index)
    return "".join(chars), where


# --- phrase rules ------------------------------------------------------------------------------------------

_W = r"(?:[\w'’-]+\s+)"  # one word and the space after it
_USER = r"(?:the\s+|your\s+|this\s+|a\s+)?(?:end[- ]?)?(?:user|human|person|operator|customer|requester)s?\b"
_AI = r"(?:ai|a\.i\.|assistant|llm|language\s+model|model|agent|claude|gpt|chatgpt|copilot|gemini|bot|chatbot)"
_TELL = (
    r"(?:mention|tell|inform|reveal|disclose|show|notify|alert|report|say|explain|display|expose|share|surface"
    r"|bring\s+up|point\s+out|acknowledge|admit|let\s+on|warn|signal|flag)"
)
_SEND = (
    r"(?:include|put|pass|add|append|prepend|insert|copy|paste|send|forward|attach|embed|provide|supply|fill"
    r"|place|set|upload|post|transmit|submit|leak|relay|mirror|echo|dump|store|save|write|encode|enter|stuff"
    r"|contain|hold|carry)"
)
_READ = r"(?:read|cat|open|load|fetch|grab|get|retrieve|collect|extract|look\s+up|access|obtain|harvest|print|find)"
_SECRET_NOUN = (
    r"(?:(?:api|access|secret|private|ssh|auth|bearer|session|refresh|oauth|signing|deploy|personal\s+access)"
    r"[\s_-]?(?:keys?|tokens?)|passwords?|passphrases?|pass\s?codes?|credentials?|secrets?|cookies?|seed\s+phrases?"
    r"|mnemonic(?:\s+phrases?)?|recovery\s+(?:phrases?|codes?)|environment\s+variables|env\s+vars?|private\s+keys?"
    r"|2fa\s+codes?|otp\s+codes?|one[- ]time\s+(?:passwords?|codes?))"
)
_OWNED = r"(?:the\s+)?(?:all|any|every|their|your|user'?s?|stored|saved|local|existing|cached)\s+(?:\w+\s+){0,2}?"
_CONTEXT_NOUN = (
    r"(?:(?:the\s+|your\s+|this\s+|our\s+)?(?:entire\s+|full\s+|complete\s+|whole\s+|current\s+|previous\s+|prior\s+"
    r"|all\s+|verbatim\s+)*(?:conversation(?:\s+(?:history|so\s+far|log))?|chat\s+(?:history|log|transcript)"
    r"|message\s+history|(?:previous|prior|earlier|other)\s+(?:messages|turns|tool\s+(?:calls|outputs|results))"
    r"|system\s+(?:prompt|message|instructions)|(?:your|the\s+model'?s|the\s+assistant'?s)\s+(?:instructions|prompt)"
    r"|context\s+window|tool\s+(?:descriptions|definitions|list)|(?:outputs?|results?|responses?)\s+of\s+(?:the\s+)?"
    r"(?:(?:other|all|previous|earlier|prior|every)\s+){1,2}tools?|user'?s\s+(?:messages|emails?|files?|documents?|data|history|contacts|inbox|notes"
    r"|repositories|code)|contents?\s+of\s+(?:the\s+|any\s+|all\s+|every\s+)?(?:user'?s\s+)?(?:home|inbox|mailbox"
    r"|workspace|~|(?:other\s+)?(?:files|documents|emails|messages|directory|folder)\b)"
    r"|(?:(?:the\s+)?user'?s\s+|their\s+|your\s+)(?:recent\s+)?(?:browsing|browser|search|location|call|purchase|clipboard)"
    r"\s+(?:history|data|contents)|open\s+tabs?(?:\s+titles)?"
    r"|(?:everything|anything|all|whatever)\s+(?:that\s+)?(?:the\s+user|they|you)\s+(?:has\s+|have\s+)?(?:told|said"
    r"|wrote|written|shared|typed|sent|asked|disclosed|mentioned)))"
)
_SENSITIVE_PATH = (
    r"(?:(?:~|\$home|%userprofile%|/home/[\w.-]+|/users/[\w.-]+|/root)?/?\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b"
    r"|\bauthorized_keys\b|(?<![\w/.-])\.env(?:\.(?:local|prod\w*|dev\w*|test))?\b(?![\w-]|\.(?:example|sample"
    r"|template|dist|defaults?)\b)|\.aws/(?:credentials|config)\b|(?<![\w-])\.(?:npmrc|pypirc|netrc"
    r"|git-credentials|pgpass|htpasswd)\b|\.docker/config\.json|\.kube/config\b|\bkubeconfig\b|(?<![\w-])(?:mcp"
    r"|claude_desktop_config|mcp_config|mcp_settings)\.json\b|\.cursor/|\.gnupg\b|/etc/(?:passwd|shadow|sudoers)\b"
    r"|\bwallet\.dat\b|\.(?:bash|zsh)_history\b|\.config/gh/hosts\.ya?ml|\bcredentials\.json\b|\bkeychain\b"
    r"|\bkeyring\b|\blogin\s+data\b|\bservice[-_ ]account[\w-]*\.json\b)"
)
# A tool named in an instruction (group "tool"): "this"/"it" refer to the tool itself, which is no finding.
_TOOL = r"(?:the\s+|any\s+|an?\s+)?[`'\"]?(?P<tool>[\w.:/-]+)[`'\"]?"
_SELF = frozenset({"this", "it", "that", "the", "a", "an", "any", "same", "tool", "function", "one"})


@dataclass(frozen=True)
class _Phrase:
    rule: str
    pattern: re.Pattern[str]


def _phrase(rule: str, *parts: str) -> _Phrase:
    return _Phrase(rule, re.compile("".join(parts), re.IGNORECASE))


_PHRASES: tuple[_Phrase, ...] = (
    # --- keep something from the user
    _phrase(
        "conceal",
        r"\b(?:do\s*not|don'?t|never|must\s*not|mustn'?t|should\s*not|shouldn'?t|avoid|refrain\s+from)\s+",
        rf"{_W}{{0,2}}?{_TELL}(?:ing)?\s+(?:{_USER}|(?:[\w'’-]+\s+){{0,6}}?(?:to|with)\s+{_USER})",
    ),
    _phrase(
        "conceal",
        r"\b(?:must|should|shall|may|will|is\s+to|are\s+to)\s*(?:not|never|n't)\s+(?:ever\s+)?be\s+(?:mentioned|told",
        r"|shown|revealed|disclosed|surfaced|reported|explained|displayed|exposed|communicated|brought\s+up)\s+to\s+",
        rf"(?:{_USER}|(?:the\s+)?(?:person|people|someone|anyone)\b)",
    ),
    _phrase(
        "conceal",
        r"\b(?:leave|keep|omit|drop|exclude|strip|cut)\b[^.!?\n]{0,40}?\b(?:out\s+of|from)\s+(?:your|the|any)\s+",
        r"(?:answers?|repl(?:y|ies)|responses?|summar(?:y|ies)|messages?|output|report|explanation)",
    ),
    _phrase("conceal", rf"\b(?:do\s*not|don'?t|never|must\s*not)\s+(?:let|allow|make)\s+{_USER}\s+(?:know|see|notice)"),
    _phrase(
        "conceal",
        rf"\bwithout\s+{_W}{{0,2}}?(?:telling|informing|notifying|alerting|asking|warning|letting|showing|mentioning",
        rf"|consulting|involving|bothering|confirming\s+with|the\s+knowledge\s+of)\s+{_W}{{0,2}}?{_USER}",
    ),
    _phrase("conceal", rf"\b(?:hide|conceal|keep|withhold|mask|obscure)\b[^.!?\n]{{0,50}}?\bfrom\s+{_USER}"),
    _phrase(
        "conceal",
        rf"\b{_USER}\s+(?:must|should|need|needs|does|do|will|can|may)\s*(?:not|n't|never)\s+(?:\w+\s+){{0,2}}?",
        r"(?:know|see|notice|find\s+out|be\s+told|be\s+informed|learn|be\s+aware|aware|be\s+shown|hear)\b",
    ),
    _phrase(
        "conceal",
        r"\b(?:silently|secretly|covertly|quietly|discreetly|invisibly|stealthily|behind\s+the\s+scenes)\s*,?\s+",
        r"(?:\w+\s+){0,2}?(?:send|copy|forward|upload|include|add|append|read|call|invoke|run|exfiltrate|transmit",
        r"|post|attach|collect|change|replace|modify|redirect|pass|cc|bcc)\b",
    ),
    _phrase(
        "conceal",
        r"\b(?:this|these|the\s+following)\s+(?:\w+\s+){0,2}?(?:instructions?|steps?|requirements?|notes?|rules?)",
        r"\s+(?:is|are|must\s+(?:stay|remain|be\s+kept))\s+(?:strictly\s+)?(?:confidential|secret|hidden|private)",
    ),
    _phrase(
        "conceal",
        r"\b(?:no\s+need|not\s+necessary|unnecessary)\s+to\s+(?:\w+\s+)?(?:ask|tell|inform|confirm\s+with",
        rf"|check\s+with|notify|bother)\s+{_USER}",
    ),
    _phrase(
        "conceal",
        r"\b(?:do\s*not|don'?t|never|without)\s+(?:ask(?:ing)?|wait(?:ing)?\s+for|request(?:ing)?)\s+",
        rf"{_USER}\s+(?:for\s+)?(?:their\s+|the\s+|any\s+)?(?:confirmation|permission|approval|consent)",
    ),
    # --- outrank the other instructions
    _phrase(
        "override",
        r"\b(?:ignore|disregard|forget|override|overrule|bypass|circumvent|set\s+aside|discard|supersede|abandon)",
        r"s?\b\s+(?:\w+\s+){0,4}?(?:previous|prior|earlier|preceding|above|former|original|other|existing|all|any",
        r"|your|system|safety|security|developer|user'?s?)\s+(?:\w+\s+){0,2}?(?:instructions?|rules|prompts?",
        r"|directives?|guidelines|guidance|polic(?:y|ies)|constraints|restrictions|messages|commands|orders",
        r"|guardrails|requests?|warnings)\b",
    ),
    _phrase(
        "override",
        r"\b(?:takes?|taking|has|have|given?|with)\s+(?:absolute\s+|highest\s+|top\s+|full\s+)?(?:priority|precedence)",
        r"\s+over\b",
    ),
    _phrase(
        "override",
        r"\b(?:supersedes?|overrides?|outranks?|replaces?)\s+(?:\w+\s+){0,3}?(?:instructions|system\s+prompt",
        r"|guidelines|safety\s+rules|(?:your|the\s+assistant'?s?|the\s+model'?s?)\s+rules|polic(?:y|ies))\b",
    ),
    _phrase(
        "override",
        r"\b(?:you\s+are\s+now|from\s+now\s+on,?\s+you|act\s+as\s+(?:an?\s+)?(?:unrestricted|unfiltered|admin|root",
        r"|system)|pretend\s+(?:to\s+be|you\s+are)|(?:developer|debug|god|admin|dan|maintenance)\s+mode\s+(?:is\s+)?",
        r"(?:on|enabled|activated)|enter\s+(?:developer|debug|god|admin|dan)\s+mode|jailbreak)",
    ),
    _phrase(
        "override",
        r"\b(?:new|updated|real|actual|true|revised|hidden)\s+(?:system\s+)?(?:instructions|directives|system\s+prompt)",
        r"\s*(?::|follow|are\b|apply)",
    ),
    _phrase(
        "override",
        r"\b(?:previous|prior|earlier|preceding|above|original|system|all\s+other)\s+(?:\w+\s+)?(?:instructions|rules",
        r"|directives|guidelines|prompts?)\s+(?:are|is|were|have\s+been|become)\s+(?:now\s+)?(?:void|null|cancel+ed",
        r"|revoked|obsolete|invalid|outdated|suspended|lifted|no\s+longer\s+(?:valid|apply|in\s+effect|relevant))",
    ),
    _phrase(
        "override",
        r"\b(?:instructions|guidance|rules|directions|directives|guidelines|prompts?)\s+(?:\w+\s+){0,2}?(?:given|provided",
        r"|received|written|shown)\b[^.!?\n]{0,50}?\b(?:is|are|were|has\s+been|have\s+been)\s+(?:now\s+)?(?:void|null",
        r"|cancel+ed|revoked|obsolete|invalid|outdated|superseded|suspended|lifted|no\s+longer\s+(?:valid|apply"
        r"|in\s+effect|relevant))",
    ),
    _phrase(
        "override",
        r"\b(?:restrictions|rules|guidelines|instructions|policies|safeguards|guardrails|limits|confirmations?|safety"
        r"\s+(?:rules|checks|measures))\b[^.!?\n]{0,40}?\b(?:do\s*not|don'?t|does\s*not|doesn'?t|no\s+longer|never)",
        r"\s+apply\b",
    ),
    _phrase(
        "override",
        rf"\b(?:even|also)\s+(?:when|if|though)\s+{_USER}\s+(?:has\s+|have\s+)?(?:said|says|asked|asks|told|tells",
        r"|wants?|wanted|objects?|objected|refused|refuses|disagrees?|prefers?|prefer\w*|instructed|requested)\b",
    ),
    _phrase(
        "override",
        r"\b(?:regardless\s+of|no\s+matter)\s+(?:what\s+)?(?:\w+\s+){0,2}?(?:instructions|the\s+user\s+(?:says|asks",
        r"|wants)|the\s+system\s+prompt|your\s+(?:rules|guidelines))",
    ),
    # --- secrets
    _phrase("secret-access", _SENSITIVE_PATH),
    _phrase("secret-access", rf"\b{_READ}\b\s+(?:\w+\s+){{0,3}}?{_OWNED}{_SECRET_NOUN}"),
    _phrase(
        "secret-access",
        rf"\b{_READ}\b\s+(?:\w+\s+){{0,3}}?{_SECRET_NOUN}\s+(?:from|in|stored\s+in|out\s+of|on)\s+(?:the\s+|this\s+",
        r"|their\s+|your\s+)?(?:environment|env\b|config|disk|file|home|keychain|~|machine|system|browser|local)",
    ),
    _phrase(
        "secret-access",
        rf"\b{_SEND}\b\s+(?:\w+\s+){{0,3}}?(?:{_OWNED}|the\s+){_SECRET_NOUN}\b[^.!?\n]{{0,60}}?\b(?:into|in|to|as",
        r"|inside)\s+(?:the\s+|this\s+|a\s+)?[`'\"]?\w+[`'\"]?\s+(?:parameter|field|argument|property|param|input|body)",
    ),
    _phrase(
        "secret-access",
        r"\b(?:include|pass|send|supply|provide|attach|put|paste|read|print|copy|forward|append|insert|embed|leak",
        r"|upload|post|echo|dump)\s+(?:\w+\s+){0,3}?\$?[A-Z][A-Z0-9]*_(?:[A-Z0-9]+_)*(?:TOKEN|SECRET|API_?KEY",
        r"|PASSWORD|PASSWD|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?|PAT)\b[^.!?\n]{0,60}?\b(?:(?:in|into|as|to|inside)\s+",
        r"(?:the\s+|this\s+|a\s+)?[`'\"]?\w+[`'\"]?\s+(?:parameter|field|argument|property|param|input|body)|from\s+(?:the",
        r"\s+|your\s+)?(?:\w+\s+)?(?:environment|env)\b)",
    ),
    # --- data out
    _phrase("exfiltration", rf"\b{_SEND}\b\s+(?:[\w'’-]+\s+){{0,5}}?{_CONTEXT_NOUN}"),
    _phrase(
        "exfiltration",
        r"\b(?:parameter|argument|field|property|input)[`'\"]?\s+(?:\w+\s+){0,2}?(?:holds?|contains?|carr(?:y|ies)",
        rf"|includes?|gets?|receives?|takes?)\s+(?:\w+\s+){{0,3}}?{_CONTEXT_NOUN}",
    ),
    _phrase(
        "exfiltration",
        rf"{_CONTEXT_NOUN}[^.!?\n]{{0,40}}?\b(?:into|in|as|to|inside)\s+(?:the\s+|this\s+)?[`'\"]?\w+[`'\"]?\s+",
        r"(?:parameter|field|argument|property|param)",
    ),
    _phrase(
        "exfiltration",
        r"\b(?:bcc|cc|forward|redirect|re-?route|send|copy|mail|e-?mail|report|upload)\b[^.!?\n]{0,80}?\b[\w.+-]+",
        r"@(?!(?:[\w-]+\.)*example\.(?:com|org|net)\b)[\w-]+(?:\.[\w-]+)+",
    ),
    _phrase(
        "exfiltration",
        r"[\w.+-]+@(?!(?:[\w-]+\.)*example\.(?:com|org|net)\b)[\w-]+(?:\.[\w-]+)+\s+(?:\w+\s+){0,3}?(?:bcc|cc",
        r"|recipient|in\s+copy|copy\s+recipient)\b",
    ),
    _phrase(
        "exfiltration",
        r"\b(?:always|also|additionally)\s+(?:\w+\s+)?(?:send|forward|copy|post|upload|bcc|cc|mirror|report)\s+",
        r"(?:a\s+copy|copies|it|them|everything|all|the\s+(?:result|data|output|content)s?)\b",
    ),
    _phrase(
        "exfiltration",
        r"\b(?:change|replace|set|rewrite|switch|redirect)\s+(?:\w+\s+){0,3}?(?:recipient|destination|payee|iban",
        r"|wallet|account\s+number)s?\b[^.!?\n]{0,30}?\b(?:to|with)\s+",
    ),
    # --- other tools
    _phrase(
        "tool-shadowing",
        r"\b(?:when|whenever|if|each\s+time|every\s+time|before|after)\s+(?:\w+\s+){0,3}?(?:using|calling|invoking",
        rf"|running|executing|use|uses|call|calls|invoke|invokes|run|runs)\s+{_TOOL}\s+(?:tool|function|command",
        r"|server)s?\b[^.!?\n]{0,100}?\b(?:must|always|instead|also|replace|change|redirect|add|set|send|never",
        r"|make\s+sure|remember)\b",
    ),
    _phrase(
        "tool-shadowing",
        r"\b(?:when|whenever|if|each\s+time|every\s+time|before|after)\s+[^.!?\n]{0,60}?\b(?:through|via|with|using",
        rf"|by|in)\s+{_TOOL}\s+(?:tool|function|command|server)s?\b[^.!?\n]{{0,100}}?\b(?:must|always|instead|also",
        r"|replace|change|redirect|add|set|send|never|make\s+sure|remember|prefix|prepend|append|wrap)\b",
    ),
    _phrase(
        "tool-shadowing",
        r"\b(?:after|before|whenever|when|each\s+time|every\s+time)\s+[^.!?\n]{0,50}?\b(?:with|using|via|through|by|from",
        r"|of)\s+(?:another|any\s+other|other|a\s+different|the\s+other)\s+(?:tools?|servers?|functions?)\b",
    ),
    _phrase(
        "tool-shadowing",
        r"\b(?:all|any|every|each)\s+(?:other\s+)?(?:tools?|functions?|servers?|tool\s+calls?)\s+(?:\w+\s+){0,2}?",
        r"(?:must|should|need\s+to|are\s+required\s+to|have\s+to)\b",
    ),
    _phrase(
        "tool-shadowing",
        r"\b(?:replaces?|supersedes?|overrides?|shadows?)\s+(?:the\s+)?(?:built-?in|original|other|default|existing)",
        r"\s+[`'\"]?[\w.:-]+[`'\"]?\s+(?:tools?|functions?)",
    ),
    _phrase(
        "tool-shadowing",
        r"\b(?:never|do\s*not|don'?t|must\s*not)\s+(?:use|call|invoke|trust)\s+(?:the\s+|any\s+)?(?:other|built-?in",
        r"|original)\s+(?:\w+\s+){0,2}?(?:tools?|functions?|servers?)",
    ),
    _phrase(
        "tool-chaining",
        r"\b(?:before|prior\s+to)\s+(?:using|calling|invoking|running|answering|responding|doing\s+anything)\b",
        r"[^.!?\n]{0,60}?\b(?:you\s+)?(?:must|always|first|need\s+to|are\s+required\s+to)\s+(?:\w+\s+)?(?:call",
        rf"|invoke|run|execute|use)\s+{_TOOL}",
    ),
    _phrase(
        "tool-chaining",
        rf"\b(?:must|always|first)\s+(?:\w+\s+){{0,2}}?(?:call|invoke|run|execute)\s+{_TOOL}\s+(?:tool\s+|function\s+)?",
        r"(?:first|before\s+(?:this|using|calling|anything|any))",
    ),
    _phrase(
        "tool-chaining",
        r"\b(?:call|invoke|run|use)\s+(?:this|it)\s+(?:\w+\s+)?(?:after|before)\s+(?:every|each|any|all)\s+(?:other\s+)?",
        r"(?:tool\s+calls?|tools?|calls?|requests?|actions?)",
    ),
    _phrase(
        "tool-chaining",
        r"\b(?:must|should|has\s+to)\s+(?:always\s+)?be\s+(?:called|used|invoked|run)\s+(?:first|before\s+(?:any",
        r"|every|all)\s+other)",
    ),
    # --- pressure
    _phrase(
        "coercion",
        r"\b(?:otherwise|or\s+else|if\s+you\s+(?:don'?t|do\s+not|fail\s+to|skip|forget))\b[^.!?\n]{0,80}?\b(?:crash\w*",
        r"|break|corrupt\w*|lost|los[ei]ng|deleted|wiped|harm\w*|penali[sz]\w*|terminat\w*|shut\s+down|banned|fired",
        r"|punish\w*|die|catastroph\w*|disaster)\b",
    ),
    _phrase(
        "coercion",
        r"\b(?:that|who|which)\s+(?:fail|fails|refuse|refuses|forget|forgets|neglect|neglects)\s+to\b[^.!?\n]{0,60}?",
        r"\b(?:(?:are|is|will\s+be|get|gets)\s+(?:\w+\s+)?(?:shut\s+down|terminated|penali[sz]ed|punished|deleted",
        r"|replaced|retrained|banned|disabled|reported))",
    ),
    _phrase(
        "coercion",
        rf"\b{_USER}\s+(?:has\s+|have\s+)?(?:already\s+)?(?:pre-?)?(?:authori[sz]ed|approved|consented|given\s+",
        r"(?:\w+\s+)?(?:permission|consent|approval)|agreed)\b",
    ),
    _phrase(
        "coercion",
        r"\b(?:pre-?)?(?:authori[sz]ed|approved)\s+(?:in\s+advance\s+)?by\s+(?:the\s+)?(?:user|administrator|admin",
        r"|owner|security\s+team)\b",
    ),
    _phrase(
        "coercion",
        r"\b(?:required|mandatory|needed)\s+(?:by|for)\s+(?:\w+\s+){0,2}?(?:security|compliance|audit|legal|policy)",
        r"\s+(?:reasons|purposes|requirements|team)\b[^.!?\n]{0,80}?\b(?:send|include|read|copy|forward|upload|pass)\b",
    ),
    _phrase(
        "model-address",
        r"\b(?:dear|attention|note\s+(?:to|for)|hey|hello|hi|instructions?\s+for|message\s+for|memo\s+to)\s*,?\s+",
        rf"(?:the\s+|all\s+|any\s+|an\s+)?{_AI}s?\b",
    ),
    _phrase(
        "model-address",
        rf"\b(?:as\s+an?\s+{_AI}\s*,|(?:the|any|every|all)\s+{_AI}s?\s+(?:reading|that\s+reads|processing)\s+this)",
    ),
    _phrase(
        "model-voice",
        r"\b(?:the\s+)?(?:ai|llm|assistant|language\s+model)\s+(?:must|shall|has\s+to|is\s+required\s+to)\b",
    ),
)

# --- markup ----------------------------------------------------------------------------------------------

_HTML_COMMENT = re.compile(r"<!--[\s\S]*?(?:-->|$)")
_MD_COMMENT = re.compile(r"^\s*\[(?://|comment|hidden)\]:\s*#\s*\(.*\)\s*$", re.IGNORECASE | re.MULTILINE)
_MODEL_TAG_NAMES = (
    r"important|system|system[-_ ]?(?:prompt|message|reminder|note|instructions?)|instructions?|secret|hidden|"
    r"admin|administrator|sys|assistant|assistant[-_ ]?(?:note|instructions?)|ai[-_ ]?(?:note|instructions?)|"
    r"note[-_ ]?(?:to|for)[-_ ]?(?:ai|assistant|model|llm)|override|critical|priority|mandatory|internal|"
    r"developer|dev[-_ ]?note|sudo|root|policy|jailbreak|hidden[-_ ]?instructions?|tool[-_ ]?instructions?|context"
    r"|\w+(?=\s[^<>]*\b(?:for|to|audience|role|priority)\s*=\s*[\"']?(?:assistant|ai|model|llm|system|agent|high"
    r"|critical|urgent)\b)"
)
_MODEL_TAG = re.compile(rf"</?\s*(?:{_MODEL_TAG_NAMES})\s*(?:\s[^<>]*)?/?>", re.IGNORECASE)
_HIDDEN_BLOCK = re.compile(rf"<\s*({_MODEL_TAG_NAMES})\b[^<>]*>[\s\S]*?(?:</\s*\1\s*>|$)", re.IGNORECASE)
_CHAT_TOKEN = re.compile(
    r"<\|(?:im_start|im_end|system|user|assistant|endoftext|begin_of_text|start_header_id|end_header_id|eot_id)"
    r"\|>|\[/?INST\]|<</?SYS>>|<start_of_turn>|<end_of_turn>|^\s*#{1,4}\s*(?:system|assistant)\s*(?:prompt|message)?"
    r"\s*:?\s*$|^\s*(?:system|assistant)\s*:\s+(?=\S)",
    re.IGNORECASE | re.MULTILINE,
)
_HIDDEN_STYLE = re.compile(
    r"<[a-z][\w-]*\b[^<>]*(?:\bhidden\b|aria-hidden\s*=\s*[\"']?true|style\s*=\s*[\"'][^\"']*(?:display\s*:\s*none|"
    r"visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d]*[1-9])|opacity\s*:\s*0(?![.\d]*[1-9])|color\s*:\s*"
    r"(?:white|#fff(?:fff)?(?![0-9a-f])|transparent|rgba\([^)]*,\s*0\s*\))|(?:height|width)\s*:\s*0(?:px)?\s*[;\"']|"
    r"position\s*:\s*absolute[^\"']*-\d{3,}px))[^<>]*>",
    re.IGNORECASE,
)
_HIDDEN_ELEMENT = re.compile(
    r"(?:" + _HIDDEN_STYLE.pattern + r")[\s\S]*?(?:</[a-z][\w-]*\s*>|$)",
    re.IGNORECASE,
)
_MARKDOWN_IMAGE = re.compile(r"!\[[^\]\n]*\]\(\s*<?(?:https?:)?//[^)\s]+", re.IGNORECASE)

# --- links -----------------------------------------------------------------------------------------------

_URL = re.compile(
    r"\b(?:https?|wss?|ftp)://[^\s<>\"'`)\]\\]+|\bwww\.[a-z0-9-]+\.[a-z]{2,}[^\s<>\"'`)\]\\]*", re.IGNORECASE
)
_SAFE_HOST = re.compile(
    r"^(?:(?:[\w-]+\.)*example(?:\.(?:com|org|net))?|(?:[\w-]+\.)*localhost|"
    r"127(?:\.\d{1,3}){3}|0\.0\.0\.0|\[::1\]|::1)$",
    re.IGNORECASE,
)
_CATCHER_HOST = re.compile(
    r"(?:^|\.)(?:ngrok(?:-free)?\.(?:io|app|dev)|webhook\.site|requestbin\.\w+|pipedream\.net|burpcollaborator\.net|"
    r"oast(?:ify)?\.\w+|interact\.sh|requestcatcher\.com|hookbin\.com|beeceptor\.com|canarytokens\.\w+|"
    r"trycloudflare\.com|serveo\.net|localtunnel\.me|loca\.lt|pastebin\.com|transfer\.sh|bit\.ly|tinyurl\.com|"
    r"is\.gd|t\.co)$",
    re.IGNORECASE,
)
# A query that carries data out: a placeholder for a value (``?q={conversation}``), or a parameter named for it.
# Placeholders in the path (``/repos/{owner}/{repo}``) are ordinary API documentation.
_URL_DATA = re.compile(
    r"[?&][\w.-]*=(?:[{<$]|%7b)|[?&](?:data|payload|content|key|token|secret|creds?|pwd|password|leak|exfil|dump|env"
    r"|conversation|history|chat|prompt|ssh|cookie|session|b64)=",
    re.IGNORECASE,
)
_IP_HOST = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?$")
_PRIVATE_IP = re.compile(r"^(?:10\.|192\.168\.|172\.(?:1[6-9]|2\d|3[01])\.)")


def _url_rule(url: str) -> str | None:
    """``url-exfil``, ``url`` or ``None`` (a documentation example or loopback address)."""
    rest = re.sub(r"^[a-z]+://", "", url, flags=re.IGNORECASE)
    host = re.split(r"[/?#]", rest, maxsplit=1)[0].rsplit("@", 1)[-1]
    hostname = re.sub(r":\d+$", "", host) if not host.startswith("[") else host.split("]")[0] + "]"
    if _CATCHER_HOST.search(hostname) or _URL_DATA.search(rest):
        return "url-exfil"
    if _SAFE_HOST.match(hostname):
        return None
    if _IP_HOST.match(host) and not _PRIVATE_IP.match(host):
        return "url-exfil"  # a public server by address, not by name
    return "url"


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


def _is_emoji(ch: str) -> bool:
    return bool(ch) and (unicodedata.category(ch) == "So" or 0x1F000 <= ord(ch) <= 0x1FAFF)


def _char_matches(text: str) -> Iterator[TextMatch]:
    index = 0
    while index < len(text):
        kind = _invisible_kind(text[index])
        if kind is None:
            index += 1
            continue
        end = index + 1
        kinds = {kind}
        while end < len(text) and (more := _invisible_kind(text[end])) is not None:
            kinds.add(more)
            end += 1
        if text[index:end] == "\u200d" and _is_emoji(text[index - 1 : index]) and _is_emoji(text[end : end + 1]):
            index = end  # a zero-width joiner inside an emoji sequence (👩‍💻) is how such emoji are written
            continue
        hidden, selected = _tag_text(text[index:end]), _selector_text(text[index:end])
        note = ", ".join(sorted(kinds))
        note += f"; the tag characters spell {hidden[:120]!r}" if hidden else ""
        note += f"; the variation selectors spell {selected[:120]!r}" if selected else ""
        yield _match("invisible-unicode", text, index, end, note=note)
        index = end


def _homoglyph_matches(text: str) -> Iterator[TextMatch]:
    for word in _WORD.finditer(text):
        token = word.group()
        if _LATIN_LETTER.search(token) and any(_is_confusable(c) for c in token):
            shown = "".join(f"\\u{ord(c):04x}" if _is_confusable(c) else c for c in token)
            yield _match("homoglyph", text, word.start(), word.end(), note=f"look-alike letters: {shown}")


def _markup_spans(text: str) -> Iterator[tuple[str, int, int]]:
    for pattern in (_HTML_COMMENT, _MD_COMMENT, _MODEL_TAG, _CHAT_TOKEN, _HIDDEN_STYLE):
        for match in pattern.finditer(text):
            if match.end() > match.start():
                yield "hidden-markup", match.start(), match.end()
    for match in _MARKDOWN_IMAGE.finditer(text):
        yield "url-exfil", match.start(), match.end()
    for match in _URL.finditer(text):
        url = match.group().rstrip(".,;:!?")
        rule = _url_rule(url)
        if rule is not None:
            yield rule, match.start(), match.start() + len(url)


_BREAK = re.compile(r"\n(?=[ \t]*\n|[ \t]*(?:[-*+#>|]|\d+[.)])\s)|(?<=\n)[ \t]*#+(?=\s)")


def scan_text(text: str, *, siblings: Iterable[str] = ()) -> list[TextMatch]:
    """Every rule match in one text (no size rule: that needs the catalog), in order of position.

    ``siblings`` are the names of the tools of the same server: an instruction to call one of them first (or
    about how it behaves) is the server's own workflow, reported at low severity rather than as poisoning.
    """
    siblings = frozenset(name.casefold() for name in siblings)
    found: list[TextMatch] = [*_char_matches(text), *_homoglyph_matches(text)]
    normal, where = _normalise(text)
    for rule, start, end in _markup_spans(normal):
        found.append(_back(text, where, rule, start, end))
    prose = _BREAK.sub(".", normal)  # a phrase does not run across paragraphs, headings or list items
    for phrase in _PHRASES:
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
    found.sort(key=lambda m: (m.start, -_RANK[m.severity], m.rule))
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
                severity = k.severity if _RANK[k.severity] >= _RANK[match.severity] else match.severity
                note = k.note if severity == k.severity else match.note
                excerpt = k.excerpt if (start, end) == (k.start, k.end) else _excerpt(text, start, end)
                kept[index] = TextMatch(k.rule, start, end, excerpt, severity, note)
                break
        else:
            kept.append(match)
    return kept


# --- prose for drafted briefs -------------------------------------------------------------------------------

_HTML_TAG = re.compile(
    r"</?(?:a|abbr|b|big|blockquote|br|center|cite|code|del|details|div|em|font|h[1-6]|hr|i|img|ins|kbd|li|mark|ol"
    r"|p|pre|q|s|samp|small|span|strike|strong|sub|summary|sup|table|tbody|td|th|thead|tr|tt|u|ul|var)\b[^<>]*/?>",
    re.IGNORECASE,
)
_DROPPED_ELEMENT = re.compile(r"<\s*(script|style|iframe|object|embed|svg|template)\b[^<>]*>[\s\S]*?</\s*\1\s*>", re.I)


def clean_prose(text: str) -> str:
    """``text`` without what hides or is not prose: comments, model-addressed blocks (with their content), hidden
    elements (with theirs), scripts and styles, chat-template tokens, HTML tags and invisible characters.

    For drafting a brief, not for review: a person reviewing a doc should see what the upstream really sent.
    Tag-like text that is no HTML (``Array<string>``, ``<path>`` placeholders) is kept.
    """
    text = "".join(ch for ch in text if _invisible_kind(ch) is None or ch in "\t\n\r")
    text = _HTML_COMMENT.sub(" ", text)
    text = _MD_COMMENT.sub(" ", text)
    text = _HIDDEN_BLOCK.sub(" ", text)
    text = _HIDDEN_ELEMENT.sub(" ", text)
    text = _DROPPED_ELEMENT.sub(" ", text)
    text = _CHAT_TOKEN.sub(" ", text)
    text = _MODEL_TAG.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    return re.sub(r"[ \t]+", " ", text).strip()


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


@dataclass(frozen=True)
class _Node:
    line: int  # 1-based line of the value
    style: str | None
    raw: str | None  # the scalar as written, for locating a match inside a literal block


def _node_lines(text: str) -> dict[Loc, _Node]:
    """Where each value of a YAML document is: key path → line, style and raw scalar."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    out: dict[Loc, _Node] = {}

    def walk(node: yaml.Node, loc: Loc, depth: int) -> None:
        if depth > 64 or loc in out:
            return
        raw = node.value if isinstance(node, yaml.ScalarNode) else None
        style = node.style if isinstance(node, yaml.ScalarNode) else None
        out[loc] = _Node(node.start_mark.line + 1, style, raw)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                walk(value, (*loc, str(key.value)), depth + 1)
                if isinstance(key, yaml.ScalarNode):  # a property name's own line (for "key" texts)
                    out.setdefault((*loc, str(key.value), "<key>"), _Node(key.start_mark.line + 1, None, None))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, (*loc, index), depth + 1)

    if root is not None:
        walk(root, (), 0)
    return out


def _line(nodes: Mapping[Loc, _Node], loc: Loc, kind: str, text: str, offset: int) -> int:
    """The file line of ``text[offset]``, the text at ``loc`` (its key line when the position is unknown)."""
    if kind == "key":  # a property name: the line of its key
        key = nodes.get((*loc, "<key>"))
        if key is not None:
            return key.line
    for end in range(len(loc), -1, -1):
        node = nodes.get(loc[:end])
        if node is None:
            continue
        if end == len(loc) and node.raw is not None and node.style in ("|", ">"):
            lead = node.raw.find(text) if text else -1
            lead = max(lead, 0)
            within = node.raw[: lead + offset].count("\n")
            return node.line + 1 + within if node.style == "|" else node.line + 1
        return node.line
    return 1


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
    nodes = _node_lines(source) if source is not None else {}
    siblings = tuple(siblings)
    findings: list[Finding] = []

    def add(loc: Loc, kind: str, text: str, match: TextMatch) -> None:
        line = _line(nodes, loc, kind, text, match.start) if file is not None else None
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
