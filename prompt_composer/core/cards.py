"""Server cards: what each MCP server a registry imported tools from is *for* (``servers/<server>.yaml``).

A tool's own text says what the tool does; nothing in it says what its server is for. "Keep this in mind" shares
no word with ``create_entities``, but it does with the memory server's "a knowledge graph that remembers things
about the user across chats". A card holds that text, once per server: its ``name`` (the ``origin.server`` of its
tools), a ``description`` of one to three sentences, an optional ``title``, the server's own ``instructions``
(capped), where the text came from (``reference``), and its ``source``: ``imported`` (from the server's
``initialize`` or registry entry), ``drafted`` (from its tools' names, when the server says nothing) or ``human``
(written or reviewed by a person; re-imports keep it, as they keep a reviewed brief).

A card may also hold ``examples``: requests users make of the server, each with the tools (of this server) that
serve it, best first. No server sends them (``initialize`` has no such field), so only a person adds them; search
reads each as a phrasing of its first tool (:func:`card_phrasings`; see
:class:`~prompt_composer.discovery.phrasings.Phrasings`): the words users say to a memory server ("what do you know
about me") reach its tools before any use has been logged. An example that names a tool the registry does not
hold, or a tool of another server, is an error at its line: a card can only pull requests towards its own server's
tools.

Cards are loaded and validated like modes (every problem at its ``path:line``, all or nothing). Search indexes a
card's text with each of its tools; tiered catalogs and native deferral's namespaces are headed by it; the gateway
passes its instructions on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import Problem
from ..shared.yamlfile import LineMap, ValidatedModels, YamlReader, line_of, load_model, read_yaml
from .docs import ToolDoc, count_sentences, count_words

CardSource = Literal["imported", "drafted", "human"]
SERVERS_FOLDER = "servers"
DESCRIPTION_MAX_WORDS = 100
DESCRIPTION_MAX_SENTENCES = 3
# The server's own instructions, as kept in a card. Claude Code cuts an MCP server's instructions at 2 KB too; past
# that they are a manual, and the gateway merges every server's into one initialize answer.
INSTRUCTIONS_MAX_CHARS = 2048
TITLE_MAX_CHARS = 100
# Examples: enough to cover a large server's main uses (GitHub's 117 tools), short enough to stay requests.
EXAMPLES_MAX = 50
EXAMPLE_MAX_CHARS = 300
EXAMPLE_MAX_TOOLS = 5
HEADING_WORDS = 20  # a catalog or namespace heading: the description's first sentence, cut to this many words
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def card_stem(server: str) -> str:
    """The file stem of ``server``'s card: the name with every run of characters a file name should not hold
    (``/``, ``@``, spaces …) as one ``_`` (``example-servers/everything`` → ``example-servers_everything``)."""
    return _UNSAFE.sub("_", server).strip("._") or "server"


class CardExample(BaseModel):
    """One request users make of a server (``request``) and the tools of that server that serve it, best first."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, str_strip_whitespace=True)

    request: str = Field(min_length=1, max_length=EXAMPLE_MAX_CHARS)
    tools: tuple[str, ...] = Field(min_length=1, max_length=EXAMPLE_MAX_TOOLS)

    @field_validator("request")
    @classmethod
    def _one_line_request(cls, value: str) -> str:
        if any(not c.isprintable() for c in value):
            raise ValueError("request is one line of printable text")
        return value


class ServerCard(BaseModel):
    """One ``servers/<server>.yaml``: what an MCP server is for (see the module docstring)."""

    # ``defer_build`` as the tool docs' models (core/docs.py): a registry rebuilt from the cache's records builds no
    # validator. The description's limits are counted by core/docs.py, so its source is part of this model's
    # definition too (:func:`~prompt_composer.shared.model_records.definition`): a record is used only under both.
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, str_strip_whitespace=True)
    definition_modules: ClassVar[tuple[str, ...]] = (count_words.__module__,)

    name: str = Field(min_length=1, max_length=128)
    description: str = Field(min_length=1)
    title: str = Field(default="", max_length=TITLE_MAX_CHARS)
    instructions: str = Field(default="", max_length=INSTRUCTIONS_MAX_CHARS)
    source: CardSource = "human"
    # Where the description comes from (a README, a registry entry, the server's initialize): a URL or a few words.
    reference: str = Field(default="", max_length=300)
    examples: tuple[CardExample, ...] = Field(default=(), max_length=EXAMPLES_MAX)

    @field_validator("name")
    @classmethod
    def _printable_name(cls, value: str) -> str:
        if any(not c.isprintable() for c in value):
            raise ValueError("name holds a control or invisible character")
        return value

    @field_validator("description")
    @classmethod
    def _description_limits(cls, value: str) -> str:
        words = count_words(value)
        if words > DESCRIPTION_MAX_WORDS:
            raise ValueError(f"description has {words} words; at most {DESCRIPTION_MAX_WORDS} allowed")
        sentences = count_sentences(value)
        if not 1 <= sentences <= DESCRIPTION_MAX_SENTENCES:
            raise ValueError(f"description has {sentences} sentences; 1 to {DESCRIPTION_MAX_SENTENCES} allowed")
        return value

    @field_validator("title")
    @classmethod
    def _one_line_title(cls, value: str) -> str:
        if "\n" in value:
            raise ValueError("title is one line")
        return value

    @property
    def label(self) -> str:
        """How the server is named to a model: ``Title (name)``, the title alone when it only differs from the name
        in case, or the name alone."""
        if not self.title:
            return self.name
        return self.title if self.title.casefold() == self.name.casefold() else f"{self.title} ({self.name})"

    @property
    def search_text(self) -> str:
        """What search reads of the card: its title and description (the instructions say how to use the tools,
        at length; they are passed on, not indexed)."""
        return f"{self.title}. {self.description}" if self.title else self.description

    def one_line(self, words: int = HEADING_WORDS) -> str:
        """The description's first sentence, cut to ``words`` words (with "…" when cut)."""
        first = _SENTENCE_END.split(self.description.strip(), maxsplit=1)[0].strip()
        parts = first.split()
        return first if len(parts) <= words else " ".join(parts[:words]).rstrip(",;:") + "…"

    def heading(self) -> str:
        """A catalog group's heading: ``label — first sentence`` (without its full stop: a colon follows)."""
        return f"{self.label} — {self.one_line().rstrip('.')}"


