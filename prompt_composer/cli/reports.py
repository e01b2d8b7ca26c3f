"""The HTML reports of ``audit``, ``stats`` and ``bench`` (``--format html``): one self-contained file each, charts
as inline SVG drawn by the templates beside this module, nothing fetched from anywhere (no script, font or
image), so a report opens offline and can be attached to a CI run.

The geometry (pixels) is worked out here; the templates only draw it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2

from ..core.audit import AuditReport
from ..core.registry import Registry
from ..errors import InputFileError
from ..learn.stats import StatsReport
from ..shared.jsontext import MAX_JSON_INT
from ..shared.version import VERSION

WIDTH = 920  # every chart's width, pixels
LEFT = 190  # room for the row labels of a bar chart
_BAR = 11  # one bar's height
_GAP = 10  # between two rows of bars
_TIME_BUCKETS = 24  # points of a series over time at most

Bar = tuple[str, float, str]  # (series name, value, css class)


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("prompt_composer.cli", "templates"),
        autoescape=True,  # tool names and notes come from user files: escaped, never markup
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
    )


def _render(template: str, **values: Any) -> str:
    return _env().get_template(template).render(version=VERSION, share=share, **values)


def share(value: float | None) -> str:
    """``0.8125`` → ``81%``; ``None`` (not measured) → ``–``."""
    return "–" if value is None else f"{value:.0%}"


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 or value == int(value) else f"{value:.2g}"


def nice_ticks(top: float, count: int = 5, *, whole: bool = False) -> list[float]:
    """Tick values from 0 to at least ``top``, at a step of 1, 2 or 5 × 10^k, about ``count`` of them; a step of
    at least 1 when the values are ``whole`` counts."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    if whole:
        step = max(step, 1)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def hbar_chart(
    title: str, rows: Sequence[tuple[str, Sequence[Bar], float | None]], *, marker_name: str = ""
) -> dict[str, Any]:
    """Grouped horizontal bars: ``rows`` of (label, bars, marker value or None)."""
    top = max([v for _, bars, _ in rows for _, v, _ in bars] + [m for _, _, m in rows if m is not None] + [0.0])
    ticks = nice_ticks(top, whole=all(float(v).is_integer() for _, bars, _ in rows for _, v, _ in bars))
    span = WIDTH - LEFT - 60

    def x(value: float) -> float:
        return round(LEFT + span * value / ticks[-1], 1)

    laid: list[dict[str, Any]] = []
    y = 6.0
    for label, bars, marker in rows:
        start = y
        drawn = []
        for name, value, cls in bars:
            drawn.append({"name": name, "value": _fmt(value), "cls": cls, "y": y, "h": _BAR, "w": x(value) - LEFT})
            y += _BAR + 2
        laid.append(
            {
                "label": label,
                "label_y": round((start + y) / 2 + 2, 1),
                "bars": drawn,
                "marker": None
                if marker is None
                else {"x": x(marker), "y1": start - 3, "y2": y + 1, "value": _fmt(marker)},
            }
        )
        y += _GAP
    bottom = y
    return {
        "title": title,
        "width": WIDTH,
        "height": round(bottom + 22),
        "left": LEFT,
        "plot_bottom": bottom,
        "rows": laid,
        "ticks": [{"x": x(t), "label": _fmt(t)} for t in ticks],
        "marker_name": marker_name,
    }


def xy_chart(
    title: str,
    x_label: str,
    y_label: str,
    *,
    points: Sequence[tuple[str, float, float, str]] = (),
    lines: Sequence[tuple[str, Sequence[tuple[float, float]], str]] = (),
    x_percent: bool = False,
    y_percent: bool = False,
) -> dict[str, Any]:
    """A scatter of labelled ``points`` (label, x, y, css class) and/or ``lines`` (name, [(x, y)], css class) on
    axes from 0; ``*_percent`` axes run 0–100% (values are shares, 0–1)."""
    left, right, top, bottom, height = 70, WIDTH - 140, 12, 300, 340
    xs = [p[1] for p in points] + [x for _, pts, _ in lines for x, _ in pts]
    ys = [p[2] for p in points] + [y for _, pts, _ in lines for _, y in pts]
    xt = [i / 5 for i in range(6)] if x_percent else nice_ticks(max(xs, default=0.0) * (1.08 if points else 1))
    yt = (
        [i / 5 for i in range(6)]
        if y_percent
        else nice_ticks(max(ys, default=0.0), whole=all(y.is_integer() for y in ys))
    )

    def px(value: float) -> float:
        return round(left + (right - left) * value / xt[-1], 1)

    def py(value: float) -> float:
        return round(bottom - (bottom - top) * value / yt[-1], 1)

    def label(value: float, percent: bool) -> str:
        return f"{value:.0%}" if percent else _fmt(value)

    return {
        "title": title,
        "width": WIDTH,
        "height": height,
        "left": left,
        "right": right,
        "top": top,
        "bottom": bottom,
        "x_label": x_label,
        "y_label": y_label,
        "xticks": [{"pos": px(t), "label": label(t, x_percent)} for t in xt],
        "yticks": [{"pos": py(t), "label": label(t, y_percent)} for t in yt],
        "points": [
            {
                "label": name,
                "x": px(x),
                "y": py(y),
                "cls": cls,
                "title": f"{name}: {label(y, y_percent)} at {label(x, x_percent)}",
            }
            for name, x, y, cls in points
        ],
        "lines": [{"name": name, "cls": cls, "points": [(px(x), py(y)) for x, y in pts]} for name, pts, cls in lines],
    }


