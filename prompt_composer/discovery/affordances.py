"""What a request hands a tool: the values it names (a file path, a URL, a commit, a line, an issue number, an
id), matched to the tools whose parameters take such a value.

A request that names ``src/app.py`` wants a tool with a path parameter, whatever words it uses for the action
("stage", "save", "what changed in"); one that names commit ``4f9c2e1`` wants a tool that takes a revision. The
words of a request and of a tool's description often differ (a request says what the user wants, a description
what the tool does); the kind of value each carries does not. :func:`request_values` finds the kinds of value a
request names, :func:`tool_slots` the kinds a tool's ``input_schema`` takes (from its parameters' names), and
:func:`affordance_shares` gives each tool the share of the request's kinds it takes, which search adds to the
tool's score (:data:`~.search.AFFORDANCE_WEIGHT`).

Standard library only; the kinds are few and deliberately coarse, so a value the patterns miss only leaves the
ranking as it was.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..core.docs import ToolDoc

# Kinds of value a request names: "path" (a file or folder), "url", "hex" (7 to 40 hex digits: a commit, or a short
# id), "id" (a UUID, or 32 hex digits), "line" (a line number), "number" (an issue, pull request or discussion
# number). A bare "a/b" is not taken for a path: it is as often a repository (octo-org/widgets) or a branch
# (fix/typo); a path has a root (/, ~/, ./), two slashes or a file extension. A bare "Next.js" is a project's name.
_EXTENSIONS = (
    "py|pyi|md|mdx|rst|txt|docx?|xlsx?|pptx?|odt|ods|epub|mp3|mp4|wav|mov|yaml|yml|json|jsonl|toml|ini|cfg|conf|"
    "env|lock|js|mjs|cjs|ts|tsx|jsx|css|scss|html|htm|xml|svg|png|jpe?g|gif|webp|pdf|csv|tsv|log|sh|bash|zsh|ps1|"
    "rs|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|sql|ipynb|dockerfile|gradle|vue|svelte|zip|tar|gz"
)
_PATH = re.compile(
    r"(?:^|(?<=[\s\"'`(\[]))(?:(?:~|\.{1,2})?/[\w@.+-]+(?:/[\w@.+-]+)*|[\w@.+-]+(?:/[\w@.+-]+){2,})/?"
    r"(?=$|[\s\"'`)\],;:!?])"  # /x, ~/x, ./x, a/b/c
    # [dir/]name.ext
    rf"|(?<![\w@.+~/-])(?![A-Z][a-z]*\.js\b)(?:[\w@.+~-]*/)*[\w@+-]+(?:\.[\w@+-]+)*\.(?:{_EXTENSIONS})\b",
    re.IGNORECASE,
)
_URL = re.compile(r"\bhttps?://\S+|\bwww\.[\w-]+\.\w+", re.IGNORECASE)
_UUID = re.compile(r"\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b", re.IGNORECASE)
_HEX = re.compile(r"\b[0-9a-f]{7,40}\b", re.IGNORECASE)
_LINE = re.compile(r"\blines?\s+\d+\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?:^|(?<=\s))#\d+\b|\b(?:pr|pull request|issue|discussion)\s+#?\d+\b", re.IGNORECASE)

# The kinds of parameter (below) that take each kind of value.
_ACCEPTS: Mapping[str, frozenset[str]] = {
    "path": frozenset({"path"}),
    "url": frozenset({"url"}),
    "hex": frozenset({"revision", "id"}),
    "id": frozenset({"id"}),
    "line": frozenset({"line"}),
    "number": frozenset({"number"}),
}
# A parameter takes a kind when one of the words of its name (``filePath`` → file, path) is among these.
_SLOT_WORDS: Mapping[str, frozenset[str]] = {
    "path": frozenset({"path", "paths", "file", "files", "filename", "filepath", "directory", "dir", "folder"}),
    "url": frozenset({"url", "uri", "href", "link"}),
    "revision": frozenset({"sha", "commit", "revision", "ref", "commitid"}),
    "line": frozenset({"line", "lines", "lineno"}),
    "number": frozenset({"number", "pullnumber", "issuenumber"}),
    "id": frozenset({"id"}),
}
# Whole names that take a path though no word of them says so (a move's or a copy's ends).
_PATH_NAMES = frozenset({"source", "destination", "src", "dest", "cwd"})
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


# Every value has a slash, a digit, a "#" or a dot before a letter: a text without any is read no further.
_MAY_NAME_A_VALUE = re.compile(r"[/\d#]|\.\w")


# A search reads each text of a request several times; the answers for the last texts are kept, not for long ones
# (a pasted log), so the memo stays small in a long-running server.
_MEMO_SIZE = 1024
_MEMO_CHARS = 2_000


def request_values(text: str) -> frozenset[str]:
    """The kinds of value ``text`` names (see the module docstring); empty for most requests."""
    return _request_values(text) if len(text) <= _MEMO_CHARS else _request_values.__wrapped__(text)


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _request_values(text: str) -> frozenset[str]:
    if not _MAY_NAME_A_VALUE.search(text):
        return frozenset()
    kinds: set[str] = set()
    without_urls = _URL.sub(" ", text)
    if without_urls != text:
        kinds.add("url")
    without_ids = _UUID.sub(" ", without_urls)
    if without_ids != without_urls:
        kinds.add("id")
    for match in _HEX.finditer(without_ids):
        value = match.group()
        # A hash has digits and letters; 32 of them are an id (Notion's), anything else of 7-40 a commit or an id.
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            kinds.add("id" if len(value) == 32 else "hex")
    if _PATH.search(without_ids):
        kinds.add("path")
    if _LINE.search(text):
        kinds.add("line")
    if _NUMBER.search(text):
        kinds.add("number")
    return frozenset(kinds)


def _words(name: str) -> set[str]:
    words = {w.lower() for w in _NAME_WORD.findall(name)}
    return words | {name.lower().replace("_", "")}


def tool_slots(input_schema: Mapping[str, Any] | None) -> frozenset[str]:
    """The kinds of value the tool's parameters take, from their names (top-level properties only)."""
    properties = (input_schema or {}).get("properties")
    if not isinstance(properties, Mapping):
        return frozenset()
    kinds: set[str] = set()
    for name in properties:
        if not isinstance(name, str):
            continue
        words = _words(name)
        kinds.update(kind for kind, slot in _SLOT_WORDS.items() if words & slot)
        if name.lower() in _PATH_NAMES:
            kinds.add("path")
    return frozenset(kinds)


