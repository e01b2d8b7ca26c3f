"""The large-catalog task set (issue 21): which tool does a model call first among 300+ real MCP tools?

The catalog is the shipped ``tool_docs/`` (built-in coding tools and modes) plus five real MCP tool catalogs from
``../shared/corpora``, each imported with the project's own importer (:func:`prompt_composer.importers.import_json`):
the GitHub MCP server, Playwright MCP, Chrome DevTools MCP, Notion MCP and the MCP reference servers (everything,
fetch, filesystem, git, memory, sequentialthinking, time; one import per server). The filesystem server's
``read_file`` and ``search_files`` would collide with the shipped tools, so it is imported with the prefix ``fs_``;
no other names collide (the importer refuses a collision, so a new one stops the build).

One mode, ``large``, allows every tool of the folder: the shipped ``code`` mode's role, groups and permanent tools,
plus every group the docs use (the imports' ``mcp`` and ``mcp-write``, and ``debug``), ``recent_size`` 5 and the
budget its audit needs (the worst case rounded up to 500). Imports the poisoning lint quarantines stay out of it.

The tasks are committed (``benchmarks/agent/large/tasks.jsonl``), written in plain user language. ``expect`` is an
any-of list: equivalent tools on other servers count (Playwright's and Chrome DevTools' navigation, the
filesystem server's and the built-in listing), and so does ``execute_command`` where the shipped docs send an
agent to the shell (local git, file metadata). Chrome DevTools tools need a page id, so for a page already open
its ``list_pages`` is a right first call too. Every expected tool must be in the mode: :func:`build_large` checks
the tasks with the bench's own :func:`~prompt_composer.agent.bench.check_tasks`.

Run ``python3 benchmarks/large_catalog.py`` for the figures (tools, tokens of the full and brief definitions, the
composed prompt); ``python3 benchmarks/bench_agent.py --sets large`` runs the set on the local model.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml

from benchmarks.agent_tasks import TaskSet, definition_tokens, static_tokens
from benchmarks.search_corpora import shared_dir
from prompt_composer import Composer, ModeConfig, Registry, default_docs_dir, load_registry
from prompt_composer.agent.bench import check_tasks, load_tasks
from prompt_composer.core.audit import mode_audit, tool_audit
from prompt_composer.core.cards import CardExample, ServerCard
from prompt_composer.importers import import_json
from prompt_composer.importers.yaml_out import dump_yaml

__all__ = [
    "CARDS",
    "CATALOGS",
    "LARGE_MODE",
    "LARGE_TASKS",
    "Catalog",
    "LargeReport",
    "build_large",
    "check_large_tasks",
    "copied_text",
    "corpus_descriptions",
    "large_report",
    "missing_large_files",
]

HERE = Path(__file__).resolve().parent
LARGE_DIR = HERE / "agent" / "large"
LARGE_TASKS = LARGE_DIR / "tasks.jsonl"
# What users ask each server, written from its README by someone who read none of the task files (see its header):
# the cards' ``examples``.
CARD_EXAMPLES = LARGE_DIR / "card-examples.yaml"
CORPORA = shared_dir() / "corpora"
LARGE_MODE = "large"
RECENT_SIZE = 5
TEMPLATE_MODE = "code"  # the shipped mode whose role, groups and permanent tools the large mode takes
_MODE_KEYS = ("slug", "name", "role", "groups", "permanent", "recent_size", "budget_tokens")


@dataclass(frozen=True)
class Catalog:
    """One server's tools: a corpus file (relative to the corpora folder), the entries of ``server`` in it when
    the file holds several servers (``select``), and the prefix its names get in the catalog."""

    server: str
    path: Path
    select: str | None = None
    prefix: str = ""


_REFERENCE = Path("mcp_reference", "tools.json")
CATALOGS: tuple[Catalog, ...] = (
    Catalog("github", Path("github_mcp", "tools.json")),
    Catalog("playwright", Path("mcp_servers", "playwright-mcp.json")),
    Catalog("chrome-devtools", Path("mcp_servers", "chrome-devtools-mcp.json")),
    Catalog("notion", Path("mcp_servers", "notion-mcp-server.json")),
    Catalog("everything", _REFERENCE, select="everything"),
    Catalog("fetch", _REFERENCE, select="fetch"),
    Catalog("filesystem", _REFERENCE, select="filesystem", prefix="fs_"),  # read_file, search_files are shipped
    Catalog("git", _REFERENCE, select="git"),
    Catalog("memory", _REFERENCE, select="memory"),
    Catalog("sequentialthinking", _REFERENCE, select="sequentialthinking"),
    Catalog("time", _REFERENCE, select="time"),
)

# Each server's card: its own words, quoted or lightly paraphrased from its README (or package entry) as the
# reference says, written once per server and never for a task (issue 38). The import writes them as
# servers/<server>.yaml.
_SERVERS = "https://github.com/modelcontextprotocol/servers/blob/main/src"
CARDS: dict[str, dict[str, str]] = {
    "github": {
        "title": "GitHub",
        "description": "The GitHub MCP Server connects AI tools directly to GitHub's platform. It gives AI agents "
        "the ability to read repositories and code files, manage issues and PRs, analyze code, and automate "
        "workflows.",
        "reference": "https://github.com/github/github-mcp-server (README)",
    },
    "playwright": {
        "title": "Playwright",
        "description": "A Model Context Protocol server that provides browser automation capabilities using "
        "Playwright. It enables LLMs to interact with web pages through structured accessibility snapshots, "
        "bypassing the need for screenshots or visually-tuned models.",
        "reference": "https://github.com/microsoft/playwright-mcp (README)",
    },
    "chrome-devtools": {
        "title": "Chrome DevTools",
        "description": "Chrome DevTools for agents lets your coding agent control and inspect a live Chrome browser. "
        "It gives your AI coding assistant access to the full power of Chrome DevTools for reliable automation, "
        "in-depth debugging, and performance analysis.",
        "reference": "https://github.com/ChromeDevTools/chrome-devtools-mcp (README)",
    },
    "notion": {
        "title": "Notion",
        "description": "Official MCP server for the Notion API. It works on the pages and databases of a Notion "
        "workspace that are connected to its integration.",
        "reference": "https://github.com/makenotion/notion-mcp-server (README and package.json)",
    },
    "everything": {
        "title": "Everything",
        "description": "This MCP server attempts to exercise all the features of the MCP protocol. It is not "
        "intended to be a useful server, but rather a test server for builders of MCP clients.",
        "reference": f"{_SERVERS}/everything/README.md",
    },
    "fetch": {
        "title": "Fetch",
        "description": "A Model Context Protocol server that provides web content fetching capabilities. It enables "
        "LLMs to retrieve and process content from web pages, converting HTML to markdown for easier consumption.",
        "reference": f"{_SERVERS}/fetch/README.md",
    },
    "filesystem": {
        "title": "Filesystem",
        "description": "Node.js server implementing the Model Context Protocol for filesystem operations. It reads "
        "and writes files, creates, lists and deletes directories, moves files and directories, searches files and "
        "gets file metadata.",
        "reference": f"{_SERVERS}/filesystem/README.md",
    },
    "git": {
        "title": "Git",
        "description": "A Model Context Protocol server for Git repository interaction and automation. It provides "
        "tools to read, search, and manipulate Git repositories via Large Language Models.",
        "reference": f"{_SERVERS}/git/README.md",
    },
    "memory": {
        "title": "Knowledge Graph Memory",
        "description": "A basic implementation of persistent memory using a local knowledge graph. This lets the "
        "model remember information about the user across chats.",
        "reference": f"{_SERVERS}/memory/README.md",
    },
    "sequentialthinking": {
        "title": "Sequential Thinking",
        "description": "An MCP server implementation that provides a tool for dynamic and reflective problem-solving "
        "through a structured thinking process.",
        "reference": f"{_SERVERS}/sequentialthinking/README.md",
    },
    "time": {
        "title": "Time",
        "description": "A Model Context Protocol server that provides time and timezone conversion capabilities. It "
        "enables LLMs to get current time information and perform timezone conversions using IANA timezone names, "
        "with automatic system timezone detection.",
        "reference": f"{_SERVERS}/time/README.md",
    },
}
CardsChoice = Literal["readme", "drafted", "none"]
CARD_CHOICES: tuple[CardsChoice, ...] = ("readme", "drafted", "none")

# The keys of a corpus entry the importer reads, per format (the corpora add their own bookkeeping keys).
_MCP_KEYS = ("name", "title", "description", "inputSchema", "annotations")
_ANTHROPIC_KEYS = ("name", "description", "input_schema")


def missing_large_files(corpora: Path = CORPORA) -> list[Path]:
    """The corpus files :func:`build_large` reads that are not under ``corpora``."""
    paths = sorted({catalog.path for catalog in CATALOGS})
    return [corpora / p for p in paths if not (corpora / p).is_file()]


def _catalog_tools(catalog: Catalog, corpora: Path) -> list[dict[str, Any]]:
    """The catalog's tools in their upstream format, in corpus order, with only the keys the importer reads."""
    entries = json.loads((corpora / catalog.path).read_text(encoding="utf-8"))
    if catalog.select is not None:
        entries = [e for e in entries if e.get("server") == catalog.select]
    if not entries:
        raise RuntimeError(f"{corpora / catalog.path}: no tools of server {catalog.server!r}")
    keys = _MCP_KEYS if "inputSchema" in entries[0] else _ANTHROPIC_KEYS
    return [{key: entry[key] for key in keys if key in entry} for entry in entries]


