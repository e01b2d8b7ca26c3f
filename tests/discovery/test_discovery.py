"""tool_search, discovery modes in the composer, call_tool, the argument validator, group workflows, the
retrieval evaluation and the search/eval CLI — all under the one access policy (Mode.allows)."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from prompt_composer import Composer, LoadError, Registry, TaskSession, ToolDoc, handle_fetch, load_registry
from prompt_composer.cli import main
from prompt_composer.core.builtins import CALL_TOOL_NAME, FETCH_TOOL_NAME, TOOL_SEARCH_NAME, call_tool_definition
from prompt_composer.core.docs import GroupDoc
from prompt_composer.core.schema import validate_arguments
from prompt_composer.discovery.evaluate import EvalQuery, evaluate, load_queries
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.discovery.tools import acall_tool, call_tool, handle_tool_search
from prompt_composer.errors import InputFileError
from tests.helpers import REPO
from tests.helpers import SEARCH_DOCS as DOCS
from tests.helpers import search_mode as mode

SECRET = "secret"


@pytest.fixture(scope="module")
def registry() -> Registry:
    groups = [
        GroupDoc(name="read", workflow="Find first, then read only what matters."),
        GroupDoc(name="admin", workflow="ADMIN WORKFLOW: never show this outside admin."),
    ]
    return Registry.from_docs(
        DOCS,
        [
            mode("code", ["read", "edit", "command"], permanent=["read_file"]),
            mode("disco", ["read", "edit", "command"], permanent=["read_file"], discovery=True),
            mode("admin", ["admin"]),
        ],
        groups=groups,
    )


@pytest.fixture(scope="module")
def search(registry: Registry) -> ToolSearch:
    return ToolSearch(registry, embedder=False)


# --- tool_search ------------------------------------------------------------------------------------------


def test_tool_search_activates_found_tools_in_a_stable_order(registry: Registry, search: ToolSearch) -> None:
    disco = registry.mode("disco")
    session = TaskSession("t")
    first = handle_tool_search(search, disco, {"query": "run the tests"}, session=session)
    assert not first.is_error and first.activated[0] == "execute_command"
    assert "execute_command (command)" in first.content and "now available" in first.content
    second = handle_tool_search(search, disco, {"query": "replace exact text in a file", "limit": 3}, session=session)
    assert "apply_diff" in session.discovered()
    before = session.discovered()
    again = handle_tool_search(search, disco, {"query": "run the tests"}, session=session)
    assert again.activated == () and session.discovered() == before  # a repeat does not reorder
    assert before[: len(first.activated)] == first.activated
    assert "read_file" not in session.discovered()  # permanent: already present
    assert set(second.activated) <= set(disco.allowed)


def test_tool_search_shows_group_workflows(registry: Registry, search: ToolSearch) -> None:
    result = handle_tool_search(search, registry.mode("disco"), {"query": "grep the codebase"})
    assert "Workflow for read tools: Find first" in result.content
    assert "ADMIN WORKFLOW" not in result.content


def test_tool_search_never_shows_or_activates_tools_outside_the_mode(registry: Registry, search: ToolSearch) -> None:
    session = TaskSession("t")
    for query in ("secret_tool", "rotate the production database credentials", "search the vault", "admin"):
        result = handle_tool_search(search, registry.mode("disco"), {"query": query, "limit": 20}, session=session)
        assert SECRET not in result.content.replace(query, "").lower(), query
        assert "ADMIN" not in result.content
    assert not any(SECRET in n for n in session.discovered())


def test_tool_search_refusals_are_error_results(registry: Registry, search: ToolSearch) -> None:
    disco = registry.mode("disco")
    assert handle_tool_search(search, disco, {}).is_error
    assert handle_tool_search(search, disco, {"query": "  "}).is_error
    assert handle_tool_search(search, disco, {"query": "x", "limit": 0}).is_error
    assert handle_tool_search(search, disco, {"query": "x", "limit": True}).is_error
    big = handle_tool_search(search, disco, {"query": "file", "limit": 500})
    assert not big.is_error and "lowered to the maximum" in big.content
    miss = handle_tool_search(search, disco, {"query": "xyzzy plugh"})
    assert not miss.is_error and miss.activated == ()
    assert "No tool" in miss.content and "read (3 tools)" in miss.content


def test_truncated_results_say_so(registry: Registry, search: ToolSearch) -> None:
    result = handle_tool_search(search, registry.mode("disco"), {"query": "file", "limit": 1})
    assert result.result is not None and result.result.truncated
    assert f"the best 1 of {result.result.total} matches" in result.content


def test_discovery_is_bounded_and_reported(registry: Registry, search: ToolSearch) -> None:
    session = TaskSession("t", discovery_limit=1)
    result = handle_tool_search(search, registry.mode("disco"), {"query": "file", "limit": 5}, session=session)
    assert len(session.discovered()) == 1
    assert "limit of active tools is reached" in result.content


def test_session_discovery_is_thread_safe_and_resettable() -> None:
    session = TaskSession("t", discovery_limit=1000)
    names = [f"tool_{i}" for i in range(200)]

    def worker(offset: int) -> None:
        session.discover(names[offset::4])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(session.discovered()) == sorted(names)
    session.reset()
    assert session.discovered() == ()


# --- discovery modes in the composer ---------------------------------------------------------------------


def tool_names(prompt: Any) -> list[str]:
    return [t["name"] for t in prompt.tools]


def test_discovery_mode_tool_list_grows_only_at_its_end(registry: Registry, search: ToolSearch) -> None:
    composer = Composer(registry)
    disco = registry.mode("disco")
    session = TaskSession("t")
    start = composer.compose(disco, session)
    assert tool_names(start) == ["read_file", TOOL_SEARCH_NAME, FETCH_TOOL_NAME]
    assert start.brief == () and start.discovered == ()
    handle_tool_search(search, disco, {"query": "run the tests", "limit": 1}, session=session)
    one = composer.compose(disco, session)
    assert tool_names(one) == ["read_file", "execute_command", TOOL_SEARCH_NAME, FETCH_TOOL_NAME]
    handle_tool_search(search, disco, {"query": "replace exact text in a file", "limit": 1}, session=session)
    two = composer.compose(disco, session)
    assert tool_names(two)[:2] == tool_names(one)[:2]  # what was there stays, in place
    assert tool_names(two)[2] == "apply_diff" and tool_names(two)[-2:] == [TOOL_SEARCH_NAME, FETCH_TOOL_NAME]
    assert two.system == start.system  # the system prompt does not change as tools are found
    full = {t["name"]: t["description"] for t in two.tools}
    assert full["apply_diff"] == registry.tools["apply_diff"].full  # active tools are documented in full
    assert "tool_search" in start.system
    assert two.as_dict()["discovered"] == ["execute_command", "apply_diff"]


def test_composed_tool_list_drops_discovered_tools_the_mode_does_not_allow(registry: Registry) -> None:
    composer = Composer(registry)
    session = TaskSession("t")
    session.discover(["secret_tool", "apply_diff", "read_file"])
    prompt = composer.compose(registry.mode("disco"), session)
    assert tool_names(prompt) == ["read_file", "apply_diff", TOOL_SEARCH_NAME, FETCH_TOOL_NAME]
    assert "secret_tool" not in json.dumps(prompt.as_dict())
    # a non-discovery mode ignores discovered tools and composes as before
    plain = composer.compose(registry.mode("code"), session)
    assert TOOL_SEARCH_NAME not in tool_names(plain) and "secret_tool" not in tool_names(plain)


def test_fetch_refuses_tools_outside_the_discovery_mode(registry: Registry) -> None:
    result = handle_fetch(registry, registry.mode("disco"), {"name": "secret_tool"})
    assert result.is_error and "TOP SECRET" not in result.content
    assert "secret_grep" not in result.content


# --- call_tool --------------------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def executors(self) -> dict[str, Any]:
        def make(name: str) -> Any:
            def run(arguments: Any) -> str:
                self.calls.append((name, dict(arguments)))
                return f"ran {name}"

            return run

        names = [d.name for d in DOCS]
        return {n: make(n) for n in names}


def test_call_tool_runs_a_valid_call_and_records_the_use(registry: Registry) -> None:
    recorder = Recorder()
    session = TaskSession("t")
    result = call_tool(
        registry,
        registry.mode("code"),
        {"name": "read_file", "arguments": {"path": "a.py"}},
        recorder.executors(),
        session=session,
    )
    assert result == type(result)("read_file", "ran read_file", False)
    assert recorder.calls == [("read_file", {"path": "a.py"})]
    assert session.history() == ("read_file",)
    as_string = call_tool(
        registry, registry.mode("code"), {"name": "read_file", "arguments": '{"path": "b.py"}'}, recorder.executors()
    )
    assert not as_string.is_error


def test_call_tool_refuses_tools_outside_the_mode_without_running_them(registry: Registry) -> None:
    recorder = Recorder()
    for name in ("secret_tool", "no_such_tool"):
        result = call_tool(registry, registry.mode("code"), {"name": name, "arguments": {}}, recorder.executors())
        assert result.is_error and "Nothing was run" in result.content
        assert "TOP SECRET" not in result.content and "secret_grep" not in result.content
    assert recorder.calls == []
    admin = call_tool(
        registry, registry.mode("admin"), {"name": "secret_tool", "arguments": {"path": "x"}}, recorder.executors()
    )
    assert not admin.is_error


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "missing required 'path'"),
        ({"path": 3}, "expected string, got integer"),
        ([1, 2], "must be an object"),
        ("[" * 100_000, "must be an object"),  # a JSON string too deep to decode: refused, not a crash
    ],
)
def test_call_tool_schema_refusals_are_error_results(registry: Registry, arguments: Any, problem: str) -> None:
    recorder = Recorder()
    result = call_tool(
        registry, registry.mode("code"), {"name": "read_file", "arguments": arguments}, recorder.executors()
    )
    assert result.is_error and problem in result.content and recorder.calls == []


def test_call_tool_reports_executor_failures_and_missing_executors(registry: Registry) -> None:
    def boom(_arguments: Any) -> str:
        raise OSError("disk on fire")

    code = registry.mode("code")
    failed = call_tool(registry, code, {"name": "read_file", "arguments": {"path": "a"}}, {"read_file": boom})
    assert failed.is_error and "disk on fire" in failed.content
    missing = call_tool(registry, code, {"name": "read_file", "arguments": {"path": "a"}}, {})
    assert missing.is_error and "no executor" in missing.content
    assert call_tool(registry, code, {"arguments": {}}, {}).is_error


def test_acall_tool_awaits_async_executors(registry: Registry) -> None:
    async def run(arguments: Any) -> dict[str, Any]:
        return {"echo": arguments["path"]}

    code = registry.mode("code")
    result = asyncio.run(
        acall_tool(registry, code, {"name": "read_file", "arguments": {"path": "x"}}, {"read_file": run})
    )
    assert result.content == '{"echo": "x"}' and not result.is_error
    sync = call_tool(registry, code, {"name": "read_file", "arguments": {"path": "x"}}, {"read_file": run})
    assert sync.is_error and "acall_tool" in sync.content


def test_call_tool_definition_lists_only_the_modes_tools(registry: Registry) -> None:
    definition = call_tool_definition(registry.mode("code"))
    assert definition["name"] == CALL_TOOL_NAME
    assert SECRET not in json.dumps(definition)
    assert definition["input_schema"]["properties"]["name"]["enum"] == list(registry.mode("code").allowed)


# --- the argument validator -----------------------------------------------------------------------------------

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "pattern": "^[^/]"},
        "mode": {"enum": ["r", "w"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "exclusiveMaximum": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "uniqueItems": True},
        "target": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/point"}]},
        "flag": {"type": ["boolean", "null"]},
        "kind": {"const": "file"},
    },
    "required": ["path"],
    "additionalProperties": False,
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
}


def test_validator_accepts_a_conforming_value() -> None:
    value = {"path": "a", "mode": "r", "count": 3, "ratio": 0.5, "tags": ["x"], "target": {"x": 1}, "flag": None}
    assert validate_arguments(SCHEMA, {**value, "kind": "file", "count": 3.0}) == []


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"path": ""}, "shorter than 1"),
        ({"path": "/abs"}, "pattern"),
        ({"path": "a", "mode": "x"}, "one of"),
        ({"path": "a", "count": 0}, "less than 1"),
        ({"path": "a", "count": 11}, "greater than 10"),
        ({"path": "a", "count": True}, "expected integer, got boolean"),
        ({"path": "a", "ratio": 1}, "at least 1"),
        ({"path": "a", "tags": ["a", "b", "c"]}, "more than 2 items"),
        ({"path": "a", "tags": ["a", "a"]}, "unique"),
        ({"path": "a", "tags": [1]}, "arguments.tags[0]: expected string"),
        ({"path": "a", "target": {"y": 1}}, "none of the allowed forms"),
        ({"path": "a", "flag": "yes"}, "expected boolean or null"),
        ({"path": "a", "kind": "dir"}, 'must be "file"'),
        ({"path": "a", "extra": 1}, "unknown parameter 'extra'"),
    ],
)
def test_validator_reports_each_problem(value: dict[str, Any], fragment: str) -> None:
    problems = validate_arguments(SCHEMA, value)
    assert any(fragment in p for p in problems), problems


def test_validator_accepts_every_shipped_example_schema_shape() -> None:
    shipped = load_registry()
    for doc in shipped.tools.values():
        required = doc.input_schema.get("required", [])
        # a call without its required parameters is refused with one line per missing parameter
        problems = validate_arguments(doc.input_schema, {})
        assert len([p for p in problems if "missing required" in p]) == len(required), doc.name


# --- group workflows in the registry ----------------------------------------------------------------------------


def copy_docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    shutil.copytree(REPO / "tool_docs", root)
    return root


def test_shipped_groups_load_and_cover_every_group() -> None:
    shipped = load_registry()
    used = {d.group for d in shipped.tools.values()}
    assert used <= set(shipped.groups)
    assert all(g.workflow for g in shipped.groups.values())


def test_groups_are_optional_and_part_of_the_fingerprint(tmp_path: Path) -> None:
    root = copy_docs(tmp_path)
    with_groups = load_registry(root)
    shutil.rmtree(root / "groups")
    without = load_registry(root)
    assert dict(without.groups) == {} and without.fingerprint != with_groups.fingerprint
    in_memory = Registry.from_docs(list(without.tools.values()), [m.config for m in without.modes.values()])
    assert in_memory.fingerprint == without.fingerprint  # no groups: the fingerprint is as before groups existed


def test_a_bad_group_file_is_a_located_load_error(tmp_path: Path) -> None:
    root = copy_docs(tmp_path)
    (root / "groups" / "read.yaml").write_text("name: read\nworkflow: ok\nworkflw: typo\n", encoding="utf-8")
    (root / "groups" / "edit.yaml").write_text("name: editing\nworkflow: ok\n", encoding="utf-8")
    with pytest.raises(LoadError) as caught:
        load_registry(root)
    messages = [str(p) for p in caught.value.problems]
    assert any("read.yaml:3: unknown key 'workflw'" in m for m in messages)
    assert any("edit.yaml:1:" in m and "must equal the file name" in m for m in messages)


# --- evaluation -------------------------------------------------------------------------------------------


def test_evaluate_computes_recall_hit_and_mrr() -> None:
    rankings = {"q1": ["a", "b", "c"], "q2": ["x", "y", "b"], "q3": ["z"]}
    queries = [EvalQuery("q1", ("a", "c")), EvalQuery("q2", ("b",)), EvalQuery("q3", ("hidden",))]
    report = evaluate(queries, lambda q: rankings[q], allows=lambda n: n != "hidden")
    assert report.recall[1] == pytest.approx((0.5 + 0 + 0) / 3)
    assert report.recall[5] == pytest.approx((1 + 1 + 0) / 3)
    assert report.hit[1] == pytest.approx(1 / 3) and report.hit[5] == pytest.approx(2 / 3)
    assert report.mrr == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert [m["query"] for m in report.misses] == ["q3"]
    assert report.warnings and "hidden" in report.warnings[0]
    assert set(report.as_dict()) >= {"recall@1", "recall@5", "recall@10", "hit@1", "hit@5", "mrr", "queries", "misses"}


def test_load_queries_accepts_relevant_and_reports_bad_lines(tmp_path: Path) -> None:
    good = tmp_path / "q.jsonl"
    good.write_text('{"query": "a", "relevant": ["x", "x"]}\n\n{"query": "b", "tools": ["y"]}\n', encoding="utf-8")
    assert load_queries(good) == [EvalQuery("a", ("x",)), EvalQuery("b", ("y",))]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "a", "tools": ["x"]}\n{"query": "b"}\n', encoding="utf-8")
    with pytest.raises(InputFileError, match=r"bad.jsonl:2"):
        load_queries(bad)


# --- CLI ------------------------------------------------------------------------------------------------


def test_cli_search_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["search", "grep the codebase", "--mode", "code", "--strategy", "keyword", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["hits"][0]["name"] == "search_files" and out["strategy"] == "keyword"
    assert main(["search", "xyzzy plugh", "--mode", "code", "--strategy", "keyword"]) == 1
    assert "No tool" in capsys.readouterr().out
    assert main(["search", "x", "--mode", "nope"]) == 2


def test_cli_eval_json_is_alone_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.jsonl"
    rows = [
        {"query": "grep the codebase", "tools": ["search_files"]},
        {"query": "set a breakpoint on a line", "tools": ["debug_set_breakpoint"]},  # not in code mode
        {"query": "run the test suite", "tools": ["execute_command"]},
    ]
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code = main(["eval", "--queries", str(queries), "--mode", "code", "--strategy", "keyword", "--format", "json"])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 0
    assert set(out) >= {"recall@1", "recall@5", "recall@10", "hit@1", "hit@5", "mrr", "queries", "misses"}
    assert out["queries"] == 3 and out["hit@5"] == pytest.approx(2 / 3, abs=1e-3)
    assert out["misses"][0]["expected"] == ["debug_set_breakpoint"]
    assert "debug_set_breakpoint" in captured.err and "warning" in captured.err
    assert main(["eval", "--queries", str(queries), "--mode", "code", "--strategy", "keyword"]) == 0
    assert "recall@5" in capsys.readouterr().out


def test_registry_docs_are_tooldocs() -> None:
    assert all(isinstance(d, ToolDoc) for d in DOCS)
