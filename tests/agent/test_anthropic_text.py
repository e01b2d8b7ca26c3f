"""The tool loop in text-style modes (``tool_style: text``): tool_call blocks parsed from the assistant's text,
answered through the same path as native tool_use, against the real SDK and the scripted Messages API server."""

from __future__ import annotations

import asyncio
import datetime
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anthropic
import pytest

from prompt_composer import Composer, Registry, SystemInfo
from prompt_composer.agent.anthropic import wrap
from prompt_composer.agent.results import Iteration, MaxIterationsError, PendingCall, StopLoop, TokenUsage
from prompt_composer.agent.textcalls import TextToolCall, parse_tool_call_blocks, read_loose_call
from prompt_composer.cli import main
from prompt_composer.core.builtins import FETCH_TOOL_NAME
from prompt_composer.core.fetch import fetch_tool_doc
from prompt_composer.core.modes import FileRestriction
from prompt_composer.core.promotion import inline_text
from prompt_composer.testing.replies import Reply, Usage, text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import bodies, make_doc, make_mode, served

MODEL = "claude-test"
CC = {"type": "ephemeral"}


def registry(**mode_kw: Any) -> Registry:
    docs = [make_doc("alpha"), make_doc("beta"), make_doc("gamma"), make_doc("delta", "edit")]
    values: dict[str, Any] = {"groups": ["read"], "permanent": ["alpha"], "recent_size": 2, "tool_style": "text"}
    values.update(mode_kw)
    return Registry.from_docs(docs, [make_mode("work", **values)])


REG = registry()
COMPOSER = Composer(REG)
MODE = REG.mode("work")


def block(name: str, tool_input: Mapping[str, Any] | None = None, *, fence: str = "```tool_call") -> str:
    payload: dict[str, Any] = {"name": name}
    if tool_input is not None:
        payload["input"] = dict(tool_input)
    return f"{fence}\n{json.dumps(payload)}\n```"


def calls_reply(*blocks: str, prose: str = "", usage: Usage | None = None) -> Reply:
    """An end_turn text answer holding tool_call blocks (what a text-style model sends)."""
    return text_reply("\n\n".join([*([prose] if prose else []), *blocks]), usage=usage)


def label(name: str, *texts: str, ok: bool = True) -> dict[str, Any]:
    return {"type": "text", "text": f"tool_result name={name} {'ok' if ok else 'error'}\n" + "\n\n".join(texts)}


def wrapped(client: Any, policy: Any = None, *, reg: Registry = REG, task_id: str = "t1") -> Any:
    composer = COMPOSER if reg is REG else Composer(reg)
    return wrap(client, composer=composer, mode="work", task_id=task_id, policy=policy)


def echo(name: str) -> Any:
    return lambda tool_input: f"{name} ran on {tool_input.get('path')}"


EXECUTORS = {n: echo(n) for n in ("alpha", "beta", "gamma", "delta")}


def recording(ran: list[str], name: str, output: str) -> Any:
    """An executor that notes each run (its name, or the input's path when ``name`` is empty)."""

    def run(tool_input: Mapping[str, Any]) -> str:
        ran.append(name or str(tool_input["path"]))
        return output

    return run


def expected_system(recent: Sequence[str], *, breakpoint: bool) -> list[dict[str, Any]]:
    prompt = COMPOSER.compose(MODE, recent=recent)
    stable: dict[str, Any] = {"type": "text", "text": prompt.system_stable}
    if breakpoint:
        stable["cache_control"] = CC
    return [stable, *([{"type": "text", "text": prompt.system_recent}] if prompt.system_recent else [])]


def last_user(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The newest user message's blocks, without the breakpoint the wrapper puts on its last block."""
    message = body["messages"][-1]
    assert message["role"] == "user"
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in message["content"]]


# ---------------------------------------------------------------------------------------------- parsing


