"""``prompt-composer bench``: task files, scoring and the variants' requests, against the scripted Messages API
server and the real SDK (exact protocol); the real model runs it in tests/test_realmodel.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from prompt_composer import Registry
from prompt_composer.agent.bench import VARIANTS, BenchTask, load_tasks, run_bench, variant_registry
from prompt_composer.cli import main
from prompt_composer.core.builtins import FETCH_TOOL_NAME
from prompt_composer.discovery.rewrite import REWRITE_SYSTEM
from prompt_composer.errors import InputFileError
from prompt_composer.testing.replies import error_reply, text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import bodies, make_doc, make_mode, served


def registry() -> Registry:
    docs = [make_doc("read_file"), make_doc("list_files"), make_doc("glob"), make_doc("write_to_file", "edit")]
    return Registry.from_docs(docs, [make_mode("work", groups=["read"], permanent=["read_file"], recent_size=2)])


REG = registry()


def write_tasks(tmp_path: Path, *rows: dict[str, Any] | str) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


# ------------------------------------------------------------------------------------------- task files


def test_a_task_file_loads_with_workspaces_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    path = write_tasks(
        tmp_path,
        {"id": "a", "task": "Read the README", "expect": ["read_file"], "args": {"path": "README.md"},
         "workspace": "repo"},
        "",
        {"id": "b", "task": "What is 2+2?", "expect": []},
    )  # fmt: skip
    a, b = load_tasks(path)
    assert a == BenchTask(
        "a", "Read the README", ("read_file",), {"path": "README.md"}, (tmp_path / "repo"), f"{path}:1"
    )
    assert b.expect == () and b.workspace is None and b.where == f"{path}:3"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "a task is a JSON object"),
        ({"id": "a", "task": "t", "expect": [], "extra": 1}, "unknown key 'extra'"),
        ({"task": "t", "expect": []}, '"id" must be a non-empty string'),
        ({"id": "a", "task": "", "expect": []}, '"task" must be a non-empty string'),
        ({"id": "a", "task": "t", "expect": "read_file"}, '"expect" must be a list'),
        ({"id": "a", "task": "t", "expect": [], "args": {"p": 1}}, '"args" needs an expected tool'),
        ({"id": "a", "task": "t", "expect": ["x"], "args": [1]}, '"args" must be an object'),
        ({"id": "a", "task": "t", "expect": [], "workspace": "nowhere"}, "'nowhere' is not a folder"),
        ({"id": "a", "task": "t", "expect": [], "workspace": "/etc"}, "'/etc' must be inside the folder"),
        ({"id": "a", "task": "t", "expect": [], "workspace": ".."}, "'..' must be inside the folder"),
    ],
)
def test_a_bad_task_line_names_the_file_line_and_field(tmp_path: Path, row: Any, message: str) -> None:
    path = write_tasks(tmp_path, {"id": "ok", "task": "t", "expect": []}, row)
    with pytest.raises(InputFileError, match=message) as caught:
        load_tasks(path)
    assert str(caught.value).startswith(f"{path}:2: ")


def test_duplicate_ids_and_empty_files_are_refused(tmp_path: Path) -> None:
    row = {"id": "a", "task": "t", "expect": []}
    with pytest.raises(InputFileError, match=r":2: duplicate id 'a'"):
        load_tasks(write_tasks(tmp_path, row, row))
    with pytest.raises(InputFileError, match="no tasks"):
        load_tasks(write_tasks(tmp_path, ""))
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"id": "é"}'.encode("latin-1"))
    with pytest.raises(InputFileError, match=r"latin\.jsonl: cannot read the task file: not UTF-8 text"):
        load_tasks(latin)


def test_an_expected_tool_outside_the_mode_or_a_bad_variant_is_refused_before_any_request() -> None:
    task = BenchTask("a", "edit it", ("write_to_file",), where="tasks.jsonl:4")
    with ScriptedMessagesServer([]) as server, anthropic.Anthropic(base_url=server.base_url, api_key="k") as sdk:
        with pytest.raises(
            InputFileError, match=r"^tasks\.jsonl:4: expected tool 'write_to_file' is not in mode 'work'"
        ):
            run_bench(sdk, REG, "work", [task], model="m")
        ok = BenchTask("b", "go", ())
        with pytest.raises(ValueError, match="variants must be distinct names"):
            run_bench(sdk, REG, "work", [ok], model="m", variants=["statc"])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="variants must be distinct names"):
            run_bench(sdk, REG, "work", [ok], model="m", variants=["static", "static"])
        assert server.requests == []


# ------------------------------------------------------------------------------------- scoring, variants


def test_the_choice_is_the_first_call_after_fetches_and_it_is_scored_with_its_args(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.py").write_text("x = 1\n")
    tasks = [
        BenchTask("right", "find python files", ("glob",), {"pattern": "*.py"}, tmp_path / "ws"),
        BenchTask("wrong-args", "find python files", ("glob",), {"pattern": "*.py"}, tmp_path / "ws"),
        BenchTask("none", "hello", ()),
        BenchTask("wrong", "read it", ("read_file",)),
    ]
    script = [
        # right: a fetch, then the choice (executed for real in the workspace), then the 1-token request after it.
        tool_use_reply((FETCH_TOOL_NAME, {"name": "glob"})),
        tool_use_reply(("glob", {"pattern": "*.py"})),
        text_reply("a"),
        tool_use_reply(("glob", {"pattern": "**"})),
        text_reply("d"),
        text_reply("Hello!"),  # none: no call is right, and no request follows a final answer
        tool_use_reply(("list_files", {"path": "."})),
        text_reply("d"),
    ]
    with served(script) as (server, sdk):
        report = run_bench(sdk, REG, "work", tasks, model="m", variants=["composed"])
        sent = bodies(server)
    got = {o.task: (o.choice, o.correct, o.args_ok, o.fetch_calls, o.requests) for o in report.outcomes}
    assert got == {
        "right": ("glob", True, True, 1, 3),
        "wrong-args": ("glob", True, False, 0, 2),
        "none": (None, True, None, 0, 1),
        "wrong": ("list_files", False, None, 0, 2),
    }
    # The real workspace executor ran the choice; every request was streamed (for the first-token time).
    result = sent[2]["messages"][-1]["content"][0]
    assert result["content"][0]["text"].splitlines() == ["a.py"]
    assert all(body.get("stream") is True for body in sent)
    assert [body["max_tokens"] for body in sent] == [512, 512, 1, 512, 1, 512, 512, 1]
    r = report.variants["composed"]
    assert (r.tasks, r.first_tool_accuracy, r.args_accuracy, r.fetch_calls) == (4, 0.75, 0.5, 1)
    assert r.ttft_first_median_s is not None and r.ttft_later_median_s is not None


def test_each_variant_sends_its_own_prompt() -> None:
    task = BenchTask("t", "go", ("glob",))
    # Arguments that fit glob's schema: a call that cannot be right would not run (the recovery answers it).
    script = [tool_use_reply(("glob", {"path": "*"})), text_reply("ok")] * len(VARIANTS)
    # auto_rewrite (the last variant) first asks the model for the task as an operation.
    assert VARIANTS[-1] == "auto_rewrite"
    script.insert(-2, text_reply("find files by a name pattern"))
    with served(script) as (server, sdk):
        report = run_bench(sdk, REG, "work", [task], model="m")
        sent = bodies(server)
    assert list(report.variants) == list(VARIANTS)
    rewrite = sent[-3]
    assert rewrite["system"] == REWRITE_SYSTEM and "tools" not in rewrite
    assert rewrite["messages"][-1] == {"role": "user", "content": "go"}
    assert report.variants["auto_rewrite"].requests == 2  # the rewrite is not a request of the task
    names = [[t["name"] for t in body["tools"]] for body in sent if body is not rewrite]
    descriptions = [{t["name"]: t["description"] for t in body["tools"]} for body in sent if body is not rewrite]
    static, composed, every_turn, discovery = (names[i : i + 2] for i in range(0, 8, 2))
    # static: every allowed tool in full, no fetch tool, the same on every request.
    assert static[0] == static[1] == ["read_file", "glob", "list_files"]
    assert "FULL TEXT OF GLOB" in descriptions[0]["glob"]
    # composed (inline): brief tools and the fetch tool; the list stays fixed after glob ran.
    assert composed[0] == composed[1] == ["read_file", "glob", "list_files", FETCH_TOOL_NAME]
    assert "FULL TEXT OF GLOB" not in descriptions[2]["glob"] and descriptions[2] == descriptions[3]
    # every_turn: glob's full text arrives in the request after its use.
    assert "FULL TEXT OF GLOB" not in descriptions[4]["glob"] and "FULL TEXT OF GLOB" in descriptions[5]["glob"]
    assert every_turn[0] == composed[0]
    # discovery: the permanent tool, tool_search and fetch.
    assert discovery[0] == ["read_file", "tool_search", FETCH_TOOL_NAME]


def test_api_errors_and_context_overflows_are_counted_not_raised() -> None:
    tasks = [BenchTask(n, "go", ("glob",), {"pattern": "*"}) for n in ("big", "huge", "down")]
    script = [
        error_reply(400, "invalid_request_error", "the request exceeds the available context size"),
        error_reply(400, "invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum"),
        error_reply(400, "invalid_request_error", "malformed"),
    ]
    with served(script) as (_server, sdk):
        report = run_bench(sdk, REG, "work", tasks, model="m", variants=["static"])
    big, huge, down = report.outcomes
    assert big.overflow and huge.overflow and big.error is not None and not big.correct
    assert not down.overflow and down.error is not None
    r = report.variants["static"]
    assert (r.errors, r.overflows) == (1, 2)
    assert r.args_accuracy == 0.0  # a task with args and no call counts against the args, not out of them


def test_variant_registry_turns_discovery_on_for_that_mode_only() -> None:
    assert variant_registry(REG, "work", "composed") is REG
    changed = variant_registry(REG, "work", "discovery")
    assert changed.mode("work").config.discovery and not REG.mode("work").config.discovery
    assert set(changed.tools) == set(REG.tools)


# ------------------------------------------------------------------------------------------------ CLI


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_command_prints_the_json_shape_of_the_issue(
    provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # a loopback server needs none
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    docs = tmp_path / "docs"
    (docs / "modes").mkdir(parents=True)
    for name in ("read_file", "glob"):
        (docs / f"{name}.yaml").write_text((Path("tool_docs") / f"{name}.yaml").read_text())
    (docs / "modes" / "work.yaml").write_text(
        "slug: work\nname: Work\nrole: You read code.\ngroups: [read]\npermanent: [read_file]\n"
        "recent_size: 2\nbudget_tokens: 9000\n"
    )
    path = write_tasks(tmp_path, {"id": "a", "task": "list python files", "expect": ["glob"]})
    with ScriptedMessagesServer([tool_use_reply(("glob", {"pattern": "*.py"})), text_reply("ok")]) as server:
        url = server.base_url if provider == "anthropic" else f"{server.base_url}/v1"
        code = main(["--docs", str(docs), "bench", "--tasks", str(path), "--mode", "work", "--provider", provider,
                     "--base-url", url, "--variants", "composed", "--format", "json"])  # fmt: skip
        paths = {r.path for r in server.requests}
    out, err = capsys.readouterr()
    assert code == 0
    report = json.loads(out)
    keys = {"tasks", "first_tool_accuracy", "args_accuracy", "input_tokens", "cache_read_tokens", "fetch_calls",
            "errors", "overflows", "wall_s"}  # fmt: skip
    assert list(report["variants"]) == ["composed"] and keys <= set(report["variants"]["composed"])
    assert report["variants"]["composed"]["first_tool_accuracy"] == 1.0
    assert "[composed 1/1] a: glob ok" in err  # progress on stderr
    assert paths == {"/v1/messages" if provider == "anthropic" else "/v1/chat/completions"}


def test_the_command_refuses_unknown_variants_and_remote_servers_without_a_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    path = write_tasks(tmp_path, {"id": "a", "task": "t", "expect": []})
    common = ["bench", "--tasks", str(path), "--mode", "code"]
    assert main([*common, "--base-url", "http://127.0.0.1:9", "--variants", "static,fancy"]) == 2
    assert "unknown variant fancy" in capsys.readouterr().err
    assert main([*common, "--base-url", "https://api.example.com"]) == 2
    assert "no API key" in capsys.readouterr().err
    # A server that is not there: every task fails, the report says so, and the command exits 1.
    assert main([*common, "--base-url", "http://127.0.0.1:9", "--variants", "composed"]) == 1
    err = capsys.readouterr().err
    assert "[composed 1/1] a: - error: APIConnectionError" in err and "every task failed under composed" in err
    bad = write_tasks(tmp_path, "{oops")
    assert main(["bench", "--tasks", str(bad), "--mode", "code", "--base-url", "http://127.0.0.1:9"]) == 2
    assert f"{bad}:1: invalid JSON" in capsys.readouterr().err


def test_auto_preselects_and_oracle_sends_only_the_expected_tools() -> None:
    task = BenchTask("t", "Use glob", ("glob",))
    script = [tool_use_reply(("glob", {"path": "*"})), text_reply("ok")] * 2
    with served(script) as (server, sdk):
        report = run_bench(sdk, REG, "work", [task], model="m", variants=["auto", "oracle"], context_tokens=100_000)
        sent = bodies(server)
    auto, _, oracle, _ = ([t["name"] for t in body["tools"]] for body in sent)
    assert "tool_search" in auto and FETCH_TOOL_NAME in auto  # tiered: search and fetch load what is missing
    assert "[prompt-composer] Tools a search of this request found: glob" in json.dumps(sent[0]["messages"])
    # The permanent tool and the expected one, in full: nothing is left to fetch, so no fetch tool.
    assert oracle == ["read_file", "glob"]
    assert "FULL TEXT OF GLOB" in {t["name"]: t["description"] for t in sent[2]["tools"]}["glob"]
    assert report.variants["auto"].first_tool_accuracy == report.variants["oracle"].first_tool_accuracy == 1.0
    data = report.as_dict()
    assert data["variants"]["auto"]["requests"] == 2 and data["variants"]["auto"]["prompt_tokens_per_request"] > 0
    rows = {(row["variant"], row["id"]): row for row in data["per_task"]}
    assert rows[("oracle", "t")]["ended"] == "choice" and rows[("oracle", "t")]["expected"] == ["glob"]
    assert rows[("auto", "t")]["choice"] == "glob" and rows[("auto", "t")]["right"] is True


def test_a_task_that_only_fetches_ends_as_fetching_out_of_iterations() -> None:
    task = BenchTask("t", "go", ("glob",))
    script = [tool_use_reply((f"f{i}", FETCH_TOOL_NAME, {"name": "glob"})) for i in range(4)]
    with served(script) as (_server, sdk):
        report = run_bench(sdk, REG, "work", [task], model="m", variants=["composed"], max_iterations=4)
    assert report.outcomes[0].ended == "max_iterations_fetching" and report.outcomes[0].fetch_calls == 4


def test_auto_native_defers_what_native_defers_and_preselects_as_auto_does() -> None:
    """native lists every deferred tool by its brief and loads none up front; auto_native (auto's mode compiled to
    deferral) loads the preselected tool before the first request, appended after the eager ones."""
    task = BenchTask("t", "Use glob", ("glob",))
    script = [tool_use_reply(("glob", {"path": "*"})), text_reply("ok")] * 2
    with served(script) as (server, sdk):
        report = run_bench(sdk, REG, "work", [task], model="m", variants=["native", "auto_native"])
        sent = bodies(server)
    native, _, auto_native, _ = sent
    assert "glob" not in [t["name"] for t in native["tools"]] and "glob" in json.dumps(native["system"])
    names = [t["name"] for t in auto_native["tools"]]
    assert names[-1] == "glob" and "read_file" in names and "tool_search" in names
    assert "[prompt-composer] Tools a search of this request found: glob" in json.dumps(auto_native["messages"])
    assert report.variants["auto_native"].first_tool_accuracy == 1.0
    assert variant_registry(REG, "work", "auto_native").mode("work").config.preselect is not None


def test_auto_stubs_declares_the_unlisted_tools_as_stubs_and_sends_what_loads_in_the_message() -> None:
    task = BenchTask("t", "Use glob", ("glob",))
    script = [tool_use_reply(("glob", {"path": "*"})), text_reply("ok")]
    with served(script) as (server, sdk):
        report = run_bench(sdk, REG, "work", [task], model="m", variants=["auto_stubs"], context_tokens=1000)
        first = bodies(server)[0]
    glob = next(t for t in first["tools"] if t["name"] == "glob")
    assert glob["input_schema"] == {"type": "object"}  # a stub: 10% of 1,000 tokens fits no brief
    note = first["messages"][0]["content"][0]["text"]
    assert REG.tools["glob"].full in note  # the preselected stub's text, in the note
    assert report.variants["auto_stubs"].first_tool_accuracy == 1.0
    tiers = variant_registry(REG, "work", "auto_stubs", context_tokens=1000).mode("work").config.tiers
    assert tiers is not None and tiers.stubs


def test_auto_rewrite_asks_a_rewriter_of_its_own_when_given_one() -> None:
    asked: list[str] = []

    def rewriter(text: str) -> str:
        asked.append(text)
        return "find files by a name pattern"

    task = BenchTask("t", "go", ("glob",))
    script = [tool_use_reply(("glob", {"path": "*"})), text_reply("ok")]
    with served(script) as (server, sdk):
        report = run_bench(sdk, REG, "work", [task], model="m", variants=["auto_rewrite"], rewriter=rewriter)
        sent = bodies(server)
    assert asked == ["go"] and all("tools" in body for body in sent)  # nothing went to the bench's server for it
    assert report.variants["auto_rewrite"].requests == 2
