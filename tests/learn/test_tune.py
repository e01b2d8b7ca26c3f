"""``prompt-composer tune``: the fitted proposal on the real traces (held-out cost, validation, audit --check), the
constraints (allowed tools only, within the budget), the JSON shape, the split, the event-log reader (on a log
written by ``run --log`` against the scripted server), the in-place YAML edits and the per-user overlay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from prompt_composer import LoadError, Registry, default_docs_dir, load_registry, run_audit
from prompt_composer.cli import main
from prompt_composer.core.composer import Composer
from prompt_composer.learn.costs import ANTHROPIC
from prompt_composer.learn.mode_files import mode_file_diff, overlay_text, rewrite_mode_text, write_overlay
from prompt_composer.learn.replay import ReplayParams
from prompt_composer.learn.traces import Task, load_traces
from prompt_composer.learn.tune import Setting, TuneResult, load_log_tasks, split_tasks, tune_mode
from prompt_composer.testing.replies import text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import make_doc, make_mode

TRACES = Path("/work/shared/traces/traces.jsonl")
needs_traces = pytest.mark.skipif(not TRACES.exists(), reason="shared traces not present")

# Anthropic's rules without the minimum cacheable length: the small test docs would never be cached otherwise.
NO_MIN = ReplayParams(cost_model=ANTHROPIC.with_min_cached_tokens(0))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def copy_docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), docs)
    return docs


# ---------------------------------------------------------------------------------------- real traces


@pytest.fixture(scope="module")
def code_result() -> TuneResult:
    return tune_mode(load_registry(), "code", load_traces(TRACES))


@needs_traces
def test_code_mode_on_the_real_traces_never_costs_more_held_out(code_result: TuneResult) -> None:
    result = code_result
    assert result.fit_sequences + result.heldout_sequences + result.empty_sequences == 448
    assert result.heldout_sequences == round((448 - result.empty_sequences) * 0.3)
    assert result.proposed_heldout_cost <= result.current_heldout_cost
    if result.already_best:
        assert "the current setting is already best" in result.summary()
    else:
        assert result.proposed_heldout_cost < result.current_heldout_cost
        assert "proposed: held-out cost -" in result.summary()
    mode = load_registry().mode("code")
    assert all(mode.allows(tool) for tool in result.proposed.permanent)
    assert result.worst_tokens <= mode.config.budget_tokens


@needs_traces
def test_the_code_proposal_validates_and_passes_audit_check(
    code_result: TuneResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = copy_docs(tmp_path)
    path = docs / "modes" / "code.yaml"
    before = path.read_text(encoding="utf-8")
    after = rewrite_mode_text(before, code_result.proposed.permanent, code_result.proposed.recent_size)
    path.write_text(after, encoding="utf-8")
    mode = load_registry(docs).mode("code")
    assert (mode.permanent, mode.recent_size) == (code_result.proposed.permanent, code_result.proposed.recent_size)
    assert run(capsys, "audit", "--check", "--docs", str(docs))[0] == 0
    # the same proposal through a per-user overlay over the untouched shipped docs
    overlay = tmp_path / "overlay.yaml"
    write_overlay(overlay, "code", code_result.proposed)
    assert load_registry(overlay=overlay).mode("code").permanent == code_result.proposed.permanent
    assert run(capsys, "audit", "--check", "--overlay", str(overlay))[0] == 0


@needs_traces
def test_cli_tune_text_on_the_real_traces(code_result: TuneResult, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "tune", "--mode", "code", "--traces", str(TRACES))
    assert code == 0, err
    assert "442 sequences (6 more without a tool call left out): 309 fit, 133 held out" in out
    if code_result.already_best:
        assert "already best" in out and "---" not in out
    else:
        assert "\n-permanent: [" in out
        assert f"\n+permanent: [{', '.join(code_result.proposed.permanent)}]\n" in out


# --------------------------------------------------------------------------------------- constraints

DOCS = [
    make_doc("alpha"),
    make_doc("beta", full="## beta\n" + "Long documentation of beta. " * 120),
    make_doc("gamma"),
    make_doc("admin_tool", "admin", full="## admin_tool\n" + "Admin internals. " * 100),
]
# Each task starts with beta and uses the admin tool (outside the mode) more than anything else.
TASKS = [
    Task(f"t{i}", ("beta", "admin_tool", "alpha", "admin_tool", "beta", "admin_tool", "alpha") + ("gamma",) * (i % 2))
    for i in range(24)
]


def work_registry(budget: int = 100_000, **kw: object) -> Registry:
    mode = make_mode(
        "work", **{"groups": ["read"], "permanent": ["alpha"], "recent_size": 0, "budget_tokens": budget, **kw}
    )
    return Registry.from_docs(DOCS, [mode, make_mode("admin", groups=["admin", "read"], permanent=[])])


def worst(registry: Registry, slug: str) -> int:
    return next(m.worst_tokens for m in run_audit(Composer(registry)).modes if m.mode == slug)


def test_never_proposes_a_tool_the_mode_does_not_allow() -> None:
    registry = work_registry()
    result = tune_mode(registry, "work", TASKS, params=NO_MIN)
    assert not registry.mode("work").allows("admin_tool")
    assert "admin_tool" not in result.fitted.permanent
    assert set(result.proposed.permanent) <= set(registry.mode("work").allowed)
    assert "beta" in result.proposed.permanent  # used first in every task, it earns its place


def test_never_proposes_a_setting_over_the_budget() -> None:
    roomy = work_registry()
    assert "beta" in tune_mode(roomy, "work", TASKS, params=NO_MIN).proposed.permanent
    current = worst(roomy, "work")
    with_beta = worst(work_registry(permanent=["alpha", "beta"]), "work")
    assert with_beta > current
    tight = work_registry(budget=current)  # the mode as it is fits exactly; beta does not
    result = tune_mode(tight, "work", TASKS, params=NO_MIN)
    assert "beta" not in result.proposed.permanent and "beta" not in result.fitted.permanent
    assert result.over_budget >= 1
    assert result.worst_tokens <= current
    proposed = work_registry(budget=current, permanent=list(result.proposed.permanent))
    assert worst(proposed, "work") <= current


def test_a_current_setting_over_its_budget_gives_way_to_one_within_it() -> None:
    heavy = ["alpha", "beta", "gamma"]
    budget = worst(work_registry(permanent=heavy), "work") - 1
    registry = work_registry(budget=budget, permanent=heavy)
    result = tune_mode(registry, "work", TASKS, params=NO_MIN)
    assert not result.current_within_budget and not result.already_best
    assert result.worst_tokens <= budget
    assert worst(work_registry(budget=budget, permanent=list(result.proposed.permanent)), "work") <= budget
    assert "over the mode's budget" in result.summary()
    # nothing within the budget at all: no change, and no claim that the current one is best
    stuck = tune_mode(work_registry(budget=1, permanent=heavy), "work", TASKS, params=NO_MIN)
    assert stuck.already_best and "is within the budget; no change proposed" in stuck.summary()
    assert "already best" not in stuck.summary()


def test_already_best_proposes_no_change(capsys: pytest.CaptureFixture[str]) -> None:
    registry = work_registry()
    tasks = [Task(f"a{i}", ("alpha",) * 6) for i in range(10)]
    result = tune_mode(registry, "work", tasks, params=NO_MIN)
    assert result.already_best and result.proposed == result.current
    assert result.as_dict()["proposed"] == result.as_dict()["current"]
    assert "the current setting is already best: no other setting costs less on the fit part" in result.summary()


def test_recent_size_does_not_move_where_the_policy_pins_the_prompt() -> None:
    # inline fixes the prompt at task start: the FIFO size changes no replayed cost, so it stays as it is
    result = tune_mode(work_registry(recent_size=1), "work", TASKS, params=NO_MIN)
    assert result.proposed.recent_size == 1


def test_every_turn_can_move_recent_size() -> None:
    registry = work_registry(recent_size=0, promotion="every_turn")
    tasks = [Task(f"e{i}", ("gamma", "alpha", "gamma", "alpha", "gamma") * 3) for i in range(8)]
    result = tune_mode(registry, "work", tasks, params=NO_MIN)
    assert result.policy == "every_turn"
    assert result.fitted != result.current  # with every_turn the FIFO size does change what a task costs


# -------------------------------------------------------------------------------------------- the CLI


def write_traces(path: Path, count: int = 12) -> Path:
    steps = ["open", "edit", "find_file", "bash", "open", "edit", "submit"]
    lines = [
        json.dumps({"id": f"x/{i}", "model": "m", "steps": [{"tool": s} for s in steps[: 3 + i % 5]]})
        for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cli_json_shape_is_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = write_traces(tmp_path / "t.jsonl")
    code, out, err = run(capsys, "tune", "--mode", "code", "--traces", str(traces), "--format", "json", "--seed", "3")
    assert code == 0, err
    data = json.loads(out)
    assert list(data) == ["mode", "current", "proposed", "fit_sequences", "heldout_sequences"]
    for part in ("current", "proposed"):
        assert list(data[part]) == ["permanent", "recent_size", "heldout_cost"]
        assert all(isinstance(t, str) for t in data[part]["permanent"])
        assert isinstance(data[part]["recent_size"], int)
        assert isinstance(data[part]["heldout_cost"], float | int)
    assert data["mode"] == "code"
    assert (data["fit_sequences"], data["heldout_sequences"]) == (8, 4)
    assert data["proposed"]["heldout_cost"] <= data["current"]["heldout_cost"]
    # deterministic: the same seed gives the same answer
    assert run(capsys, "tune", "--mode", "code", "--traces", str(traces), "--format", "json", "--seed", "3")[1] == out


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = write_traces(tmp_path / "t.jsonl")
    code, _, err = run(capsys, "tune", "--mode", "nope", "--traces", str(traces))
    assert code == 2 and "unknown mode 'nope'" in err
    with pytest.raises(SystemExit):  # --log and --traces: one of them, not both
        main(["tune", "--mode", "code", "--traces", str(traces), "--log", str(traces)])
    with pytest.raises(SystemExit):
        main(["tune", "--mode", "code", "--traces", str(traces), "--heldout-fraction", "1.5"])
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"v": 1, "event": "request", "task": "t", "mode": "ask"}\n')
    code, _, err = run(capsys, "tune", "--mode", "code", "--log", str(empty))
    assert code == 2 and "no tool calls in mode 'code'" in err


def test_cli_write_overlay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    (docs / "modes").mkdir(parents=True)
    for doc in DOCS:
        (docs / f"{doc.name}.yaml").write_text(yaml.safe_dump(doc.model_dump(mode="json", exclude_defaults=True)))
    mode_text = "slug: work\nname: Work\nrole: You work.\ngroups: [read]\npermanent: [alpha]\nrecent_size: 0\n"
    (docs / "modes" / "work.yaml").write_text(mode_text + "budget_tokens: 100000\n")
    traces = tmp_path / "t.jsonl"
    traces.write_text("".join(json.dumps({"id": t.id, "steps": [{"tool": s} for s in t.tools]}) + "\n" for t in TASKS))
    overlay = tmp_path / "me.yaml"
    overlay.write_text("# mine\nother: {}\n")
    # the small docs are never cached under Anthropic's 1,024-token minimum; beta still earns its place
    code, out, err = run(capsys, "tune", "--docs", str(docs), "--mode", "work", "--traces", str(traces),
                         "--write-overlay", str(overlay))  # fmt: skip
    assert code == 2 and f"{overlay}:2: unknown mode 'other'" in err  # the new overlay is checked before it replaces
    assert overlay.read_text() == "# mine\nother: {}\n"
    overlay.write_text("# mine\n")
    code, out, err = run(capsys, "tune", "--docs", str(docs), "--mode", "work", "--traces", str(traces),
                         "--write-overlay", str(overlay))  # fmt: skip
    assert code == 0, err
    assert f"wrote the proposal for mode 'work' to {overlay}" in out
    assert "+work:\n+  permanent: [alpha, beta, gamma]\n+  recent_size: 0\n" in out
    assert overlay.read_text() == "# mine\nwork:\n  permanent: [alpha, beta, gamma]\n  recent_size: 0\n"
    assert (docs / "modes" / "work.yaml").read_text() == mode_text + "budget_tokens: 100000\n"  # untouched
    assert load_registry(docs, overlay=overlay).mode("work").permanent == ("alpha", "beta", "gamma")
    # tuning again from the overlay: already best, nothing written
    code, out, _ = run(capsys, "tune", "--docs", str(docs), "--overlay", str(overlay), "--mode", "work",
                       "--traces", str(traces), "--write-overlay", str(overlay))  # fmt: skip
    assert code == 0 and "already best" in out and "nothing written" in out


# ---------------------------------------------------------------------------------------------- split


def test_split_is_seeded_stable_and_order_free() -> None:
    tasks = [Task(f"t{i}", ("a",)) for i in range(50)]
    fit, held = split_tasks(tasks, 0.3, seed=1)
    assert (len(fit), len(held)) == (35, 15)
    assert split_tasks(tasks, 0.3, seed=1) == (fit, held)
    _, again_held = split_tasks(list(reversed(tasks)), 0.3, seed=1)
    assert {t.id for t in again_held} == {t.id for t in held}
    assert {t.id for t in split_tasks(tasks, 0.3, seed=2)[1]} != {t.id for t in held}
    # at least one on each side; a repeated task id still splits
    assert [len(p) for p in split_tasks(tasks[:2], 0.01)] == [1, 1]
    assert [len(p) for p in split_tasks([Task("same", ("a",))] * 4, 0.5)] == [2, 2]
    with pytest.raises(ValueError, match="between 0 and 1"):
        split_tasks(tasks, 1.0)


def test_one_sequence_is_fitted_and_reported_on_itself() -> None:
    result = tune_mode(work_registry(), "work", TASKS[:1], params=NO_MIN)
    assert result.overlap and (result.fit_sequences, result.heldout_sequences) == (1, 1)
    assert "nothing is held out" in result.summary()


# ------------------------------------------------------------------------------------------ event log


def test_load_log_tasks_reads_tool_calls_per_task(tmp_path: Path) -> None:
    base = {"v": 1, "ts": 1.0, "mode": "code", "fingerprint": "f", "provider": "anthropic", "iteration": 1}
    events = [
        {**base, "event": "request", "task": "t1", "model": "m1"},
        {**base, "event": "tool_call", "task": "t1", "tool": "fetch_tool_description", "outcome": "ok"},
        {**base, "event": "tool_call", "task": "t1", "tool": "glob", "outcome": "ok"},
        {**base, "event": "tool_call", "task": "t2", "tool": "read_file", "outcome": "refused"},
        {**base, "event": "tool_call", "task": "t1", "tool": "read_file", "via": "call_tool", "outcome": "error"},
        {**base, "event": "tool_call", "task": "t1", "tool": "tool_search", "outcome": "ok"},
        {**base, "event": "fetch", "task": "t1", "tool": "glob", "outcome": "ok"},
        {**base, "event": "tool_call", "task": "t3", "tool": "glob", "outcome": "ok", "mode": "ask"},
        {**base, "v": 99, "event": "tool_call", "task": "t1", "tool": "later_version", "outcome": "ok"},
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + '{"v": 1, "event": "tool_ca')  # a torn line
    assert load_log_tasks(path, "code") == [Task("t1", ("glob", "read_file"), "m1"), Task("t2", ("read_file",))]
    assert [t.id for t in load_log_tasks(path)] == ["t1", "t2", "t3"]


def test_tune_on_a_log_written_by_run(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    log = tmp_path / "events.jsonl"
    for task in range(2):
        script = [
            tool_use_reply((f"c{task}1", "glob", {"pattern": "*.md"})),
            tool_use_reply((f"c{task}2", "read_file", {"path": "README.md"})),
            tool_use_reply((f"c{task}3", "list_files", {"path": "."})),
            text_reply("Done."),
        ]
        with ScriptedMessagesServer(script) as server:
            code = main(["run", "--mode", "code", "--task", f"task {task}", "--base-url", server.base_url,
                         "--workspace", str(workspace), "--log", str(log)])  # fmt: skip
        assert code == 0
    capsys.readouterr()
    tasks = load_log_tasks(log, "code")
    assert [t.tools for t in tasks] == [("glob", "read_file", "list_files")] * 2
    code, out, err = run(capsys, "tune", "--mode", "code", "--log", str(log), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["fit_sequences"], data["heldout_sequences"]) == (1, 1)
    assert data["proposed"]["heldout_cost"] <= data["current"]["heldout_cost"]


# ------------------------------------------------------------------------------------- YAML in place

MODE_YAML = """\
slug: work   # the slug
name: Work
role: >-
  You work.
