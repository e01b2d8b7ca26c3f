"""``preselect: {shortlist_stubs: true}``: the shortlisted tools are declared in the tool list as stubs (name and
summary, no schema) after the loaded ones, so a model that calls only what its tool list declares can call them; a
first call loads the tool and answers with its parameters; never a tool outside the mode; the tool list only grows
at its end while nothing loads."""

from __future__ import annotations

from typing import Any

from prompt_composer import Composer, Registry
from prompt_composer.agent.anthropic import wrap
from prompt_composer.agent.preselection import SHORTLIST_HEAD, SHORTLIST_STUBS_HEAD
from prompt_composer.core.fetch import fetch_tool_doc
from prompt_composer.core.modes import PreselectConfig, TierConfig
from prompt_composer.core.session import TaskSession
from prompt_composer.core.tiers import summary
from prompt_composer.discovery.preselect import preselect
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.testing.replies import text_reply, tool_use_reply
from tests.helpers import TRAVEL_DOCS, bodies, make_mode, message_text, served, text_of, tool_names, tool_results

MODEL = "m"
SMALL = TierConfig(share=0.004, context_tokens=200_000)  # only catalog lines fit
STUBS = PreselectConfig(k=1, min_confidence=0.1, shortlist=3, shortlist_stubs=True)
REG = Registry.from_docs(
    TRAVEL_DOCS,
    [
        make_mode("auto", groups=["read", "mcp"], tiers=SMALL, preselect=STUBS),
        make_mode(
            "plain",
            groups=["read", "mcp"],
            tiers=SMALL,
            preselect=PreselectConfig(k=1, min_confidence=0.1, shortlist=3),
        ),
        make_mode("narrow", groups=["read", "mcp"], exclude=["currency_convert"], tiers=SMALL, preselect=STUBS),
        make_mode("found", groups=["read", "mcp"], discovery=True, preselect=STUBS),
        make_mode("text", groups=["read", "mcp"], tiers=SMALL, preselect=STUBS, tool_style="text"),
    ],
)
COMPOSER = Composer(REG)
SEARCH = ToolSearch(REG, embedder=False)
REQUEST = "Plan my rail journey to Lyon: train departures, the weather forecast there, and prices in francs."


def client(sdk: Any, mode: str) -> Any:
    return wrap(sdk, composer=COMPOSER, search=SEARCH, mode=mode, task_id="t")