def test_parse_reads_blocks_among_prose_with_trailing_spaces_and_ignores_other_fences() -> None:
    text = (
        "I will read two files.\n"
        '```tool_call   \n{"name": "beta", "input": {"path": "a"}}\n```  \n'
        "Some prose, then an example that is not a call:\n"
        '```json\n{"name": "gamma", "input": {}}\n```\n'
        '```tool_calls\n{"name": "gamma", "input": {}}\n```\n'
        '  ```tool_call\n  {"name": "alpha"}\n  ```\n'
        "And the last one, whose fence is glued and never closed on its own line:\n"
        '```tool_call\n{"name": "gamma", "input": {"path": "z"}}```'
    )
    assert parse_tool_call_blocks(text) == [
        TextToolCall("beta", {"path": "a"}),
        TextToolCall("alpha", {}),
        TextToolCall("gamma", {"path": "z"}),
    ]
    assert parse_tool_call_blocks("No tools needed: the answer is 42.\n```python\nprint(1)\n```") == []


@pytest.mark.parametrize(
    ("body", "name", "error"),
    [
        ('{"name": "beta", "input": {"path": "a"', "", "not valid JSON"),
        ('["beta", {"path": "a"}]', "", "holds a JSON list, not an object"),
        ('{"input": {"path": "a"}}', "", 'no "name" string'),
        ('{"name": 3, "input": {}}', "", 'no "name" string'),
        ('{"name": "beta", "input": "a"}', "beta", 'the "input" of the tool_call block is a JSON str'),
        ('{"name": "beta", "arguments": {"path": "a"}}', "beta", 'unexpected keys "arguments"'),
        ("", "", "empty"),
        ("[" * 100_000, "", "nested too deeply to read"),
    ],
)
def test_parse_reports_unreadable_blocks(body: str, name: str, error: str) -> None:
    (call,) = parse_tool_call_blocks(f"Calling.\n```tool_call\n{body}\n```\n")
    assert call.name == name
    assert call.error is not None
    assert error in call.error


# -------------------------------------------------------------------------------------------- the loop


def test_requests_carry_the_prompt_and_no_tools_and_a_result_comes_back_labelled() -> None:
    reply = calls_reply(block("beta", {"path": "a"}), prose="Let me read it first.")
    with served([reply, text_reply("beta says hi")]) as (server, client):
        pc = wrapped(client, "inline")
        result = pc.run("what does a say?", model=MODEL, max_tokens=100, executors=EXECUTORS)
        session = pc.session
    first, second = bodies(server)
    for body in (first, second):
        assert "tools" not in body
        assert body["system"] == expected_system((), breakpoint=True)  # pinned for the task
    assert first["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "what does a say?", "cache_control": CC}]}
    ]
    assert second["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": reply.content[0]["text"]}],
    }
    # one user message, one labelled text block; beta is brief: inline appends its full text once
    assert second["messages"][2]["content"] == [
        {**label("beta", "beta ran on a", inline_text(REG, "beta")), "cache_control": CC}
    ]
    assert fetch_tool_doc(REG.tools["beta"]) in inline_text(REG, "beta")
    assert result.text == "beta says hi"
    assert result.stop_reason == "end_turn"
    (call,) = result.tool_calls
    assert (call.id, call.name, dict(call.input), call.output) == ("text_1_1", "beta", {"path": "a"}, "beta ran on a")
    assert call.executed and call.expanded and not call.is_error
    assert session.history() == ("beta",)
    assert result.as_dict()["tool_calls"] == [{"name": "beta", "input": {"path": "a"}, "is_error": False}]


def test_two_calls_in_one_message_are_answered_in_order_in_one_user_message() -> None:
    script = [
        calls_reply(
            block("gamma", {"path": "1"}, fence="```tool_call  "),
            block("alpha", {"path": "2"}),
            block("gamma", {"path": "3"}),
            prose="Three reads.",
        ),
        text_reply("ok"),
    ]
    with served(script) as (server, client):
        pc = wrapped(client, "inline")
        result = pc.run("go", model=MODEL, executors=EXECUTORS)
    sent = bodies(server)[1]
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert last_user(sent) == [
        label("gamma", "gamma ran on 1", inline_text(REG, "gamma")),  # first executed gamma: expanded
        label("alpha", "alpha ran on 2"),  # permanent: never appended
        label("gamma", "gamma ran on 3"),  # appended once only
    ]
    assert [c.id for c in result.tool_calls] == ["text_1_1", "text_1_2", "text_1_3"]
    assert [c.expanded for c in result.tool_calls] == [True, False, False]
    assert len(result.iterations) == 2
    assert pc.session.history() == ("alpha", "gamma")


