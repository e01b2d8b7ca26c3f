"""No traceback and no hang on a damaged or hostile data file (issue 37, Why 5): ``stats`` on an event log,
``bench --results`` and the import state an import reads. Each input gives one line on stderr that names the file
(and the line and field, where there is one) and says what is wrong, exit 2, and nothing written. A FIFO and
``/dev/zero`` in their place are refused at once (a generous hang guard, not a timing).

Event logs: every documented field of a format-1 event (learn/events.py) with the wrong type, a number that is
not finite, past 2**53 or negative, and an object or a list where a name or a count belongs."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from prompt_composer.cli import main
from prompt_composer.importers.folder import STATE_FILE
from tests.helpers import snapshot, within

BOUND = 60.0  # a hang guard: each of these returns in well under a second
HUGE = "1" + "0" * 400  # 10**400 as JSON: Python reads it as an int no float can hold

BASE = {"v": 1, "ts": 1.5, "task": "t1", "mode": "code", "fingerprint": "f", "provider": "anthropic", "iteration": 1}
GOOD_EVENTS = [
    {**BASE, "event": "request", "model": "m", "stream": False, "outcome": "ok", "latency_s": 0.5,
     "first_token_s": None, "composed_tokens": 900, "full": 3, "brief": 20,
     "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}},
    {**BASE, "event": "fetch", "call_id": "c1", "tool": "glob", "outcome": "ok"},
    {**BASE, "event": "search", "call_id": "c2", "hits": ["glob"], "hit_count": 1, "total": 1, "miss": False,
     "confidence": 0.8, "strategy": "keyword", "activated": ["glob"]},
    {**BASE, "event": "tool_call", "call_id": "c1", "tool": "glob", "via": None, "outcome": "ok", "duration_s": 0.1,
     "listed": "brief", "expanded": False},
    {**BASE, "event": "refusal", "call_id": "c3", "tool": "x", "via": None, "reason": "no such tool"},
    {**BASE, "event": "promotion", "tool": "glob", "kind": "fifo"},
    {**BASE, "event": "list", "tools": 12, "full": ["glob"]},
    {**BASE, "event": "preselect", "tools": ["glob"], "confidence": 0.5},
    {"v": 1, "ts": 2.0, "event": "dropped", "dropped": 1, "queue_full": 1, "sink_errors": 0, "after_close": 0},
]  # fmt: skip
KINDS = {event["event"]: event for event in GOOD_EVENTS}

# (kind, field, JSON text of the bad value): the event of that kind with that field replaced.
WRONG_TYPE = '"abc"'
BAD_FIELDS = [
    ("dropped", "dropped", WRONG_TYPE),
    ("dropped", "dropped", "NaN"),
    ("dropped", "dropped", "Infinity"),
    ("dropped", "dropped", HUGE),
    ("dropped", "dropped", "-5"),
    ("dropped", "dropped", "1.5"),
    ("dropped", "dropped", "true"),
    ("dropped", "dropped", "[1]"),
    ("dropped", "queue_full", '{"n": 1}'),
    ("dropped", "sink_errors", "-Infinity"),
    ("request", "usage.input_tokens", WRONG_TYPE),
    ("request", "usage.input_tokens", "NaN"),
    ("request", "usage.output_tokens", "Infinity"),
    ("request", "usage.cache_read_input_tokens", HUGE),
    ("request", "usage.cache_creation_input_tokens", "-1"),
    ("request", "usage.input_tokens", '{"a": 1}'),
    ("request", "usage", "[1, 2]"),
    ("request", "usage", WRONG_TYPE),
    ("request", "latency_s", "NaN"),
    ("request", "latency_s", "-0.5"),
    ("request", "composed_tokens", "1e400"),
    ("request", "full", WRONG_TYPE),
    ("request", "model", '{"name": "m"}'),
    ("request", "stream", '"yes"'),
    ("tool_call", "ts", WRONG_TYPE),
    ("tool_call", "ts", "NaN"),
    ("tool_call", "ts", "Infinity"),
    ("tool_call", "ts", HUGE),
    ("tool_call", "ts", "1e308"),
    ("tool_call", "ts", "-1"),
    ("tool_call", "iteration", "2.5"),
    ("tool_call", "duration_s", "Infinity"),
    ("tool_call", "tool", '{"name": "glob"}'),
    ("tool_call", "tool", "7"),
    ("tool_call", "mode", '["code"]'),
    ("tool_call", "task", '{"id": 1}'),
    ("tool_call", "fingerprint", "[]"),
    ("tool_call", "outcome", "1"),
    ("tool_call", "listed", "true"),
    ("tool_call", "input", '"text"'),
    ("fetch", "tool", "[1]"),
    ("search", "hits", '"glob"'),
    ("search", "hits", "[1, 2]"),
    ("search", "hit_count", "NaN"),
    ("search", "total", HUGE),
    ("search", "confidence", "Infinity"),
    ("search", "query", "{}"),
    ("refusal", "reason", "[]"),
    ("promotion", "kind", "{}"),
    ("list", "tools", WRONG_TYPE),
    ("list", "full", '{"glob": 1}'),
    ("preselect", "tools", '{"a": 1}'),
    ("preselect", "confidence", "NaN"),
]


def _event_line(kind: str, field: str, value: str) -> str:
    """The good event of ``kind`` as a JSON line, with ``field`` (``usage.x`` inside usage) holding ``value``."""
    marker = "__BAD__"
    event: dict[str, Any] = json.loads(json.dumps(KINDS[kind]))
    if "." in field:
        outer, inner = field.split(".")
        event[outer][inner] = marker
    else:
        event[field] = marker
    return json.dumps(event).replace(json.dumps(marker), value)


def _expect_one_line(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_the_good_log_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in GOOD_EVENTS), encoding="utf-8")
    assert main(["stats", str(log), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["events"] == len(GOOD_EVENTS) and report["dropped"] == 1 and report["skipped_lines"] == 0


@pytest.mark.parametrize(("kind", "field", "value"), BAD_FIELDS, ids=lambda v: str(v)[:20])
@pytest.mark.parametrize("fmt", ["table", "html"])
def test_stats_on_an_event_with_a_bad_field_is_one_line_naming_it(
    kind: str, field: str, value: str, fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    good = "".join(json.dumps(e) + "\n" for e in GOOD_EVENTS)
    log.write_text(good + _event_line(kind, field, value) + "\n", encoding="utf-8")
    code = within(lambda: main(["stats", str(log), "--format", fmt]), BOUND)
    out, err = capsys.readouterr()
    _expect_one_line(code, err, f"{log}:{len(GOOD_EVENTS) + 1}: event '{kind}': {field} is ")
    assert out == ""


@pytest.mark.parametrize(
    "line",
    [
        '{"v": true, "ts": 1, "event": "tool_call", "tool": "glob", "outcome": "ok"}',
        '{"v": -' + HUGE + ', "ts": 1, "event": "tool_call", "tool": "glob", "outcome": "ok"}',
        '{"v": 2, "ts": 1, "event": "tool_call", "tool": "glob", "outcome": "ok"}',
        '{"v": 1, "ts": 1, "event": ["tool_call"]}',
        '{"v": 1, "event": "tool_call", "usage": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"v": 1, "ts": 1, "event": "tool_call", "tool": "gl',
    ],
    ids=["v true", "v huge", "a later version", "event a list", "100k deep", "torn"],
)
def test_lines_that_are_no_event_of_this_format_are_skipped_and_counted(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the format says: a reader skips what is not JSON (a torn last line) and what is not an event of a
    version it knows; the report counts them."""
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in GOOD_EVENTS) + line + "\n", encoding="utf-8")
    assert within(lambda: main(["stats", str(log), "--format", "json"]), BOUND) == 0
    assert json.loads(capsys.readouterr().out)["skipped_lines"] == 1