def run(mode: str, script: list[Any], executors: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    with served(script) as (server, sdk):
        client(sdk, mode).run(REQUEST, model=MODEL, executors=executors or {})
        return bodies(server)


def test_the_shortlist_is_declared_as_stubs_after_the_tools_and_the_note_only_names_it() -> None:
    found = preselect(SEARCH, REG.mode("auto"), REQUEST, STUBS)
    assert found.shortlist, "the request must rank more than one tool for this test to say anything"
    tiers = COMPOSER.tiers("auto")
    assert tiers is not None
    hidden = [n for n in found.shortlist if tiers.unlisted(n)]  # a brief tool is declared already
    assert hidden and len(hidden) < len(found.shortlist)
    sent = run("auto", [text_reply("done")])
    tools = sent[0]["tools"]
    declared = tools[-len(hidden) :]
    assert [t["name"] for t in declared] == hidden  # last, in rank order
    assert all(tool_names(sent[0]).count(n) == 1 for n in found.shortlist)
    for stub in declared:
        assert stub["input_schema"] == {"type": "object"}
        assert stub["description"] == summary(REG.tools[stub["name"]])
    note = message_text(sent[0]["messages"][0])
    assert f"{SHORTLIST_STUBS_HEAD} {', '.join(found.shortlist)}." in note
    assert SHORTLIST_HEAD not in note  # the summaries are in the stubs: not said twice
    # By default (the setting left out) the same mode declares none of them and the note carries their lines.
    plain = run("plain", [text_reply("done")])
    assert not set(hidden) & set(tool_names(plain[0]))
    assert SHORTLIST_HEAD in message_text(plain[0]["messages"][0])
    assert tool_names(plain[0]) == tool_names(sent[0])[: len(tool_names(plain[0]))]  # the stubs only add, at the end


def test_a_call_of_a_stub_loads_the_tool_and_the_next_call_runs() -> None:
    found = preselect(SEARCH, REG.mode("auto"), REQUEST, STUBS)
    tiers = COMPOSER.tiers("auto")
    assert tiers is not None
    listed = next(n for n in found.shortlist if tiers.unlisted(n))
    param = next(iter(REG.tools[listed].input_schema["properties"]))
    ran: list[dict[str, Any]] = []
    script = [
        tool_use_reply(("c1", listed, {param: "Lyon"})),
        tool_use_reply(("c2", listed, {param: "Lyon"})),
        text_reply("done"),
    ]
    sent = run("auto", script, {listed: ran.append})
    refused = tool_results(sent[1])[0]
    assert refused["is_error"] and "was not loaded" in text_of(refused)
    assert fetch_tool_doc(REG.tools[listed]) in text_of(refused)
    assert ran == [{param: "Lyon"}]  # the blind first call did not run; the second did
    loaded = next(t for t in sent[1]["tools"] if t["name"] == listed)
    assert loaded["input_schema"] == REG.tools[listed].input_schema  # in full now, declared once
    assert tool_names(sent[1]).count(listed) == 1
    # In the stub's place: nothing else moved.
    assert tool_names(sent[0])[-1] == listed and tool_names(sent[1])[-1] == listed
    assert tool_names(sent[1]) == tool_names(sent[0])
    # The note is the same on every request: the conversation a provider cached never changes behind it.
    assert len({message_text(body["messages"][0]) for body in sent}) == 1


def test_a_stub_is_never_a_tool_outside_the_mode() -> None:
    sent = run("narrow", [text_reply("done")])
    assert "currency_convert" not in tool_names(sent[0])
    assert "currency_convert" not in message_text(sent[0]["messages"][0])
    narrow = REG.mode("narrow")
    session = TaskSession()
    session.preselect("k", [], ["currency_convert", "weather_lookup"])
    assert session.offered(narrow) == ("weather_lookup",)
    assert "currency_convert" not in tool_names({"tools": list(COMPOSER.compose(narrow, session).tools)})


def test_in_a_discovery_mode_the_stubs_follow_the_builtin_tools_and_a_loaded_tool_leaves_them() -> None:
    mode = REG.mode("found")
    session = TaskSession()
    session.preselect("k", ["train_times"], ["weather_lookup", "currency_convert"])
    prompt = COMPOSER.compose(mode, session)
    assert tool_names({"tools": list(prompt.tools)})[-2:] == ["weather_lookup", "currency_convert"]
    assert prompt.offered == ("weather_lookup", "currency_convert")
    without = COMPOSER.compose(mode, session, offered=())
    stub_tokens = sum(COMPOSER.definitions.stub(n, summarised=True)[1] for n in prompt.offered)
    assert prompt.tokens.tools == without.tokens.tools + stub_tokens  # what they cost is counted
    session.discover(["weather_lookup"])
    after = COMPOSER.compose(mode, session)
    assert after.offered == ("currency_convert",) and "weather_lookup" in after.full
    assert prompt.as_dict()["offered"] == ["weather_lookup", "currency_convert"]


def test_a_text_style_mode_declares_nothing_and_keeps_the_lines() -> None:
    session = TaskSession()
    session.preselect("k", [], ["weather_lookup"])
    prompt = COMPOSER.compose(REG.mode("text"), session)
    assert prompt.offered == () and prompt.tools == ()
    sent = run("text", [text_reply("done")])
    assert SHORTLIST_HEAD in message_text(sent[0]["messages"][0])


def test_the_cache_breakpoint_and_call_tool_go_before_the_loaded_tools_and_the_stubs() -> None:
    with served([text_reply("done")]) as (server, sdk):
        wrap(sdk, composer=COMPOSER, search=SEARCH, mode="auto", task_id="t", call_tool=True).run(REQUEST, model=MODEL)
        body = bodies(server)[0]
    tools = tool_names(body)
    session = TaskSession()
    found = preselect(SEARCH, REG.mode("auto"), REQUEST, STUBS)
    session.preselect("k", found.tools, found.shortlist)
    prompt = COMPOSER.compose(REG.mode("auto"), session)
    tail = len(prompt.loaded) + len(prompt.offered)
    assert prompt.offered and tools[-tail:] == [*prompt.loaded, *prompt.offered]
    assert tools[-tail - 1] == "call_tool"  # fixed per mode: before what grows within the task
    marked = [t["name"] for t in body["tools"] if "cache_control" in t]
    assert marked == ["call_tool"]  # the last tool that does not change within the task