def takers(slots: Iterable[tuple[str, frozenset[str]]]) -> dict[str, tuple[str, ...]]:
    """For each kind of value a request can name, the tools (of ``slots``: name and kinds of parameter) that take
    it."""
    return {value: tuple(name for name, kinds in slots if accepts & kinds) for value, accepts in _ACCEPTS.items()}


def affordance_shares(values: frozenset[str], taking: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Each tool's share (0..1) of the kinds of value the request names that its parameters take (``taking``: see
    :func:`takers`); tools taking none are left out."""
    shares: dict[str, float] = {}
    for value in values:
        for name in taking.get(value, ()):
            shares[name] = shares.get(name, 0.0) + 1.0 / len(values)
    return shares


class ToolSlots:
    """The kinds of value each tool of a registry takes (read from their schemas at the first request that names a
    value), and the lift they give a ranking."""

    def __init__(self, tools: Mapping[str, ToolDoc]) -> None:
        self._tools = tools
        self._taking: dict[str, tuple[str, ...]] | None = None

    def lift(
        self, texts: Sequence[str], scores: Sequence[dict[str, float]], allows: Callable[[str], bool], weight: float
    ) -> None:
        """Add to ``scores[i]`` (the scores of ``texts[i]``: the whole request, then its steps) ``weight`` × each
        allowed tool's share of the values ``texts[i]`` names. A value belongs to the step that names it: "…, then
        save it to notes.md" lifts the writing tools for that step, and for the whole request only by the share of
        its steps that name a value."""
        steps = texts[1:]
        naming = sum(1 for text in steps if request_values(text)) / len(steps) if steps else 1.0
        for index, (text, scored) in enumerate(zip(texts, scores, strict=True)):
            values = request_values(text)
            if not values:
                continue
            if self._taking is None:
                self._taking = takers([(name, tool_slots(doc.input_schema)) for name, doc in self._tools.items()])
            step_weight = weight * (naming if index == 0 else 1.0)
            for name, share in affordance_shares(values, self._taking).items():
                if allows(name):
                    scored[name] = scored.get(name, 0.0) + step_weight * share


# What a value is replaced with in the text that is matched against the tools' words: the kind of thing it is,
# not its letters ("src/app.py" matched tools about apps; "1f2e3d4c" nothing). What does tell the tool is kept: a
# URL's site ("youtube", "arxiv") and a file's extension ("pdf", "csv").
_HOST = re.compile(r"^(?:https?://)?(?:www\.)?([^/:?#\s]+)", re.IGNORECASE)
_HEX_WORD = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b", re.IGNORECASE)
_NUMBERED = re.compile(r"(?:^|(?<=\s))#\d+\b")
_EXTENSION = re.compile(rf"\.({_EXTENSIONS})$", re.IGNORECASE)


def _url(match: re.Match[str]) -> str:
    host = _HOST.match(match.group())
    words = host.group(1).split(".")[:-1] if host else []  # the site's name without its top-level domain
    return " URL " + " ".join(w for w in words if w.isalpha() and len(w) > 1) + " "


def _path(match: re.Match[str]) -> str:
    value = match.group()
    core = value.rstrip(".,;:/")
    extension = _EXTENSION.search(core)
    kind = f"{extension.group(1).lower()} file" if extension else "file"
    return f" {kind}{value[len(core) :]} "


def without_values(text: str) -> str:
    """``text`` with the values it names (URLs, paths, ids, hashes, ``#N``) put as the kind of thing they are:
    what a request asks is in its other words."""
    return _without_values(text) if len(text) <= _MEMO_CHARS else _without_values.__wrapped__(text)


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _without_values(text: str) -> str:
    kinds = request_values(text)
    if not kinds & _MASKED:
        return text
    if "url" in kinds:
        text = _URL.sub(_url, text)
    if "id" in kinds:
        text = _UUID.sub(" ", text)
    if "path" in kinds:
        text = _PATH.sub(_path, text)
    if kinds & {"hex", "id"}:
        text = _HEX_WORD.sub(" ", text)
    if "number" in kinds:
        text = _NUMBERED.sub(" ", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


_MASKED = frozenset({"url", "id", "path", "hex", "number"})  # a line number stays: "line" says what is asked