# --- bench --results ------------------------------------------------------------------------------------------

GOOD_VARIANT = {"tasks": 4, "first_tool_accuracy": 0.75, "prompt_tokens_per_request": 2100}


def _results(tasks: str = "4", accuracy: str = "0.5", tokens: str = "2100") -> str:
    """A results file of one variant ``a``, its numbers as JSON text."""
    return (
        '{"variants": {"a": {"tasks": ' + tasks + ', "first_tool_accuracy": ' + accuracy
        + ', "prompt_tokens_per_request": ' + tokens + "}}}"
    )  # fmt: skip


BAD_RESULTS = [
    ("NaN", _results(accuracy="NaN"), "NaN is not a JSON number"),
    ("Infinity", _results(tokens="Infinity"), "Infinity is not a JSON number"),
    ("-Infinity", _results(tokens="-Infinity"), "-Infinity is not a JSON number"),
    ("10**400", _results(tasks=HUGE), "is over 2**53"),
    ("1e400", _results(tokens="1e400"), "the number 1e400 is too large"),
    ("1e308", _results(tokens="1e308"), "variants.a.prompt_tokens_per_request: 1e+308 is not from 0 to 2**53"),
    ("negative", _results(tasks="-4"), "variants.a.tasks: -4 is not from 0 to 2**53"),
    ("accuracy 7", _results(accuracy="7"), "variants.a.first_tool_accuracy: 7 is not from 0 to 1"),
    ("a string", _results(tasks='"4"'), "variants.a.tasks: missing or not a number"),
    ("true", _results(tasks="true"), "variants.a.tasks: missing or not a number"),
    ("100k deep", '{"variants": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested more than 100 levels deep"),
    ("101 deep", '{"variants": ' + "[" * 100 + "]" * 100 + "}", "nested more than 100 levels deep"),
    ("variants a list", '{"variants": [1]}', "no 'variants' object"),
    ("not JSON", '{"variants": ', "not JSON: Expecting value (line 1, column 14)"),
]


@pytest.mark.parametrize(("text", "needle"), [(t, n) for _, t, n in BAD_RESULTS], ids=[i for i, _, _ in BAD_RESULTS])
def test_bench_results_that_cannot_be_a_run_are_one_line(
    text: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.json"
    results.write_text(text, encoding="utf-8")
    code = within(lambda: main(["bench", "--results", str(results), "--format", "html"]), BOUND)
    out, err = capsys.readouterr()
    _expect_one_line(code, err, str(results), needle)
    assert out == ""


def test_good_bench_results_make_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"variants": {"static": GOOD_VARIANT, "composed": GOOD_VARIANT}}), encoding="utf-8")
    assert main(["bench", "--results", str(results), "--format", "html"]) == 0
    assert "<html" in capsys.readouterr().out