def test_every_turn_moves_a_used_tool_to_the_end_of_the_system_prompt() -> None:
    script = [calls_reply(block("beta", {"path": "a"})), calls_reply(block("gamma", {"path": "b"})), text_reply("ok")]
    with served(script) as (server, client):
        wrapped(client, "every_turn").run("go", model=MODEL, executors=EXECUTORS)
    sent = bodies(server)
    assert [b["system"] for b in sent] == [
        expected_system((), breakpoint=False),
        expected_system(("beta",), breakpoint=False),
        expected_system(("beta", "gamma"), breakpoint=False),
    ]
    assert REG.tools["beta"].full in sent[1]["system"][-1]["text"]
    assert all("tools" not in b for b in sent)
    assert last_user(sent[1]) == [label("beta", "beta ran on a")]  # every_turn: nothing appended inline


def test_disallowed_unknown_restricted_and_executorless_calls_are_refused_without_running() -> None:
    reg = registry(file_restrictions={"read": FileRestriction(file_regex=r"\.md$")})
    ran: list[str] = []
    executors = {n: recording(ran, n, "ran") for n in ("delta", "nope", "beta")}
    script = [
        calls_reply(
            block("delta", {"path": "a.md"}),
            block("nope", {}),
            block("beta", {"path": "x.py"}),
            block("gamma", {"path": "b.md"}),
        ),
        text_reply("ok"),
    ]
    with served(script) as (server, client):
        pc = wrapped(client, reg=reg)
        result = pc.run("go", model=MODEL, executors=executors)
    assert ran == []
    texts = [b["text"] for b in last_user(bodies(server)[1])]
    assert texts[0].startswith("tool_result name=delta error\nError: there is no tool 'delta' in mode 'work'.")
    assert texts[1].startswith("tool_result name=nope error\nError: there is no tool 'nope' in mode 'work'.")
    assert texts[2].startswith("tool_result name=beta error\nError:")
    assert "x.py" in texts[2]
    assert texts[3] == "tool_result name=gamma error\nError: tool 'gamma' has no executor here; it was not run."
    assert all(c.is_error and not c.executed for c in result.tool_calls)
    assert pc.session.history() == ()


def test_approval_sees_text_calls_and_a_denied_one_is_not_run() -> None:
    seen: list[PendingCall] = []

    def approve(call: PendingCall) -> bool:
        seen.append(call)
        return call.name != "beta"

    ran: list[str] = []
    executors = {n: recording(ran, n, f"{n} output") for n in ("beta", "gamma")}
    script = [calls_reply(block("beta", {"path": "a"}), block("gamma", {"path": "b"})), text_reply("ok")]
    with served(script) as (server, client):
        pc = wrapped(client, "task_start")
        pc.run("go", model=MODEL, executors=executors, approve=approve)
    assert seen == [
        PendingCall("text_1_1", "beta", {"path": "a"}, 1),
        PendingCall("text_1_2", "gamma", {"path": "b"}, 1),
    ]
    assert ran == ["gamma"]
    assert last_user(bodies(server)[1]) == [
        label("beta", "Error: the call to 'beta' was denied by the user; it was not run.", ok=False),
        label("gamma", "gamma output"),
    ]
    assert pc.session.history() == ("gamma",)


def test_a_malformed_block_becomes_an_error_result_and_the_loop_goes_on() -> None:
    ran: list[str] = []
    executors = {"beta": recording(ran, "", "beta output")}
    script = [
        calls_reply(
            '```tool_call\n{"name": "beta", "input": {"path": "a"}\n```',  # missing brace
            '```tool_call\n{"input": {"path": "b"}}\n```',
            '```tool_call\n{"name": "beta", "input": ["c"]}\n```',
            prose="Trying.",
        ),
        calls_reply(block("beta", {"path": "d"})),
        text_reply("recovered"),
    ]
    with served(script) as (server, client):
        result = wrapped(client, "task_start").run("go", model=MODEL, executors=executors)
    assert ran == ["d"]
    texts = [b["text"] for b in last_user(bodies(server)[1])]
    assert len(texts) == 3
    assert texts[0].startswith("tool_result name=? error\nError: the tool_call block is not valid JSON:")
    assert texts[1].startswith('tool_result name=? error\nError: the tool_call block has no "name" string')
    assert texts[2].startswith('tool_result name=beta error\nError: the "input" of the tool_call block is a JSON list')
    assert all("nothing was run" in t and '{"name": "<tool name>", "input": {<parameters>}}' in t for t in texts)
    assert [(c.name, c.is_error) for c in result.tool_calls] == [
        ("", True),
        ("", True),
        ("beta", True),
        ("beta", False),
    ]
    assert result.tool_calls[0].error is not None and "not valid JSON" in result.tool_calls[0].error
    assert result.text == "recovered"
    assert len(result.iterations) == 3


