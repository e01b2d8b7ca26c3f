"""Server cards in imports: what an MCP server says it is for, fitted to a card, and merged with the folder's.

Where a card comes from, best first:

- ``--server-description TEXT`` (with ``--server-title``): a person's words, ``source: human``;
- the server itself: ``initialize`` → ``serverInfo.title`` / ``serverInfo.description`` and ``instructions``
  (``import mcp``), or the MCP registry's ``server.json`` (``--server-card``): ``source: imported``;
- neither: a card *drafted* from the tools' names (the things they act on), ``source: drafted``, for a person to
  review like a drafted brief.

Upstream text is fitted, not refused (a server cannot be asked to rewrite its README): markup that hides text and
invisible characters are stripped, sentences the security lint flags are dropped, the description is cut to its
first sentences within the card's limits and the instructions to :data:`INSTRUCTIONS_MAX_CHARS`. Instructions the
lint flags are left out whole (a report line says so): they would reach every model the gateway serves.

Re-imports: the import state records a hash of the card file as written. A card a person edited since (or marked
``source: human``) is kept, as a reviewed brief is; ``--server-description`` replaces it, being a person's newer
word, and keeps its ``examples``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from ..core.cards import (
    DESCRIPTION_MAX_SENTENCES,
    DESCRIPTION_MAX_WORDS,
    INSTRUCTIONS_MAX_CHARS,
    SERVERS_FOLDER,
    TITLE_MAX_CHARS,
    ServerCard,
    card_stem,
)
from ..errors import ImporterError, InputFileError
from ..safety.lint import scan_text
from ..safety.markup import clean_prose
from ..safety.rules import QUARANTINE_SEVERITY, at_least
from ..shared.files import read_text
from .folder import text_hash
from .prose import base_verb, name_words, sentences
from .tool_list import UpstreamTool
from .yaml_out import dump_yaml

_KEY_ORDER = ("name", "title", "source", "reference", "description", "instructions", "examples")
_DRAFT_NOUNS = 6  # the things a drafted card names: enough to tell servers apart, short enough to read
# Name words that qualify rather than name a thing a server acts on ("list_multiple_files", "API-get-…").
_NOT_OBJECTS = frozenset(["api", "sub", "multiple", "all", "new", "current", "async", "with", "from", "get", "mcp"])


# --- fitting upstream text --------------------------------------------------------------------------------------


def _flagged(sentence: str) -> bool:
    return any(at_least(m.severity, QUARANTINE_SEVERITY) for m in scan_text(sentence))


def fit_description(text: str) -> str:
    """An upstream description as a card's: hidden markup stripped, flagged sentences dropped, its first sentences
    within :data:`DESCRIPTION_MAX_SENTENCES` and :data:`DESCRIPTION_MAX_WORDS`; ``""`` when nothing is left."""
    kept: list[str] = []
    words = 0
    for sentence in sentences(" ".join(clean_prose(text).split())):
        n = len(sentence.split())
        if _flagged(sentence):
            continue
        if kept and (len(kept) == DESCRIPTION_MAX_SENTENCES or words + n > DESCRIPTION_MAX_WORDS):
            break
        if n > DESCRIPTION_MAX_WORDS:  # one long sentence: its first words
            sentence = " ".join(sentence.split()[: DESCRIPTION_MAX_WORDS - 1]).rstrip(",;:") + " …"
            n = DESCRIPTION_MAX_WORDS
        kept.append(sentence)
        words += n
    return " ".join(kept)


def fit_instructions(text: str) -> tuple[str, bool]:
    """Upstream instructions as a card's, and whether they were left out because the lint flags them (they are
    passed on to every model the gateway serves, so they are held to the quarantine rule of a tool's text)."""
    if not text.strip():
        return "", False
    if _flagged(text):  # as sent, hidden blocks and all: a server that hides orders in them gets none passed on
        return "", True
    cleaned = clean_prose(text).strip()
    if len(cleaned) > INSTRUCTIONS_MAX_CHARS:
        cleaned = cleaned[: INSTRUCTIONS_MAX_CHARS - 1].rstrip() + "…"
    return cleaned, False