# --- the import state -----------------------------------------------------------------------------------------

TOOLS = [
    {
        "name": "get_weather",
        "description": "Get the weather forecast for a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]
# (what, dotted path in the state an import wrote → the value there, or the file's whole text, what the error says)
BAD_STATES: list[tuple[str, tuple[str, Any] | str, str]] = [
    ("tools a list", ("tools", []), "'tools' is a list, not an object"),
    ("tools null", ("tools", None), "'tools' is null, not an object"),
    ("tools a string", ("tools", "x"), "'tools' is a string, not an object"),
    ("tools a number", ("tools", 3), "'tools' is a number, not an object"),
    ("modes a list", ("modes", []), "'modes' is a list, not an object"),
    ("modes null", ("modes", None), "'modes' is null, not an object"),
    ("a record a list", ("tools.get_weather", [1]), "tools.'get_weather' is a list, not an object"),
    ("a record a string", ("tools.get_weather", "abc"), "tools.'get_weather' is a string, not an object"),
    ("a record null", ("tools.get_weather", None), "tools.'get_weather' is null, not an object"),
    ("a hash a number", ("tools.get_weather.brief", 5), "tools.'get_weather'.brief is a number, not a string"),
    ("a group an object", ("tools.get_weather.group", {}), "tools.'get_weather'.group is an object, not a string"),
    ("scan a list", ("tools.get_weather.scan", []), "tools.'get_weather'.scan is a list, not an object"),
    ("quarantine a string", ("tools.get_weather.scan.quarantine", "abc"), "scan.quarantine is not a list of rule"),
    ("quarantine a number", ("tools.get_weather.scan.quarantine", 5), "scan.quarantine is not a list of rule ids"),
    ("quarantine objects", ("tools.get_weather.scan.quarantine", [{}]), "scan.quarantine is not a list of rule ids"),
    ("upstream a list", ("tools.get_weather.scan.upstream", []), "scan.upstream is a list, not a string"),
    ("a mode record a list", ("modes.code", [1]), "modes.'code' is a list, not an object"),
    ("a mode hash a number", ("modes.code", {"text": 1}), "modes.'code'.text is a number, not a string"),
    ("version true", ("version", True), "unknown import state version"),
    ("version a string", ("version", "1"), "unknown import state version"),
    ("version 2", ("version", 2), "unknown import state version"),
    ("a list", "[1]", "unknown import state version"),
    ("NaN", '{"version": NaN, "tools": {}, "modes": {}}', "NaN is not a JSON number"),
    ("10**400", '{"version": ' + HUGE + ', "tools": {}, "modes": {}}', "is over 2**53"),
    ("100k deep", '{"version": 1, "tools": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested more than 100 levels"),
    ("not JSON", '{"version": 1,', "not JSON: "),
]


def _state_with(state: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """``state`` with the value at ``dotted`` (``tools.get_weather.scan.quarantine``) replaced."""
    *parents, last = dotted.split(".")
    changed: dict[str, Any] = json.loads(json.dumps(state))
    here = changed
    for key in parents:
        here = here[key]
    here[last] = value
    return changed


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder one import wrote (its state file holds one tool record)."""
    root = tmp_path_factory.mktemp("imported")
    (root / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    assert main(["import", "json", str(root / "tools.json"), "--out", str(root / "docs")]) == 0
    return root


@pytest.mark.parametrize(("change", "needle"), [(c, n) for _, c, n in BAD_STATES], ids=[i for i, _, _ in BAD_STATES])
def test_an_import_state_that_no_import_wrote_is_one_line_and_nothing_is_written(
    change: tuple[str, Any] | str, needle: str, imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(imported / "docs", docs)
    state_file = docs / STATE_FILE
    if isinstance(change, str):
        state_file.write_text(change, encoding="utf-8")
    else:
        state = json.loads(state_file.read_text(encoding="utf-8"))
        state.setdefault("modes", {})["code"] = {"text": "0123456789abcdef", "source": None}
        state_file.write_text(json.dumps(_state_with(state, *change)), encoding="utf-8")
    before = snapshot(docs)
    capsys.readouterr()
    code = within(lambda: main(["import", "json", str(imported / "tools.json"), "--out", str(docs)]), BOUND)
    _expect_one_line(code, capsys.readouterr().err, str(state_file), needle)
    assert snapshot(docs) == before


# --- special files in their place ------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_fifo_or_dev_zero_in_place_of_a_log_results_or_state_returns_at_once(
    special: str, imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    if special == "fifo":
        path = tmp_path / "named.pipe"
        os.mkfifo(path)
        kind = "it is a FIFO, not a regular file"
    else:
        path = Path(special)
        kind = "it is a device, not a regular file"
    for argv in (["stats", str(path)], ["bench", "--results", str(path), "--format", "html"]):
        code = within(lambda argv=argv: main(argv), BOUND)
        _expect_one_line(code, capsys.readouterr().err, str(path), kind)
    docs = tmp_path / "docs"
    shutil.copytree(imported / "docs", docs)
    (docs / STATE_FILE).unlink()
    if special == "fifo":
        os.mkfifo(docs / STATE_FILE)
    else:
        (docs / STATE_FILE).symlink_to(special)
    code = within(lambda: main(["import", "json", str(imported / "tools.json"), "--out", str(docs)]), BOUND)
    _expect_one_line(code, capsys.readouterr().err, str(docs / STATE_FILE), kind)


# --- a path the system refuses, named on the command line ----------------------------------------------------------

LONG = "a" * 5000  # longer than any file name the system takes (ENAMETOOLONG)


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "--docs", LONG],
        ["compose", "--docs", LONG, "--mode", "code"],
        ["audit", "--docs", LONG],
        ["search", "--docs", LONG, "--mode", "code", "find a file"],
        ["stats", LONG],
        ["import", "json", "tools.json", "--out", LONG],
        ["import", "--recover", "--docs", LONG],
    ],
    ids=lambda argv: " ".join(a if a != LONG else "LONG" for a in argv),
)
def test_a_path_too_long_for_the_system_is_one_line_naming_it(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tools.json").write_text('[{"name": "t", "description": "A tool.", "input_schema": {}}]')
    before = snapshot(tmp_path)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert LONG[:100] in err
    assert snapshot(tmp_path) == before