def test_fetch_is_answered_by_the_middleware_and_refuses_other_modes_tools() -> None:
    script = [
        calls_reply(block(FETCH_TOOL_NAME, {"name": "gamma"}), block(FETCH_TOOL_NAME, {"name": "delta"})),
        calls_reply(block("gamma", {"path": "p"})),
        text_reply("fetched"),
    ]
    with served(script) as (server, client):
        pc = wrapped(client, "inline")
        result = pc.run("go", model=MODEL, executors=EXECUTORS)
    fetched, refused = last_user(bodies(server)[1])
    assert fetched == label(FETCH_TOOL_NAME, fetch_tool_doc(REG.tools["gamma"]))
    assert refused["text"].startswith(f"tool_result name={FETCH_TOOL_NAME} error\n")
    assert "there is no tool 'delta' in mode 'work'" in refused["text"]
    assert REG.tools["delta"].full not in refused["text"]
    # gamma's full text is in the conversation already: inline does not append it again
    assert last_user(bodies(server)[2]) == [label("gamma", "gamma ran on p")]
    assert [c.is_error for c in result.tool_calls] == [False, True, False]
    assert pc.session.history() == ("gamma",)  # a fetch is not a use


def test_a_tool_call_block_means_nothing_in_a_native_mode() -> None:
    native = registry(tool_style="native")
    with served([calls_reply(block("beta", {"path": "a"}))]) as (server, client):
        result = wrapped(client, reg=native).run("go", model=MODEL, executors=EXECUTORS)
    assert result.tool_calls == []
    assert len(bodies(server)) == 1
    assert [t["name"] for t in bodies(server)[0]["tools"]] == ["alpha", "beta", "gamma", FETCH_TOOL_NAME]


