"""The cost replay: the cache model's arithmetic, each policy's requests, trace loading, and the CLI shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prompt_composer import Composer, InputFileError, Registry
from prompt_composer.cli import main
from prompt_composer.fetch import fetch_tool_doc
from prompt_composer.promotion import DEFAULT_POLICY, inline_text
from prompt_composer.replay import (
    ANTHROPIC,
    OPENAI,
    SWE_AGENT_TOOL_MAP,
    CostModel,
    ReplayParams,
    Task,
    _Cache,
    load_traces,
    openai_cost_model,
    replay,
    replay_task,
    synthetic_tasks,
)

from .conftest import make_doc, make_mode

TRACES = Path("/work/shared/traces/traces.jsonl")

REG = Registry.from_docs(
    [make_doc("alpha"), make_doc("beta", full="## beta\n" + "Long documentation. " * 200), make_doc("delta", "edit")],
    [make_mode("work", groups=["read"], permanent=["alpha"], recent_size=2)],
)
COMPOSER = Composer(REG)
MODE = REG.mode("work")
PARAMS = ReplayParams()


def test_cache_reuses_the_longest_written_prefix_and_prices_reads_and_writes() -> None:
    cache = _Cache()
    assert cache.request([("a", 100), ("b", 50)], PARAMS) == (150, 150 * 1.25)
    assert cache.request([("a", 100), ("b", 50), ("c", 10)], PARAMS) == (160, 150 * 0.1 + 10 * 1.25)
    # a changed first block: nothing is reused, even though later blocks are equal
    assert cache.request([("z", 100), ("b", 50), ("c", 10)], PARAMS) == (160, 160 * 1.25)


def test_anthropic_is_the_default_cost_model() -> None:
    assert PARAMS.cost_model is ANTHROPIC
    assert (ANTHROPIC.read_multiplier, ANTHROPIC.write_multiplier) == (0.1, 1.25)
    assert ANTHROPIC.cached_tokens(1) == 1  # whole written blocks, no minimum and no rounding


OPENAI_PARAMS = ReplayParams(cost_model=OPENAI)


def test_openai_charges_no_write_premium() -> None:
    cache = _Cache()
    assert cache.request([("a", 2000), ("b", 50)], OPENAI_PARAMS) == (2050, 2050.0)  # all new: 1× input
    # a changed first block: nothing is cached, and nothing costs more than uncached input
    assert cache.request([("z", 2000), ("b", 50)], OPENAI_PARAMS) == (2050, 2050.0)


def test_openai_caches_nothing_below_1024_tokens() -> None:
    cache = _Cache()
    assert cache.request([("a", 900)], OPENAI_PARAMS) == (900, 900.0)
    assert cache.request([("a", 900), ("b", 100)], OPENAI_PARAMS) == (1000, 1000.0)  # prompt under 1,024
    # a prompt of 1,024 tokens or more whose shared prefix is under 1,024 is no hit either
    assert cache.request([("a", 900), ("b", 100), ("c", 500)], OPENAI_PARAMS) == (1500, 1500.0)
    assert OPENAI.cached_tokens(1023) == 0
    assert OPENAI.cached_tokens(1024) == 1024


def test_openai_cached_tokens_are_multiples_of_128() -> None:
    cache = _Cache()
    cache.request([("a", 1100)], OPENAI_PARAMS)
    # 1,100 shared tokens: 1,024 cached at 0.1×, the other 76 and the 200 new ones at 1×
    assert cache.request([("a", 1100), ("b", 200)], OPENAI_PARAMS) == (1300, 1024 * 0.1 + 276)
    # 1,300 shared tokens: 1,280 cached
    assert cache.request([("a", 1100), ("b", 200), ("c", 5)], OPENAI_PARAMS) == (1305, 1280 * 0.1 + 25)
    for shared in range(0, 5000, 7):
        cached = OPENAI.cached_tokens(shared)
        assert cached % 128 == 0, shared
        assert cached == 0 or 1024 <= cached <= shared < cached + 128, shared


def test_openai_discount_is_a_parameter() -> None:
    gpt_4o = openai_cost_model(cached_input_multiplier=0.5)
    assert (gpt_4o.name, gpt_4o.read_multiplier, gpt_4o.write_multiplier) == ("openai", 0.5, 1.0)
    assert gpt_4o.price(2000, 2000) == 1920 * 0.5 + 80
    assert openai_cost_model() == OPENAI
    with pytest.raises(ValueError, match="cache_increment"):
        CostModel("x", read_multiplier=0.1, write_multiplier=1.0, cache_increment=0)


def test_openai_cost_is_below_uncached_on_a_stable_prefix(shipped_composer: Composer) -> None:
    mode = shipped_composer.registry.mode("code")
    task = Task("t", ("read_file", "search_files", "read_file", "apply_diff", "execute_command", "read_file"))
    openai, _ = replay_task(shipped_composer, mode, task, "task_start", OPENAI_PARAMS)
    anthropic, _ = replay_task(shipped_composer, mode, task, "task_start")
    assert shipped_composer.compose(mode).tokens.total >= 1024
    assert openai.input_tokens == anthropic.input_tokens == openai.cost_no_cache
    assert openai.cost < 0.5 * openai.cost_no_cache
    # the first request is all new: OpenAI bills it at 1×, Anthropic at 1.25×
    first, _ = replay_task(shipped_composer, mode, Task("t", ("read_file",)), "static", OPENAI_PARAMS)
    assert first.cost == first.cost_no_cache
    first, _ = replay_task(shipped_composer, mode, Task("t", ("read_file",)), "static")
    assert first.cost == pytest.approx(1.25 * first.cost_no_cache)


def test_static_never_fetches_and_sends_one_request_per_step() -> None:
    cost, refused = replay_task(COMPOSER, MODE, Task("t", ("alpha", "beta", "beta")), "static")
    baseline = COMPOSER.baseline(MODE).tokens.total
    assert (cost.requests, cost.fetches, refused) == (3, 0, 0)
    step = PARAMS.call_tokens + PARAMS.result_tokens
    assert cost.input_tokens == 3 * (baseline + PARAMS.task_tokens) + step + 2 * step
    assert cost.cost_no_cache == cost.input_tokens


def test_a_brief_tool_is_fetched_once_before_its_first_use() -> None:
    for policy in ("every_turn", "task_start", "inline"):
        cost, _ = replay_task(COMPOSER, MODE, Task("t", ("beta", "alpha", "beta")), policy)
        assert (cost.requests, cost.fetches, cost.inline_expansions) == (4, 1, 0), policy
    no_fetch = ReplayParams(fetch_first_use=False)
    inline, _ = replay_task(COMPOSER, MODE, Task("t", ("beta", "beta")), "inline", no_fetch)
    task_start, _ = replay_task(COMPOSER, MODE, Task("t", ("beta", "beta")), "task_start", no_fetch)
    assert (inline.fetches, inline.inline_expansions) == (0, 1)
    # the appended text is in the conversation for the second request only
    assert inline.input_tokens - task_start.input_tokens == COMPOSER.counter.count(inline_text(REG, "beta"))


def test_fetch_result_tokens_are_the_full_text_and_schema() -> None:
    fetched, _ = replay_task(COMPOSER, MODE, Task("t", ("beta",)), "task_start")
    plain, _ = replay_task(COMPOSER, MODE, Task("t", ("beta",)), "task_start", ReplayParams(fetch_first_use=False))
    head = COMPOSER.compose(MODE).tokens.total + PARAMS.task_tokens
    fetch_tokens = COMPOSER.counter.count(fetch_tool_doc(REG.tools["beta"]))
    assert fetched.input_tokens - plain.input_tokens == head + PARAMS.fetch_call_tokens + fetch_tokens


def test_every_turn_loses_the_cache_when_the_fifo_changes_and_task_start_keeps_it() -> None:
    task = Task("t", ("alpha", "beta", "alpha", "beta", "alpha"))
    every, _ = replay_task(COMPOSER, MODE, task, "every_turn")
    pinned, _ = replay_task(COMPOSER, MODE, task, "task_start")
    assert pinned.cost < every.cost
    assert pinned.input_tokens < every.input_tokens  # beta's full text sits in every_turn's tool list


def test_disallowed_steps_are_refused_calls() -> None:
    cost, refused = replay_task(COMPOSER, MODE, Task("t", ("delta", "alpha")), "inline")
    assert refused == 1
    assert cost.requests == 2
    assert cost.fetches == 0


def test_replay_report_totals_and_savings() -> None:
    tasks = [Task("a", ("alpha", "beta", "beta", "alpha")), Task("b", ("beta", "alpha"))]
    report = replay(COMPOSER, tasks, ["work"])
    rows = {row["name"]: row for row in report.as_dict()["policies"]}
    assert list(rows) == ["static", "every_turn", "task_start", "inline"]
    assert report.tasks == 2
    assert report.steps == 6
    assert report.recommended == DEFAULT_POLICY
    assert rows["static"]["saving"] == 0.0
    static = report.policies["static"]
    inline = report.policies["inline"]
    assert rows["inline"]["saving"] == pytest.approx(round(1 - inline.cost / static.cost, 4))
    assert "recommended: inline" in report.to_table()


def test_load_traces_maps_tools_and_skips_malformed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    record = {"id": "x", "model": "m", "steps": [{"tool": "open"}, {"tool": "<malformed>"}, {"tool": "submit"}]}
    path.write_text(json.dumps(record) + "\n\n")
    assert load_traces(path) == [Task("x", ("read_file", "attempt_completion"), "m")]
    path.write_text("{}\n")
    with pytest.raises(InputFileError, match=r"t\.jsonl:1"):
        load_traces(path)


@pytest.mark.skipif(not TRACES.exists(), reason="shared traces not present")
def test_the_real_traces_map_onto_the_shipped_docs(shipped: Registry) -> None:
    tasks = load_traces(TRACES)
    assert len(tasks) == 448
    used = {tool for task in tasks for tool in task.tools}
    assert used <= set(SWE_AGENT_TOOL_MAP.values())
    assert used <= set(shipped.tools)


def test_synthetic_sequences_use_non_permanent_tools(shipped_composer: Composer) -> None:
    for slug, mode in shipped_composer.registry.modes.items():
        tasks = synthetic_tasks(shipped_composer, slug)
        assert tasks == synthetic_tasks(shipped_composer, slug)  # deterministic
        used = {t for task in tasks for t in task.tools}
        assert used - set(mode.permanent), slug
        assert all(mode.allows(t) for t in used)


@pytest.mark.skipif(not TRACES.exists(), reason="shared traces not present")
def test_recommended_policy_on_the_real_traces_in_code_mode(shipped_composer: Composer) -> None:
    tasks = [t for t in load_traces(TRACES) if "doubao" not in t.model]
    report = replay(shipped_composer, tasks, ["code"])
    costs = {name: c.cost for name, c in report.policies.items()}
    assert costs[DEFAULT_POLICY] < costs["static"]
    assert costs[DEFAULT_POLICY] <= costs["every_turn"]


def test_cli_replay_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    lines = [
        {"id": "a", "model": "gpt", "steps": [{"tool": "open"}, {"tool": "find_file"}, {"tool": "edit"}]},
        {"id": "b", "model": "doubao-pro", "steps": [{"tool": "open"}, {"tool": "<malformed>"}]},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(["replay", "--traces", str(path), "--mode", "code", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in out["policies"]] == ["static", "every_turn", "task_start", "inline"]
    assert set(out["policies"][0]) >= {"name", "input_tokens", "cost", "cost_no_cache"}
    assert out["recommended"] == DEFAULT_POLICY
    assert out["tasks"] == 1
    assert out["doubao"]["tasks"] == 1
    assert out["doubao"]["steps"] == 1
    assert main(["replay", "--mode", "ask"]) == 0
    assert "recommended: inline" in capsys.readouterr().out


def test_replay_cli_reports_a_missing_traces_file_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--traces", "/nonexistent/traces.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: /nonexistent/traces.jsonl: cannot read traces")
    assert "Traceback" not in err


def test_cli_replay_provider(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--mode", "code"]) == 0
    default = capsys.readouterr().out
    assert main(["replay", "--mode", "code", "--provider", "anthropic"]) == 0
    assert capsys.readouterr().out == default
    assert "cost model: anthropic (cache reads 0.1×, writes 1.25× the input price)" in default
    assert main(["replay", "--mode", "code", "--provider", "openai"]) == 0
    table = capsys.readouterr().out
    assert "cost model: openai (cache reads 0.1×, writes 1× the input price; hits from 1,024 tokens" in table
    assert "recommended: inline" in table


def test_cli_replay_openai_json_on_the_shipped_docs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--mode", "code", "--provider", "openai", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cost_model"] == {
        "name": "openai",
        "read_multiplier": 0.1,
        "write_multiplier": 1.0,
        "min_cached_tokens": 1024,
        "cache_increment": 128,
    }
    assert out["per_mode"]["code"]["cost_model"]["name"] == "openai"
    assert "cost_model" not in out["params"]
    rows = {row["name"]: row for row in out["policies"]}
    assert list(rows) == ["static", "every_turn", "task_start", "inline"]
    assert all(0 < row["cost"] < row["cost_no_cache"] for row in rows.values())
    assert out["recommended"] == DEFAULT_POLICY
    assert main(["replay", "--mode", "code", "--format", "json"]) == 0
    anthropic = json.loads(capsys.readouterr().out)
    assert anthropic["cost_model"]["name"] == "anthropic"
    assert anthropic["policies"][0]["input_tokens"] == rows["static"]["input_tokens"]
