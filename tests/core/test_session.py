"""The recent-use FIFO and the session store."""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_composer import Composer, InMemorySessionStore, Registry, TaskSession
from prompt_composer.core.session import PinnedPrompt, SessionData
from tests.helpers import make_mode

TOOLS = ["read_file", "list_files", "glob", "write_to_file", "apply_diff", "execute_command", "secret_tool"]
uses = st.lists(st.sampled_from(TOOLS), max_size=40)


def reference_fifo(sequence: list[str]) -> list[str]:
    """The FIFO semantics spelled out the slow way: distinct, newest last, re-use moves to the end."""
    out: list[str] = []
    for tool in sequence:
        if tool in out:
            out.remove(tool)
        out.append(tool)
    return out


@given(uses)
def test_history_is_distinct_and_ordered_by_last_use(sequence: list[str]) -> None:
    session = TaskSession("t")
    session.record_uses(sequence)
    assert list(session.history()) == reference_fifo(sequence)


@given(uses, st.integers(min_value=1, max_value=5))
def test_history_limit_keeps_the_newest(sequence: list[str], limit: int) -> None:
    session = TaskSession("t", history_limit=limit)
    session.record_uses(sequence)
    assert list(session.history()) == reference_fifo(sequence)[-limit:]


@settings(max_examples=200)
@given(uses, st.sampled_from(["code", "ask", "text", "admin"]))
def test_mode_view_is_newest_allowed_non_permanent(mini_registry: Registry, sequence: list[str], slug: str) -> None:
    mode = mini_registry.mode(slug)
    session = TaskSession("t")
    session.record_uses(sequence)
    view = session.recent(mode)
    eligible = [t for t in reference_fifo(sequence) if mode.allows(t) and t not in mode.permanent]
    assert list(view) == (eligible[-mode.recent_size :] if mode.recent_size else [])
    assert len(view) <= mode.recent_size
    assert not set(view) & set(mode.permanent)


def test_reuse_moves_tool_to_newest_end(mini_registry: Registry) -> None:
    code = mini_registry.mode("code")  # recent_size 2, read_file permanent
    session = TaskSession("t")
    session.record_uses(["glob", "list_files", "apply_diff"])
    assert session.recent(code) == ("list_files", "apply_diff")
    session.record_use("glob")
    assert session.recent(code) == ("apply_diff", "glob")


def test_permanent_tools_take_no_slot(mini_registry: Registry) -> None:
    code = mini_registry.mode("code")
    session = TaskSession("t")
    session.record_uses(["glob", "list_files", "read_file", "read_file"])
    assert session.recent(code) == ("glob", "list_files")


def test_mode_switch_keeps_history(mini_registry: Registry) -> None:
    session = TaskSession("t")
    session.record_uses(["glob", "write_to_file", "execute_command"])
    # ask allows only read tools and keeps 1: the disallowed newer tools are skipped, not evicting glob.
    assert session.recent(mini_registry.mode("ask")) == ("glob",)
    assert session.recent(mini_registry.mode("code")) == ("write_to_file", "execute_command")
    assert session.history() == ("glob", "write_to_file", "execute_command")


def test_recent_size_zero_disables_fifo(mini_registry: Registry) -> None:
    session = TaskSession("t")
    session.record_uses(["glob", "list_files"])
    assert session.recent(mini_registry.mode("admin")) == ()


def test_store_new_task_starts_empty_and_tasks_are_isolated() -> None:
    store = InMemorySessionStore(maxsize=10, ttl=60)
    a = store.get("a")
    a.record_use("glob")
    assert store.get("a") is a
    assert store.get("b").history() == ()
    fresh = store.reset("a")
    assert fresh.history() == ()
    assert store.get("a") is fresh
    store.discard("a")
    assert "a" not in store


def test_store_is_bounded() -> None:
    store = InMemorySessionStore(maxsize=3, ttl=60)
    for i in range(10):
        store.get(f"t{i}").record_use("glob")
    assert len(store) == 3
    assert "t9" in store
    assert "t0" not in store


def test_store_expires_idle_sessions() -> None:
    clock = [0.0]
    store = InMemorySessionStore(maxsize=10, ttl=10, timer=lambda: clock[0])  # a manual clock, no sleeping
    store.get("old").record_use("glob")
    clock[0] = 11.0
    assert "old" not in store
    assert store.get("old").history() == ()