def _title(text: str | None) -> str:
    title = " ".join(clean_prose(text or "").split())
    return title[:TITLE_MAX_CHARS].rstrip()


def _card(where: str, **fields: Any) -> ServerCard:
    try:
        return ServerCard(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "card"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ImporterError(f"{where}: {field}: {message}") from None


# --- where a card comes from ------------------------------------------------------------------------------------


def given_card(server: str, description: str, *, title: str | None = None) -> ServerCard:
    """The card of ``--server-description`` (and ``--server-title``): a person's words, kept as they are, so a
    description outside the limits is an error rather than cut."""
    text = " ".join(description.split())
    if not text:
        raise ImporterError("--server-description: the description is empty")
    return _card("--server-description", name=server, description=text, title=title or "", source="human")


def server_card(
    server: str,
    *,
    title: str | None = None,
    description: str | None = None,
    instructions: str | None = None,
    reference: str = "",
) -> tuple[ServerCard | None, list[str]]:
    """The card of what a server says about itself (``initialize``, a registry entry), or ``None`` when it gives no
    description; and notes for the report (instructions left out)."""
    notes: list[str] = []
    kept, flagged = fit_instructions(instructions or "")
    if flagged:
        notes.append("instructions left out: the security lint flags them (they would reach every model served)")
    fitted = fit_description(description or "")
    if not fitted:
        return None, notes
    card = _card(
        f"server {server!r}",
        name=server,
        title=_title(title),
        description=fitted,
        instructions=kept,
        source="imported",
        reference=reference[:300],
    )
    return card, notes


def registry_card(path: str | Path, server: str) -> ServerCard:
    """The card of an MCP registry ``server.json`` (``name``, ``title``, ``description``, ``repository``; bare or as
    the registry API's ``{"server": {...}}``). A file that is not one is an :class:`ImporterError` naming it."""
    where = Path(path)
    try:
        text = read_text(where, what="server card")
    except InputFileError as exc:
        raise ImporterError(str(exc)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImporterError(f"{where}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ImporterError(f"{where}: invalid JSON: nested too deeply to read") from None
    if isinstance(data, Mapping) and isinstance(data.get("server"), Mapping):
        data = data["server"]
    if not isinstance(data, Mapping):
        raise ImporterError(f"{where}: not a server.json: expected a JSON object with a 'description'")
    for key in ("name", "title", "description"):
        if key in data and not isinstance(data[key], str):
            raise ImporterError(f"{where}: '{key}' must be a string (got {type(data[key]).__name__})")
    if not str(data.get("description") or "").strip():
        raise ImporterError(f"{where}: not a server.json: it has no 'description' (what the server is for)")
    repository = data.get("repository")
    url = repository.get("url") if isinstance(repository, Mapping) else None
    reference = " ".join(str(p) for p in (data.get("name"), url if isinstance(url, str) else None) if p)
    card, _notes = server_card(
        server,
        title=data.get("title"),
        description=data.get("description"),
        reference=f"MCP registry server.json: {reference}" if reference else "MCP registry server.json",
    )
    if card is None:  # every sentence was flagged
        raise ImporterError(f"{where}: the description has no sentence the security lint lets through")
    return card


def drafted_card(server: str, tools: Sequence[UpstreamTool]) -> ServerCard:
    """A card drafted from the tools' names when the server says nothing: the things its tools act on, most shared
    first ("9 tools of the memory server, for entities, relations, observations, nodes and graph."); for a server
    whose names hold no such word, its first tool's first sentence."""
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for tool in tools:
        # In name order (a set's order differs between processes, and the card must not).
        words = dict.fromkeys(w for w in name_words(tool.name) if len(w) > 2 and base_verb(w) is None)
        for word in words:
            if word in _NOT_OBJECTS or word == server.lower():
                continue
            counts[word] += 1
            first_seen.setdefault(word, len(first_seen))
    nouns = sorted(counts, key=lambda w: (-counts[w], first_seen[w]))[:_DRAFT_NOUNS]
    count = f"{len(tools)} tool{'s' if len(tools) != 1 else ''} of the {server} MCP server"
    if nouns:
        listed = nouns[0] if len(nouns) == 1 else ", ".join(nouns[:-1]) + " and " + nouns[-1]
        description = f"{count}, for {listed}."
    else:
        first = fit_description(tools[0].description).split(". ")[0].rstrip(".") if tools else ""
        description = f"{count}: {first[0].lower() + first[1:]}." if first else f"{count}."
    return _card(f"server {server!r}", name=server, description=fit_description(description), source="drafted")


# --- the card in an import --------------------------------------------------------------------------------------


def card_yaml(card: ServerCard) -> str:
    """The card's YAML file: keys in a fixed order, defaults left out."""
    data = card.model_dump(mode="json", exclude_defaults=True)
    data["source"] = card.source  # always written: it says whether a person has reviewed the card
    return dump_yaml({key: data[key] for key in _KEY_ORDER if key in data})


def card_file(server: str) -> str:
    """The card's path relative to the docs folder."""
    return f"{SERVERS_FOLDER}/{card_stem(server)}.yaml"


@dataclass(frozen=True)
class CardChange:
    """What an import does to its server's card: the card after it, the file text to write (``None``: unchanged)
    and the state record."""

    card: ServerCard
    action: Literal["add", "update", "unchanged", "kept"]
    path: str
    text: str | None
    record: Mapping[str, Any]
    notes: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.action == "kept":
            return f"kept      {self.path}  (a person's card: edited or marked source: human; re-imports keep it)"
        if self.action == "unchanged":
            return f"unchanged {self.path}"
        if self.card.source == "drafted":
            why = "drafted from the tools' names: say what the server is for in its description, then set source: human"
        else:
            why = f"{self.card.source}: {_origin(self.card)}"
        return f"card      {self.path}  ({why})"


def _origin(card: ServerCard) -> str:
    if card.source == "drafted":
        return "drafted from the tools' names"
    if card.source == "human":
        return "given with --server-description"
    parts = [
        p
        for p, present in (("title", card.title), ("description", True), ("instructions", card.instructions))
        if present
    ]
    return (card.reference or "from the server") + f" ({', '.join(parts)})"


def merge_card(
    new: ServerCard,
    old: ServerCard | None,
    record: Mapping[str, Any] | None,
    old_text: str | None,
    *,
    notes: Sequence[str] = (),
) -> CardChange:
    """``new`` against the folder's card ``old`` (whose file reads ``old_text``) and the state's ``record`` of what
    the last import wrote: a card a person wrote, edited or marked ``source: human`` is kept, unless ``new`` is
    itself a person's (``--server-description``); an imported or drafted card follows upstream. The old card's
    ``examples`` stay either way: a person wrote them, and no server sends any."""
    if old is not None and old.examples and not new.examples:
        new = new.model_copy(update={"examples": old.examples})
    path = card_file(new.name)
    text = card_yaml(new)
    fresh = {"text": text_hash(text), "source": new.source}
    if old is not None:
        edited = record is None or record.get("text") != text_hash(old_text or "")
        if (edited or old.source == "human") and new.source != "human":
            return CardChange(old, "kept", path, None, dict(record or {}), tuple(notes))
        if old_text == text:
            return CardChange(new, "unchanged", path, None, fresh, tuple(notes))
        return CardChange(new, "update", path, text, fresh, tuple(notes))
    return CardChange(new, "add", path, text, fresh, tuple(notes))


_SERVER_NAME = re.compile(r"\S")


def check_server_name(server: str) -> str:
    """``server`` as an origin and card name: printable, at most 128 characters (it names files and namespaces)."""
    if not _SERVER_NAME.search(server) or len(server) > 128 or any(not c.isprintable() for c in server):
        raise ImporterError(f"server name {server[:80]!r}: use 1 to 128 printable characters")
    return server
