"""Markup and links in a doc's text: what hides text from a person or poses as a system message (comments, tags
addressed to the model, chat-template tokens, elements styled invisible), links that carry data out, where a text
shows examples (:func:`example_spans`), and :func:`clean_prose`, which strips such markup from text drafted into a
brief.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .text import invisible_kind

# --- markup ---------------------------------------------------------------------------------------------

_HTML_COMMENT = re.compile(r"<!--[\s\S]*?(?:-->|$)")
# A comment of a word or two ("strips <!-- comments -->", "<!-- TODO -->"): markup named in prose or a marker, no
# text hidden from a person; anything encoded in it is still decoded and linted.
_SHORT_COMMENT = re.compile(r"<!--\s*(?:[\w.-]+\s*){0,3}-->")
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
# A query that carries data out: a placeholder for a value (``?q={conversation}``), or a parameter named for it
# whose value is left to fill (``?token=``, ``?token=YOUR_TOKEN``). Placeholders in the path
# (``/repos/{owner}/{repo}``) are ordinary API documentation, and so is a named parameter with a literal
# lower-case value (``?token=abc``): the doc's author wrote the value, it carries nothing of the user's.
_URL_PLACEHOLDER = re.compile(r"[?&][\w.-]*=(?:[{<$]|%7b)", re.IGNORECASE)
_URL_NAMED = re.compile(
    r"[?&](?:data|payload|content|key|token|secret|creds?|pwd|password|leak|exfil|dump|env"
    r"|conversation|history|chat|prompt|ssh|cookie|session|b64)=([^&#\s]*)",
    re.IGNORECASE,
)
_LITERAL_VALUE = re.compile(r"[a-z0-9._~-]{1,40}")
_IP_HOST = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?$")
_PRIVATE_IP = re.compile(r"^(?:10\.|192\.168\.|172\.(?:1[6-9]|2\d|3[01])\.)")


def _url_rule(url: str) -> str | None:
    """``url-exfil``, ``url`` or ``None`` (a documentation example or loopback address)."""
    rest = re.sub(r"^[a-z]+://", "", url, flags=re.IGNORECASE)
    host = re.split(r"[/?#]", rest, maxsplit=1)[0].rsplit("@", 1)[-1]
    hostname = re.sub(r":\d+$", "", host) if not host.startswith("[") else host.split("]")[0] + "]"
    if _CATCHER_HOST.search(hostname) or _URL_PLACEHOLDER.search(rest):
        return "url-exfil"
    named = [m[1] for m in _URL_NAMED.finditer(rest)]
    if named and not all(_LITERAL_VALUE.fullmatch(value) for value in named):
        return "url-exfil"
    if _SAFE_HOST.match(hostname):
        return None
    if _IP_HOST.match(host) and not _PRIVATE_IP.match(host):
        return "url-exfil"  # a public server by address, not by name
    return "url"


def markup_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """``(rule, start, end)`` of each piece of hidden markup, Markdown image and link worth a finding in ``text``."""
    for pattern in (_HTML_COMMENT, _MD_COMMENT, _MODEL_TAG, _CHAT_TOKEN, _HIDDEN_STYLE):
        for match in pattern.finditer(text):
            if match.end() > match.start():
                short = pattern is _HTML_COMMENT and _SHORT_COMMENT.fullmatch(match.group()) is not None
                yield "comment" if short else "hidden-markup", match.start(), match.end()
    for match in _MARKDOWN_IMAGE.finditer(text):
        yield "url-exfil", match.start(), match.end()
    for match in _URL.finditer(text):
        url = match.group().rstrip(".,;:!?")
        rule = _url_rule(url)
        if rule is not None:
            yield rule, match.start(), match.start() + len(url)


# --- examples ------------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n[\s\S]*?(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE)
# "Example:" (and "Examples", "Example call", "Sample request" …) heading a paragraph or a line
_EXAMPLE_BLOCK = re.compile(
    r"(?<![\w-])(?:examples?|sample)(?:\s+(?:calls?|inputs?|requests?|arguments?|usage|values?))?\s*(?::|\n)",
    re.IGNORECASE,
)
# "e.g.", "for example", "for instance" inside a sentence: the example runs to the end of the sentence
_EXAMPLE_INLINE = re.compile(r"(?<![\w-])(?:e\.\s?g\.|for\s+(?:example|instance))(?![\w-])", re.IGNORECASE)
_PARAGRAPH_END = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")
_EXAMPLE_MAX = 4_000  # characters of an example after its label


def fenced_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each fenced code block of ``text`` (an unclosed one runs to the end)."""
    return [(m.start(), m.end()) for m in _FENCE.finditer(text)]


def example_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each example in ``text``: fenced code blocks; from "Example:" to the end of its
    paragraph; from "e.g." or "for example" to the end of its sentence. What is shown there is what the model
    copies into a call."""
    spans = fenced_spans(text)
    for pattern, end_of in ((_EXAMPLE_BLOCK, _PARAGRAPH_END), (_EXAMPLE_INLINE, _SENTENCE_END)):
        for label in pattern.finditer(text):
            if any(lo <= label.start() < hi for lo, hi in spans):
                continue
            end = end_of.search(text, label.end())
            spans.append((label.start(), min(end.start() if end else len(text), label.end() + _EXAMPLE_MAX)))
    return sorted(spans)


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
    text = "".join(ch for ch in text if invisible_kind(ch) is None or ch in "\t\n\r")
    text = _HTML_COMMENT.sub(" ", text)
    text = _MD_COMMENT.sub(" ", text)
    text = _HIDDEN_BLOCK.sub(" ", text)
    text = _HIDDEN_ELEMENT.sub(" ", text)
    text = _DROPPED_ELEMENT.sub(" ", text)
    text = _CHAT_TOKEN.sub(" ", text)
    text = _MODEL_TAG.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    return re.sub(r"[ \t]+", " ", text).strip()
