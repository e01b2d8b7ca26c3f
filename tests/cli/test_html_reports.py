"""``audit``, ``stats`` and ``bench --format html`` in a real browser: headless Chromium (Debian's ``chromium``)
loads each report from a file with the network off; the test checks the page rendered (the expected text in the
DOM, a screenshot that is not blank and shows the charts' colours) with no console message at all."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prompt_composer import default_docs_dir
from prompt_composer.cli import main
from prompt_composer.testing.replies import text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import REG

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (Debian's `chromium` package; .ci/run installs it)"
)
BLUE = (0x09, 0x69, 0xDA)  # the `s1` series colour: composed tokens, full tokens, tool uses
PURPLE = (0x82, 0x50, 0xDF)  # the `s4` series colour: failed tool calls
# Network off: no fetch can leave the machine (and the page's CSP forbids any); nothing of a profile is kept.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--proxy-server=127.0.0.1:9",  # a closed port: anything that tried to reach the network would fail
    "--enable-logging=stderr",
    "--v=0",
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- the browser ------------------------------------------------------------------------------------------------


def browse(page: Path, tmp_path: Path, *, height: int = 1400) -> tuple[str, bytes, list[str]]:
    """The page's DOM after load, a screenshot (PNG) of its first ``height`` pixels, and every console line
    Chromium logged while loading it."""
    assert CHROMIUM is not None
    url = page.resolve().as_uri()
    shot = tmp_path / f"{page.stem}.png"
    common = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--window-size=1100,{height}"]
    dom = subprocess.run(
        [*common, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
    )  # fmt: skip
    pic = subprocess.run(
        [*common, f"--screenshot={shot}", url], capture_output=True, text=True, timeout=120, check=True
    )
    console = [ln for ln in (dom.stderr + pic.stderr).splitlines() if ":CONSOLE" in ln]
    return dom.stdout, shot.read_bytes(), console


def png_pixels(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Width, height and RGB pixels of an 8-bit RGB or RGBA PNG (what Chromium writes), decoded with the stdlib."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    width = height = color = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytearray] = []
    prev = bytearray(stride)
    for y in range(height):
        filt = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if filt == 1:
                line[i] = (line[i] + a) & 0xFF
            elif filt == 2:
                line[i] = (line[i] + b) & 0xFF
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(line)
        prev = line
    pixels = [(r[i], r[i + 1], r[i + 2]) for r in rows for i in range(0, stride, bpp)]
    return width, height, pixels


def check_rendered(png: bytes) -> Counter[tuple[int, int, int]]:
    """The screenshot is not blank: a good share of it is not the background, in many colours. Its colour
    counts, for the caller's own checks."""
    width, height, pixels = png_pixels(png)
    assert (width, height) > (500, 500)
    colours = Counter(pixels)
    _background, most = colours.most_common(1)[0]
    assert most < 0.97 * len(pixels), "the screenshot is (almost) one colour: blank"
    assert len(colours) > 20, f"only {len(colours)} colours: nothing drawn"
    return colours


def self_contained(html: str) -> None:
    """No reference that would make a browser fetch anything: no script, stylesheet link, image or font URL."""
    assert "<script" not in html and "<link" not in html and "<img" not in html and "<iframe" not in html
    assert not re.search(r"""\b(src|href)\s*=|url\(|@import""", html)
    assert "default-src 'none'" in html  # the CSP: the browser itself refuses any load


# --- the test's own checks fail when they should ------------------------------------------------------------------


@needs_chromium
def test_the_checks_see_console_messages_and_blank_pages(tmp_path: Path) -> None:
    page = tmp_path / "noisy.html"
    page.write_text("<!doctype html><title>x</title><body><script>console.error('marker-123')</script></body>")
    _dom, png, console = browse(page, tmp_path)
    assert any("marker-123" in line for line in console)
    with pytest.raises(AssertionError, match="blank"):
        check_rendered(png)


# --- the reports --------------------------------------------------------------------------------------------------


@needs_chromium
def test_the_audit_report_renders_offline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, html, _ = run(capsys, "audit", "--format", "html")
    assert code == 0
    self_contained(html)
    page = tmp_path / "audit.html"
    page.write_text(html, encoding="utf-8")
    dom, png, console = browse(page, tmp_path)
    assert console == []
    assert "prompt-composer audit" in dom and "Modes: tokens against the budget" in dom
    _, table, _ = run(capsys, "audit", "--format", "json")
    for mode in json.loads(table)["modes"]:
        # every mode's row, with its numbers, and its bar (an SVG rect with its title)
        assert f">{mode['mode']}</td>" in dom and f"<td>{mode['composed_tokens']}</td>" in dom
        assert f"{mode['mode']}: composed {mode['composed_tokens']:,}" in dom
    assert dom.count("<rect") >= 3 * 5 + 2 * 28
    colours = check_rendered(png)
    assert colours[BLUE] > 500  # the composed bars were drawn