def card_examples(path: Path = CARD_EXAMPLES) -> dict[str, list[CardExample]]:
    """Server → its cards' examples, from ``path`` (``{server: {reference, examples: [{request, tools}]}}``)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return {
        server: [CardExample(request=e["request"], tools=tuple(e["tools"])) for e in entry.get("examples", [])]
        for server, entry in (data or {}).items()
    }


def build_large(
    workdir: Path,
    *,
    tasks: Path = LARGE_TASKS,
    corpora: Path = CORPORA,
    cards: CardsChoice = "readme",
    examples: bool = True,
) -> TaskSet:
    """Write the large-catalog set under ``workdir/large/`` (replacing it) and check ``tasks`` against it.

    ``docs/`` is a copy of the shipped docs with the five catalogs imported and ``modes/large.yaml`` added; each
    server's card is its README's words (:data:`CARDS`), or with ``cards`` the one the importer drafts from the tool
    names (``drafted``), or none at all (``none``, the catalog before issue 38); a README card holds the examples of
    :data:`CARD_EXAMPLES` unless ``examples`` is false;
    ``sources/`` holds the tool lists as imported (one JSON file a server). Deterministic: the same corpora give
    the same files. Raises :class:`~prompt_composer.InputFileError` when a task expects a tool the mode does not
    allow (unknown, misspelt or quarantined), and ``RuntimeError`` when a corpus file is missing.
    """
    missing = missing_large_files(corpora)
    if missing:
        raise RuntimeError(f"the MCP tool catalogs are not in {corpora} (missing: {', '.join(map(str, missing))})")
    out = Path(workdir) / "large"
    if out.exists():
        shutil.rmtree(out)
    docs, sources = out / "docs", out / "sources"
    shutil.copytree(default_docs_dir(), docs, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    sources.mkdir()
    given = card_examples() if examples else {}
    for catalog in CATALOGS:
        source = sources / f"{catalog.server}.json"
        source.write_text(json.dumps(_catalog_tools(catalog, corpora), indent=1, ensure_ascii=False) + "\n")
        card = (
            ServerCard(
                name=catalog.server,
                source="human",
                examples=tuple(given.get(catalog.server, ())),
                **CARDS[catalog.server],
            )
            if cards == "readme"
            else None
        )
        import_json(source, docs, server=catalog.server, prefix=catalog.prefix, server_card=card)
    if cards == "none":
        shutil.rmtree(docs / "servers")
    _write_mode(docs)
    task_set = TaskSet("large", docs, LARGE_MODE, Path(tasks))
    check_large_tasks(task_set.tasks, load_registry(docs))
    return task_set


def _large_mode(registry: Registry, budget_tokens: int) -> ModeConfig:
    """Every group of the folder (the template mode's first, in its order), its role and permanent tools."""
    template = registry.mode(TEMPLATE_MODE).config
    used = {doc.group for doc in registry.tools.values()}
    groups = [*template.groups, *sorted(used - set(template.groups))]
    return ModeConfig(
        slug=LARGE_MODE,
        name="Large catalog",
        role=template.role,
        groups=tuple(groups),
        permanent=template.permanent,
        recent_size=RECENT_SIZE,
        budget_tokens=budget_tokens,
    )


def _write_mode(docs: Path) -> None:
    """Write ``modes/large.yaml`` with the budget its audit needs: the worst case rounded up to 500."""
    registry = load_registry(docs)
    # The folder's other modes too: the composed prompt names them, so they count in the large mode's worst case.
    others = [mode.config for mode in registry.modes.values() if mode.slug != LARGE_MODE]
    trial = Registry.from_docs(
        registry.tools.values(),
        [*others, _large_mode(registry, 10_000_000)],
        root=docs,
        groups=registry.groups.values(),
        servers=registry.servers.values(),
    )
    composer = Composer(trial)
    audits = {name: tool_audit(composer, doc) for name, doc in trial.tools.items()}
    worst = mode_audit(composer, trial.mode(LARGE_MODE), audits).worst_tokens
    mode = _large_mode(registry, -(-worst // 500) * 500).model_dump(mode="json")
    text = dump_yaml({key: mode[key] for key in _MODE_KEYS})
    (docs / "modes" / f"{LARGE_MODE}.yaml").write_text(text, encoding="utf-8")


def check_large_tasks(tasks: Path, registry: Registry) -> None:
    """The task file loads and every tool it expects is allowed by the ``large`` mode of ``registry``."""
    check_tasks(load_tasks(tasks), registry, LARGE_MODE)


# --- figures ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LargeReport:
    """What the set sends: the mode's tools, their native definitions in full and brief, the composed prompt."""

    tools: int  # allowed by the large mode
    imported: int  # docs the five catalogs added (quarantined ones included)
    quarantined: tuple[str, ...]
    static_tokens: int  # every allowed tool's full native definition: what the static variant sends
    brief_tokens: int  # every allowed tool's brief native definition
    composed_tokens: int  # Composer(registry).compose("large") with an empty FIFO
    worst_tokens: int  # the audit's worst case (a full FIFO of the largest tools)
    budget_tokens: int
    tasks: int

    def lines(self) -> list[str]:
        return [
            f"large catalog: {self.tools} tools in mode {LARGE_MODE!r} ({self.imported} imported, "
            f"{len(self.quarantined)} quarantined{': ' + ', '.join(self.quarantined) if self.quarantined else ''})",
            f"native definitions: full {self.static_tokens:,} tokens, brief {self.brief_tokens:,} tokens",
            f"composed prompt (empty FIFO): {self.composed_tokens:,} tokens; worst case {self.worst_tokens:,}, "
            f"budget {self.budget_tokens:,}",
            f"tasks: {self.tasks}",
        ]


def large_report(task_set: TaskSet) -> LargeReport:
    """The figures of a built large set (tiktoken counts, as the other sets' ``static_tokens``)."""
    registry = load_registry(task_set.docs)
    mode = registry.mode(task_set.mode)
    allowed = [registry.tools[name] for name in mode.allowed]
    imported = [d for d in registry.tools.values() if d.origin is not None]
    composer = Composer(registry)
    audits = {name: tool_audit(composer, registry.tools[name]) for name in mode.allowed}
    return LargeReport(
        tools=len(allowed),
        imported=len(imported),
        quarantined=tuple(sorted(d.name for d in imported if d.quarantined)),
        static_tokens=static_tokens(allowed),
        brief_tokens=sum(definition_tokens(d, full=False) for d in allowed),
        composed_tokens=composer.compose(task_set.mode).tokens.total,
        worst_tokens=mode_audit(composer, mode, audits).worst_tokens,
        budget_tokens=mode.config.budget_tokens,
        tasks=len(load_tasks(task_set.tasks)),
    )


# --- copied text --------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
SHINGLE_WORDS = 7  # a run of this many words shared with a description counts as copied


def corpus_descriptions(corpora: Path = CORPORA) -> list[str]:
    """The upstream descriptions of every catalog tool (as the corpora hold them, before any import)."""
    return [tool["description"] for catalog in CATALOGS for tool in _catalog_tools(catalog, corpora)]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def copied_text(text: str, descriptions: Iterable[str], *, min_words: int = 4) -> list[str]:
    """What ``text`` copies from ``descriptions``: each description sentence of at least ``min_words`` words
    that it contains, and each run of :data:`SHINGLE_WORDS` words it shares with one (case and punctuation
    ignored)."""
    words = _words(text)
    padded = f" {' '.join(words)} "
    runs = {tuple(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)}
    found: list[str] = []
    for description in descriptions:
        for sentence in _SENTENCE_END.split(description):
            sentence_words = _words(sentence)
            if len(sentence_words) >= min_words and f" {' '.join(sentence_words)} " in padded:
                found.append(sentence.strip())
        described = _words(description)
        for i in range(len(described) - SHINGLE_WORDS + 1):
            run = tuple(described[i : i + SHINGLE_WORDS])
            if run in runs:
                found.append(" ".join(run))
    return sorted(set(found))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the large-catalog task set and print its figures.")
    parser.add_argument("--out", type=Path, help="build into this folder (default: a temporary one)")
    parser.add_argument("--cards", choices=CARD_CHOICES, default="readme", help="server cards (default: readme)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        task_set = build_large(args.out or Path(tmp), cards=args.cards)
        print("\n".join(large_report(task_set).lines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
