"""benchmarks/bench_session.py without the model: why a request missed the cache, and the session's figure."""

from __future__ import annotations

from typing import Any

from benchmarks.bench_session import Request, report, why_lost


def request(index: int, *, task: int = 0, conversation: int = 0, cached: int = 950, **kw: Any) -> Request:
    values: dict[str, Any] = {"fingerprint": "f", "tools": "t", "system": "s", **kw}
    return Request(index, task, conversation, 1, 1000 - cached, cached, values["fingerprint"], values["tools"],
                   values["system"])  # fmt: skip


def test_a_request_that_read_most_of_its_input_from_the_cache_lost_nothing() -> None:
    assert why_lost(request(1, cached=900), request(0)) is None


def test_every_miss_is_named_by_what_changed_first() -> None:
    before = request(0)
    assert why_lost(request(0, cached=0), None) == "first request (cold)"
    reload = why_lost(request(1, cached=0, fingerprint="g"), before)
    assert reload is not None and reload.startswith("hot reload")
    assert why_lost(request(1, cached=0, system="x"), before) == "the system prompt changed"
    # A new conversation may also have other tools: the new conversation is the reason.
    new = why_lost(request(1, cached=0, conversation=1, tools="u"), before)
    assert new is not None and new.startswith("new conversation")
    appended = why_lost(request(1, cached=0, task=1, tools="u"), before)
    assert appended is not None and appended.startswith("tools appended")
    assert why_lost(request(1, cached=0, task=1), before) == "a new user message longer than a tenth of the request"
    grew = why_lost(request(1, cached=0), before)
    assert grew is not None and grew.startswith("the conversation grew")


def test_the_figure_counts_every_request_after_the_first() -> None:
    requests = [request(0, cached=0), request(1, cached=900, task=1, conversation=1), request(2, cached=500, task=1)]
    requests[0].lost = "first request (cold)"
    out = report(requests)
    assert (out["requests"], out["tasks"], out["conversations"]) == (3, 2, 2)
    assert out["input_after_first"] == 2000 and out["cached_after_first"] == 1400 and out["cached_share"] == 0.7
    assert [r["index"] for r in out["lost"]] == [0]