def _event_log(path: Path) -> Path:
    """A log in the event format (learn/events.py) over ten minutes: two tasks in mode code, one preselecting."""
    fp = REG.fingerprint

    def ev(ts: float, kind: str, task: str, **fields: Any) -> dict[str, Any]:
        return {"v": 1, "ts": 1_800_000_000 + ts, "event": kind, "task": task, "mode": "code", "fingerprint": fp,
                **fields}  # fmt: skip

    def usage(uncached: int, read: int) -> dict[str, int]:
        return {"input_tokens": uncached, "output_tokens": 40, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": read}  # fmt: skip

    events = [
        ev(0, "preselect", "t1", tools=["glob", "search_files"], query=None),
        ev(1, "request", "t1", usage=usage(5200, 0)),
        ev(5, "tool_call", "t1", tool="glob", outcome="ok", listed="brief"),
        ev(60, "request", "t1", usage=usage(300, 5100)),
        ev(62, "fetch", "t1", tool="apply_diff", outcome="ok"),
        ev(63, "tool_call", "t1", tool="apply_diff", outcome="ok", listed="brief"),
        ev(200, "request", "t2", usage=usage(5300, 0)),
        ev(210, "tool_call", "t2", tool="read_file", outcome="ok", listed="full"),
        ev(400, "request", "t2", usage=usage(200, 5250)),
        ev(420, "refusal", "t2", tool="rm_rf", via=None, reason="not in the mode"),
        ev(421, "tool_call", "t2", tool="rm_rf", outcome="refused", listed=None),
        ev(600, "request", "t2", usage=usage(150, 5400)),
        ev(601, "tool_call", "t2", tool="read_file", outcome="ok", listed="full"),
        # a tool whose every call failed: still a row of the tool-use chart, and a point of the failed calls
        ev(602, "tool_call", "t2", tool="execute_command", outcome="error", listed="full"),
        ev(603, "tool_call", "t2", tool="execute_command", outcome="denied", listed="full"),
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


@needs_chromium
def test_the_stats_report_renders_offline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = str(_event_log(tmp_path / "events.jsonl"))
    code, html, _ = run(capsys, "stats", "--log", log, "--format", "html")
    assert code == 0
    self_contained(html)
    page = tmp_path / "stats.html"
    page.write_text(html, encoding="utf-8")
    dom, png, console = browse(page, tmp_path)
    assert console == []
    _, text, _ = run(capsys, "stats", "--log", log, "--format", "json")
    code_mode = next(m for m in json.loads(text)["modes"] if m["mode"] == "code")
    precision, recall = code_mode["preselection"]["precision"], code_mode["preselection"]["recall"]
    # precision: glob used, of glob and search_files preselected; recall: glob preselected, apply_diff permanent
    assert (precision, recall) == (0.5, 1.0)
    assert "prompt-composer stats" in dom and "Over time" in dom and "Preselection" in dom
    assert "<td>50%</td><td>100%</td>" in dom  # precision and recall in the mode's row
    assert dom.count("<polyline") == 5  # calls, failed calls, fetches, uncached input, cache reads
    assert "read_file: uses 2" in dom and "rm_rf: refusals 1" in dom
    assert "execute_command: failed 2" in dom and "execute_command: uses 0" in dom
    assert "minutes since the first event" in dom  # ten minutes of log
    colours = check_rendered(png)
    assert colours[BLUE] > 100 and colours[PURPLE] > 20  # uses, and the failed calls, drawn


@needs_chromium
def test_a_short_log_has_a_time_axis_in_seconds(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Three seconds of log: the axis counts seconds, in round steps, not thousandths of a minute."""
    fp = REG.fingerprint
    events = [
        {"v": 1, "ts": 1_800_000_000 + t, "event": "tool_call", "task": "t", "mode": "code", "fingerprint": fp,
         "tool": "glob", "outcome": "ok" if t < 2 else "error", "listed": "full"}
        for t in (0.0, 0.4, 1.1, 2.0, 2.9)
    ]  # fmt: skip
    log = tmp_path / "short.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    code, html, _ = run(capsys, "stats", "--log", str(log), "--format", "html")
    assert code == 0
    page = tmp_path / "short.html"
    page.write_text(html, encoding="utf-8")
    dom, png, console = browse(page, tmp_path)
    assert console == []
    assert "seconds since the first event" in dom and "minutes since" not in dom
    chart = dom.split("seconds since the first event", 1)[0].rsplit("<svg", 1)[1]  # the calls chart
    ticks = [float(t) for t in re.findall(r'y="315" text-anchor="middle">([^<]+)</text>', chart)]
    assert ticks[0] == 0 and ticks[-1] >= 2.5 and len(ticks) >= 4, ticks  # about 3 s, in round steps
    assert all(round(t / 0.5) * 0.5 == t for t in ticks), ticks  # no 0.0002-minute ticks
    assert "glob: uses 3" in dom and "glob: failed 2" in dom
    check_rendered(png)


@needs_chromium
def test_the_audit_report_marks_drafted_briefs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An import's drafted briefs are marked in the HTML audit, as the text audit marks them."""
    docs = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), docs)
    tools = tmp_path / "tools.json"
    schema = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
    function = {"name": "http_get", "description": "Fetch a URL over HTTP GET; return the body.", "parameters": schema}
    tools.write_text(json.dumps([{"type": "function", "function": function}]))
    assert run(capsys, "import", "json", str(tools), "--out", str(docs))[0] == 0
    _, text, _ = run(capsys, "--docs", str(docs), "audit")
    assert re.search(r"http_get\s.*drafted", text)
    code, html, _ = run(capsys, "--docs", str(docs), "audit", "--format", "html")
    assert code == 0
    page = tmp_path / "audit.html"
    page.write_text(html, encoding="utf-8")
    dom, png, console = browse(page, tmp_path)
    assert console == []
    assert "1 drafted brief to review: http_get." in dom
    row = re.search(r'<tr><td class="l">http_get</td>.*?</tr>', dom, re.S)
    assert row is not None and "drafted: review" in row.group(0)
    assert dom.count("drafted: review") == 1  # the shipped docs' briefs are a person's
    check_rendered(png)


def _bench_results(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real ``bench --format json`` run of three variants against the scripted Messages API server."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    docs = tmp_path / "docs"
    (docs / "modes").mkdir(parents=True)
    for name in ("read_file", "glob", "list_files"):
        (docs / f"{name}.yaml").write_text((Path("tool_docs") / f"{name}.yaml").read_text())
    (docs / "modes" / "work.yaml").write_text(
        "slug: work\nname: Work\nrole: You read code.\ngroups: [read]\npermanent: [read_file]\n"
        "recent_size: 2\nbudget_tokens: 9000\n"
    )
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps({"id": "a", "task": "list python files", "expect": ["glob"]})
        + "\n"
        + json.dumps({"id": "b", "task": "show the files in src", "expect": ["list_files"]})
        + "\n"
    )
    right, wrong = tool_use_reply(("glob", {"pattern": "*.py"})), tool_use_reply(("read_file", {"path": "x"}))
    # static: both right; composed: one right; discovery: none (each task: a call, then a final answer)
    script = [right, text_reply("ok"), tool_use_reply(("list_files", {"path": "src"})), text_reply("ok")]
    script += [right, text_reply("ok"), wrong, text_reply("ok")]
    script += [wrong, text_reply("ok"), wrong, text_reply("ok")]
    with ScriptedMessagesServer(script) as server:
        code, out, err = run(
            capsys, "--docs", str(docs), "bench", "--tasks", str(tasks), "--mode", "work", "--base-url",
            server.base_url, "--variants", "static,composed,discovery", "--format", "json",
        )  # fmt: skip
    assert code == 0, err
    results = tmp_path / "bench.json"
    results.write_text(out, encoding="utf-8")
    return results


@needs_chromium
def test_the_bench_report_renders_offline(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = _bench_results(capsys, tmp_path, monkeypatch)
    variants = json.loads(results.read_text())["variants"]
    assert [variants[v]["first_tool_accuracy"] for v in ("static", "composed", "discovery")] == [1.0, 0.5, 0.0]
    code, html, _ = run(capsys, "bench", "--results", str(results), "--format", "html")
    assert code == 0
    self_contained(html)
    page = tmp_path / "bench.html"
    page.write_text(html, encoding="utf-8")
    dom, png, console = browse(page, tmp_path)
    assert console == []
    assert dom.count("<circle") == 3  # one point a variant
    for name, v in variants.items():
        assert f"{name}: {v['first_tool_accuracy']:.0%} at {v['prompt_tokens_per_request']:,.0f}" in dom
    # static sends every tool in full: its point lies right of composed's
    xs = {m[1]: float(m[0]) for m in re.findall(r'cx="([\d.]+)"[^>]*>\s*<title>(\w+):', dom)}
    assert xs["static"] > xs["composed"]
    check_rendered(png)


def test_bench_results_that_are_not_a_bench_run_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bench.json"
    bad.write_text('{"variants": {"static": {"tasks": 2}}}')
    code, _, err = run(capsys, "bench", "--results", str(bad), "--format", "html")
    assert code == 2 and f"{bad}: variants.static.first_tool_accuracy: missing or not a number" in err
    bad.write_text("{\n  nope")
    code, _, err = run(capsys, "bench", "--results", str(bad), "--format", "html")
    assert code == 2 and f"{bad}:2: not JSON" in err
    code, _, err = run(capsys, "bench", "--format", "html")
    assert code == 2 and "bench needs --tasks, --mode, --base-url" in err
