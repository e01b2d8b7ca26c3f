"""The recent-use FIFO and the session store."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_composer import InMemorySessionStore, Registry, TaskSession

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
