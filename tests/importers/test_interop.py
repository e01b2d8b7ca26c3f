"""Importing JSON tool lists (format detection, drafting, name mapping, merge) and exporting OpenAI tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from prompt_composer import Composer, load_registry, run_audit
from prompt_composer.agent.providers import to_openai_tool, tools_for
from prompt_composer.core.audit import brief_parameter_mentions
from prompt_composer.core.docs import BRIEF_MAX_WORDS, count_words
from prompt_composer.errors import ImporterError
from prompt_composer.importers.brief import draft_brief
from prompt_composer.importers.drafting import api_name, tool_docs_from_upstream
from prompt_composer.importers.folder import STATE_FILE
from prompt_composer.importers.from_json import import_json
from prompt_composer.importers.tool_list import UpstreamTool, parse_tool_list
from tests.helpers import CORPORA, run_cli, snapshot, write_json

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name."}, "days": {"type": "integer"}},
    "required": ["city"],
}


# --- format detection ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([{"name": "weather", "description": "Get the weather.", "input_schema": SCHEMA}], "anthropic"),
        ({"tools": [{"name": "weather", "description": "Get the weather.", "input_schema": SCHEMA}]}, "anthropic"),
        (
            [
                {
                    "type": "function",
                    "function": {"name": "weather", "description": "Get the weather.", "parameters": SCHEMA},
                }
            ],
            "openai",
        ),
        ({"functions": [{"name": "weather", "description": "Get the weather.", "parameters": SCHEMA}]}, "openai"),
        ([{"type": "function", "name": "weather", "description": "Get the weather.", "parameters": SCHEMA}], "openai"),
        ({"tools": [{"name": "weather", "description": "Get the weather.", "inputSchema": SCHEMA}]}, "mcp"),
        (
            {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "weather", "inputSchema": SCHEMA}]}},
            "mcp",
        ),
    ],
)
def test_formats_are_detected_and_read(data: Any, expected: str) -> None:
    kind, tools = parse_tool_list(data)
    assert kind == expected
    assert [t.name for t in tools] == ["weather"]
    assert tools[0].input_schema["properties"]["city"]["type"] == "string"
    assert tools[0].input_schema["required"] == ["city"]


def test_a_tool_without_parameters_gets_an_empty_object_schema() -> None:
    kind, tools = parse_tool_list(
        [
            {"type": "function", "function": {"name": "ping", "description": "Check the service is up."}},
            {"type": "function", "function": {"name": "pong", "description": "Answer.", "parameters": {}}},
        ]
    )
    assert kind == "openai"
    assert [t.input_schema for t in tools] == [{"type": "object", "properties": {}}] * 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"weather": 1}, "not a tool list"),
        ([], "empty"),
        ([{"name": "a", "input_schema": SCHEMA}, {"name": "b", "inputSchema": SCHEMA}], "mixes tool formats"),
        ([{"name": "a", "input_schema": {"type": "string"}}], "must have type 'object'"),
        ([{"name": "a", "input_schema": ["x"]}], "not a JSON object"),
        ([{"name": "a", "input_schema": SCHEMA}, {"name": "a", "input_schema": SCHEMA}], "duplicate tool name 'a'"),
        ([{"description": "nameless", "input_schema": SCHEMA}], "has no name"),
        ([{"type": "bash_20250124", "name": "bash"}], "built-in tool"),
    ],
)
def test_bad_tool_lists_are_refused_with_a_reason(data: Any, message: str) -> None:
    with pytest.raises(ImporterError, match=message):
        parse_tool_list(data)


# --- drafting -----------------------------------------------------------------------------------------


def test_names_the_apis_refuse_are_mapped_and_the_original_is_kept() -> None:
    assert api_name("get_weather") == "get_weather"
    assert api_name("weather.get forecast") == "weather_get_forecast"
    long = api_name("x" * 80)
    assert len(long) <= 64
    assert long != api_name("x" * 81)
    tools = [UpstreamTool("weather.get", "Get the weather.", SCHEMA), UpstreamTool("ping/pong", "Ping.", SCHEMA)]
    docs = tool_docs_from_upstream(tools, server="wx")
    assert [(d.name, d.origin.name if d.origin else None) for d in docs] == [
        ("weather_get", "weather.get"),
        ("ping_pong", "ping/pong"),
    ]
    assert all(d.origin is not None and d.origin.server == "wx" for d in docs)


def test_two_originals_mapping_to_one_name_are_an_error_naming_both() -> None:
    tools = [UpstreamTool("a.b", "One.", SCHEMA), UpstreamTool("a b", "Two.", SCHEMA)]
    with pytest.raises(ImporterError, match=r"'a\.b' and 'a b'.*'a_b'"):
        tool_docs_from_upstream(tools, server="s")


def test_the_drafted_brief_is_short_and_leaves_parameters_to_the_full_form() -> None:
    description = (
        "Search the issues of a repository. Returns matching issues, newest first. "
        "Set `per_page` to page through results; use 'state' to filter.\n\n"
        "Args:\n  query: the search text\n  per_page: page size"
    )
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string"}, "per_page": {"type": "integer"}, "state": {"enum": ["open"]}},
    }
    tool = UpstreamTool("search_issues", description, schema)
    brief = draft_brief(tool)
    assert brief == "Search the issues of a repository. Returns matching issues, newest first."
    (doc,) = tool_docs_from_upstream([tool], server="gh")
    assert doc.brief_source == "drafted"
    assert "`per_page` (integer, optional)" in doc.full
    assert 'one of `"open"`' in doc.full
    assert doc.full.startswith("## search_issues\n\nSearch the issues")
    assert brief_parameter_mentions(doc) == []


def test_a_very_long_or_missing_description_still_makes_a_valid_brief() -> None:
    long = UpstreamTool("t", " ".join(["word"] * 300), SCHEMA)
    assert count_words(draft_brief(long)) <= BRIEF_MAX_WORDS
    empty = UpstreamTool("t", "", SCHEMA)
    (doc,) = tool_docs_from_upstream([empty], server="s")
    assert "no description" in doc.brief


# --- JSON import through the CLI ----------------------------------------------------------------------


def test_import_json_writes_docs_that_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_json(
        tmp_path / "weather.json",
        [
            {
                "type": "function",
                "function": {"name": "get.weather", "description": "Get the weather.", "parameters": SCHEMA},
            }
        ],
    )
    out = tmp_path / "docs"
    code, stdout, err = run_cli(capsys, "import", "json", str(source), "--out", str(out), "--group", "web")
    assert (code, err) == (0, "")
    assert "add       get_weather  (weather: get.weather)" in stdout
    data = yaml.safe_load((out / "get_weather.yaml").read_text())
    assert data["origin"] == {"server": "weather", "name": "get.weather"}
    assert data["group"] == "web"
    assert data["brief_source"] == "drafted"
    code, stdout, err = run_cli(capsys, "--docs", str(out), "validate")
    assert code == 2 and "no modes/ folder: no mode can show these tools" in err  # the docs are fine; no mode yet
    (out / "modes").mkdir()
    code, stdout, _ = run_cli(capsys, "--docs", str(out), "validate")
    assert code == 0
    assert stdout.startswith("ok: 1 tool, 0 modes")
    code, stdout, _ = run_cli(capsys, "--docs", str(out), "audit", "--format", "json")
    assert json.loads(stdout)["drafted_briefs"] == ["get_weather"]


BAD_INPUTS: dict[str, str] = {
    "invalid.json": '[{"name": "a", "input_schema": ',
    "not_object.json": json.dumps([{"name": "a", "input_schema": {"type": "array"}}]),
    "duplicates.json": json.dumps([{"name": "a", "inputSchema": SCHEMA}, {"name": "a", "inputSchema": SCHEMA}]),
    "bad_name_clash.json": json.dumps([{"name": "a.b", "inputSchema": SCHEMA}, {"name": "a:b", "inputSchema": SCHEMA}]),
    "bad_property.json": json.dumps([{"name": "a", "inputSchema": {"type": "object", "properties": {"x": 3}}}]),
    "unknown.json": json.dumps({"hello": "world"}),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_json_input_is_one_line_exit_2_and_leaves_the_folder_untouched(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_json(tmp_path / "good.json", [{"name": "keep", "description": "Stay.", "input_schema": SCHEMA}])
    out = tmp_path / "docs"
    assert run_cli(capsys, "import", "json", str(good), "--out", str(out))[0] == 0
    before = snapshot(out)
    source = tmp_path / name
    source.write_text(BAD_INPUTS[name], encoding="utf-8")
    code, stdout, err = run_cli(capsys, "import", "json", str(source), "--out", str(out))
    assert code == 2
    assert stdout == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: ")
    assert snapshot(out) == before
    fresh = tmp_path / "fresh"
    assert run_cli(capsys, "import", "json", str(source), "--out", str(fresh))[0] == 2
    assert not fresh.exists()
    if name == "invalid.json":
        assert f"{source}:1:" in err
        assert "invalid JSON" in err


def test_a_name_taken_by_a_hand_written_doc_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "docs"
    out.mkdir()
    (out / "read_file.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "read_file",
                "group": "read",
                "brief": "Read a file.",
                "full": "## read_file",
                "input_schema": SCHEMA,
            }
        )
    )
    before = snapshot(out)
    source = write_json(tmp_path / "fs.json", {"tools": [{"name": "read_file", "inputSchema": SCHEMA}]})
    code, _, err = run_cli(capsys, "import", "json", str(source), "--out", str(out))
    assert code == 2
    assert "already exists" in err
    assert "--prefix" in err
    assert snapshot(out) == before
    code, stdout, _ = run_cli(capsys, "import", "json", str(source), "--out", str(out), "--prefix", "fs_")
    assert code == 0
    assert "add       fs_read_file" in stdout


# --- merge on re-import -------------------------------------------------------------------------------


def _mcp_list(*tools: tuple[str, str]) -> dict[str, Any]:
    return {"tools": [{"name": n, "description": d, "inputSchema": SCHEMA} for n, d in tools]}


def test_reimport_keeps_human_edits_updates_the_rest_adds_new_and_reports_vanished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "svc.json"
    out = tmp_path / "docs"
    write_json(source, _mcp_list(("alpha", "Alpha does one thing."), ("beta", "Beta does another."), ("gone", "Old.")))
    import_json(source, out)

    # A person rewrites alpha's brief (and marks it reviewed); nobody touches beta.
    alpha = yaml.safe_load((out / "alpha.yaml").read_text())
    alpha["brief"] = "Alpha, as our team uses it: run it before deploying."
    alpha["brief_source"] = "human"
    (out / "alpha.yaml").write_text(yaml.safe_dump(alpha, sort_keys=False))

    # Upstream: every description changes, `gone` disappears, `gamma` appears.
    write_json(
        source,
        _mcp_list(("alpha", "Alpha does one new thing."), ("beta", "Beta does something new."), ("gamma", "New.")),
    )
    before = snapshot(out)
    code, stdout, _ = run_cli(capsys, "import", "json", str(source), "--out", str(out), "--dry-run")
    assert code == 0
    assert snapshot(out) == before
    assert "update    alpha  (svc: alpha): updated full; kept edited brief" in stdout
    assert "update    beta  (svc: beta): updated brief, full" in stdout
    assert "add       gamma  (svc: gamma)" in stdout
    assert "vanished  gone  (svc: gone) is no longer listed upstream; doc kept" in stdout
    assert "card      servers/svc.yaml  (drafted from the tools' names: say what the server is for" in stdout  # gamma
    assert "dry run: would write 4 file(s)" in stdout

    assert run_cli(capsys, "import", "json", str(source), "--out", str(out))[0] == 0
    registry = load_registry(out)
    assert registry.tools["alpha"].brief == "Alpha, as our team uses it: run it before deploying."
    assert registry.tools["alpha"].brief_source == "human"
    assert "Alpha does one new thing." in registry.tools["alpha"].full
    assert registry.tools["beta"].brief == "Beta does something new."
    assert registry.tools["beta"].brief_source == "drafted"
    assert set(registry.tools) == {"alpha", "beta", "gamma", "gone"}  # vanished docs are reported, not deleted

    # Still edited on the next round; an unchanged upstream writes nothing at all.
    before = snapshot(out)
    code, stdout, _ = run_cli(capsys, "import", "json", str(source), "--out", str(out))
    assert code == 0
    assert snapshot(out) == before
    assert "unchanged alpha  (svc: alpha): kept edited brief" in stdout
    assert "wrote 0 file(s)" in stdout


def test_the_schema_follows_upstream_while_group_and_queries_stay_the_persons(tmp_path: Path) -> None:
    source = write_json(tmp_path / "svc.json", _mcp_list(("alpha", "Alpha does one thing.")))
    out = tmp_path / "docs"
    import_json(source, out)
    doc = yaml.safe_load((out / "alpha.yaml").read_text())
    doc["group"] = "read"
    doc["queries"] = ["run alpha"]
    (out / "alpha.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    data = json.loads(source.read_text())
    data["tools"][0]["inputSchema"] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    write_json(source, data)
    plan = import_json(source, out)
    assert plan.changes[0].updated == ("full", "input_schema")  # the full form's parameter reference follows
    alpha = load_registry(out).tools["alpha"]
    assert "- `n` (integer, optional)" in alpha.full
    assert alpha.group == "read"
    assert alpha.queries == ("run alpha",)
    assert alpha.input_schema["properties"] == {"n": {"type": "integer"}}
    assert STATE_FILE in plan.files


# --- the corpora --------------------------------------------------------------------------------------


def _corpus_files(tmp_path: Path) -> list[tuple[str, Path]]:
    """The GitHub MCP server's tools and each MCP reference server's, as tools/list JSON files."""
    github = json.loads((CORPORA / "github_mcp" / "tools.json").read_text())
    files = [("github", write_json(tmp_path / "github.json", {"tools": github}))]
    reference = json.loads((CORPORA / "mcp_reference" / "tools.json").read_text())
    for server in sorted({t["server"] for t in reference}):
        tools = [t for t in reference if t["server"] == server]
        files.append((server, write_json(tmp_path / f"{server}.json", {"tools": tools})))
    return files


@pytest.mark.skipif(not (CORPORA / "github_mcp").is_dir(), reason="needs ../shared/corpora")
@pytest.mark.slow  # a measurement over a whole corpus (two whole catalogs imported)
def test_github_and_reference_catalogs_import_validate_and_compose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "docs"
    for server, path in _corpus_files(tmp_path):
        code, _, err = run_cli(capsys, "import", "json", str(path), "--out", str(out), "--server", server)
        assert (code, err) == (0, "")
    registry = load_registry(out)
    assert len(registry.tools) == 117 + 58
    assert all(d.brief_source == "drafted" and d.origin is not None for d in registry.tools.values())
    origins = {(d.origin.server if d.origin else "") for d in registry.tools.values()}
    assert origins == {"github", "everything", "filesystem", "git", "memory", "time", "sequentialthinking", "fetch"}
    assert run_audit(Composer(registry)).warnings == ()  # no drafted brief names a parameter

    modes = out / "modes"
    modes.mkdir()
    (modes / "mcp.yaml").write_text(
        yaml.safe_dump(
            {"slug": "mcp", "name": "MCP", "role": "You use MCP tools.", "groups": ["mcp", "mcp-write"]}
            | {"recent_size": 5}
            | {"budget_tokens": 100_000}
        )
    )
    code, stdout, _ = run_cli(capsys, "--docs", str(out), "audit", "--format", "json")
    assert code == 0
    (mode,) = json.loads(stdout)["modes"]
    assert mode["tools"] == 175
    assert mode["composed_tokens"] < mode["baseline_tokens"] / 2


# --- providers ----------------------------------------------------------------------------------------


def test_tools_convert_to_openai_format() -> None:
    tool = {"name": "a", "description": "A.", "input_schema": SCHEMA}
    assert to_openai_tool(tool) == {
        "type": "function",
        "function": {"name": "a", "description": "A.", "parameters": SCHEMA},
    }
    assert tools_for("anthropic", [tool]) == [tool]
    # What we export, we can import back.
    kind, tools = parse_tool_list(tools_for("openai", [tool]))
    assert kind == "openai"
    assert tools[0].input_schema == SCHEMA


def test_compose_provider_openai(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run_cli(capsys, "compose", "--mode", "code", "--format", "json", "--provider", "openai")
    assert code == 0
    data = json.loads(stdout)
    assert data["provider"] == "openai"
    assert data["tools"]
    assert all(t["type"] == "function" and "parameters" in t["function"] for t in data["tools"])
    names = [t["function"]["name"] for t in data["tools"]]
    code, stdout, _ = run_cli(capsys, "compose", "--mode", "code", "--format", "json")
    assert [t["name"] for t in json.loads(stdout)["tools"]] == names


def test_reimport_rewrites_a_doc_where_it_lives_even_as_yml(tmp_path: Path) -> None:
    source = tmp_path / "svc.json"
    out = tmp_path / "docs"
    write_json(source, _mcp_list(("alpha", "Alpha does one thing.")))
    import_json(source, out)
    (out / "alpha.yaml").rename(out / "alpha.yml")
    write_json(source, _mcp_list(("alpha", "Alpha does a new thing.")))
    import_json(source, out)
    assert not (out / "alpha.yaml").exists()
    assert "Alpha does a new thing." in load_registry(out).tools["alpha"].full
