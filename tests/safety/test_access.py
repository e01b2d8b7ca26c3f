"""The access policy's refusals are no oracle: a tool that exists outside the mode and a name that exists nowhere
get the same answer (the name aside) from every handler that takes a tool name from the model."""

from __future__ import annotations

import itertools
import json

import pytest

from prompt_composer import Registry, handle_fetch, load_registry
from prompt_composer.cli import main
from prompt_composer.core.access import closest_names
from prompt_composer.core.builtins import CALL_TOOL_NAME, FETCH_TOOL_NAME
from prompt_composer.core.modes import Mode
from prompt_composer.discovery.tools import call_tool
from prompt_composer.testing.replies import text_reply, tool_use_reply
from tests.helpers import COMBOS, EXECUTORS, REG, Combo, agent


def twin(hidden: str, mode: Mode, registry: Registry) -> str:
    """A made-up name, unknown to the registry, whose closest allowed names are those of ``hidden``: so the two
    refusals can be compared byte for byte once each name is blanked out."""
    want = closest_names(hidden, mode.allowed)
    one_letter_off = (hidden[:i] + c + hidden[i + 1 :] for i in range(len(hidden)) for c in "qxzjv")
    longer = (hidden + "".join(letters) for size in (1, 2) for letters in itertools.product("qxzjv", repeat=size))
    for name in itertools.chain(one_letter_off, longer):
        if name not in registry.tools and closest_names(name, mode.allowed) == want:
            return name
    raise AssertionError(f"no made-up twin of {hidden!r}")


def blank(text: str, name: str) -> str:
    return text.replace(name, "<name>")


def same_refusal(first: str, first_name: str, second: str, second_name: str) -> None:
    assert first.startswith("Error:") or "error\nError:" in first, first
    assert blank(first, first_name) == blank(second, second_name)


# --- the library ----------------------------------------------------------------------------------------------


def test_fetch_answers_a_hidden_tool_and_a_made_up_one_alike() -> None:
    shipped = load_registry()
    ask = shipped.mode("ask")
    hidden = "execute_command"
    assert hidden in shipped.tools and not ask.allows(hidden)
    made_up = twin(hidden, ask, shipped)
    one = handle_fetch(shipped, ask, {"name": hidden})
    two = handle_fetch(shipped, ask, {"name": made_up})
    assert one.is_error and two.is_error
    same_refusal(one.content, hidden, two.content, made_up)
    assert shipped.tools[hidden].full not in one.content
    assert all(ask.allows(n) for n in closest_names(hidden, ask.allowed))


def test_call_tool_answers_a_hidden_tool_and_a_made_up_one_alike() -> None:
    code = REG.mode("code")
    made_up = twin("secret_tool", code, REG)
    one = call_tool(REG, code, {"name": "secret_tool", "arguments": {}}, EXECUTORS)
    two = call_tool(REG, code, {"name": made_up, "arguments": {}}, EXECUTORS)
    assert one.is_error and two.is_error
    same_refusal(one.content, "secret_tool", two.content, made_up)


# --- the command line -----------------------------------------------------------------------------------------


def test_the_fetch_command_tells_the_operator_which_mode_has_a_hidden_tool(capsys: pytest.CaptureFixture[str]) -> None:
    """On the command line the reader is the operator, who may see every mode (issue 40): a tool of another mode is
    named with that mode; a made-up one is not there at all. What the *model* is told stays identical for both
    (the tests above)."""
    shipped = load_registry()
    made_up = twin("debug_launch", shipped.mode("ask"), shipped)
    assert main(["fetch", "debug_launch", "--mode", "ask"]) == 1
    hidden_err = capsys.readouterr().err
    assert main(["fetch", made_up, "--mode", "ask"]) == 1
    made_up_err = capsys.readouterr().err
    assert hidden_err.startswith("error: mode 'ask' has no tool 'debug_launch'; mode 'debug' has it"), hidden_err
    assert made_up_err.startswith(f"error: there is no tool '{made_up}'"), made_up_err
    assert "mode 'debug'" not in made_up_err


# --- the tool loop: a direct call, a fetch and call_tool, over both wire formats ----------------------------------


@pytest.mark.parametrize("combo", [c for c in COMBOS if c.id.endswith("sync-json")])
def test_the_loop_answers_a_hidden_tool_and_a_made_up_one_alike(combo: Combo) -> None:
    code = REG.mode("code")
    made_up = twin("secret_tool", code, REG)
    calls = []
    for name in ("secret_tool", made_up):
        calls += [
            (f"d-{name}", name, {"path": "x"}),
            (f"f-{name}", FETCH_TOOL_NAME, {"name": name}),
            (f"c-{name}", CALL_TOOL_NAME, {"name": name, "arguments": {"path": "x"}}),
        ]
    script = [tool_use_reply(*calls), text_reply("done")]
    with agent(combo, script, mode="code", call_tool=True) as a:
        a.run()
        answers = {call_id: text for call_id, text, _ in combo.wire.results(a.bodies[1])}
    for kind in ("d", "f", "c"):
        same_refusal(answers[f"{kind}-secret_tool"], "secret_tool", answers[f"{kind}-{made_up}"], made_up)
        assert "TOP SECRET" not in answers[f"{kind}-secret_tool"]


def test_a_text_style_call_answers_a_hidden_tool_and_a_made_up_one_alike() -> None:
    text = REG.mode("text")
    made_up = twin("execute_command", text, REG)
    blocks = "\n".join(
        f"```tool_call\n{json.dumps({'name': name, 'input': {'command': 'ls'}})}\n```"
        for name in ("execute_command", made_up)
    )
    with agent(COMBOS[0].values[0], [text_reply(blocks), text_reply("done")], mode="text") as a:
        a.run()
        last = a.bodies[1]["messages"][-1]["content"]
    texts = [b["text"] for b in last if b.get("type") == "text"]
    hidden_text = next(t for t in texts if t.startswith("tool_result name=execute_command"))
    made_up_text = next(t for t in texts if t.startswith(f"tool_result name={made_up}"))
    same_refusal(hidden_text, "execute_command", made_up_text, made_up)