# --- audit -----------------------------------------------------------------------------------------------------


def holds(report: AuditReport, registry: Registry) -> dict[str, dict[str, str]]:
    """``tool → mode → how``: ``full`` (permanent), ``brief``, ``search`` (a discovery mode's), a tiered mode's
    tier, or ``·`` (not in the mode)."""
    out: dict[str, dict[str, str]] = {t.name: {} for t in report.tools}
    for audit in report.modes:
        mode = registry.mode(audit.mode)
        tiers = dict(audit.tiers)
        for name in out:
            if not mode.allows(name):
                how = "·"
            elif name in tiers:
                how = tiers[name] or "brief"
            elif name in mode.permanent:
                how = "full"
            else:
                how = "search" if mode.config.discovery else "brief"
            out[name][audit.mode] = how
    return out


def audit_html(report: AuditReport, registry: Registry, status: Mapping[str, str]) -> str:
    """``audit --format html``; ``status`` is each mode's status as the table prints it."""
    modes = hbar_chart(
        "tokens per mode",
        [
            (
                m.mode,
                [
                    ("baseline", m.baseline_tokens, "s0"),
                    ("composed", m.composed_tokens, "s1"),
                    ("worst", m.worst_tokens, "s2"),
                ],
                m.budget_tokens,
            )
            for m in report.modes
        ],
        marker_name="budget",
    )
    tools = hbar_chart(
        "tokens per tool",
        [(t.name, [("full", t.full_tokens, "s1"), ("brief", t.brief_tokens, "s3")], None) for t in report.tools],
    )
    return _render(
        "audit.html.j2",
        title="prompt-composer audit",
        subtitle=f"registry {report.fingerprint}; tokens counted with cl100k_base",
        report=report,
        modes_chart=modes,
        tools_chart=tools,
        holds=holds(report, registry),
        status=status,
    )


# --- stats -----------------------------------------------------------------------------------------------------


FAILED_OUTCOMES = ("error", "denied")  # a tool call that ran and failed, or that the user denied


def time_unit(span: float) -> tuple[float, str]:
    """Seconds per unit, and the axis label, for a log spanning ``span`` seconds: seconds under two minutes,
    minutes under two hours, else hours; so the ticks are round numbers of a unit that reads well."""
    if span < 120:
        return 1.0, "seconds since the first event"
    if span < 7200:
        return 60.0, "minutes since the first event"
    return 3600.0, "hours since the first event"


