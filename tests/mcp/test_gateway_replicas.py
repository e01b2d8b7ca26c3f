"""Gateway replicas behind a real load balancer: four ``serve --transport http`` processes behind HAProxy, their
tasks in a real Redis (benchmarks/replicas.py starts them all on 127.0.0.1). Skipped, with the reason, where
``haproxy`` or ``redis-server`` is missing; .ci/run installs both.

- 2026-07-28: 1,000 tasks, four calls each (the fourth re-uses the first tool, so the FIFO must move it to the
  newest end), 24 at a time through the balancer, round robin, so a task's calls land on several replicas; one
  replica is SIGKILLed a quarter of the way in. A call that fails (502 from the balancer, a reset) is retried by
  the client. Every task's FIFO, read back from Redis, is exactly its calls' order.
- Session-era: sessions stick to their replica; the replica of one is killed, the client opens a new session
  (which the balancer sends elsewhere) with the same task header, and the task goes on where it was.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks.replicas import TASK_HEADER, TOKEN_VAR, Answer, Cluster, call, missing

REASON = missing()
# End to end: four gateways, HAProxy and Redis, a thousand tasks; under pytest-xdist on one worker of its own
# group (`--dist loadgroup`), so two clusters never share the machine's two cores.
pytestmark = [
    pytest.mark.skipif(REASON is not None, reason=REASON or ""),
    pytest.mark.slow,
    pytest.mark.xdist_group("replicas"),
]

TOOLS: dict[str, dict[str, Any]] = {
    "list_files": {"path": "."},
    "read_file": {"path": "notes.txt"},
    "search_files": {"path": ".", "regex": "main"},
}
ORDERS = [("list_files", "read_file", "search_files"), ("read_file", "search_files", "list_files")]
ORDERS += [("search_files", "list_files", "read_file"), ("read_file", "list_files", "search_files")]
TASKS = 1000
PARALLEL = 24
KILLED = 1


def calls_of(index: int) -> list[str]:
    first, second, third = ORDERS[index % len(ORDERS)]
    return [first, second, third, first]


def expected_fifo(index: int) -> tuple[str, ...]:
    first, second, third = ORDERS[index % len(ORDERS)]
    return (second, third, first)


def store_key(task: str) -> str:
    return f"token/{TOKEN_VAR}/{task}"  # a static token's tasks are keyed by its variable's name


def test_1000_tasks_over_4_replicas_one_killed_fifos_exact(tmp_path: Path) -> None:
    from prompt_composer.core.redis_store import RedisSessionStore

    with Cluster(tmp_path / "cluster") as cluster:
        headers = cluster.headers()
        done = 0
        lock = threading.Lock()
        killed_at: list[float] = []
        served: dict[int, list[tuple[float, str | None]]] = {}
        retries: Counter[str] = Counter()

        def run(index: int) -> bool:
            nonlocal done
            task = f"task-{index}"
            served[index] = []
            for tool in calls_of(index):
                for _ in range(20):
                    answer: Answer = call(cluster.url, task, tool, TOOLS[tool], headers)
                    if answer.ok and answer.body is not None and not answer.body["result"].get("isError"):
                        served[index].append((time.monotonic(), answer.served_by))
                        break
                    retries[str(answer.status)] += 1
                    time.sleep(0.05)
                else:
                    return False
                with lock:
                    done += 1
                    if done == TASKS and not killed_at:  # a quarter of the 4,000 calls answered
                        cluster.kill(KILLED)
                        killed_at.append(time.monotonic())
            return True

        with ThreadPoolExecutor(PARALLEL) as pool:
            finished = list(pool.map(run, range(TASKS)))

        assert killed_at, "the replica was never killed"
        assert finished.count(False) == 0  # every task's every call was answered, after retries
        store = RedisSessionStore(cluster.redis_url)
        wrong = {i: store.get(store_key(f"task-{i}")).history() for i in range(TASKS)}
        wrong = {i: h for i, h in wrong.items() if h != expected_fifo(i)}
        assert wrong == {}  # 0 tasks lost, every FIFO exact
        store.close()

        replicas = Counter(name for calls in served.values() for _, name in calls)
        assert set(replicas) == {f"r{i}" for i in range(4)}
        late = [name for calls in served.values() for at, name in calls if at > killed_at[0] + 1.0]
        assert late and f"r{KILLED}" not in late  # after the kill (and a health check), only the others answer
        spread = sum(1 for calls in served.values() if len({name for _, name in calls}) > 1)
        assert spread > TASKS // 2  # most tasks started on one replica and continued on another
        print(f"\nreplicas: {dict(replicas)}; retried calls by status: {dict(retries)}; spread tasks: {spread}")


def test_session_era_sessions_stick_and_continue_elsewhere_after_a_kill(tmp_path: Path) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from prompt_composer.core.redis_store import RedisSessionStore

    with Cluster(tmp_path / "cluster") as cluster:

        async def session(task: str, tools: list[str], seen: list[str]) -> None:
            async def note(response: Any) -> None:
                if response.request.method == "POST" and response.headers.get("x-served-by"):
                    seen.append(response.headers["x-served-by"])

            headers = {**cluster.headers(), TASK_HEADER: task}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [note]}) as http,
                Client(streamable_http_client(url=cluster.url, http_client=http), mode="legacy", cache=None) as client,
            ):
                for tool in tools:
                    result = await client.call_tool(tool, TOOLS[tool])
                    assert not result.is_error

        async def scenario() -> None:
            with anyio.fail_after(240):
                seen: dict[int, list[str]] = {i: [] for i in range(8)}
                for i in range(8):
                    await session(f"legacy-{i}", ["list_files", "read_file"], seen[i])
                for i in range(8):  # one session each: every request of it went to one replica
                    assert len(set(seen[i])) == 1, seen[i]
                victim = seen[0][0]
                cluster.kill(int(victim.removeprefix("r")))
                await anyio.sleep(1.0)  # a health check marks it down
                after: list[str] = []
                await session("legacy-0", ["search_files", "list_files"], after)  # a new session, same task
                assert after and victim not in after

        anyio.run(scenario)
        store = RedisSessionStore(cluster.redis_url)
        assert store.get(store_key("legacy-0")).history() == ("read_file", "search_files", "list_files")
        assert store.get(store_key("legacy-1")).history() == ("list_files", "read_file")
        store.close()


def test_a_task_store_that_dies_is_an_error_result_and_the_gateway_stays_up(tmp_path: Path) -> None:
    with Cluster(tmp_path / "cluster", count=1) as cluster:
        url, headers = cluster.replica_url(0), cluster.headers()
        assert call(url, "t-1", "read_file", TOOLS["read_file"], headers).ok
        cluster.processes["redis"].kill()
        cluster.processes["redis"].wait()
        failed = call(url, "t-1", "list_files", TOOLS["list_files"], headers)
        assert failed.ok and failed.body is not None and failed.body["result"]["isError"] is True
        assert "the task store is unavailable" in failed.text and "It may have run" in failed.text
        alone = call(url, None, "list_files", TOOLS["list_files"], headers)  # a request in no task needs no store
        assert alone.ok and not alone.body["result"].get("isError") and "notes.txt" in alone.text  # type: ignore[index]