def test_concurrent_record_use_on_one_session_loses_nothing() -> None:
    session = TaskSession("t", history_limit=1000)
    names = [f"tool_{i}" for i in range(400)]

    def worker(chunk: list[str]) -> None:
        for name in chunk:
            session.record_use(name)

    threads = [threading.Thread(target=worker, args=(names[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(session.history()) == sorted(names)


# ------------------------------------------------------------------- the task state as plain data

names = st.lists(st.sampled_from(TOOLS), max_size=8)


@given(uses, names, names, st.dictionaries(st.text(max_size=20), st.tuples(names, names), max_size=3))
def test_session_data_survives_json(
    history: list[str], discovered: list[str], expanded: list[str], pins: dict[str, tuple[list[str], list[str]]]
) -> None:
    data = SessionData(
        reference_fifo(history),
        list(dict.fromkeys(discovered)),
        list(dict.fromkeys(expanded)),
        {key: PinnedPrompt("f00d", "code", tuple(r), tuple(d)) for key, (r, d) in pins.items()},
    )
    assert SessionData.from_dict(json.loads(json.dumps(data.to_dict()))) == data


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "must be an object"),
        ({"history": []}, "unsupported session data version None"),
        ({"version": 2}, "unsupported session data version 2"),
        ({"version": 1, "history": "glob"}, "history must be a list of strings"),
        ({"version": 1, "expanded": [1]}, "expanded must be a list of strings"),
        ({"version": 1, "pinned": []}, "pinned must be an object"),
        ({"version": 1, "pinned": {"k": {"mode": "code"}}}, "string fingerprint and mode"),
        ({"version": 1, "pinned": {"k": {"fingerprint": "f", "mode": "m", "recent": [None]}}}, "pinned recent"),
    ],
)
def test_malformed_session_data_is_refused(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SessionData.from_dict(value)


def test_a_session_is_its_data() -> None:
    session = TaskSession("t", history_limit=2)
    session.record_uses(["glob", "list_files", "read_file"])
    session.discover(["glob"])
    session.mark_expanded("glob")
    snapshot = session.snapshot()
    assert snapshot == SessionData(["list_files", "read_file"], ["glob"], ["glob"], {})
    session.record_use("apply_diff")
    assert snapshot.history == ["list_files", "read_file"]  # a copy


def test_a_pin_holds_what_the_prompt_was_composed_from(mini_registry: Registry) -> None:
    composer = Composer(mini_registry)
    code = mini_registry.mode("code")
    session = TaskSession("t")
    session.record_uses(["glob", "write_to_file", "read_file", "execute_command"])
    session.discover(["glob", "secret_tool"])
    composed_now = composer.compose(code, session)
    key = f"{mini_registry.fingerprint}/code"
    assert session.pinned(key) is None
    prompt = composer.pinned_prompt(session, key, code)
    assert prompt is composed_now  # the composer's cache: the same inputs, the same prompt
    pin = session.pinned(key)
    assert pin == PinnedPrompt(mini_registry.fingerprint, "code", ("write_to_file", "execute_command"), ("glob",))
    session.record_uses(["apply_diff", "list_files"])
    assert composer.pinned_prompt(session, key, code) is prompt
    # Another composer (cold cache) recomposes it from the pin alone, byte-identical.
    again = Composer(mini_registry).compose_pinned(pin) if pin is not None else None
    assert again is not None and again is not prompt
    assert json.dumps(again.as_dict()) == json.dumps(prompt.as_dict())
    assert session.pin(key, fingerprint="other", mode=mini_registry.mode("ask")) == pin  # the first pin wins


def test_a_discovery_mode_pin_recomposes_the_discovered_tools(mini_registry: Registry) -> None:
    registry = Registry.from_docs(list(mini_registry.tools.values()), [make_mode("find", discovery=True)])
    composer = Composer(registry)
    find = registry.mode("find")
    session = TaskSession("t")
    session.discover(["glob", "execute_command", "write_to_file"])  # execute_command: not in the mode
    pin = session.pin("k", fingerprint=registry.fingerprint, mode=find)
    assert pin.discovered == ("glob", "write_to_file")
    session.discover(["apply_diff"])
    assert composer.compose_pinned(pin).discovered == ("glob", "write_to_file")
    assert composer.compose_pinned(pin) == composer.compose(find, loaded=["glob", "write_to_file"])


def test_concurrent_pins_agree(mini_registry: Registry) -> None:
    composer = Composer(mini_registry)
    code = mini_registry.mode("code")
    session = TaskSession("t")
    seen: list[object] = []
    barrier = threading.Barrier(8)

    def worker(i: int) -> None:
        barrier.wait()
        session.record_use(["glob", "apply_diff", "list_files", "write_to_file"][i % 4])
        seen.append(composer.pinned_prompt(session, "k", code))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8
    assert all(p == seen[0] for p in seen)  # one pin; equal prompts (identical once the composer's cache has it)
    assert composer.pinned_prompt(session, "k", code) is composer.pinned_prompt(session, "k", code)


def test_the_in_memory_store_bounds_discovery() -> None:
    session = InMemorySessionStore(discovery_limit=1).get("t")
    assert session.discover(["glob", "list_files"]) == ("glob",)
    with pytest.raises(ValueError, match="discovery_limit"):
        TaskSession(discovery_limit=-1)
