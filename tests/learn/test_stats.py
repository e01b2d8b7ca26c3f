"""``prompt-composer stats``: counts from hand-made event logs whose answers are known, from the 448 real SWE-agent
sequences in ../shared/traces, and the command's formats and errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prompt_composer import load_registry
from prompt_composer.cli import main
from prompt_composer.cli.reports import stats_html
from prompt_composer.learn.events import read_events
from prompt_composer.learn.stats import compute_stats
from prompt_composer.learn.traces import MALFORMED, SWE_AGENT_TOOL_MAP
from tests.helpers import REG, REPO

TRACES = REPO.parent / "shared" / "traces" / "traces.jsonl"


def ev(kind: str, task: str = "t1", mode: str = "code", **fields: Any) -> dict[str, Any]:
    return {"v": 1, "ts": 0.0, "event": kind, "task": task, "mode": mode, "fingerprint": REG.fingerprint, **fields}


def usage(input_tokens: int, output: int, write: int = 0, read: int = 0) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
    }


EVENTS = [
    ev("request", usage=usage(100, 10, write=50)),
    ev("fetch", tool="glob", outcome="ok"),
    ev("tool_call", tool="glob", outcome="ok", listed="brief"),
    ev("fetch", tool="list_files", outcome="ok"),  # never used afterwards
    ev("tool_call", tool="glob", outcome="ok", listed="full"),
    ev("refusal", tool="secret_tool", via=None, reason="not in the mode"),
    ev("tool_call", tool="secret_tool", outcome="refused", listed=None),
    ev("fetch", tool="secret_tool", outcome="refused"),  # a refused fetch is no fetch
    ev("refusal", tool="secret_tool", via="fetch", reason="not in the mode"),
    ev("tool_call", tool="execute_command", outcome="error", listed="brief"),
    ev("tool_call", tool="write_to_file", outcome="denied", listed="brief"),
    ev("tool_call", tool="", outcome="error", listed=None),  # a text-style block the loop could not read
    ev("request", usage=usage(20, 5, read=130)),
    ev("tool_call", task="t2", tool="glob", outcome="ok", listed="brief"),
    ev("fetch", task="t2", tool="glob", outcome="ok"),  # after the use, and no use follows
    ev("tool_call", task="t3", mode="gone", tool="foo", outcome="ok", listed="brief"),
    ev("tool_call", task="t3", mode="gone", tool="bar", outcome="ok", listed="full"),
    ev("list", task="t3", mode="gone", tools=4, full=["bar"]),
    {"v": 1, "ts": 1.0, "event": "dropped", "dropped": 3, "queue_full": 3, "sink_errors": 0, "after_close": 0},
]


def test_stats_count_tools_and_modes_from_a_log() -> None:
    report = compute_stats(EVENTS, REG, source="test")
    tools = {t.tool: t for t in report.tools}
    glob = tools["glob"]
    assert (glob.uses, glob.first_uses, glob.fetches, glob.fetches_unused) == (3, 2, 2, 1)
    assert (tools["list_files"].fetches, tools["list_files"].fetches_unused, tools["list_files"].uses) == (1, 1, 0)
    assert (tools["secret_tool"].refusals, tools["secret_tool"].fetches) == (2, 0)
    assert tools["execute_command"].errors == 1 and tools["write_to_file"].denied == 1
    assert tools["(unreadable call)"].errors == 1
    assert report.tools[0].tool == "glob"  # most used first
    code, gone = report.modes
    assert (code.mode, code.tasks, code.requests) == ("code", 2, 2)
    assert (code.input_tokens, code.cache_creation_input_tokens, code.cache_read_input_tokens) == (120, 50, 130)
    assert code.output_tokens == 15 and code.cache_hit_rate == pytest.approx(130 / 300)
    assert code.permanent_unused == ("read_file",)
    assert code.brief_used == (("glob", 3, 2),)
    # A mode the registry does not have: no permanent set to check; brief tools are those the log saw brief.
    assert gone.permanent_unused is None and gone.brief_used == (("foo", 1, 1),) and gone.lists == 1
    assert gone.cache_hit_rate is None and gone.as_dict()["input_tokens"] is None
    assert report.tasks == 3 and report.events == len(EVENTS) and report.dropped == 3
    assert any("lost 3 events" in note for note in report.notes)
    assert any("'gone' is not in the registry" in note for note in report.notes)
    assert json.loads(json.dumps(report.as_dict()))["modes"][0]["brief_used"] == [
        {"tool": "glob", "uses": 3, "tasks": 2}
    ]


def test_a_log_from_another_registry_version_is_noted() -> None:
    other = [dict(e, fingerprint="0123abcd") for e in EVENTS[:3]]
    report = compute_stats(other, REG, source="test")
    assert any("0123abcd" in note and REG.fingerprint in note for note in report.notes)


def test_read_events_skips_what_is_not_an_event_of_a_known_version(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    lines = [json.dumps(e) for e in EVENTS[:2]]
    lines += ["", "[1, 2]", json.dumps({"v": 2, "event": "request"}), json.dumps({"event": "request"})]
    path.write_text("\n".join(lines) + '\n{"v": 1, "event": "tool_ca', encoding="utf-8")  # a torn last line
    events, skipped = read_events([path])
    assert events == EVENTS[:2] and skipped == 4


def test_the_command_renders_every_format_and_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in EVENTS), encoding="utf-8")
    assert main(["stats", "--log", str(path)]) == 0
    table = capsys.readouterr().out
    assert "cache hit rate" in table and "glob" in table and "Notes" in table
    assert main(["stats", "--log", str(path), "--log", str(path), "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "| tool | uses |" in markdown and "## Modes" in markdown
    assert main(["stats", "--log", str(path), "--mode", "gone", "--format", "json"]) == 0
    only = json.loads(capsys.readouterr().out)
    assert [m["mode"] for m in only["modes"]] == ["gone"]
    assert main(["stats", "--log", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read the event log" in capsys.readouterr().err
    assert main(["stats", "--traces", str(path), "--mode", "no-such-mode"]) == 2


@pytest.mark.skipif(not TRACES.exists(), reason="shared traces not present (../shared/traces)")
@pytest.mark.parametrize("mode", ["code", "ask"])
def test_stats_on_the_448_real_sequences(mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    steps = []
    sequences = 0
    for line in TRACES.read_text(encoding="utf-8").splitlines():
        sequences += 1
        steps += [SWE_AGENT_TOOL_MAP.get(s["tool"], s["tool"]) for s in json.loads(line)["steps"]]
    steps = [s for s in steps if s != MALFORMED]
    assert sequences == 448
    assert main(["stats", "--traces", str(TRACES), "--mode", mode, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    registry = load_registry()
    resolved = registry.mode(mode)
    expected = Counter(steps)
    tools = {t["tool"]: t for t in report["tools"]}
    for name, count in expected.items():  # every step is one use, or one refusal where the mode lacks the tool
        assert (tools[name]["uses"] if resolved.allows(name) else tools[name]["refusals"]) == count, name
        assert tools[name]["first_uses"] <= report["tasks"]
    (stats,) = report["modes"]
    assert stats["requests"] == len(steps) and stats["input_tokens"] is None and stats["cache_hit_rate"] is None
    used = {name for name in expected if resolved.allows(name)}
    assert stats["permanent_unused"] == [t for t in resolved.permanent if t not in used]
    brief = [b["tool"] for b in stats["brief_used"]]
    assert all(t not in resolved.permanent and resolved.allows(t) for t in brief)
    assert brief == sorted(brief, key=lambda t: -expected[t])
    assert report["notes"][0].startswith("448 sequences")
    assert main(["stats", "--traces", str(TRACES), "--mode", mode]) == 0  # the table renders too
    assert "brief, used most" in capsys.readouterr().out


def test_the_rewriters_requests_are_counted_per_mode_with_their_median_and_worst_time() -> None:
    events = [
        ev("preselect", task="a", tools=["glob"], rewrite_s=0.5, rewritten=True),
        ev("preselect", task="b", tools=[], rewrite_s=1.5, rewritten=False),  # asked, its answer not searched
        ev("preselect", task="c", tools=["glob"], rewrite_s=2.5, rewritten=True),
        ev("preselect", task="d", tools=["glob"]),  # no rewriter
        ev("preselect", task="e", tools=[], rewrite_s="slow", rewritten=True),  # not a duration: not counted
        ev("preselect", task="f", tools=[], rewrite_s=float("nan"), rewritten=True),
        ev("preselect", task="g", tools=[], rewrite_s=10**400, rewritten=True),
        ev("preselect", task="h", mode="ask", tools=[]),
    ]
    report = compute_stats(events, REG, source="log")
    code, ask = (next(m for m in report.modes if m.mode == slug).as_dict()["rewriter"] for slug in ("code", "ask"))
    assert code == {"asked": 3, "searched": 2, "p50_s": 1.5, "max_s": 2.5}
    assert ask == {"asked": 0, "searched": 0, "p50_s": None, "max_s": None}
    text = report.render()
    assert "Request rewriter" in text and "1.50" in text and "2.50" in text
    assert "Request rewriter" not in compute_stats(events[3:4], REG, source="log").render()  # none asked: no table
    html = stats_html(report, events)  # the HTML report has the table too, with only the modes that asked
    table = html[html.index("<h3>Request rewriter</h3>") :]
    table = table[: table.index("</table>")]
    assert "<td>3</td><td>2</td>" in table and "<td>1.50</td><td>2.50</td>" in table and ">ask<" not in table
    assert "Request rewriter" not in stats_html(compute_stats(events[3:4], REG, source="log"), events[3:4])
