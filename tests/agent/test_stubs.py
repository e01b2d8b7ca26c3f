"""A tiered mode with ``stubs: true``: every tool is declared from the first request, loading sends text into the
conversation, and the tool list never changes within a task (so a server that renders the tools before the
conversation keeps its cache of the conversation)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prompt_composer import Composer, Registry, run_audit
from prompt_composer.agent.anthropic import wrap
from prompt_composer.core.builtins import FETCH_TOOL_NAME, TOOL_SEARCH_NAME
from prompt_composer.core.fetch import fetch_tool_doc
from prompt_composer.core.modes import ModeConfig, PreselectConfig, TierConfig
from prompt_composer.core.session import InMemorySessionStore
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.testing.replies import text_reply, tool_use_reply
from tests.helpers import TRAVEL_DOCS, bodies, make_mode, message_text, served, text_of, tool_results

MODEL = "m"


STUBS = TierConfig(share=0.006, context_tokens=200_000, stubs=True)  # 1,200 tokens: 9 briefs, the rest stubs
REG = Registry.from_docs(
    TRAVEL_DOCS,
    [
        make_mode(
            "stubbed",
            groups=["read", "mcp"],
            permanent=["read_file"],
            tiers=STUBS,
            preselect=PreselectConfig(k=2, min_confidence=0.1),
        ),
        make_mode("outside", groups=["read"], permanent=["read_file"], tiers=STUBS),
    ],
)
COMPOSER = Composer(REG)
SEARCH = ToolSearch(REG, embedder=False)
TIERS = COMPOSER.tiers("stubbed")


def client(sdk: Any, **kw: Any) -> Any:
    return wrap(sdk, composer=COMPOSER, search=SEARCH, mode="stubbed", task_id="t", **kw)


def tools_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in t.items() if k != "cache_control"} for t in body["tools"]]


def unmarked(messages: list[dict[str, Any]]) -> list[Any]:
    """``messages`` without the cache breakpoints (which move to the newest message on every request, turning a
    string content into one text block: the same text to the provider)."""
    blocks = [
        {**m, "content": [{"type": "text", "text": m["content"]}]} if isinstance(m["content"], str) else m
        for m in messages
    ]
    return list(json.loads(json.dumps(blocks).replace(', "cache_control": {"type": "ephemeral"}', "")))


def test_every_tool_of_the_mode_is_declared_and_the_unlisted_ones_as_stubs() -> None:
    assert TIERS is not None and TIERS.stubs and TIERS.brief and (TIERS.catalog or TIERS.names)
    prompt = COMPOSER.compose("stubbed")
    mode = REG.mode("stubbed")
    declared = [t["name"] for t in prompt.tools]
    assert declared == [*mode.allowed, TOOL_SEARCH_NAME, FETCH_TOOL_NAME]
    for definition in prompt.tools:
        name = definition["name"]
        if name in TIERS.catalog or name in TIERS.names:
            assert definition["input_schema"] == {"type": "object"}
            assert len(definition["description"].split()) <= 16  # a catalog summary at most, never the full text
            assert COMPOSER.tiers("stubbed").tier(mode, name) == "stub"  # type: ignore[union-attr]
    # No catalog section in the system prompt: the stubs are the catalog. Nothing is hidden: a stub is callable.
    assert "MORE TOOLS" not in prompt.system_stable and not prompt.hidden()
    # Loading changes nothing in the prompt: what loads goes into the conversation.
    assert COMPOSER.compose("stubbed", loaded=["train_times", "filler_19"]) == prompt
    # Stubs of a mode never name a tool outside it.
    outside = COMPOSER.compose("outside")
    assert {t["name"] for t in outside.tools} - {TOOL_SEARCH_NAME, FETCH_TOOL_NAME} == {"read_file"}


def test_audit_reports_stub_tiers() -> None:
    report = run_audit(COMPOSER)
    mode = next(m for m in report.modes if m.mode == "stubbed")
    tiers = dict(mode.tiers)
    assert tiers["read_file"] == "full" and "stub" in tiers.values() and "catalog" not in tiers.values()


def test_a_text_style_mode_cannot_have_stubs() -> None:
    with pytest.raises(ValueError, match=r"tiers\.stubs declares tools in the tool list"):
        ModeConfig(**{**make_mode("m").model_dump(), "tool_style": "text", "tiers": {"stubs": True}})


def test_a_conversation_sends_one_tool_list_while_preselection_and_recovery_load_tools() -> None:
    """Two user messages of one task: the second preselects stubbed tools (their full text goes in its note),
    then the model calls a stub it was never shown with bad arguments, and again with right ones. Every request
    carries the same tools and system prompt; the texts go in the conversation."""
    ran: list[dict[str, Any]] = []
    assert TIERS is not None and TIERS.stubbed("train_times") and TIERS.stubbed("filler_19")
    script = [
        text_reply("Hello."),
        tool_use_reply(("c1", "train_times", {"station": "Lyon"})),
        tool_use_reply(("c2", "filler_19", {"station": "Lyon"})),  # a guess: the stub shows no schema
        tool_use_reply(("c3", "filler_19", {"city": "Lyon"})),
        text_reply("The 9:05."),
    ]
    executors = {"train_times": ran.append, "filler_19": ran.append}
    with served(script) as (server, sdk):
        first = client(sdk).run("hi", model=MODEL)
        second = client(sdk).run(
            [*first.messages, {"role": "user", "content": "Which trains leave from Lyon station?"}],
            model=MODEL,
            executors=executors,
        )
        sent = bodies(server)
    assert second.text == "The 9:05." and ran == [{"station": "Lyon"}, {"city": "Lyon"}]
    assert len(sent) == 5
    assert all(tools_of(body) == tools_of(sent[0]) for body in sent)
    assert all(body["system"] == sent[0]["system"] for body in sent)
    # The preselection note of the second message carries the full text of what it loaded.
    note = message_text(sent[1]["messages"][-1])
    assert "train_times" in note and fetch_tool_doc(REG.tools["train_times"]) in note
    # The conversation only grows at its end: the first request's messages go out again unchanged.
    earlier = sent[0]["messages"]
    assert unmarked(sent[1]["messages"][: len(earlier)]) == unmarked(earlier) and len(earlier) == 1
    # The bad call to the stub never shown ran nothing and brought its full text.
    refused = tool_results(sent[3])[0]
    assert refused["is_error"] and "nothing was run" in text_of(refused)
    assert fetch_tool_doc(REG.tools["filler_19"]) in text_of(refused)


def test_a_stub_called_before_its_text_was_shown_runs_nothing_even_with_arguments_its_schema_takes() -> None:
    ran: list[dict[str, Any]] = []
    script = [
        tool_use_reply(("c1", "filler_19", {"city": "Oslo"})),  # a right guess, but a blind one
        tool_use_reply(("c2", "filler_19", {"city": "Oslo"})),
        text_reply("done"),
    ]
    with served(script) as (server, sdk):
        result = client(sdk).run("go", model=MODEL, executors={"filler_19": ran.append})
        sent = bodies(server)
    assert ran == [{"city": "Oslo"}] and [c.executed for c in result.tool_calls] == [False, True]
    refused = text_of(tool_results(sent[1])[0])
    assert "nothing was run" in refused and fetch_tool_doc(REG.tools["filler_19"]) in refused
    assert COMPOSER.compose("stubbed").stubs == tuple(n for n in REG.mode("stubbed").allowed if TIERS.stubbed(n))  # type: ignore[union-attr]


def test_fetch_and_tool_search_answer_in_the_conversation_without_changing_the_tools() -> None:
    script = [
        tool_use_reply(("f1", FETCH_TOOL_NAME, {"name": "train_times"})),
        tool_use_reply(("s1", TOOL_SEARCH_NAME, {"query": "weather forecast for a city"})),
        text_reply("done"),
    ]
    with served(script) as (server, sdk):
        client(sdk).run("go", model=MODEL)
        sent = bodies(server)
    assert text_of(tool_results(sent[1])[0]) == fetch_tool_doc(REG.tools["train_times"])
    assert "weather_lookup" in text_of(tool_results(sent[2])[0])
    assert all(tools_of(body) == tools_of(sent[0]) for body in sent)


def test_a_tool_preselected_again_in_the_conversation_is_documented_once() -> None:
    """Two user messages of one task that preselect the same tool: the first note carries its full text, the
    second names it as documented above, and the first note goes out unchanged with the second message."""
    script = [text_reply("The 9:05."), text_reply("The 10:40.")]
    store = InMemorySessionStore()
    with served(script) as (server, sdk):
        first = client(sdk, store=store).run("Which trains leave from Lyon station?", model=MODEL)
        client(sdk, store=store).run(
            [*first.messages, {"role": "user", "content": "And which trains leave from Paris station?"}], model=MODEL
        )
        sent = bodies(server)
    full = fetch_tool_doc(REG.tools["train_times"])
    first_note, second_note = message_text(sent[1]["messages"][0]), message_text(sent[1]["messages"][-1])
    assert "train_times" in first_note and full in first_note
    assert "train_times" in second_note and full not in second_note
    assert "Documented in an earlier note above: train_times" in second_note
    assert unmarked(sent[1]["messages"][:1]) == unmarked(sent[0]["messages"])