groups: [read]
permanent:
  - alpha   # first
  - gamma   # last
# about the FIFO
recent_size: 2  # two
budget_tokens: 9000
"""


def test_rewrite_mode_text_keeps_every_other_line() -> None:
    new = rewrite_mode_text(MODE_YAML, ["alpha", "beta"], 4)
    assert new == MODE_YAML.replace("permanent:\n  - alpha   # first\n  - gamma", "permanent: [alpha, beta]").replace(
        "recent_size: 2", "recent_size: 4"
    )
    assert "# last\n# about the FIFO\nrecent_size: 4  # two\n" in new
    # a flow list over two lines, as the shipped debug mode has
    flow = "slug: d\npermanent: [a, b,\n  c]\nrecent_size: 6\nbudget_tokens: 1\n"
    assert rewrite_mode_text(flow, [], 5) == "slug: d\npermanent: []\nrecent_size: 5\nbudget_tokens: 1\n"
    # no permanent key: added before recent_size; names YAML would misread are quoted
    bare = "slug: d\nrecent_size: 6\n"
    assert rewrite_mode_text(bare, ["yes", "a-b"], 6) == 'slug: d\npermanent: ["yes", a-b]\nrecent_size: 6\n'


def test_rewrite_round_trips_every_shipped_mode(shipped: Registry) -> None:
    for mode in shipped.modes.values():
        assert mode.path is not None
        text = mode.path.read_text(encoding="utf-8")
        setting = Setting(tuple(reversed(mode.permanent)), mode.recent_size + 1)
        new = yaml.safe_load(rewrite_mode_text(text, setting.permanent, setting.recent_size))
        assert new == {**yaml.safe_load(text), **setting.as_dict()}
        diff = mode_file_diff(mode, setting)
        assert diff.startswith(f"--- {mode.path}\n+++ {mode.path}\n")
        assert sum(line.startswith("+") and not line.startswith("+++") for line in diff.splitlines()) == 2


def test_overlay_text_edits_one_entry_in_place() -> None:
    setting = Setting(("alpha",), 3)
    created = overlay_text(None, "code", setting)
    assert created.startswith("# prompt-composer overlay")
    assert yaml.safe_load(created) == {"code": {"permanent": ["alpha"], "recent_size": 3}}
    text = "# mine\ncode:\n  permanent: [x]  # old\n  recent_size: 1\n\n# ask too\nask:\n  recent_size: 2\n"
    assert overlay_text(text, "code", setting) == (
        "# mine\ncode:\n  permanent: [alpha]\n  recent_size: 3\n\n# ask too\nask:\n  recent_size: 2\n"
    )
    added = overlay_text(text, "debug", setting)
    assert added == text + "debug:\n  permanent: [alpha]\n  recent_size: 3\n"


# -------------------------------------------------------------------------------------------- overlay


def test_overlay_applies_at_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("ask:\n  permanent: [read_file, glob]\ncode:\n  recent_size: 2\n")
    plain = load_registry()
    mine = load_registry(overlay=overlay)
    assert mine.mode("ask").permanent == ("read_file", "glob")
    assert mine.mode("ask").recent_size == plain.mode("ask").recent_size
    assert mine.mode("code").recent_size == 2 and mine.mode("code").permanent == plain.mode("code").permanent
    assert mine.mode("ask").overlay == overlay and mine.mode("ask").path == plain.mode("ask").path
    assert mine.mode("debug") == plain.mode("debug")
    assert mine.fingerprint != plain.fingerprint
    assert Composer(mine).compose("ask").full[:2] == ("read_file", "glob")
    # a file with only comments is an empty overlay
    overlay.write_text("# nothing yet\n")
    assert load_registry(overlay=overlay).fingerprint == plain.fingerprint


def test_overlay_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("code:\n  permanent: [read_file]\n")
    monkeypatch.chdir(tmp_path)  # a path from the environment must be inside the project (issue 37)
    monkeypatch.setenv("PROMPT_COMPOSER_OVERLAY", str(overlay))
    code, out, _ = run(capsys, "compose", "--mode", "code", "--format", "json")
    assert code == 0 and json.loads(out)["full"] == ["read_file"]
    other = tmp_path / "other.yaml"
    other.write_text("code:\n  permanent: [glob]\n")
    code, out, _ = run(capsys, "compose", "--mode", "code", "--format", "json", "--overlay", str(other))
    assert code == 0 and json.loads(out)["full"] == ["glob"]  # --overlay wins over the environment


def test_overlay_errors_name_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(
        "# my overlay\n"
        "code:\n"
        "  permanent: [read_file, nope_tool]\n"
        "ghost:\n"
        "  permanent: []\n"
        "ask:\n"
        "  permanent:\n"
        "    - read_file\n"
        "    - apply_diff\n"
        "debug:\n"
        "  recent_size: -1\n"
        "  colour: blue\n"
    )
    with pytest.raises(LoadError) as info:
        load_registry(overlay=overlay)
    found = {(p.path, p.line, p.message) for p in info.value.problems}
    assert found == {
        (overlay, 3, "permanent: unknown tool 'nope_tool' in mode 'code'"),
        (overlay, 4, "unknown mode 'ghost' (modes: architect, ask, code, debug, orchestrator)"),
        (overlay, 9, "permanent tool 'apply_diff' is not allowed in mode 'ask' (its group 'edit' is not in groups)"),
        (overlay, 11, "debug.recent_size: Input should be greater than or equal to 0"),
        (overlay, 12, "unknown key 'debug.colour'"),
    }
    code, out, err = run(capsys, "validate", "--overlay", str(overlay))
    assert code == 2 and out == ""
    assert f"{overlay}:9: permanent tool 'apply_diff' is not allowed in mode 'ask'" in err
    overlay.write_text("- code\n")
    with pytest.raises(LoadError, match="expected a mapping of mode slugs"):
        load_registry(overlay=overlay)
    code, _, err = run(capsys, "validate", "--overlay", str(tmp_path / "missing.yaml"))
    assert code == 2 and f"{tmp_path / 'missing.yaml'}:1: cannot read file" in err
