"""A server card's ``examples``: requests users make of the server, each with the tools that serve it. They load and
validate with the card (every problem at its line, nothing half-loaded), may name only their own server's tools, and
survive a re-import that replaces the card's description."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from prompt_composer import Origin, Registry, default_docs_dir, load_registry
from prompt_composer.core.cards import CardExample, ServerCard, card_phrasings
from prompt_composer.errors import LoadError
from tests.helpers import make_doc, make_mode, run_cli, write_json

CARD = """\
name: memory
title: Knowledge Graph Memory
description: Persistent memory in a local knowledge graph. It remembers facts about the user across chats.
source: human
examples:
  - request: What do you know about where I live?
    tools: [search_nodes]
  - request: Start keeping track of my project Atlas.
    tools: [create_entities, {tool}]
"""


def imported(name: str, server: str) -> object:
    return make_doc(name, "mcp", origin=Origin(server=server, name=name))


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """The shipped docs with three imported tools: two of the memory server, one of git."""
    folder = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), folder)
    for doc in (imported("create_entities", "memory"), imported("search_nodes", "memory"), imported("git_log", "git")):
        data = doc.model_dump(mode="json", exclude_defaults=True)  # type: ignore[attr-defined]
        (folder / f"{data['name']}.yaml").write_text(yaml.safe_dump({**data, "group": "mcp"}), encoding="utf-8")
    (folder / "servers").mkdir()
    return folder


def write_card(docs: Path, tool: str) -> Path:
    path = docs / "servers" / "memory.yaml"
    path.write_text(CARD.format(tool=tool), encoding="utf-8")
    return path


def test_examples_load_with_the_card_and_become_each_tools_phrasings(docs: Path) -> None:
    write_card(docs, "search_nodes")
    card = load_registry(docs).servers["memory"]
    assert card.examples == (
        CardExample(request="What do you know about where I live?", tools=("search_nodes",)),
        CardExample(request="Start keeping track of my project Atlas.", tools=("create_entities", "search_nodes")),
    )
    # Each example speaks for its first tool (the best first call); the others are only right too.
    assert card_phrasings([card]) == {
        "search_nodes": ["What do you know about where I live?"],
        "create_entities": ["Start keeping track of my project Atlas."],
    }


@pytest.mark.parametrize(
    ("tool", "says"),
    [
        ("git_log", "example 2 names tool 'git_log', which belongs to server 'git'"),
        ("read_file", "example 2 names tool 'read_file', which belongs to no server (a tool written by hand)"),
        ("search_node", "example 2 names tool 'search_node', which no doc defines"),
    ],
)
def test_an_example_naming_another_servers_tool_or_none_is_an_error_at_its_line(
    docs: Path, tool: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_card(docs, tool)
    with pytest.raises(LoadError) as caught:
        load_registry(docs)
    (problem,) = caught.value.problems
    assert (problem.path, problem.line) == (path, 9)  # the line of the tool's name in the list
    assert says in problem.message
    code, _, err = run_cli(capsys, "--docs", str(docs), "validate")
    assert code == 2 and f"{path}:9: server card 'memory': {says}" in err


@pytest.mark.parametrize(
    ("example", "line", "says"),
    [
        ("  - request: Remember this.\n    tools: []\n", 7, "examples.0.tools: Tuple should have at least 1 item"),
        # Only the bad item is reported, not also the list it leaves empty.
        ("  - request: Remember this.\n    tools: [1]\n", 7, "examples.0.tools.0: Input should be a valid string"),
        (
            "  - request: Remember this.\n    tools: [search_nodes]\n    why: because\n",
            8,
            "unknown key 'examples.0.why'",
        ),
        ('  - request: "Remember\\nthis."\n    tools: [search_nodes]\n', 6, "one line of printable text"),
        ("  - tools: [search_nodes]\n", 6, "missing required key 'examples.0.request'"),
    ],
)
def test_a_malformed_example_is_refused_at_its_line(
    docs: Path, example: str, line: int, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = docs / "servers" / "memory.yaml"
    path.write_text(CARD.split("examples:")[0] + "examples:\n" + example, encoding="utf-8")
    code, _, err = run_cli(capsys, "--docs", str(docs), "validate")
    assert code == 2
    (message,) = [m for m in err.splitlines() if m.startswith(f"{path}:")]
    assert message.startswith(f"{path}:{line}: ") and says in message


def test_a_registry_in_memory_checks_examples_too() -> None:
    card = ServerCard(
        name="memory",
        description="Persistent memory.",
        examples=(CardExample(request="Who am I?", tools=("git_log",)),),
    )
    docs = [imported("search_nodes", "memory"), imported("git_log", "git")]
    with pytest.raises(LoadError, match="belongs to server 'git'"):
        Registry.from_docs(docs, [make_mode("m", groups=["mcp"])], servers=[card])  # type: ignore[arg-type]


def test_a_new_server_description_keeps_the_cards_examples(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = {"tools": [{"name": "git_log", "description": "Shows the commit logs.", "inputSchema": {"type": "object"}}]}
    source = write_json(tmp_path / "git.json", tools)
    for doc in docs.glob("git_log.yaml"):
        doc.unlink()
    argv = ["import", "json", str(source), "--out", str(docs), "--server-description"]
    code, _, err = run_cli(capsys, *argv, "Reads the local Git repository.")
    assert (code, err) == (0, "")
    path = docs / "servers" / "git.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["examples"] = [{"request": "Who changed this last week?", "tools": ["git_log"]}]
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    code, _, err = run_cli(capsys, *argv, "The Git server, read only.")
    assert (code, err) == (0, "")
    card = load_registry(docs).servers["git"]
    assert card.description == "The Git server, read only."
    assert card.examples == (CardExample(request="Who changed this last week?", tools=("git_log",)),)
