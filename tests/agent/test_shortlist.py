"""The preselection's shortlist: after the tools it loads, the next tools of the same ranking, named in the note
with a short summary, callable through the recovery path, never outside the mode, and the same note on every
request of the task (the cached prefix holds)."""

from __future__ import annotations

from typing import Any

from prompt_composer import Composer, Registry
from prompt_composer.agent.anthropic import wrap
from prompt_composer.agent.preselection import SHORTLIST_HEAD, SHORTLIST_WORDS
from prompt_composer.core.fetch import fetch_tool_doc
from prompt_composer.core.modes import PreselectConfig, TierConfig
from prompt_composer.core.session import SessionData
from prompt_composer.discovery.preselect import preselect
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.testing.replies import text_reply, tool_use_reply
from tests.helpers import TRAVEL_DOCS, bodies, make_mode, message_text, served, text_of, tool_names, tool_results

MODEL = "m"
SMALL = TierConfig(share=0.004, context_tokens=200_000)  # only catalog lines fit
SHORT = PreselectConfig(k=1, min_confidence=0.1, shortlist=3)  # the note form, the default
REG = Registry.from_docs(
    TRAVEL_DOCS,
    [
        make_mode("auto", groups=["read", "mcp"], tiers=SMALL, preselect=SHORT),
        make_mode("narrow", groups=["read", "mcp"], exclude=["currency_convert"], tiers=SMALL, preselect=SHORT),
        make_mode("found", groups=["read", "mcp"], discovery=True, preselect=SHORT),
        make_mode("none", groups=["read", "mcp"], tiers=SMALL, preselect=SHORT.model_copy(update={"shortlist": 0})),
    ],
)
COMPOSER = Composer(REG)
SEARCH = ToolSearch(REG, embedder=False)
REQUEST = "Plan my rail journey to Lyon: train departures, the weather forecast there, and prices in francs."


def client(sdk: Any, mode: str) -> Any:
    return wrap(sdk, composer=COMPOSER, search=SEARCH, mode=mode, task_id="t")


def test_the_shortlist_is_the_next_tools_of_the_ranking_within_the_mode() -> None:
    mode = REG.mode("auto")
    found = preselect(SEARCH, mode, REQUEST, SHORT)
    ranking = [n for n in SEARCH.rank(" ".join(REQUEST.split()), mode)[0] if n not in mode.permanent]
    assert len(found.tools) == 1 and found.tools[0] == ranking[0]
    assert found.shortlist == tuple(ranking[1:4])  # after what is loaded, in rank order
    assert {"weather_lookup", "currency_convert", "train_times"} <= {*found.tools, *found.shortlist}
    # Never a tool outside the mode, though it ranks there in a mode that has it.
    narrow = preselect(SEARCH, REG.mode("narrow"), REQUEST, SHORT)
    assert "currency_convert" not in (*narrow.tools, *narrow.shortlist)
    assert narrow.shortlist == ("weather_lookup",)  # what else matches in that mode: no filler to pad the list
    assert preselect(SEARCH, REG.mode("none"), REQUEST, REG.mode("none").config.preselect).shortlist == ()  # type: ignore[arg-type]
    assert found.as_fields(include_content=False)["shortlist"] == list(found.shortlist)


def test_the_note_names_the_shortlist_and_a_call_of_one_loads_it_through_recovery() -> None:
    found = preselect(SEARCH, REG.mode("auto"), REQUEST, SHORT)
    listed = found.shortlist[0]
    ran: list[dict[str, Any]] = []
    param = next(iter(REG.tools[listed].input_schema["properties"]))
    script = [
        tool_use_reply(("c1", listed, {param: "Lyon"})),
        tool_use_reply(("c2", listed, {param: "Lyon"})),
        text_reply("done"),
    ]
    with served(script) as (server, sdk):
        client(sdk, "auto").run(REQUEST, model=MODEL, executors={listed: ran.append})
        sent = bodies(server)
    note = message_text(sent[0]["messages"][0])
    block = note[note.index(SHORTLIST_HEAD) :].split("\n\n")[0].splitlines()
    assert block[0] == SHORTLIST_HEAD and [line.split(":")[0] for line in block[1:]] == [
        f"- {n}" for n in found.shortlist
    ]
    for line in block[1:]:
        assert len(line.split(": ", 1)[1].rstrip("…").split()) <= SHORTLIST_WORDS
    # The same note on every request: the conversation the provider cached never changes behind it.
    assert all(message_text(body["messages"][0]) == note for body in sent)
    assert listed not in tool_names(sent[0])  # named, not loaded: it costs its line, not its definition
    refused = tool_results(sent[1])[0]
    assert refused["is_error"] and "was not loaded" in text_of(refused)
    assert fetch_tool_doc(REG.tools[listed]) in text_of(refused)
    assert tool_names(sent[1])[-1] == listed and tool_names(sent[1])[: len(tool_names(sent[0]))] == tool_names(sent[0])
    assert ran == [{param: "Lyon"}]


def test_in_a_discovery_mode_a_shortlisted_tool_is_loaded_by_its_first_call() -> None:
    found = preselect(SEARCH, REG.mode("found"), REQUEST, SHORT)
    listed = found.shortlist[-1]
    param = next(iter(REG.tools[listed].input_schema["properties"]))
    ran: list[dict[str, Any]] = []
    script = [
        tool_use_reply(("c1", listed, {param: "Lyon"})),
        tool_use_reply(("c2", listed, {param: "Lyon"})),
        text_reply("done"),
    ]
    with served(script) as (server, sdk):
        client(sdk, "found").run(REQUEST, model=MODEL, executors={listed: ran.append})
        sent = bodies(server)
    assert listed not in tool_names(sent[0])
    refused = tool_results(sent[1])[0]
    assert refused["is_error"] and fetch_tool_doc(REG.tools[listed]) in text_of(refused)
    assert listed in tool_names(sent[1])  # loaded: in the tool list from the next request on
    assert ran == [{param: "Lyon"}]


def test_a_shortlist_is_kept_in_the_task_state_and_old_state_still_reads() -> None:
    data = SessionData()
    assert data.preselect("k", ["a"], 32, ["b", "c"]) == ["a"]
    assert data.preselect("k", ["x"], 32, ["y"]) is None  # the first record wins
    again = SessionData.from_dict(data.to_dict())
    assert again.shortlisted == {"k": ["b", "c"]} and again.preselected == {"k": ["a"]}
    old = {key: value for key, value in data.to_dict().items() if key != "shortlisted"}
    assert SessionData.from_dict(old).shortlisted == {}
    assert "shortlisted" not in SessionData().to_dict()  # a task without one writes what it always wrote
