"""Server cards in a docs folder: loaded with the registry (their problems are in tests/data/malformed), found by a
tool's ``origin.server``, part of the fingerprint, warned about when no tool refers to them, and shown where a
model reads about a server: a tiered catalog's headings, OpenAI's namespaces, the gateway's instructions; a server
without one is a retrieval risk in ``audit``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from prompt_composer import Composer, Origin, Registry, default_docs_dir, load_registry
from prompt_composer.agent.providers import namespaces
from prompt_composer.core.audit import run_audit
from prompt_composer.core.cards import ServerCard, card_stem, unused_cards
from prompt_composer.core.modes import TierConfig
from prompt_composer.mcp.listing import UPSTREAM_INSTRUCTIONS_MAX_CHARS, instructions
from tests.helpers import make_doc, make_mode, run_cli

MEMORY = ServerCard(
    name="memory",
    title="Knowledge Graph Memory",
    description="Persistent memory in a local knowledge graph. It remembers facts about the user across chats.",
    instructions="Search the graph before you answer a question about the user.",
)


def imported(name: str, server: str, group: str = "mcp") -> object:
    return make_doc(name, group, origin=Origin(server=server, name=name))


def registry(*cards: ServerCard, tiers: TierConfig | None = None) -> Registry:
    docs = [
        make_doc("read_file"),
        imported("create_entities", "memory"),
        imported("search_nodes", "memory"),
        imported("git_log", "git"),
    ]
    mode = make_mode("big", groups=["read", "mcp"], tiers=tiers)
    return Registry.from_docs(docs, [mode], servers=cards)  # type: ignore[arg-type]


def write_card(folder: Path, card: ServerCard) -> Path:
    path = folder / "servers" / f"{card_stem(card.name)}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(card.model_dump(mode="json"), sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """The shipped docs with two imported memory tools, and no card yet."""
    folder = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), folder)
    for doc in registry().tools.values():
        if doc.origin is not None and doc.origin.server == "memory":
            data = doc.model_dump(mode="json", exclude_defaults=True)
            (folder / f"{doc.name}.yaml").write_text(yaml.safe_dump({**data, "group": "mcp"}), encoding="utf-8")
    return folder


def test_a_card_is_found_by_its_tools_server_and_changes_the_fingerprint(docs: Path) -> None:
    before = load_registry(docs)
    assert dict(before.servers) == {} and before.card_of("create_entities") is None
    write_card(docs, MEMORY)
    after = load_registry(docs)
    assert after.servers["memory"] == MEMORY
    assert after.card_of("create_entities") == MEMORY and after.card_of("read_file") is None
    assert after.fingerprint != before.fingerprint  # search and catalogs read it: a new registry version
    # A folder without servers/ keeps the fingerprint it had before cards existed.
    assert (
        load_registry(default_docs_dir()).fingerprint
        == Registry.from_docs(
            load_registry(default_docs_dir()).tools.values(),
            [m.config for m in load_registry(default_docs_dir()).modes.values()],
            groups=load_registry(default_docs_dir()).groups.values(),
        ).fingerprint
    )


def test_a_server_name_that_is_no_file_name_has_a_stem_of_its_own(docs: Path) -> None:
    assert card_stem("example-servers/everything") == "example-servers_everything"
    assert card_stem("@scope/server name") == "scope_server_name"
    card = ServerCard(name="example servers/everything", description="A test server for builders of MCP clients.")
    path = write_card(docs, card)
    assert path.name == "example_servers_everything.yaml"
    assert load_registry(docs).servers["example servers/everything"] == card


def test_a_card_no_tool_refers_to_is_a_warning_not_an_error(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_card(docs, MEMORY)
    path = write_card(docs, ServerCard(name="gone", description="A server whose tools were removed."))
    warnings = unused_cards(load_registry(docs))
    assert [(w.path, w.line) for w in warnings] == [(path, 1)]
    assert "no tool's origin.server is 'gone'" in warnings[0].message
    code, out, err = run_cli(capsys, "--docs", str(docs), "validate")
    assert code == 0 and out.startswith("ok: ")
    assert f"warning: {path}:1: server card 'gone': no tool's origin.server is 'gone'" in err
    code, out, _ = run_cli(capsys, "--docs", str(docs), "validate", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["servers"] == 2
    assert data["warnings"] == [{"path": str(path), "line": 1, "message": warnings[0].message}]


def test_validate_names_the_card_file_and_line(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_card(docs, MEMORY)
    path.write_text("name: memory\ntitle: Memory\ndescription: One. Two. Three. Four.\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "--docs", str(docs), "validate")
    assert code == 2
    assert f"{path}:3: description: description has 4 sentences; 1 to 3 allowed" in err


def test_audit_reports_a_server_without_a_card_as_a_retrieval_risk(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = run_audit(Composer(load_registry(docs)))
    (risk,) = report.retrieval_risks
    assert risk.startswith("retrieval risk: server 'memory' (2 tool(s): create_entities, search_nodes) has no card")
    assert risk in report.warnings and "servers/memory.yaml" in risk
    code, out, _ = run_cli(capsys, "--docs", str(docs), "audit", "--format", "json")
    assert code == 0 and json.loads(out)["retrieval_risks"] == [risk]
    write_card(docs, MEMORY.model_copy(update={"source": "drafted"}))
    report = run_audit(Composer(load_registry(docs)))
    assert report.retrieval_risks == () and report.drafted_cards == ("memory",)
    assert run_audit(Composer(load_registry())).retrieval_risks == ()  # the shipped docs import nothing


def test_a_tiered_catalog_is_headed_by_each_servers_title_and_first_sentence() -> None:
    tiny = TierConfig(share=0.001, context_tokens=100_000)  # every tool but the permanent one a catalog line
    with_card = Composer(registry(MEMORY, tiers=tiny)).compose("big").system
    without = Composer(registry(tiers=tiny)).compose("big").system
    assert "Knowledge Graph Memory (memory) — Persistent memory in a local knowledge graph:" in with_card
    assert "\nmemory:" in without and "Knowledge Graph" not in without
    assert "\ngit:" in with_card  # a server without a card keeps its name


def test_openai_namespaces_are_described_by_the_card() -> None:
    reg = registry(MEMORY)
    spaces = {s.name: s for s in namespaces(["create_entities", "search_nodes", "git_log"], reg)}
    assert spaces["memory"].description.startswith(f"Knowledge Graph Memory (memory): {MEMORY.description}")
    assert spaces["git"].description.startswith("Tools of the git MCP server.")


def test_the_gateway_passes_the_upstream_instructions_on_merged_and_capped() -> None:
    git = ServerCard(name="git", description="Reads and writes Git repositories.", instructions="Pass repo_path.")
    reg = registry(MEMORY, git)
    text = instructions(reg.mode("big"), reg)
    assert text.startswith("Tools of prompt-composer's 'Big' mode.")
    assert "## Knowledge Graph Memory (memory)\nSearch the graph before you answer" in text
    assert text.index("## Knowledge Graph Memory") < text.index("## git\nPass repo_path.")  # the mode's order
    assert instructions(reg.mode("big")) == instructions(registry().mode("big"), registry())  # none to pass on
    long = [ServerCard(name=s, description="A server.", instructions="x" * 2048) for s in ("memory", "git")]
    big = instructions(registry(*long).mode("big"), registry(*long))
    upstream = big.split("\n\n", 1)[1]
    assert len(upstream) <= UPSTREAM_INSTRUCTIONS_MAX_CHARS + 1
    assert upstream.endswith("characters]") and "cut" in upstream