def test_caller_tools_stay_native_next_to_text_calls() -> None:
    mine = {"name": "my_tool", "description": "Mine.", "input_schema": {"type": "object"}}
    script = [tool_use_reply(("c1", "my_tool", {"q": 1}), text=block("beta", {"path": "a"})), text_reply("ok")]
    with served(script) as (server, client):
        result = wrapped(client, "task_start").run(
            "go", model=MODEL, tools=[mine], executors={**EXECUTORS, "my_tool": lambda i: {"got": i["q"]}}
        )
    first, second = bodies(server)
    assert first["tools"] == [mine]  # the caller's own tools only: the composed ones are in the system prompt
    # the API wants tool_result blocks first; the text-style answers follow, in the same user message
    assert last_user(second) == [
        {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": '{"got": 1}'}]},
        label("beta", "beta ran on a"),
    ]
    assert [c.name for c in result.tool_calls] == ["beta", "my_tool"]  # content order: the text block came first


def test_messages_create_sends_the_system_prompt_and_no_tools() -> None:
    with served([text_reply("hello")]) as (server, client):
        wrapped(client, "task_start").messages.create(
            model=MODEL, max_tokens=5, system="Rules.", messages=[{"role": "user", "content": "hi"}]
        )
    (body,) = bodies(server)
    assert "tools" not in body
    assert body["system"] == [*expected_system((), breakpoint=True), {"type": "text", "text": "Rules."}]


def test_usage_totals_on_iteration_and_streaming() -> None:
    usages = [Usage(100, 10, 50, 0), Usage(20, 7, 3, 150), Usage(5, 30, 0, 170)]
    script = [
        calls_reply(block("beta", {"path": "a"}), usage=usages[0]),
        calls_reply(block("gamma", {"path": "b"}), usage=usages[1]),
        text_reply("ok", usage=usages[2]),
    ]
    steps: list[Iteration] = []
    with served(script) as (server, client):
        result = wrapped(client).run("go", model=MODEL, executors=EXECUTORS, on_iteration=steps.append, stream=True)
    assert all(b["stream"] is True for b in bodies(server))
    assert [(s.index, [c.name for c in s.tool_calls]) for s in steps] == [(1, ["beta"]), (2, ["gamma"]), (3, [])]
    assert [s.usage for s in steps] == [
        TokenUsage(u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens)
        for u in usages
    ]
    assert result.usage == TokenUsage(125, 47, 53, 320)
    assert result.text == "ok"
    assert last_user(bodies(server)[1])[0]["text"].startswith("tool_result name=beta ok\nbeta ran on a")


def test_max_iterations_counts_text_calls() -> None:
    script = [calls_reply(block("beta", {"path": str(i)})) for i in range(2)]
    with served(script) as (server, client), pytest.raises(MaxIterationsError, match="max_iterations=2") as info:
        wrapped(client).run("go", model=MODEL, executors=EXECUTORS, max_iterations=2)
    assert [c.output for c in info.value.result.tool_calls] == ["beta ran on 0", "beta ran on 1"]
    assert len(bodies(server)) == 2


# ------------------------------------------------------------------------------------------------ async


@pytest.mark.parametrize("stream", [False, True])
def test_async_loop_in_a_text_mode(stream: bool) -> None:
    async def read(tool_input: Any) -> str:
        await asyncio.sleep(0)
        return f"async read {tool_input['path']}"

    async def approve(call: PendingCall) -> bool:
        return call.input.get("path") != "deny-me"

    steps: list[int] = []

    async def on_iteration(it: Iteration) -> None:
        steps.append(it.index)

    usages = [Usage(10, 1, 2, 3), Usage(20, 2, 0, 4), Usage(30, 3, 0, 5)]
    script = [
        calls_reply(
            block("beta", {"path": "x"}),
            block("gamma", {"path": "deny-me"}),
            '```tool_call\n{"name": "gamma", "input": {"path": "y"},}\n```',
            prose="Reading.",
            usage=usages[0],
        ),
        calls_reply(block("gamma", {"path": "y"}), block(FETCH_TOOL_NAME, {"name": "beta"}), usage=usages[1]),
        text_reply("async done", usage=usages[2]),
    ]

    async def main_loop(server: ScriptedMessagesServer) -> Any:
        client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)
        try:
            pc = wrap(client, composer=COMPOSER, mode="work", task_id="a", policy="inline")
            result = await pc.run(
                "go",
                model=MODEL,
                executors={"beta": read, "gamma": echo("gamma")},
                approve=approve,
                on_iteration=on_iteration,
                stream=stream,
            )
            return result, pc.session.history()
        finally:
            await client.close()

    with ScriptedMessagesServer(script) as server:
        result, history = asyncio.run(main_loop(server))
    sent = bodies(server)
    assert [b.get("stream", False) for b in sent] == [stream] * 3
    assert all("tools" not in b and b["system"] == expected_system((), breakpoint=True) for b in sent)
    assert steps == [1, 2, 3]
    assert history == ("beta", "gamma")
    assert [(c.name, c.is_error) for c in result.tool_calls] == [
        ("beta", False),
        ("gamma", True),
        ("", True),
        ("gamma", False),
        (FETCH_TOOL_NAME, False),
    ]
    first = last_user(sent[1])
    assert first[0] == label("beta", "async read x", inline_text(REG, "beta"))
    assert first[1] == label("gamma", "Error: the call to 'gamma' was denied by the user; it was not run.", ok=False)
    assert first[2]["text"].startswith("tool_result name=? error\nError: the tool_call block is not valid JSON")
    # beta's full text was appended to its first result, so a fetch of it now answers with one line.
    already = "beta is already documented in full above in this conversation."
    assert last_user(sent[2])[0] == label("gamma", "gamma ran on y", inline_text(REG, "gamma"))
    assert last_user(sent[2])[1]["text"].startswith(f"tool_result name={FETCH_TOOL_NAME} ok\n{already}")
    assert result.usage == TokenUsage(60, 6, 2, 12)
    assert result.text == "async done"