def _timeline(events: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Tool calls and fetches, uncached input and cache reads, per interval of the log's time span; ``None`` when
    the events have no time span (traces, a single event)."""
    stamped = [e for e in events if isinstance(e.get("ts"), int | float)]
    if len(stamped) < 2:
        return None
    t0 = min(float(e["ts"]) for e in stamped)
    t1 = max(float(e["ts"]) for e in stamped)
    if t1 <= t0:
        return None
    n = _TIME_BUCKETS
    calls, failed, fetches, uncached, cached = ([0.0] * n for _ in range(5))
    for e in stamped:
        i = min(n - 1, int((float(e["ts"]) - t0) / (t1 - t0) * n))
        kind = e.get("event")
        if kind == "tool_call":
            calls[i] += 1
            if e.get("outcome") in FAILED_OUTCOMES:
                failed[i] += 1
        elif kind == "fetch":
            fetches[i] += 1
        elif kind == "request" and isinstance(e.get("usage"), Mapping):
            usage = e["usage"]
            uncached[i] += float(usage.get("input_tokens") or 0)
            cached[i] += float(usage.get("cache_read_input_tokens") or 0)
    # Time from the first event, at each interval's middle, in the unit that suits the log's span.
    seconds, unit = time_unit(t1 - t0)
    minutes = [((i + 0.5) * (t1 - t0) / n) / seconds for i in range(n)]
    calls_chart = xy_chart(
        "tool calls and fetches over time",
        unit,
        "per interval",
        lines=[
            ("tool calls", list(zip(minutes, calls, strict=True)), "s1"),
            ("failed calls", list(zip(minutes, failed, strict=True)), "s4"),
            ("fetches", list(zip(minutes, fetches, strict=True)), "s2"),
        ],
    )
    cache_chart = xy_chart(
        "input and cache reads over time",
        unit,
        "tokens per interval",
        lines=[
            ("input tokens", list(zip(minutes, uncached, strict=True)), "s0"),
            ("cache reads", list(zip(minutes, cached, strict=True)), "s3"),
        ],
    )
    return calls_chart, cache_chart


def stats_html(report: StatsReport, events: Sequence[Mapping[str, Any]]) -> str:
    """``stats --format html``: ``report`` as ``stats`` computes it, ``events`` the log it read (for the charts
    over time)."""
    used = sorted(report.tools, key=lambda t: (-(t.uses + t.errors + t.denied + t.fetches + t.refusals), t.tool))
    tools = hbar_chart(
        "tool use",
        [
            (
                t.tool,
                [
                    ("uses", t.uses, "s1"),
                    ("failed", t.errors + t.denied, "s4"),  # a tool whose every call failed is a row too
                    ("fetches", t.fetches, "s2"),
                    ("refusals", t.refusals, "s5"),
                ],
                None,
            )
            for t in used
            if t.uses or t.errors or t.denied or t.fetches or t.refusals
        ],
    )
    preselection = hbar_chart(
        "preselection",
        [
            (
                m.mode,
                [
                    ("precision %", round(100 * (m.preselection_precision or 0.0)), "s1"),
                    ("recall %", round(100 * (m.preselection_recall or 0.0)), "s3"),
                ],
                None,
            )
            for m in report.modes
            if m.preselection_precision is not None or m.preselection_recall is not None
        ],
    )
    timeline = _timeline(events)
    return _render(
        "stats.html.j2",
        title="prompt-composer stats",
        subtitle=f"{report.events} events, {report.tasks} tasks, from {report.source}",
        report=report,
        tools_chart=tools,
        preselection_chart=preselection,
        calls_chart=timeline[0] if timeline else None,
        cache_chart=timeline[1] if timeline else None,
    )


# --- bench -----------------------------------------------------------------------------------------------------

_BENCH_NUMBERS = ("tasks", "first_tool_accuracy", "prompt_tokens_per_request")


def bench_html(results: Mapping[str, Any], source: str | Path) -> str:
    """``bench --format html``: ``results`` as ``bench --format json`` writes them (read from ``source``)."""
    variants = results.get("variants") if isinstance(results, Mapping) else None
    if not isinstance(variants, Mapping) or not variants:
        raise InputFileError(f"{source}: no 'variants' object: not a `bench --format json` results file", path=source)
    for name, v in variants.items():
        for key in _BENCH_NUMBERS:
            value = v.get(key) if isinstance(v, Mapping) else None
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise InputFileError(f"{source}: variants.{name}.{key}: missing or not a number", path=source)
            top, top_text = (1, "1") if key.endswith("accuracy") else (MAX_JSON_INT, "2**53")
            if not 0 <= value <= top:  # strict_json has refused NaN, Infinity and whole numbers past 2**53
                raise InputFileError(
                    f"{source}: variants.{name}.{key}: {value:g} is not from 0 to {top_text}", path=source
                )
    rows = list(variants.items())
    chart = xy_chart(
        "accuracy against tokens a request",
        "prompt tokens a request (mean)",
        "first-tool accuracy",
        points=[
            (name, float(v["prompt_tokens_per_request"]), float(v["first_tool_accuracy"]), f"s{i % 6}")
            for i, (name, v) in enumerate(rows)
        ],
        y_percent=True,
    )
    tasks = max(int(v["tasks"]) for _, v in rows)
    return _render(
        "bench.html.j2",
        title="prompt-composer bench",
        subtitle=f"{len(rows)} variants, {tasks} tasks each, from {source}",
        chart=chart,
        variants=[(name, _VariantView(v)) for name, v in rows],
    )


class _VariantView:
    """A variant's numbers for the template: a missing one (an older results file) shows as ``–``."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = values

    def __getattr__(self, key: str) -> Any:
        value = self._values.get(key)
        if key.endswith("accuracy"):
            return value if isinstance(value, int | float) else None
        return "–" if value is None else value