def load_card_file(
    path: Path, *, read: YamlReader = read_yaml, models: ValidatedModels | None = None
) -> tuple[ServerCard | None, LineMap, list[Problem]]:
    """Load one card (read with ``read``: the registry's parsed-file cache, or a fresh parse; validated unless
    ``models`` holds it, as a tool doc is); its file stem must be :func:`card_stem` of its ``name``."""
    card, lines, problems = load_model(path, ServerCard, read=read, models=models)
    if card is not None and card_stem(card.name) != path.stem:
        message = f"name {card.name!r} must give the file name {card_stem(card.name)}{path.suffix} (got {path.name})"
        return None, lines, [*problems, Problem(path, line_of(lines, ("name",)), message)]
    return card, lines, problems


def example_problems(
    card: ServerCard, tools: Mapping[str, ToolDoc], path: Path, lines: LineMap, *, broken: frozenset[str] = frozenset()
) -> list[Problem]:
    """The problems of ``card``'s examples against the registry's ``tools``: a tool it does not hold (unless its file
    failed to load: ``broken``, reported there), or a tool of another server."""
    problems: list[Problem] = []
    for i, example in enumerate(card.examples):
        for j, name in enumerate(example.tools):
            doc = tools.get(name)
            where = line_of(lines, ("examples", i, "tools", j))
            if doc is None:
                if name not in broken:
                    message = f"server card {card.name!r}: example {i + 1} names tool {name!r}, which no doc defines"
                    problems.append(Problem(path, where, message))
            elif server_of(doc) != card.name:
                owner = server_of(doc)
                of = f"server {owner!r}" if owner is not None else "no server (a tool written by hand)"
                message = (
                    f"server card {card.name!r}: example {i + 1} names tool {name!r}, which belongs to {of}; "
                    "a card's examples name its own server's tools"
                )
                problems.append(Problem(path, where, message))
    return problems


def card_phrasings(cards: Iterable[ServerCard]) -> dict[str, list[str]]:
    """Tool → the example requests it is the first tool of, in card order (the shape learned phrasings have).

    An example speaks for its first tool, the best first call; the tools after it are other right calls, not
    credited: examples name lookup tools second ("find the page, then …"), and crediting every tool listed lifted
    those above the tools requests are about (docs/benchmarks.md, "Examples in the cards")."""
    phrasings: dict[str, list[str]] = {}
    for card in cards:
        for example in card.examples:
            phrasings.setdefault(example.tools[0], []).append(example.request)
    return phrasings


def server_of(doc: ToolDoc) -> str | None:
    """The MCP server an imported tool came from (``origin.server``); ``None`` for a tool written by hand."""
    return doc.origin.server if doc.origin is not None else None


def card_of(doc: ToolDoc, cards: Mapping[str, ServerCard]) -> ServerCard | None:
    """The card of ``doc``'s server, if it has one."""
    server = server_of(doc)
    return cards.get(server) if server is not None else None


def card_path(root: Path | None, server: str) -> Path:
    """Where ``server``'s card lives under the docs folder ``root`` (``.yml`` when that file is there)."""
    folder = (root or Path(".")) / SERVERS_FOLDER
    stem = card_stem(server)
    yml = folder / f"{stem}.yml"
    return yml if yml.is_file() and not (folder / f"{stem}.yaml").is_file() else folder / f"{stem}.yaml"


class Carded(Protocol):
    """What the checks below read of a registry (:class:`~prompt_composer.core.registry.Registry` is one). Declared
    here, so that this module, which the registry imports, needs nothing of it."""

    @property
    def tools(self) -> Mapping[str, ToolDoc]: ...

    @property
    def servers(self) -> Mapping[str, ServerCard]: ...

    @property
    def root(self) -> Path | None: ...


def unused_cards(registry: Carded) -> list[Problem]:
    """Warnings, not errors: each card that no tool of the registry refers to (a server whose tools were removed,
    or a misspelt name), at the card's file."""
    used = {doc.origin.server for doc in registry.tools.values() if doc.origin is not None}
    return [
        Problem(card_path(registry.root, name), 1, f"server card {name!r}: no tool's origin.server is {name!r}")
        for name in registry.servers
        if name not in used
    ]


def servers_without_cards(registry: Carded, names: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Server → its tools (among ``names``, default all), for each server with imported tools and no card."""
    missing: dict[str, list[str]] = {}
    for name in names if names is not None else registry.tools:
        server = server_of(registry.tools[name])
        if server is not None and server not in registry.servers:
            missing.setdefault(server, []).append(name)
    return missing