# -------------------------------------------------------------------------------------------------- CLI


def test_cli_run_json_on_the_shipped_ask_mode(
    workspace: Path, shipped: Registry, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    script = [
        calls_reply(
            block("read_file", {"path": "README.md"}),
            block("read_file", {"path": "../secret.txt"}),
            prose="Let me look at the README.",
            usage=Usage(100, 10, 80, 0),
        ),
        calls_reply(
            block("list_files", {"path": "."}),
            block("write_to_file", {"path": "x", "content": "y"}),
            "```tool_call\nnot json\n```",
            usage=Usage(20, 5, 0, 90),
        ),
        text_reply("It is a demo.", usage=Usage(40, 7, 0, 100)),
    ]
    with ScriptedMessagesServer(script) as server:
        code = main(
            ["run", "--mode", "ask", "--task", "What is here?", "--base-url", server.base_url,
             "--workspace", str(workspace), "--format", "json"]
        )  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["text"] == "It is a demo."
    assert out["iterations"] == 3
    assert out["tool_calls"] == [
        {"name": "read_file", "input": {"path": "README.md"}, "is_error": False},
        {"name": "read_file", "input": {"path": "../secret.txt"}, "is_error": True},
        {"name": "list_files", "input": {"path": "."}, "is_error": False},
        {"name": "write_to_file", "input": {"path": "x", "content": "y"}, "is_error": True},
        {"name": "", "input": {}, "is_error": True},
    ]
    assert out["usage"] == {
        "input_tokens": 160,
        "output_tokens": 22,
        "cache_creation_input_tokens": 80,
        "cache_read_input_tokens": 190,
    }
    sent = [r.body for r in server.requests]
    # run fills the system information section from this machine (read once, so every request has the same)
    date = re.search(r"^Current date: (\S+)$", sent[0]["system"][0]["text"], re.MULTILINE)
    assert date is not None
    info = SystemInfo.detect(workspace, today=datetime.date.fromisoformat(date.group(1)))
    composed = Composer(shipped, context={"system_info": info}).compose("ask")
    assert f"Workspace folder: {workspace.resolve()}" in composed.system_stable
    for body in sent:
        assert "tools" not in body
        assert "".join(b["text"] for b in body["system"]) == composed.system_stable + composed.system_recent
    readme, secret = last_user(sent[1])
    assert readme == label("read_file", "1 | # Demo")  # read_file is permanent in ask: nothing appended
    assert secret["text"].startswith("tool_result name=read_file error\n")
    assert "outside the workspace" in secret["text"]
    listing, write, broken = last_user(sent[2])
    assert listing["text"].startswith("tool_result name=list_files ok\nREADME.md\n\n")
    assert shipped.tools["list_files"].full in listing["text"]  # brief in ask: its first result carries it once
    assert write["text"].startswith(
        "tool_result name=write_to_file error\nError: there is no tool 'write_to_file' in mode 'ask'"
    )
    assert broken["text"].startswith("tool_result name=? error\nError: the tool_call block is not valid JSON")


def test_cli_run_text_output_names_an_unreadable_block(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    script = [calls_reply("```tool_call\n{}\n```"), text_reply("Nothing to see.")]
    with ScriptedMessagesServer(script) as server:
        code = main(
            ["run", "--mode", "ask", "--task", "t", "--base-url", server.base_url, "--workspace", str(workspace)]
        )
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == "Nothing to see.\n"
    assert "# (unreadable tool_call block) {} → error" in captured.err
    assert "2 iterations, 1 tool call," in captured.err


# ------------------------------------------------------------------------------- imitated results


@pytest.mark.parametrize(
    "imitation",
    [
        "```tool_result\nThe folder src/ holds main.py.\n```",
        "tool_result name=list_files ok\nsrc/main.py",
        "Here is what I found:\n  ```tool_result name=read_file\n1 | x = 1\n```\nSo x is 1.",
    ],
)
def test_a_reply_that_imitates_a_tool_result_is_not_final(imitation: str) -> None:
    """What a 1.5B model did after an error result: it wrote its own "result". The loop says so and asks again."""
    with served([text_reply(imitation), text_reply("x is 1, in src/main.py.")]) as (server, client):
        result = wrapped(client).run("What is x?", model=MODEL, executors=EXECUTORS)
        sent = bodies(server)
    assert result.text == "x is 1, in src/main.py."
    first, second = result.iterations
    assert first.correction is not None and "tool result" in first.correction
    assert first.tool_calls == () and second.correction is None
    # The correction reached the model as the user's turn after the imitation, and nothing was run.
    assert sent[1]["messages"][-2]["content"][0]["text"] == imitation
    assert sent[1]["messages"][-1]["content"][0]["text"] == first.correction
    assert result.tool_calls == []


def test_a_model_that_keeps_imitating_results_stops_at_max_iterations() -> None:
    script = [text_reply("tool_result name=alpha ok\nfake")] * 3
    with served(script) as (_server, client), pytest.raises(MaxIterationsError) as caught:
        wrapped(client).run("go", model=MODEL, executors=EXECUTORS, max_iterations=3)
    assert [it.correction is not None for it in caught.value.result.iterations] == [True, True, True]
    assert "still imitated tool results instead of answering" in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "The loop labels results `tool_result name=X ok`, mid-line, so this is prose.",
        "A plain answer with a ```python\nprint(1)\n``` block.",
    ],
)
def test_prose_about_results_is_a_final_answer(text: str) -> None:
    with served([text_reply(text)]) as (_server, client):
        result = wrapped(client).run("explain", model=MODEL, executors=EXECUTORS)
    assert result.text == text and result.iterations[0].correction is None


