"""Hot reload: a bad edit never replaces a good registry, a good one replaces it atomically, and compositions
under load never fail or mix two versions."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from prompt_composer import LoadError
from prompt_composer.core.live import LiveRegistry

TOOLS = ("alpha", "beta", "gamma")


def write_docs(root: Path, version: int, *, broken: str | None = None) -> None:
    """Three tools and one mode, every text carrying ``V<version>``; ``broken`` names a tool whose file is bad."""
    (root / "modes").mkdir(parents=True, exist_ok=True)
    for name in TOOLS:
        text = (
            f"name: {name}\ngroup: read\nbrief: The {name} tool, release V{version}. Use it to look things up.\n"
            f"full: |\n  ## {name}\n  Full text of {name}, release V{version}.\n"
            "input_schema:\n  type: object\n  properties:\n    path: {type: string, description: Where.}\n"
        )
        if name == broken:
            text = text.replace("group: read", "group: read\nunknown_key: [oops")
        (root / f"{name}.yaml").write_text(text)
    (root / "modes" / "work.yaml").write_text(
        f"slug: work\nname: Work\nrole: You work on release V{version}.\ngroups: [read]\npermanent: [alpha]\n"
        "recent_size: 1\nbudget_tokens: 9000\n"
    )


def versions_in(text: str) -> set[str]:
    return set(re.findall(r"V\d+", text))


def test_a_good_edit_swaps_and_old_versions_stay_reachable(tmp_path: Path) -> None:
    write_docs(tmp_path, 1)
    live = LiveRegistry(tmp_path)
    first = live.current
    assert live.reload().swapped is False  # nothing changed
    write_docs(tmp_path, 2)
    outcome = live.reload()
    assert outcome.swapped and outcome.fingerprint == live.current.fingerprint != first.fingerprint
    assert "V1" in first.tools["alpha"].brief  # a registry is immutable: holders keep their version
    old = live.version(first.fingerprint)
    assert old is not None and old.registry is first
    assert versions_in(live.composer.compose("work").system) == {"V2"}


def test_a_bad_edit_keeps_the_last_good_registry_and_reports_every_problem(tmp_path: Path) -> None:
    write_docs(tmp_path, 1)
    errors: list[LoadError] = []
    live = LiveRegistry(tmp_path, on_error=errors.append)
    good = live.current
    write_docs(tmp_path, 2, broken="beta")
    (tmp_path / "modes" / "work.yaml").write_text("slug: work\nname: [unclosed\n")
    outcome = live.reload()
    assert not outcome.swapped and live.current is good
    files = {p.path.name for p in outcome.problems}
    assert files == {"beta.yaml", "work.yaml"} and all(p.line >= 1 for p in outcome.problems)
    assert errors and errors[0].problems == outcome.problems == live.problems
    write_docs(tmp_path, 3)  # fixed: the next reload swaps and clears the problems
    assert live.reload().swapped and live.problems == ()
    assert versions_in(live.composer.compose("work").system) == {"V3"}


def test_the_first_load_must_succeed(tmp_path: Path) -> None:
    write_docs(tmp_path, 1, broken="alpha")
    with pytest.raises(LoadError):
        LiveRegistry(tmp_path)


def test_the_watcher_reloads_a_change_once_it_has_settled(tmp_path: Path) -> None:
    write_docs(tmp_path, 1)
    live = LiveRegistry(tmp_path)
    assert live.poll() is None  # no change
    write_docs(tmp_path, 2)
    assert live.poll() is None  # seen, not yet settled
    outcome = live.poll()
    assert outcome is not None and outcome.swapped
    assert live.poll() is None

    swapped = threading.Event()
    with LiveRegistry(tmp_path, on_reload=lambda _r: swapped.set()).watch(interval=0.05):
        write_docs(tmp_path, 3)
        assert swapped.wait(60), "the watcher never reloaded"


def test_reload_on_signal(tmp_path: Path) -> None:
    write_docs(tmp_path, 1)
    swapped = threading.Event()
    live = LiveRegistry(tmp_path, on_reload=lambda _r: swapped.set())
    previous = signal.getsignal(signal.SIGUSR1)
    try:
        live.reload_on_signal(signal.SIGUSR1)
        write_docs(tmp_path, 2)
        os.kill(os.getpid(), signal.SIGUSR1)
        assert swapped.wait(60)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert versions_in(live.current.tools["gamma"].full) == {"V2"}


def test_eight_threads_compose_while_docs_are_edited_and_broken(tmp_path: Path) -> None:
    write_docs(tmp_path, 0)
    live = LiveRegistry(tmp_path)
    stop = threading.Event()
    failures: list[BaseException] = []
    mixed: list[set[str]] = []
    seen: set[str] = set()
    lock = threading.Lock()

    def compose_forever() -> None:
        try:
            while not stop.is_set():
                composer = live.composer  # one read: this composition's registry, start to end
                prompt = composer.compose("work")
                text = prompt.system + "".join(str(t.get("description", "")) for t in prompt.tools)
                found = versions_in(text)
                with lock:
                    seen.update(found)
                    if len(found) != 1:
                        mixed.append(found)
        except BaseException as exc:  # any failure is the test's failure
            failures.append(exc)

    threads = [threading.Thread(target=compose_forever) for _ in range(8)]
    for thread in threads:
        thread.start()
    try:
        for version in range(1, 31):
            write_docs(tmp_path, version, broken="beta" if version % 3 == 0 else None)
            outcome = live.reload()
            assert outcome.swapped is (version % 3 != 0), version
            time.sleep(0.005)  # let the composers run on this version
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert failures == [] and mixed == []
    assert len(seen) > 5 and not any(f"V{v}" in seen for v in range(3, 31, 3))  # broken versions never served


# ------------------------------------------------------------------------------------- in the tool loop


def test_a_pinned_task_keeps_its_version_across_a_reload_and_a_new_task_gets_the_new_one(tmp_path: Path) -> None:
    import anthropic

    from prompt_composer import wrap
    from prompt_composer.testing.replies import text_reply, tool_use_reply
    from prompt_composer.testing.server import ScriptedMessagesServer

    write_docs(tmp_path, 1)
    live = LiveRegistry(tmp_path)
    script = [text_reply("a"), text_reply("b"), text_reply("c"), text_reply("d"),
              tool_use_reply(("x", "beta", {"path": "p"})), text_reply("e")]  # fmt: skip
    with ScriptedMessagesServer(script) as server:
        sdk = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        pinned = wrap(sdk, registry=live, mode="work", task_id="old", policy="inline")
        fifo = pinned.for_task("fifo", policy="every_turn")
        ask = [{"role": "user", "content": "hi"}]
        pinned.messages.create(model="m", max_tokens=9, messages=ask)
        fifo.messages.create(model="m", max_tokens=9, messages=ask)
        write_docs(tmp_path, 2)
        (tmp_path / "beta.yaml").unlink()  # version 2 has no beta
        assert live.reload().swapped
        pinned.messages.create(model="m", max_tokens=9, messages=ask)
        fifo.messages.create(model="m", max_tokens=9, messages=ask)
        # The pinned task still runs on version 1: beta is its tool, so the call is executed.
        result = pinned.run("use beta", model="m", executors={"beta": lambda _: "ran"})
        fresh = pinned.for_task("new")
        assert "beta" not in fresh.mode.allowed and versions_in(fresh.prompt().system) == {"V2"}
        sdk.close()
        bodies = [r.body for r in server.requests]
    systems = ["".join(b["text"] for b in body["system"]) for body in bodies]
    assert versions_in(systems[0]) == versions_in(systems[2]) == {"V1"}  # pinned: byte-identical prompt kept
    assert systems[0] == systems[2] and bodies[0]["tools"] == bodies[2]["tools"]
    assert versions_in(systems[1]) == {"V1"} and versions_in(systems[3]) == {"V2"}  # every_turn follows
    assert [(c.name, c.executed) for c in result.tool_calls] == [("beta", True)]
