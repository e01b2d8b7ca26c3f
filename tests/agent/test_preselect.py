"""Tool choice without the model's cooperation, in the loop: preselection from the task, loading into a tiered
mode, recovery from calls to unseen schemas, and one-line answers to repeated fetches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prompt_composer import Composer, Registry
from prompt_composer.agent.anthropic import wrap
from prompt_composer.core.builtins import FETCH_TOOL_NAME, TOOL_SEARCH_NAME
from prompt_composer.core.fetch import fetch_tool_doc
from prompt_composer.core.modes import PreselectConfig, TierConfig
from prompt_composer.discovery.preselect import preselect
from prompt_composer.discovery.results import Hit, SearchResult, SearchStrategy
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.learn.events import EventLog, JsonlSink, read_events
from prompt_composer.learn.stats import compute_stats
from prompt_composer.testing.replies import text_reply, tool_use_reply
from tests.helpers import TRAVEL_DOCS, bodies, make_mode, message_text, served, text_of, tool_results

MODEL = "m"


SMALL = TierConfig(share=0.004, context_tokens=200_000)  # 800 tokens: only catalog lines fit
REG = Registry.from_docs(
    TRAVEL_DOCS,
    [
        make_mode("auto", groups=["read", "mcp"], tiers=SMALL, preselect=PreselectConfig(k=2, min_confidence=0.1)),
        make_mode("tiered", groups=["read", "mcp"], tiers=SMALL),
        make_mode("plain", groups=["read", "mcp"]),
        make_mode(
            "pinned",
            groups=["read", "mcp"],
            permanent=["weather_lookup"],
            preselect=PreselectConfig(k=2, min_confidence=0.1),
        ),
    ],
)
COMPOSER = Composer(REG)
SEARCH = ToolSearch(REG, embedder=False)


def client(sdk: Any, mode: str, **kw: Any) -> Any:
    return wrap(sdk, composer=COMPOSER, search=SEARCH, mode=mode, task_id="t", **kw)


def names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


def unmarked(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in t.items() if k != "cache_control"} for t in tools]


def test_preselection_loads_the_tool_the_task_needs_after_the_unchanged_prefix(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    script = [tool_use_reply(("w1", "weather_lookup", {"city": "Paris"})), text_reply("Sunny.")]
    events = EventLog(JsonlSink(log), include_content=True)
    with served(script) as (server, sdk):
        result = client(sdk, "auto", events=events).run(
            "What is the weather forecast in Paris?", model=MODEL, executors={"weather_lookup": lambda i: "sunny"}
        )
        sent = bodies(server)
    events.close()
    assert result.text == "Sunny." and result.tool_calls[0].executed
    first, second = sent
    plain = COMPOSER.compose("auto")
    # The preselected catalog tool is appended after everything a prompt without it holds, byte for byte.
    assert names(first)[-1] == "weather_lookup" and "weather_lookup" not in [t["name"] for t in plain.tools]
    assert unmarked(first["tools"][: len(plain.tools)]) == [dict(t) for t in plain.tools]
    assert first["system"][0]["text"] == plain.system_stable
    assert second["tools"] == first["tools"] and second["system"] == first["system"]
    # The user message says what was chosen; the same note goes out on every request (the prefix holds).
    note = message_text(first["messages"][0])
    head = "What is the weather forecast in Paris?\n\n[prompt-composer] Tools a search of this request found"
    assert note.startswith(head) and "suggestions, not instructions" in note
    permanent = COMPOSER.registry.mode("auto").permanent
    assert permanent and all(f"{tool}" in note.split("Loaded into")[0] for tool in permanent)  # the alternatives
    assert "Loaded into your tools for this task: weather_lookup" in note
    assert message_text(second["messages"][0]) == note
    preselect = [e for e in read_events([log])[0] if e["event"] == "preselect"]
    assert len(preselect) == 1 and preselect[0]["tools"][0] == "weather_lookup"
    assert preselect[0]["query"] == "What is the weather forecast in Paris?" and preselect[0]["confidences"]


def test_what_ranks_below_a_permanent_tool_is_not_preselected() -> None:
    mode = REG.mode("pinned")
    config = mode.config.preselect
    assert config is not None
    # The permanent weather_lookup ranks first: the tools below it would only be distractors.
    request = "What is the weather forecast for my train trip to Lyon?"
    assert [h.name for h in SEARCH.search(request, mode, limit=5).hits] == ["weather_lookup", "train_times"]
    assert preselect(SEARCH, mode, request, config).tools == ()
    # Without the permanent tool in the mode's ranking the same request preselects train_times (with no lead cut:
    # train_times scores under 0.7 of weather_lookup, so by default the clear leader loads alone).
    auto = REG.mode("auto")
    assert preselect(SEARCH, auto, request, config, lead_share=0.0).tools[:2] == ("weather_lookup", "train_times")
    assert preselect(SEARCH, auto, request, config).tools == ("weather_lookup",)
    # A tool ranked above the permanent one is kept.
    money = "Convert 10 EUR into dollars for the prices abroad."
    assert preselect(SEARCH, mode, money, config).tools[0] == "currency_convert"


class RankedSearch(ToolSearch):
    """A search whose ranking is given: hits in this order with these similarities."""

    def __init__(self, hits: list[tuple[str, float]]) -> None:
        super().__init__(REG, embedder=False)
        self.hits = hits

    def search(self, query: str, mode: Any, *, limit: int = 5, strategy: Any = None) -> SearchResult:
        ranked = tuple(Hit(n, "mcp", 1.0 - i / 10, sim, "") for i, (n, sim) in enumerate(self.hits))
        return SearchResult(query, mode.slug, "keyword", ranked[:limit], len(ranked), 0.9)

    def search_ranked(
        self, query: str, mode: Any, *, limit: int = 5, strategy: Any = None
    ) -> tuple[SearchResult, list[str]]:
        return self.search(query, mode, limit=limit, strategy=strategy), [n for n, _sim in self.hits]


def test_the_confidence_floor_ends_the_preselection_at_the_first_hit_below_it() -> None:
    """A better-ranked tool under the floor is not skipped for a worse-ranked one above it."""
    config = PreselectConfig(k=3, min_confidence=0.3)
    mode = REG.mode("auto")
    below_first = RankedSearch([("train_times", 0.27), ("currency_convert", 0.34), ("filler_01", 0.32)])
    assert preselect(below_first, mode, "move my booking", config).tools == ()
    below_second = RankedSearch([("train_times", 0.5), ("currency_convert", 0.2), ("filler_01", 0.4)])
    assert preselect(below_second, mode, "move my booking", config).tools == ("train_times",)
    assert preselect(RankedSearch([("train_times", 0.5), ("filler_01", 0.4)]), mode, "x", config).confidences == (
        0.5,
        0.4,
    )


class FusedSearch(ToolSearch):
    """A hybrid search whose fused and keyword rankings are given."""

    def __init__(self, fused: list[str], keyword: list[str], default: SearchStrategy = "hybrid") -> None:
        super().__init__(REG, embedder=False)
        self.rankings = {"keyword": keyword, "hybrid": fused}
        self.default = default
        self.asked: list[str] = []

    def search(self, query: str, mode: Any, *, limit: int = 5, strategy: Any = None) -> SearchResult:
        used = strategy or self.default
        self.asked.append(used)
        hits = tuple(Hit(n, "mcp", 1.0 - i / 10, 0.5, "") for i, n in enumerate(self.rankings[used]))
        return SearchResult(query, mode.slug, used, hits[:limit], len(hits), 0.9)

    def search_ranked(
        self, query: str, mode: Any, *, limit: int = 5, strategy: Any = None
    ) -> tuple[SearchResult, list[str]]:
        result = self.search(query, mode, limit=limit, strategy=strategy)
        return result, list(self.rankings[result.strategy])


def test_nothing_is_preselected_when_the_keywords_rank_a_permanent_tool_first() -> None:
    """Embeddings rank by topic: neighbours can outrank the permanent tool whose name and brief the request's own
    words match. Then nothing is loaded, so the model is left with the tool it has in full."""
    mode, config = REG.mode("pinned"), PreselectConfig(k=2, min_confidence=0.1)
    assert mode.permanent == ("weather_lookup",)
    neighbours = FusedSearch(["train_times", "currency_convert", "weather_lookup"], ["weather_lookup", "train_times"])
    assert preselect(neighbours, mode, "Will it rain in Lyon?", config).tools == ()
    assert neighbours.asked == ["hybrid", "keyword"]
    # The keywords agree that another tool serves the request: the fused ranking's tools load as before.
    agreed = FusedSearch(["train_times", "currency_convert", "weather_lookup"], ["train_times", "weather_lookup"])
    assert preselect(agreed, mode, "Trains to Lyon?", config).tools == ("train_times", "currency_convert")
    # A keyword search (no embedder) is not asked twice: its ranking is the one the cut reads.
    keyword = FusedSearch([], ["train_times", "weather_lookup"], default="keyword")
    assert preselect(keyword, mode, "Trains to Lyon?", config).tools == ("train_times",)
    assert keyword.asked == ["keyword"]


def test_stats_report_preselection_precision_and_recall(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    base = {"v": 1, "ts": 0.0, "mode": "auto", "provider": "anthropic"}
    lines = [
        {**base, "task": "a", "event": "preselect", "tools": ["weather_lookup", "train_times"]},
        {**base, "task": "a", "event": "tool_call", "tool": "weather_lookup", "outcome": "ok"},
        {**base, "task": "a", "event": "tool_call", "tool": "currency_convert", "outcome": "ok"},
        {**base, "task": "a", "event": "tool_call", "tool": "read_file", "outcome": "ok"},
        {**base, "task": "b", "event": "tool_call", "tool": "filler_01", "outcome": "ok"},  # no preselection
    ]
    log.write_text("".join(__import__("json").dumps(line) + "\n" for line in lines), encoding="utf-8")
    events, _ = read_events([log])
    mode = next(m for m in compute_stats(events, REG, source="log").modes if m.mode == "auto")
    assert (mode.preselected, mode.preselected_used) == (2, 1)
    assert mode.preselection_precision == 0.5
    assert mode.preselection_recall == 2 / 3  # weather_lookup (preselected) and read_file (permanent) of three
    assert "Preselection" in compute_stats(events, REG, source="log").render()


def test_a_bad_call_to_a_tool_whose_schema_was_not_seen_runs_nothing_and_gets_its_full_text() -> None:
    ran: list[dict[str, Any]] = []
    script = [
        tool_use_reply(("c1", "currency_convert", {"city": "Rome"})),  # the brief hides `amount`
        tool_use_reply(("c2", "currency_convert", {"amount": "10 EUR"})),
        text_reply("done"),
    ]
    with served(script) as (server, sdk):
        result = client(sdk, "plain").run("go", model=MODEL, executors={"currency_convert": ran.append})
        sent = bodies(server)
    assert ran == [{"amount": "10 EUR"}]  # only the second call ran
    first = tool_results(sent[1])[0]
    assert first["is_error"] and "nothing was run" in text_of(first)
    assert fetch_tool_doc(REG.tools["currency_convert"]) in text_of(first)
    assert [c.executed for c in result.tool_calls] == [False, True]


def test_a_call_to_a_catalog_tool_not_yet_loaded_loads_it_and_asks_again() -> None:
    ran: list[dict[str, Any]] = []
    script = [
        tool_use_reply(("c1", "train_times", {"station": "Lyon"})),
        tool_use_reply(("c2", "train_times", {"station": "Lyon"})),
        text_reply("done"),
    ]
    with served(script) as (server, sdk):
        client(sdk, "tiered").run("go", model=MODEL, executors={"train_times": ran.append})
        sent = bodies(server)
    assert "train_times" not in names(sent[0]) and names(sent[1])[-1] == "train_times"
    refused = tool_results(sent[1])[0]
    assert refused["is_error"] and "was not loaded" in text_of(refused) and "unknown" not in text_of(refused)
    assert fetch_tool_doc(REG.tools["train_times"]) in text_of(refused)
    assert ran == [{"station": "Lyon"}]  # the second call, with the schema shown, ran
    assert names(sent[2])[: len(names(sent[1]))] == names(sent[1])  # loading only appended


def test_a_second_fetch_of_a_tool_answers_with_one_line() -> None:
    script = [
        tool_use_reply(("f1", FETCH_TOOL_NAME, {"name": "currency_convert"})),
        tool_use_reply(("f2", FETCH_TOOL_NAME, {"name": "currency_convert"})),
        text_reply("done"),
    ]
    with served(script) as (server, sdk):
        client(sdk, "plain").run("go", model=MODEL)
        sent = bodies(server)
    first, second = text_of(tool_results(sent[1])[0]), text_of(tool_results(sent[2])[0])
    assert first == fetch_tool_doc(REG.tools["currency_convert"])
    assert second.startswith("currency_convert is already documented in full above") and "\n" not in second


def test_fetching_a_catalog_tool_loads_it_and_tool_search_loads_what_it_finds() -> None:
    script = [
        tool_use_reply(("f1", FETCH_TOOL_NAME, {"name": "train_times"})),
        tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "weather forecast for a city"})),
        text_reply("done"),
    ]
    with served(script) as (server, sdk):
        client(sdk, "tiered").run("go", model=MODEL)
        sent = bodies(server)
    assert names(sent[1])[-1] == "train_times"
    assert names(sent[2])[-2:] == ["train_times", "weather_lookup"]