def test_native_modes_take_any_text_as_final(mini_registry: Registry) -> None:
    """Only text-style modes label results with text, so only there is a result line an imitation."""
    with served([text_reply("tool_result name=read_file ok\n1 | x")]) as (_server, client):
        result = wrap(client, registry=mini_registry, mode="code", task_id="n").run("go", model=MODEL)
    assert len(result.iterations) == 1 and result.iterations[0].correction is None


def test_each_iteration_is_timed_and_a_streamed_one_has_a_first_token() -> None:
    script = [calls_reply(block("alpha", {"path": "a"})), text_reply("done")]
    with served(script) as (_server, client):
        plain = wrapped(client, task_id="p").run("go", model=MODEL, executors=EXECUTORS)
    with served(script) as (_server, client):
        streamed = wrapped(client, task_id="s").run("go", model=MODEL, executors=EXECUTORS, stream=True)
    assert all(it.latency > 0 and it.first_token is None for it in plain.iterations)
    for it in streamed.iterations:
        assert it.first_token is not None and 0 < it.first_token <= it.latency


def test_stop_loop_from_on_iteration_returns_the_result_so_far() -> None:
    """Raising StopLoop ends the loop after that iteration; its calls are answered and in the messages."""

    def stop_after_first(iteration: Iteration) -> None:
        raise StopLoop

    script = [calls_reply(block("alpha", {"path": "a"})), text_reply("never sent")]
    with served(script) as (server, client):
        result = wrapped(client, task_id="stop").run(
            "go", model=MODEL, executors=EXECUTORS, on_iteration=stop_after_first
        )
        assert server.pending == 1  # the second reply was never asked for
    assert len(result.iterations) == 1 and [c.name for c in result.tool_calls] == ["alpha"]
    assert result.messages[-1]["content"][0]["text"].startswith("tool_result name=alpha ok")

    async def go() -> Any:
        async with anthropic.AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            return await wrapped(sdk, task_id="stop-async").run(
                "go", model=MODEL, executors=EXECUTORS, on_iteration=stop_after_first
            )

    with served(script) as (server, _client):
        done = asyncio.run(go())
    assert len(done.iterations) == 1 and [c.name for c in done.tool_calls] == ["alpha"]


# ------------------------------------------------------------------------------- calls in the wrong shape

SCHEMAS = {name: REG.tools[name].input_schema for name in MODE.allowed}


