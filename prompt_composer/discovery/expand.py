"""Deterministic expansion of a tool's document at load (issue 32): no model, the same text every time, and short
enough to review. A tool's name read as a phrase (``list_dependabot_alerts`` → "list dependabot alerts"), and the
request verbs a user says for its leading verb (``get`` → show, read, view…) from a small reviewed table, so a
request and the tool it needs share the words users actually write.
"""

from __future__ import annotations

from collections.abc import Mapping

from .tokenize import split_identifier

# The verb a tool's name starts with → verbs users write for it. Reviewed by hand from the list (show/get/
# read/view/fetch; create/open/add/file/new; remove/delete; record/capture; remember/store/save) and plain
# synonyms, before the held-out tasks were scored; no word was added for a held-out task's wording.
REQUEST_VERBS: Mapping[str, tuple[str, ...]] = {
    "get": ("show", "read", "view", "fetch", "retrieve"),
    "read": ("show", "view", "open", "load"),
    "retrieve": ("show", "get", "read", "view", "fetch"),
    "fetch": ("get", "download", "retrieve"),
    "list": ("show", "enumerate"),
    "create": ("add", "new", "make", "file", "remember", "store", "save", "record"),
    "add": ("create", "new", "append", "remember", "store", "save"),
    "post": ("create", "add", "new", "send"),
    "write": ("save", "store", "create"),
    "delete": ("remove", "erase", "drop"),
    "remove": ("delete", "erase", "drop"),
    "update": ("edit", "change", "modify", "set"),
    "patch": ("update", "edit", "change", "modify", "set"),
    "edit": ("change", "modify", "update"),
    "search": ("find", "look", "lookup", "query"),
    "find": ("search", "look", "locate"),
    "query": ("filter", "search", "find"),
    "start": ("begin", "record", "capture"),
    "stop": ("end", "finish"),
    "take": ("capture", "grab"),
    "move": ("rename", "relocate"),
    "navigate": ("open", "go", "visit"),
}


def name_phrase(name: str) -> str:
    """A tool's name as words: ``list_dependabot_alerts`` → "list dependabot alerts", ``API-post-search`` → "post
    search" (an ``API`` or ``mcp`` prefix says nothing of what the tool does)."""
    words = split_identifier(name)
    while len(words) > 1 and words[0] in ("api", "mcp"):
        words = words[1:]
    return " ".join(words)


def request_verbs(name: str) -> tuple[str, ...]:
    """The request verbs of a tool's verb (:data:`REQUEST_VERBS`): its first or, after a server prefix
    (``browser_start_recording``, ``fs_list_directory``), its second word; empty when neither is in the table."""
    for word in name_phrase(name).split()[:2]:
        if word in REQUEST_VERBS:
            return REQUEST_VERBS[word]
    return ()


def expansion(name: str) -> str:
    """The text a tool's document gains at load: its name as a phrase, then its request verbs."""
    return " ".join((name_phrase(name), *request_verbs(name)))
