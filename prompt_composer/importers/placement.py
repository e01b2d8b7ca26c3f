"""Placing imported tools by effect: read-only tools and writing tools go to different groups.

Each tool is read as read-only or writing (:func:`classify_effect`: the MCP annotations ``readOnlyHint`` and
``destructiveHint`` first, else its name and first sentence, and writing when unsure, as the MCP spec's defaults
say). Read-only tools go to the import's group (``mcp``), writing ones to its write group (``mcp-write``), which
the shipped modes allow only in ``code``; the import report says where each tool went, why, and which modes allow
it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..safety.markup import clean_prose
from .prose import LEAD_IN, READ_VERBS, STRONG_WRITE_VERBS, WRITE_VERBS, base_verb, lead_prose, name_words, sentences
from .tool_list import UpstreamTool

Effect = Literal["read-only", "writing"]


@dataclass(frozen=True)
class Placement:
    """What an imported tool does to the world (as the importer reads it), why, and the group that gives it."""

    effect: Effect
    reason: str  # "readOnlyHint", "destructiveHint", "name reads as writing ('commit')", "unsure: treated as writing" …
    group: str

    def describe(self) -> str:
        return f"{self.effect}: {self.reason}"


def _lead_verb(description: str) -> tuple[str, str | None]:
    """The first sentence's leading word (after "This tool …", "Allows you to …" and adverbs) and its verb."""
    text = LEAD_IN.sub("", lead_prose(clean_prose(description)))
    for word in re.findall(r"[A-Za-z]+", text)[:4]:
        if not re.fullmatch(r"[a-z]+ly", word.lower()):
            return word, base_verb(word)
    return "", None


def _annotated_effect(tool: UpstreamTool, strong: str | None) -> tuple[Effect, str] | None:
    """The effect the server's annotations give, checked against a name that reads as writing; ``None`` without."""
    read_only, destructive = tool.annotations.get("readOnlyHint"), tool.annotations.get("destructiveHint")
    if destructive is True:
        return "writing", "destructiveHint" if read_only is not True else "destructiveHint (despite readOnlyHint)"
    if read_only is True:
        if strong is not None:
            return "writing", f"readOnlyHint, but the name reads as writing ({strong!r})"
        return "read-only", "readOnlyHint"
    if read_only is False:
        return "writing", "readOnlyHint: false"
    return None


def classify_effect(tool: UpstreamTool) -> tuple[Effect, str]:
    """Whether ``tool`` only reads or may write, and why.

    The server's annotations come first: ``destructiveHint: true`` or ``readOnlyHint: false`` is writing,
    ``readOnlyHint: true`` read-only (unless the name itself says delete, write, create … : a server's hints are
    claims, and a wrong read-only claim is the costly mistake). Without them the importer reads the name and the
    first sentence of the description; what reads as neither is treated as writing.
    """
    words = name_words(tool.name)
    strong = next((w for w in words if w in STRONG_WRITE_VERBS), None)
    annotated = _annotated_effect(tool, strong)
    if annotated is not None:
        return annotated
    if strong is not None:
        return "writing", f"name reads as writing ({strong!r})"
    first = next((w for w in words if w in WRITE_VERBS or w in READ_VERBS), None)
    if first in WRITE_VERBS:
        return "writing", f"name reads as writing ({first!r})"
    word, verb = _lead_verb(tool.description)
    sentence = next(iter(sentences(lead_prose(clean_prose(tool.description)))), "")
    also = next((w for w in re.findall(r"[A-Za-z]+", sentence) if base_verb(w) in STRONG_WRITE_VERBS), None)
    if verb in WRITE_VERBS or also is not None:  # "List, create, close, or select a browser tab."
        return "writing", f"text reads as writing ({(word if verb in WRITE_VERBS else also)!r})"
    if first is not None:
        return "read-only", f"name reads as read-only ({first!r})"
    if verb is not None and verb in READ_VERBS:
        return "read-only", f"text reads as read-only ({word!r})"
    return "writing", "unsure: treated as writing"


def place(tool: UpstreamTool, *, group: str = "mcp", write_group: str | None = None) -> Placement:
    """The group ``tool`` goes to: ``group`` when it only reads, ``write_group`` (default ``<group>-write``) else."""
    effect, reason = classify_effect(tool)
    write_group = write_group or f"{group}-write"
    return Placement(effect, reason, group if effect == "read-only" else write_group)