@pytest.mark.parametrize(
    ("text", "name", "tool_input"),
    [
        # What the 1.5B model wrote in the shipped ask mode: the tool named in prose, its arguments in ```json.
        ("You can use the `beta` tool:\n\n```json\n{\"path\": \"pyproject.toml\"}\n```\nIt shows the file.",
         "beta", {"path": "pyproject.toml"}),
        ('```json\n{"name": "gamma", "arguments": {"path": "a.py"}}\n```', "gamma", {"path": "a.py"}),
        ('```\n{"name": "alpha", "parameters": {"path": "b"}}\n```', "alpha", {"path": "b"}),
        ('```tool_code\n{"name": "alpha"}\n```', "alpha", {}),
        ('```json\n{"name": "beta", "path": "flat.py"}\n```', "beta", {"path": "flat.py"}),
    ],
)  # fmt: skip
def test_a_loose_call_is_read_from_a_block_of_another_shape(text: str, name: str, tool_input: dict[str, Any]) -> None:
    assert read_loose_call(text, SCHEMAS) == TextToolCall(name, tool_input)


@pytest.mark.parametrize(
    "text",
    [
        'The version is set in pyproject.toml:\n```toml\nversion = "0.1.0"\n```',
        '```json\n{"version": "0.1.0"}\n```',  # fits no tool: a JSON example, not a call
        '```json\n{"name": "delta", "input": {"path": "x"}}\n```',  # delta is not in the mode
        '```json\n{"path": "x", "mode": "w"}\n```',  # a parameter no tool takes
        '```json\n{"path": "x"}\n```',  # fits alpha, beta and gamma, and the prose names none of them
        'alpha or beta?\n```json\n{"path": "x"}\n```',  # ... or two
        '```json\n{}\n```',
        '```json\n["alpha"]\n```',
        "```json\n" + "[" * 100_000 + "\n```",  # too deep to decode: not a call, and not a crash
    ],
)  # fmt: skip
def test_blocks_that_are_no_call_of_one_tool_are_not_loose_calls(text: str) -> None:
    assert read_loose_call(text, SCHEMAS) is None


def test_a_loose_call_is_answered_like_a_tool_call_block() -> None:
    loose = 'To read it, use the `beta` tool.\n\n```json\n{"path": "README.md"}\n```'
    ran: list[str] = []
    with served([text_reply(loose), text_reply("It is a demo.")]) as (server, client):
        result = wrapped(client).run(
            "What is README.md?", model=MODEL, executors={"beta": recording(ran, "", "# demo")}
        )
        sent = bodies(server)
    assert result.text == "It is a demo." and ran == ["README.md"]
    (call,) = result.tool_calls
    assert (call.id, call.name, dict(call.input), call.executed) == ("text_1_1", "beta", {"path": "README.md"}, True)
    # The result goes back as any text-style call's: labelled, and (beta is brief) with its full text once.
    assert last_user(sent[1]) == [label("beta", "# demo", inline_text(REG, "beta"))]


def test_a_loose_call_goes_through_the_modes_checks_and_approval() -> None:
    """Read from another shape or not, a call is held to the same rules: here the user denies it."""
    loose = text_reply('```json\n{"name": "alpha", "arguments": {"path": "secret"}}\n```')
    seen: list[PendingCall] = []

    def deny(call: PendingCall) -> bool:
        seen.append(call)
        return False

    ran: list[str] = []
    with served([loose, text_reply("ok")]) as (_server, client):
        result = wrapped(client).run("go", model=MODEL, executors={"alpha": recording(ran, "alpha", "x")}, approve=deny)
    assert seen == [PendingCall("text_1_1", "alpha", {"path": "secret"}, 1)]
    assert ran == [] and result.tool_calls[0].is_error


def test_tool_call_blocks_win_over_other_blocks_and_native_modes_read_neither(mini_registry: Registry) -> None:
    both = calls_reply(block("gamma", {"path": "a"}), prose='```json\n{"name": "beta", "input": {"path": "b"}}\n```')
    with served([both, text_reply("done")]) as (_server, client):
        result = wrapped(client).run("go", model=MODEL, executors=EXECUTORS)
    assert [c.name for c in result.tool_calls] == ["gamma"]
    with served([text_reply('```json\n{"path": "README.md"}\n```')]) as (_server, client):
        native = wrap(client, registry=mini_registry, mode="code", task_id="n").run("go", model=MODEL)
    assert native.tool_calls == [] and len(native.iterations) == 1
