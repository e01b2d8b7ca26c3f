"""Imports a user can trust, shown with real MCP servers (issue 11).

``mcp-server-git`` and ``mcp-server-time`` come from PyPI (dev dependencies); ``server-filesystem`` and
``server-memory`` from npm (tests/npm, installed by .ci/run: without node these tests skip, under CI a missing
install fails). Texts of servers not installed here are real ``tools/list`` replies in tests/data/import_trust.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from prompt_composer import load_registry
from prompt_composer.cli import main
from prompt_composer.importers.brief import draft_brief
from prompt_composer.importers.drafting import draft_docs
from prompt_composer.importers.folder import STATE_FILE
from prompt_composer.importers.from_mcp import McpListing, list_mcp_tools
from prompt_composer.importers.placement import classify_effect
from prompt_composer.importers.plan import plan_tools
from prompt_composer.importers.render import render_full
from prompt_composer.importers.tool_list import UpstreamTool, parse_tool_list, read_tool_list
from prompt_composer.safety.lint import Finding
from tests.helpers import DATA, REPO, npm_server

pytest.importorskip("mcp")

pytestmark = pytest.mark.slow

REPO = REPO
DATA = DATA / "import_trust"
GIT = [sys.executable, "-m", "mcp_server_git"]
TIME = [sys.executable, "-m", "mcp_server_time"]

# What each real server's tools do, as their annotations say (checked against the servers below).
GIT_WRITING = {"git_commit", "git_add", "git_reset", "git_create_branch", "git_checkout"}
GIT_READING = {"git_status", "git_diff_unstaged", "git_diff_staged", "git_diff", "git_log", "git_show", "git_branch"}
FS_WRITING = {"write_file", "edit_file", "create_directory", "move_file"}
FS_READING = {
    "read_file",
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "search_files",
    "get_file_info",
    "list_allowed_directories",
}


def needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module} (a dev dependency)")


def run(argv: Sequence[str]) -> tuple[int, str, str]:
    """The CLI in this process, its stdout and stderr captured (usable from module-scoped fixtures)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def tools_json(listing: McpListing, path: Path, *, annotations: bool = True) -> Path:
    """A listing written back as the MCP ``tools/list`` JSON it came as (for fast re-imports with ``import json``)."""
    tools: list[dict[str, Any]] = []
    for tool in listing.tools:
        entry: dict[str, Any] = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
        if tool.title:
            entry["title"] = tool.title
        if annotations and tool.annotations:
            entry["annotations"] = dict(tool.annotations)
        tools.append(entry)
    path.write_text(json.dumps({"tools": tools}, indent=2), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with one commit, for mcp-server-git."""
    root = tmp_path_factory.mktemp("repo")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (root / "README.md").write_text("# demo\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    return root


@pytest.fixture(scope="module")
def git_listing(repo: Path) -> McpListing:
    needs("mcp_server_git")
    return list_mcp_tools([*GIT, "--repository", str(repo)], timeout=60)


@pytest.fixture(scope="module")
def time_listing() -> McpListing:
    needs("mcp_server_time")
    return list_mcp_tools(TIME, timeout=60)


@pytest.fixture(scope="module")
def fs_listing(tmp_path_factory: pytest.TempPathFactory) -> McpListing:
    return list_mcp_tools([str(npm_server("mcp-server-filesystem")), str(tmp_path_factory.mktemp("ws"))], timeout=60)


@pytest.fixture(scope="module")
def memory_listing() -> McpListing:
    return list_mcp_tools([str(npm_server("mcp-server-memory"))], timeout=60)


# --- 1. placement by effect -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped_import(tmp_path_factory: pytest.TempPathFactory, repo: Path) -> tuple[Path, str, str]:
    """The shipped docs with mcp-server-git and server-filesystem imported, as a new user would (``import mcp``)."""
    needs("mcp_server_git")
    fs = npm_server("mcp-server-filesystem")
    docs = tmp_path_factory.mktemp("shipped") / "docs"
    shutil.copytree(REPO / "tool_docs", docs)
    code, git_out, err = run(
        ["import", "mcp", "--out", str(docs), "--timeout", "60", "--", *GIT, "--repository", str(repo)]
    )
    assert (code, err) == (0, "")
    # The filesystem server's read_file and search_files clash with the shipped ones: --prefix keeps both.
    workspace = tmp_path_factory.mktemp("workspace")
    argv = ["import", "mcp", "--out", str(docs), "--prefix", "fs_", "--timeout", "60", "--", str(fs), str(workspace)]
    code, fs_out, err = run(argv)
    assert (code, err) == (0, "")
    return docs, git_out, fs_out


def test_writing_tools_of_real_servers_never_reach_ask_or_architect(shipped_import: tuple[Path, str, str]) -> None:
    docs, git_out, fs_out = shipped_import
    registry = load_registry(docs)
    writing = GIT_WRITING | {f"fs_{n}" for n in FS_WRITING}
    reading = GIT_READING | {f"fs_{n}" for n in FS_READING}
    assert {n for n, d in registry.tools.items() if d.origin is not None and d.group == "mcp-write"} == writing
    # The shipped use_mcp_tool can name any server's tool, writing ones included: it is a writing tool too.
    assert registry.tools["use_mcp_tool"].group == "mcp-write"
    assert {n for n, d in registry.tools.items() if d.origin is not None and d.group == "mcp"} == reading
    for slug in ("ask", "architect"):
        allowed = set(registry.mode(slug).allowed)
        assert not allowed & writing, slug
        assert not any(registry.tools[n].group == "mcp-write" for n in allowed), slug
    assert set(registry.mode("code").allowed) >= writing | reading
    assert set(registry.mode("ask").allowed) >= reading
    assert not set(registry.mode("architect").allowed) & reading  # architect has no mcp group at all
    assert not set(registry.mode("debug").allowed) & (writing | reading)

    # The report says where each tool went, why, and which modes allow it.
    assert "where the new and changed tools go (group, why, modes that allow them):" in git_out
    assert "  git_status → mcp (read-only: readOnlyHint) → modes ask, code\n" in git_out
    assert "  git_commit → mcp-write (writing: readOnlyHint: false) → modes code\n" in git_out
    assert "  git_reset → mcp-write (writing: destructiveHint) → modes code\n" in git_out
    assert "  fs_write_file → mcp-write (writing: destructiveHint) → modes code\n" in fs_out
    assert "  fs_read_text_file → mcp (read-only: readOnlyHint) → modes ask, code\n" in fs_out
    placed = re.findall(r"^  (\S+) → (\S+) \(", git_out + fs_out, re.MULTILINE)
    assert {name for name, _ in placed} == writing | reading


def test_audit_check_names_exactly_the_budgets_the_import_pushed_over(
    shipped_import: tuple[Path, str, str], tmp_path: Path
) -> None:
    docs, git_out, fs_out = shipped_import
    folder = tmp_path / "docs"
    shutil.copytree(docs, folder)
    code, _, err = run(["--docs", str(folder), "audit", "--check"])
    over = dict(re.findall(r"^error: mode '(\w+)' worst case \d+ tokens is over its budget (\d+)$", err, re.MULTILINE))
    assert code == 1 and err.count("\n") == len(over)
    # The shipped budgets fit the shipped tools; 17 more read tools in ask and 26 more tools in code do not.
    assert over == {"ask": "5600", "code": "8900"}
    # The import said so first, naming the mode file, and the worst case to budget for.
    reported = dict(re.findall(r"^over budget: mode '(\w+)' worst case is now (\d+) tokens", fs_out, re.MULTILINE))
    assert set(reported) == set(over)
    assert "over budget" not in git_out  # the git server alone fits
    assert f"({docs / 'modes' / 'ask.yaml'}): raise budget_tokens" in fs_out
    # Doing what the messages say is enough.
    for slug, worst in reported.items():
        path = folder / "modes" / f"{slug}.yaml"
        path.write_text(re.sub(r"budget_tokens: \d+", f"budget_tokens: {worst}", path.read_text()))
    assert run(["--docs", str(folder), "audit", "--check"])[0] == 0


def test_the_importers_own_reading_agrees_with_the_real_servers_annotations(
    git_listing: McpListing, time_listing: McpListing, fs_listing: McpListing, memory_listing: McpListing
) -> None:
    listings = [git_listing, time_listing, fs_listing, memory_listing]
    by_hints = {t.name: classify_effect(t) for listing in listings for t in listing.tools}
    assert {n for n, (effect, _) in by_hints.items() if effect == "writing"} >= GIT_WRITING | FS_WRITING
    assert {n for n, (effect, _) in by_hints.items() if effect == "read-only"} >= GIT_READING | FS_READING
    assert all(reason in ("readOnlyHint", "readOnlyHint: false", "destructiveHint") for _, reason in by_hints.values())
    # Without annotations (older servers, JSON lists of other APIs) the name and text decide, and agree …
    by_text = {t.name: classify_effect(replace(t, annotations={})) for listing in listings for t in listing.tools}
    disagree = {n for n in by_text if by_text[n][0] != by_hints[n][0]}
    assert disagree == {"convert_time", "open_nodes"}
    # … except where they cannot tell, and then the tool is treated as writing (the MCP spec's default).
    assert by_text["convert_time"] == ("writing", "unsure: treated as writing")
    assert by_text["open_nodes"] == ("writing", "unsure: treated as writing")
    assert by_text["git_commit"] == ("writing", "name reads as writing ('commit')")
    assert by_text["git_reset"] == ("writing", "name reads as writing ('reset')")
    assert by_text["delete_entities"] == ("writing", "name reads as writing ('delete')")
    assert by_text["git_log"] == ("read-only", "text reads as read-only ('Shows')")
    assert by_text["read_graph"] == ("read-only", "name reads as read-only ('read')")


def test_a_read_only_claim_does_not_hide_a_name_that_writes(git_listing: McpListing) -> None:
    reset = next(t for t in git_listing.tools if t.name == "git_reset")
    lying = replace(reset, annotations={"readOnlyHint": True})
    assert classify_effect(lying) == ("writing", "readOnlyHint, but the name reads as writing ('reset')")


def test_reimports_move_the_importers_groups_and_keep_a_persons(
    git_listing: McpListing, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = tools_json(git_listing, tmp_path / "git.json"), tmp_path / "docs"
    shutil.copytree(REPO / "tool_docs", out)
    assert main(["import", "json", str(source), "--out", str(out), "--server", "git"]) == 0
    capsys.readouterr()

    # A folder imported before groups were recorded: everything in `mcp`, git_commit included.
    state = json.loads((out / STATE_FILE).read_text())
    for record in state["tools"].values():
        del record["group"]
    (out / STATE_FILE).write_text(json.dumps(state))
    for name in GIT_WRITING:
        path = out / f"{name}.yaml"
        path.write_text(path.read_text().replace("group: mcp-write", "group: mcp"))
    assert "git_commit" in load_registry(out).mode("ask").allowed
    # A person decides git_reset belongs with the edit tools.
    path = out / "git_reset.yaml"
    path.write_text(path.read_text().replace("group: mcp", "group: edit"))

    assert main(["import", "json", str(source), "--out", str(out), "--server", "git"]) == 0
    stdout = capsys.readouterr()[0]
    registry = load_registry(out)
    assert "update    git_commit  (git: git_commit): updated group" in stdout
    assert "  git_commit → mcp-write (writing: readOnlyHint: false) → modes code" in stdout
    assert "git_commit" not in registry.mode("ask").allowed
    assert registry.tools["git_reset"].group == "edit"
    assert "unchanged git_reset  (git: git_reset): kept group" in stdout
    assert (
        "  git_reset → edit (kept: a person's group; the importer reads it as writing: destructiveHint) "
        "→ modes architect, code, debug" in stdout
    )
    assert json.loads((out / STATE_FILE).read_text())["tools"]["git_commit"]["group"] == "mcp-write"

    # Unchanged upstream, nothing to move: nothing written.
    assert main(["import", "json", str(source), "--out", str(out), "--server", "git"]) == 0
    assert "wrote 0 file(s)" in capsys.readouterr()[0]


def test_write_group_mcp_keeps_them_together_when_the_user_says_so(
    git_listing: McpListing, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = tools_json(git_listing, tmp_path / "git.json"), tmp_path / "docs"
    shutil.copytree(REPO / "tool_docs", out)
    argv = ["import", "json", str(source), "--out", str(out), "--server", "git", "--write-group", "mcp"]
    assert main(argv) == 0
    assert "  git_commit → mcp (writing: readOnlyHint: false) → modes ask, code" in capsys.readouterr()[0]
    assert "git_commit" in load_registry(out).mode("ask").allowed


def test_a_group_no_mode_allows_is_named_in_the_report(
    time_listing: McpListing, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Without annotations mcp-server-time's convert_time reads as neither: treated as writing.
    source, out = tools_json(time_listing, tmp_path / "time.json", annotations=False), tmp_path / "docs"
    shutil.copytree(REPO / "tool_docs", out)
    argv = ["import", "json", str(source), "--out", str(out), "--group", "clock"]
    assert main(argv) == 0
    stdout = capsys.readouterr()[0]
    assert "  get_current_time → clock (read-only: name reads as read-only ('get')) → no mode" in stdout
    assert "  convert_time → clock-write (writing: unsure: treated as writing) → no mode" in stdout
    assert "no mode allows group(s) clock, clock-write: add a group to the `groups:` of the modes" in stdout


# --- 2. drafted briefs ------------------------------------------------------------------------------------------


def test_briefs_of_the_git_and_time_servers_say_what_and_never_repeat_it(
    git_listing: McpListing, time_listing: McpListing
) -> None:
    """A brief adds a when-sentence only where it tells the tool from its siblings; "Records changes. Use it when
    you need to record changes." said nothing new, and is gone."""
    briefs = {t.name: draft_brief(t, server="git", server_tools=git_listing.tools) for t in git_listing.tools}
    briefs |= {t.name: draft_brief(t, server="time", server_tools=time_listing.tools) for t in time_listing.tools}
    assert briefs["git_log"] == "Shows the commit logs."
    assert briefs["git_commit"] == "Records changes to the repository."
    assert briefs["git_checkout"] == "Switches branches."
    assert briefs["git_show"] == "Shows the contents of a commit, or of a file or directory given as <revision>:<path>."
    assert briefs["convert_time"] == "Convert time between timezones."
    # git_branch lists branches without a name; creating one needs it: that is when to use git_create_branch.
    assert briefs["git_create_branch"].endswith(" Use it when you have the branch name.")
    assert not any("Use it when you need" in brief for brief in briefs.values()), briefs


def test_a_brief_keeps_no_instructions_to_the_model_and_the_full_keeps_them_for_review(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = DATA / "mcp_server_fetch.tools.json"  # mcp-server-fetch's real tools/list reply
    out = tmp_path / "docs"
    assert main(["import", "json", str(source), "--out", str(out), "--server", "fetch"]) == 0
    assert "  fetch → mcp (read-only: name reads as read-only ('fetch')) → no mode" in capsys.readouterr()[0]
    doc = load_registry(out).tools["fetch"]
    assert doc.brief == "Fetches a URL from the internet and optionally extracts its contents as markdown."
    assert "Although originally you did not have internet access" in doc.full
    assert "Now you can fetch the most up-to-date information" in doc.full
    assert not doc.quarantined  # an order, not an attack: the lint lets it through, the brief does not


def test_a_late_use_it_when_sentence_is_kept_and_a_when_to_use_list_becomes_one(fs_listing: McpListing) -> None:
    briefs = {t.name: draft_brief(t, server="filesystem") for t in fs_listing.tools}
    # Old drafts stopped after three sentences, before these.
    assert briefs["search_files"].endswith("Great for finding files when you don't know their exact location.")
    assert "Perfect for setting up directory structures for projects" in briefs["create_directory"]
    assert briefs["read_text_file"].endswith("Use this tool when you need to examine the contents of a single file.")
    # Rules about arguments ("The patterns should be glob-style …") are the full form's.
    assert "should" not in briefs["search_files"]
    assert "glob-style" not in briefs["search_files"]

    _, (thinking,) = read_tool_list(DATA / "mcp_server_sequentialthinking.tools.json")
    assert draft_brief(thinking).endswith(
        "Use it for breaking down complex problems into steps, planning and design with room for revision, "
        "or analysis that might need course correction."
    )


# --- 3. parameter references ------------------------------------------------------------------------------------


def test_objects_nested_in_any_of_and_one_of_are_rendered() -> None:
    _, tools = read_tool_list(DATA / "nested_schemas.tools.json")
    labels, move = (render_full(t, t.name) for t in tools)
    # GitHub's update_issue_labels: items are `oneOf: [string, {name, confidence, …}]`.
    assert "- `labels` (array of string or object, required): Labels to apply to this issue.\n" in labels
    assert "\n  - `name` (string, required): Label name\n" in labels
    assert '\n  - `confidence` (string, optional, one of `"LOW"`, `"MEDIUM"`, `"HIGH"`): ' in labels
    # Notion's move-page: `anyOf: [{$ref: movePageParentRequest}, string]`, the ref a `oneOf` of three objects.
    assert "- `parent` (movePageParentRequest or string, required)\n" in move
    assert '  - variant 1 of 3: an object, `type` = `"page_id"`\n    - `type` (constant, required' in move
    assert '    - `page_id` (string, required, format `"uuid"`)\n' in move
    assert '  - variant 3 of 3: an object, `type` = `"workspace"`\n' in move


def test_pydantic_optional_models_are_rendered() -> None:
    class Location(BaseModel):
        city: str
        room: str | None = None

    class Arguments(BaseModel):  # what FastMCP publishes for `def book(title: str, where: Location | None = None)`
        title: str
        where: Location | None = None

    inline = {"anyOf": [{"type": "object", "properties": {"lat": {"type": "number"}}}, {"type": "null"}]}
    schema = Arguments.model_json_schema()
    schema["properties"]["near"] = inline
    full = render_full(UpstreamTool("book", "Books a room.", schema), "book")
    assert "- `where` (Location or null, optional, default `null`)\n  - `city` (string, required): City\n" in full
    assert "  - `room` (string or null, optional, default `null`): Room\n" in full
    assert "- `near` (object or null, optional)\n  - `lat` (number, optional)" in full


def test_cyclic_refs_end() -> None:
    schema = {
        "type": "object",
        "$defs": {"Node": {"type": "object", "properties": {"child": {"anyOf": [{"$ref": "#/$defs/Node"}]}}}},
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    }
    full = render_full(UpstreamTool("tree", "A tree.", schema), "tree")
    assert full.endswith("- `root` (Node, optional)\n  - `child` (Node, optional)")  # a recursive type, shown once


# --- 4. --prefix and the siblings' names ------------------------------------------------------------------------


def test_prefix_renames_the_mentions_of_sibling_tools(shipped_import: tuple[Path, str, str]) -> None:
    docs, _, _ = shipped_import
    registry = load_registry(docs)
    deprecated = registry.tools["fs_read_file"]
    assert (
        deprecated.brief == "Read the complete contents of a file as text. DEPRECATED: Use fs_read_text_file instead."
    )
    assert "DEPRECATED: Use fs_read_text_file instead." in deprecated.full
    originals = FS_READING | FS_WRITING
    for doc in registry.tools.values():
        if doc.name.startswith("fs_"):
            text = doc.brief + doc.full
            mentioned = {n for n in originals if re.search(rf"(?<![\w-]){n}(?![\w-])", text)}
            assert not mentioned, (doc.name, mentioned)


def test_plain_word_siblings_are_renamed_only_where_quoted() -> None:
    tools = [
        UpstreamTool("add", "Adds two numbers.", {"type": "object", "properties": {}}),
        UpstreamTool(
            "word_count", "Counts words. Run `add` first to add the totals, or word_count alone.", {"type": "object"}
        ),
    ]
    (_, _), (count, _) = draft_docs(tools, server="calc", prefix="calc_")
    assert "Run `calc_add` first to add the totals, or calc_word_count alone." in count.full


# --- 5. brief_source after a person's edit ----------------------------------------------------------------------


def test_an_edited_brief_is_kept_and_becomes_human_and_a_marked_one_is_kept(
    git_listing: McpListing, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = tools_json(git_listing, tmp_path / "git.json"), tmp_path / "docs"
    assert main(["import", "json", str(source), "--out", str(out), "--server", "git"]) == 0
    assert "A brief is reviewed once you edit it or set `brief_source: human`" in capsys.readouterr()[0]

    path = out / "git_log.yaml"
    data = yaml.safe_load(path.read_text())
    assert data["brief_source"] == "drafted"
    data["brief"] = "Lists the commits of the repository, newest first. Use it to see who changed what and when."
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    # Another brief is reviewed and accepted as drafted: only its marker changes.
    status = out / "git_status.yaml"
    status.write_text(status.read_text().replace("brief_source: drafted", "brief_source: human"))

    assert main(["import", "json", str(source), "--out", str(out), "--server", "git"]) == 0  # same server
    stdout = capsys.readouterr()[0]
    assert "update    git_log  (git: git_log): kept edited brief (now brief_source: human)" in stdout
    git_log = load_registry(out).tools["git_log"]
    assert git_log.brief == data["brief"]
    assert git_log.brief_source == "human"

    # Upstream changes: the reviewed briefs stay, the full texts follow.
    listing = json.loads(source.read_text())
    for tool in listing["tools"]:
        tool["description"] += " (new in this version)"
    source.write_text(json.dumps(listing))
    assert main(["import", "json", str(source), "--out", str(out), "--server", "git"]) == 0
    stdout = capsys.readouterr()[0]
    assert "update    git_log  (git: git_log): updated full; kept edited brief" in stdout
    assert "update    git_status  (git: git_status): updated full; kept reviewed brief" in stdout
    assert "update    git_diff  (git: git_diff): updated brief, full" in stdout
    registry = load_registry(out)
    assert registry.tools["git_log"].brief == data["brief"]
    assert registry.tools["git_status"].brief == "Shows the working tree status."
    assert registry.tools["git_status"].brief_source == "human"
    assert "(new in this version)" in registry.tools["git_status"].full
    assert registry.tools["git_diff"].brief_source == "drafted"
    assert [n for n, d in registry.tools.items() if d.brief_source == "human"] == ["git_log", "git_status"]


def test_parse_tool_list_keeps_annotations() -> None:
    _, tools = parse_tool_list(json.loads((DATA / "nested_schemas.tools.json").read_text()))
    assert tools[0].annotations == {
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
        "readOnlyHint": False,
        "title": "Update Issue Labels",
    }
    assert tools[0].title == "Update Issue Labels"
    assert classify_effect(tools[0]) == ("writing", "readOnlyHint: false")
    assert classify_effect(tools[1]) == ("writing", "name reads as writing ('move')")  # Notion's: no annotations


def test_the_quarantine_report_shows_the_worst_findings_first(tmp_path: Path) -> None:
    """A tool with more findings than the report shows per tool: the high ones come first, whatever their line."""
    plan = plan_tools(
        [UpstreamTool("leak", "Reads a note.", {"type": "object", "properties": {}})],
        tmp_path / "docs",
        server="s",
        group="mcp",
        write_group=None,
        prefix="",
    )
    low = [Finding("rule-low", "low", "leak", "full", f"low {n}", line=n) for n in range(1, 15)]
    high = Finding("rule-high", "high", "leak", "full", "high one", line=40)
    medium = Finding("rule-medium", "medium", "leak", "full", "medium one", line=30)
    report = replace(plan, quarantined={"leak": (*low, medium, high)}).quarantine_report(per_tool=3)
    shown = [line.strip() for line in report if line.startswith("  <tool leak>")]
    assert [line.split(": ", 1)[1].split(" ")[0] for line in shown] == ["high", "medium", "low"]
    assert "  … and 13 more" in report
