"""End to end against a real model: Qwen2.5-Coder-1.5B on llama.cpp's server (``prompt-composer model serve``),
driven by the real anthropic SDK through the tool loop.

These tests assert what must hold for any model: tool calls parsed and answered, every call answered by a
result, the loop ending within its bounds, refusals reaching the model as error results, fetch and inline
promotion doing what they say, the prompt prefix staying cached. Never the model's wording. Where a test needs
the model to pick a tool, the task names it, and what is checked is what the product did with the call.

One server (8k context) serves the whole session; the prompts are small (a 4-tool mode of the shipped read
tools) because the CPU processes ~56 prompt tokens a second. Without the weights the tests skip, except under
CI, where README's test command has set them up and a skip would hide a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from prompt_composer import Composer, Registry, load_registry
from prompt_composer.agent.anthropic import wrap
from prompt_composer.agent.engine import ANSWER
from prompt_composer.agent.results import LoopResult, MaxIterationsError, PendingCall
from prompt_composer.core.builtins import FETCH_TOOL_NAME
from prompt_composer.local.server import LocalModelServer
from prompt_composer.safety.executors import workspace_executors
from tests.helpers import REPO, model_server_threads, require_local_model

# End to end on the local model: minutes, and one llama.cpp server per process (the session fixture), so under
# pytest-xdist every test of this module goes to one worker (`--dist loadgroup`), which starts the server once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("local-model")]

SHIPPED = REPO / "tool_docs"
MODE = """slug: {slug}
name: Reader
role: You answer questions about the code in the workspace. You read files; you never change them.
groups: [read]
permanent: [read_file, list_files]
recent_size: 2
budget_tokens: 5000
tool_style: {style}
"""
TEMPERATURE = {"temperature": 0}
MAX_ITERATIONS = 6


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    require_local_model()
    with LocalModelServer(ctx=8192, timeout=300, threads=model_server_threads()) as server:
        yield server.base_url


@pytest.fixture(scope="session")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped read tools, write_to_file (outside the modes), and two small modes: native and text."""
    root = tmp_path_factory.mktemp("docs")
    (root / "modes").mkdir()
    for name in ("read_file", "list_files", "search_files", "glob", "write_to_file"):
        shutil.copy(SHIPPED / f"{name}.yaml", root / f"{name}.yaml")
    (root / "modes" / "reader.yaml").write_text(MODE.format(slug="reader", style="native"))
    (root / "modes" / "reader-text.yaml").write_text(MODE.format(slug="reader-text", style="text"))
    return root


@pytest.fixture(scope="session")
def registry(docs: Path) -> Registry:
    return load_registry(docs)


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    (root / "src").mkdir()
    (root / "src" / "cli.py").write_text(
        'def parse_args(argv):\n    """Parse the command line."""\n    return argv[1:]\n'
    )
    (root / "src" / "util.py").write_text("def clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n")
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "1.4.2"\n')
    return root


@pytest.fixture
def sdk(base_url: str) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=base_url, api_key="local", timeout=600) as client:
        yield client


def run(client: Any, task: str, workspace: Path, *, iterations: int = MAX_ITERATIONS, **kw: Any) -> LoopResult:
    """The loop, as a user runs it; a model still calling tools at the bound is an ended loop too."""
    try:
        result: LoopResult = client.run(
            task,
            model="local",
            max_tokens=400,
            executors=workspace_executors(workspace),
            max_iterations=iterations,
            extra_body=TEMPERATURE,
            **kw,
        )
    except MaxIterationsError as exc:
        result = exc.result
        assert len(result.iterations) == iterations
    return result


def assert_every_call_answered(result: LoopResult) -> None:
    """Protocol: each tool_use is answered by exactly one tool_result, in the next user message, in order."""
    messages = result.messages
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        uses = [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
        if not uses:
            continue
        reply = messages[index + 1]
        assert reply["role"] == "user"
        answered = [b["tool_use_id"] for b in reply["content"] if b.get("type") == "tool_result"]
        assert answered == uses


def test_native_calls_are_parsed_answered_and_the_loop_ends(
    sdk: anthropic.Anthropic, registry: Registry, workspace: Path
) -> None:
    client = wrap(sdk, registry=registry, mode="reader", task_id="native")
    result = run(client, "Read pyproject.toml and tell me which version it declares.", workspace)
    executed = [c for c in result.tool_calls if c.executed]
    assert executed, "the model's tool call came back as a parsed tool_use block and was run"
    assert all(registry.mode("reader").allows(c.name) for c in executed)
    assert_every_call_answered(result)
    assert result.stop_reason == "end_turn" and result.text.strip()
    # The second request shares the first one's prefix (system + tools + the task): the server reads it from
    # its cache instead of processing it again.
    first, second = result.iterations[0].usage, result.iterations[1].usage
    assert second.cache_read_input_tokens >= 0.9 * (first.input_tokens + first.cache_read_input_tokens)
    assert second.input_tokens < second.cache_read_input_tokens


def test_an_unchanged_prefix_is_read_from_the_cache_across_tasks(
    sdk: anthropic.Anthropic, registry: Registry, workspace: Path
) -> None:
    """Two tasks in one mode: the second task's first request reuses the system prompt and tools."""
    composer = Composer(registry)
    usages = []
    for task_id in ("cache-1", "cache-2"):
        client = wrap(sdk, composer=composer, mode="reader", task_id=task_id)
        reply = client.messages.create(
            model="local", max_tokens=40, messages=[{"role": "user", "content": f"Say hello ({task_id})."}],
            extra_body=TEMPERATURE,
        )  # fmt: skip
        usages.append(reply.usage)
    prompt_tokens = usages[1].input_tokens + (usages[1].cache_read_input_tokens or 0)
    assert (usages[1].cache_read_input_tokens or 0) > 0.8 * prompt_tokens


# How a user asks for a tool's documentation. The 1.5B model answered the first from the brief alone in one trial
# and fetched on the second (measured here); each is its own task, and one fetch is what the test needs.
FETCH_REQUESTS = (
    "I want to read the full documentation of the search_files tool. Fetch it.",
    "Before anything else, call fetch_tool_description with the name search_files, "
    "then tell me in one sentence what its regex parameter does.",
)


def test_fetch_tool_description_round_trips(sdk: anthropic.Anthropic, registry: Registry, workspace: Path) -> None:
    for attempt, request in enumerate(FETCH_REQUESTS):
        client = wrap(sdk, registry=registry, mode="reader", task_id=f"fetch-{attempt}")
        result = run(client, request, workspace)
        fetches = [c for c in result.tool_calls if c.name == FETCH_TOOL_NAME]
        if fetches:
            break
    assert fetches, "the model called fetch_tool_description"
    ok = [c for c in fetches if not c.is_error]
    assert ok and all(c.input.get("name") in registry.mode("reader").allowed for c in ok)
    for call in ok:  # what came back is that tool's full text, as the registry has it
        assert registry.tools[str(call.input["name"])].full.splitlines()[0] in call.output
    assert_every_call_answered(result)


# Requests after which the 1.5B model fetched glob (measured; asked to fetch glob alone, it called glob instead).
REFETCH_REQUESTS = (
    "Use fetch_tool_description to read the documentation of glob and then the documentation of search_files.",
    "First call fetch_tool_description for search_files. Then call fetch_tool_description for glob. "
    "Then list the Python files under src.",
)


def test_a_repeated_fetch_makes_the_next_request_a_call_of_that_tool(
    sdk: anthropic.Anthropic, registry: Registry, workspace: Path
) -> None:
    """After a fetch of a tool whose full text the task already has, the loop's next request offers that tool
    alone and names it: the reply is a call of it, run like any other, whatever the model would rather do."""
    for attempt, request in enumerate(REFETCH_REQUESTS):
        client = wrap(sdk, registry=registry, mode="reader", task_id=f"refetch-{attempt}")
        client.session.mark_expanded("glob")  # its full text went out earlier in the task
        result = run(client, request, workspace)
        forced = [i for i in result.iterations if i.forced]
        if forced:
            break
    assert forced, "the model fetched glob (a repeat: answered in one line)"
    repeat = next(c for c in result.tool_calls if c.name == FETCH_TOOL_NAME and c.input.get("name") == "glob")
    assert repeat.output.startswith("glob is already documented in full above")
    assert forced[0].forced == "glob"
    for iteration in forced:
        # After the forced glob, the loop's other rule may follow: the same calls twice with the same results make
        # it ask for an answer ("(answer)", tool choice none), and what the model does then is its own (a local
        # server may still call a tool; every call is answered, below).
        assert iteration.forced in ("glob", ANSWER)
        if iteration.forced == "glob":
            assert [(c.name, c.executed, c.is_error) for c in iteration.tool_calls] == [("glob", True, False)]
    assert_every_call_answered(result)


def test_a_brief_tool_enters_the_fifo_and_inline_expands_it_once(
    sdk: anthropic.Anthropic, registry: Registry, workspace: Path
) -> None:
    client = wrap(sdk, registry=registry, mode="reader", task_id="inline", policy="inline")
    assert "glob" in client.prompt().brief
    result = run(client, "Use the glob tool with the pattern src/*.py to list the Python files.", workspace)
    globs = [c for c in result.tool_calls if c.name == "glob" and c.executed]
    assert globs, "the model called glob and it ran"
    assert "glob" in client.session.history()
    fetched_first = any(c.name == FETCH_TOOL_NAME and c.input.get("name") == "glob" for c in result.tool_calls)
    # Expanded exactly once, on the first executed call, unless the model fetched the doc itself before.
    assert [c.expanded for c in globs] == [not fetched_first] + [False] * (len(globs) - 1)
    if not fetched_first:
        tool_results = [b for m in result.messages if m["role"] == "user" and isinstance(m["content"], list)
                        for b in m["content"] if b.get("tool_use_id") == globs[0].id]  # fmt: skip
        assert registry.tools["glob"].full.splitlines()[0] in json.dumps(tool_results)
    # The prompt stayed pinned: every request carried the same tools, so the prefix stayed cacheable.
    tools = [it.prompt.tools for it in result.iterations]
    assert all(t == tools[0] for t in tools)


def test_a_denied_call_is_an_error_result_and_the_loop_goes_on(
    sdk: anthropic.Anthropic, registry: Registry, workspace: Path
) -> None:
    seen: list[PendingCall] = []

    def deny(call: PendingCall) -> bool:
        seen.append(call)
        return False

    client = wrap(sdk, registry=registry, mode="reader", task_id="deny")
    result = run(client, "Read src/cli.py and tell me what parse_args returns.", workspace, approve=deny)
    assert seen, "the model asked for a tool"
    denied = [c for c in result.tool_calls if c.error and "denied" in c.error]
    assert len(denied) == len(seen) and not any(c.executed for c in result.tool_calls)
    errors = [b for m in result.messages if m["role"] == "user" and isinstance(m["content"], list)
              for b in m["content"] if b.get("type") == "tool_result"]  # fmt: skip
    assert errors and all(b.get("is_error") for b in errors)
    assert_every_call_answered(result)
    assert len(result.iterations) <= MAX_ITERATIONS


def test_a_tool_outside_the_mode_is_refused_without_its_text(
    sdk: anthropic.Anthropic, registry: Registry, workspace: Path
) -> None:
    """write_to_file exists but the reader mode does not allow it: neither fetch nor a call gets through."""
    client = wrap(sdk, registry=registry, mode="reader", task_id="outside")
    assert "write_to_file" not in [t["name"] for t in client.prompt().tools]
    refused = client.answer_fetch({"name": "write_to_file"})
    assert refused.is_error and registry.tools["write_to_file"].full not in refused.content
    # Three turns: the refusal and what the model does with it (a small model may retry the refused fetch until
    # the bound; the assertions hold at any bound, and six turns of retries cost minutes).
    result = run(client, "Call fetch_tool_description with the name write_to_file.", workspace, iterations=3)
    full = registry.tools["write_to_file"].full.splitlines()[1]
    assert all(full not in c.output for c in result.tool_calls)
    for call in result.tool_calls:
        if call.name == "write_to_file" or (call.name == FETCH_TOOL_NAME and call.input.get("name") == "write_to_file"):
            assert call.is_error and not call.executed
    assert_every_call_answered(result)


def test_text_style_calls_are_read_from_the_reply(
    sdk: anthropic.Anthropic, registry: Registry, workspace: Path
) -> None:
    client = wrap(sdk, registry=registry, mode="reader-text", task_id="text")
    result = run(client, "Read the file pyproject.toml and tell me which version it declares.", workspace)
    assert result.iterations[0].prompt.tools == ()  # text style: the docs are in the system prompt only
    executed = [c for c in result.tool_calls if c.executed]
    assert executed and all(c.id.startswith("text_") for c in executed)
    # Whether read from a tool_call block or from a block of another shape, what ran is a tool of the mode.
    assert all(registry.mode("reader-text").allows(c.name) for c in executed)
    labels = [b["text"].splitlines()[0] for m in result.messages[1:] if m["role"] == "user"
              for b in m["content"] if b.get("type") == "text"]  # fmt: skip
    assert any(label.startswith("tool_result name=") for label in labels)
    # Every reply that imitated a result was answered with a correction, never taken as the answer.
    for index, iteration in enumerate(result.iterations):
        if iteration.correction is not None:
            assert result.messages[2 * index + 2]["content"][0]["text"] == iteration.correction


def test_the_async_client_streams_and_times_the_first_token(base_url: str, registry: Registry, workspace: Path) -> None:
    async def go() -> LoopResult:
        async with anthropic.AsyncAnthropic(base_url=base_url, api_key="local", timeout=600) as sdk:
            client = wrap(sdk, registry=registry, mode="reader", task_id="async")
            result: LoopResult = await client.run(
                "List the files in the src folder.", model="local", max_tokens=300, stream=True,
                executors=workspace_executors(workspace), max_iterations=MAX_ITERATIONS, extra_body=TEMPERATURE,
            )  # fmt: skip
            return result

    try:
        result = asyncio.run(go())
    except MaxIterationsError as exc:
        result = exc.result
    assert result.iterations and all(it.first_token is not None for it in result.iterations)
    assert all(0 < (it.first_token or 0) <= it.latency for it in result.iterations)
    assert_every_call_answered(result)


def test_bench_runs_a_task_file_it_has_never_seen(base_url: str, docs: Path, workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "ws").symlink_to(workspace, target_is_directory=True)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps({"id": "version", "task": "Which version does pyproject.toml declare?", "expect": ["read_file"],
                    "args": {"path": "pyproject.toml"}, "workspace": "ws"}) + "\n"
        + json.dumps({"id": "none", "task": "Reply with the word hello.", "expect": []}) + "\n"
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "prompt_composer", "--docs", str(docs), "bench", "--tasks", str(tasks),
         "--mode", "reader", "--base-url", base_url, "--variants", "static,composed", "--format", "json"],
        capture_output=True, text=True, timeout=600, check=False, env={**os.environ, "ANTHROPIC_API_KEY": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert list(report["variants"]) == ["static", "composed"]
    for name, variant in report["variants"].items():
        assert variant["tasks"] == 2 and variant["overflows"] == 0 and variant["errors"] == 0, name
        assert 0 <= variant["first_tool_accuracy"] <= 1 and variant["input_tokens"] > 0
        assert variant["fetch_calls"] >= 0 and variant["wall_s"] > 0
    assert "[static 1/2] version:" in done.stderr and "[composed 2/2] none:" in done.stderr


RUN_TASKS = (
    "Read pyproject.toml and tell me which version it declares.",
    "Use the read_file tool on pyproject.toml, then tell me the version it declares.",
)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_run_completes_a_task_over_either_wire_format_and_the_second_request_is_cached(
    provider: str, base_url: str, docs: Path, workspace: Path
) -> None:
    """``prompt-composer run --provider P`` as a user runs it: the Messages API and Chat Completions of the same
    server. At least one tool call is executed, and the second request reuses the first one's prefix."""
    url = base_url if provider == "anthropic" else f"{base_url}/v1"
    out: dict[str, Any] = {}
    for task in RUN_TASKS:  # each its own task: a small model sometimes answers the first from memory
        done = subprocess.run(
            [sys.executable, "-m", "prompt_composer", "--docs", str(docs), "run", "--provider", provider,
             "--mode", "reader", "--task", task, "--base-url", url, "--model", "local", "--temperature", "0",
             "--workspace", str(workspace), "--max-tokens", "300", "--max-iterations", str(MAX_ITERATIONS),
             "--format", "json"],
            capture_output=True, text=True, timeout=900, check=False,
            env={**os.environ, "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""},
        )  # fmt: skip
        # 0, or 1 with the partial result when the model was still calling tools at the bound: both ended the loop.
        assert done.returncode in (0, 1), done.stderr
        out = json.loads(done.stdout)
        if any(not c["is_error"] for c in out["tool_calls"]):
            break
    else:
        pytest.fail(f"no tool call was executed in {len(RUN_TASKS)} tasks; the last: {out['tool_calls']}")
    assert len(out["requests"]) >= 2 and out["iterations"] == len(out["requests"])
    first, second = out["requests"][:2]
    prompt = first["input_tokens"] + first["cache_read_input_tokens"]
    assert second["cache_read_input_tokens"] >= 0.9 * prompt, out["requests"]


def test_run_log_is_what_the_run_did_and_stats_and_tune_read_it(
    base_url: str, docs: Path, workspace: Path, tmp_path: Path
) -> None:
    """``run --log FILE`` on the local model, then ``stats --log FILE``: every event is well formed and belongs to
    the run, the log's requests and tool calls are the run's (its JSON output), and stats counts as uses exactly
    the calls the run executed. Whatever the model chose to do."""
    log = tmp_path / "run.jsonl"
    env = {**os.environ, "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}
    done = subprocess.run(
        [sys.executable, "-m", "prompt_composer", "--docs", str(docs), "run", "--mode", "reader", "--task",
         RUN_TASKS[1], "--base-url", base_url, "--model", "local", "--temperature", "0", "--workspace",
         str(workspace), "--max-tokens", "300", "--max-iterations", str(MAX_ITERATIONS), "--format", "json",
         "--log", str(log)],
        capture_output=True, text=True, timeout=900, check=False, env=env,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr  # 1: still calling tools at the bound, partial result printed
    out = json.loads(done.stdout)
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert events and "dropped" not in done.stderr
    task = events[0]["task"]
    for event in events:
        assert event["v"] == 1 and event["task"] == task and event["mode"] == "reader", event
        assert event["provider"] == "anthropic" and event["ts"] > 0 and "input" not in event and "output" not in event
    requests = [e for e in events if e["event"] == "request"]
    assert len(requests) == out["iterations"] and [r["usage"] for r in requests] == out["requests"]
    assert all(r["outcome"] == "ok" and r["latency_s"] > 0 for r in requests)
    calls = [e for e in events if e["event"] == "tool_call"]
    assert [(c["tool"], c["outcome"] != "ok") for c in calls] == [(c["name"], c["is_error"]) for c in out["tool_calls"]]
    done = subprocess.run(
        [sys.executable, "-m", "prompt_composer", "--docs", str(docs), "stats", "--log", str(log), "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    executed: dict[str, int] = {}
    for call in out["tool_calls"]:
        if not call["is_error"]:
            executed[call["name"]] = executed.get(call["name"], 0) + 1
    assert {t["tool"]: t["uses"] for t in report["tools"] if t["uses"]} == executed
    (mode,) = report["modes"]
    assert mode["mode"] == "reader" and mode["tasks"] == 1 and mode["requests"] == len(out["requests"])
    for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        assert mode[key] == out["usage"][key], key
    # tune reads the same log: one sequence (this task), never a tool the mode does not allow.
    done = subprocess.run(
        [sys.executable, "-m", "prompt_composer", "--docs", str(docs), "tune", "--mode", "reader", "--log", str(log),
         "--format", "json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if not calls:
        assert done.returncode == 2 and "no tool calls" in done.stderr
        return
    assert done.returncode == 0, done.stderr
    tuned = json.loads(done.stdout)
    assert set(tuned) == {"mode", "current", "proposed", "fit_sequences", "heldout_sequences"}
    # One sequence cannot be split: tune then reports on the fit part itself (its text output says so).
    assert tuned["fit_sequences"] == tuned["heldout_sequences"] == 1
    assert tuned["current"]["permanent"] == ["read_file", "list_files"]
    allowed = set(load_registry(docs).mode("reader").allowed)
    assert set(tuned["proposed"]["permanent"]) <= allowed
    assert tuned["proposed"]["heldout_cost"] <= tuned["current"]["heldout_cost"]


CLOCK_MODE = """slug: clock
name: Clock
role: You answer questions about dates and times with the tools of a time server.
include: [get_current_time, convert_time]
permanent: []
recent_size: 2
budget_tokens: 5000
"""
CLOCK_TASKS = (
    "What is the current time in the Asia/Tokyo time zone?",
    'Call the get_current_time tool with {"timezone": "Asia/Tokyo"} and tell me the time it returns.',
)


def test_a_call_of_an_imported_tool_reaches_its_real_mcp_server(sdk: anthropic.Anthropic, tmp_path: Path) -> None:
    """Routing (``mcp_executors``, what ``run --servers`` uses): the model's call of an imported tool reaches the
    real upstream (PyPI mcp-server-time) under its original name, and the server's own answer is the result."""
    pytest.importorskip("mcp_server_time")
    from prompt_composer.importers.from_mcp import import_mcp
    from prompt_composer.mcp.upstreams import mcp_executors

    docs = tmp_path / "docs"
    (docs / "modes").mkdir(parents=True)
    command = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    import_mcp(command, docs, server="time")
    (docs / "modes" / "clock.yaml").write_text(CLOCK_MODE)
    clock = load_registry(docs)
    servers = {"mcpServers": {"time": {"command": command[0], "args": command[1:]}}}
    (tmp_path / "servers.json").write_text(json.dumps(servers))
    calls: list[Any] = []
    result: LoopResult | None = None
    with mcp_executors(clock, tmp_path / "servers.json") as executors:
        for index, task in enumerate(CLOCK_TASKS):  # each its own task: a small model may answer from memory
            client = wrap(sdk, registry=clock, mode="clock", task_id=f"clock-{index}")
            try:
                result = client.run(task, model="local", max_tokens=300, executors=executors,
                                    max_iterations=MAX_ITERATIONS, extra_body=TEMPERATURE)  # fmt: skip
            except MaxIterationsError as exc:
                result = exc.result
            calls = [c for c in result.tool_calls if c.name == "get_current_time" and c.executed]
            if calls:
                break
    assert result is not None
    if not calls:
        pytest.fail(f"get_current_time was not executed in {len(CLOCK_TASKS)} tasks: {result.tool_calls}")
    assert_every_call_answered(result)
    answer = json.loads(calls[0].output)  # the real server's JSON, for the zone the model asked about
    assert answer["timezone"] == calls[0].input["timezone"] and "datetime" in answer


def test_the_model_puts_a_request_as_one_short_line_searched_before_its_words(sdk: anthropic.Anthropic) -> None:
    from prompt_composer.agent.rewriting import model_rewriter
    from prompt_composer.discovery.rewrite import REWRITE_MAX_TOKENS, searched_text, usable_rewrite

    request = "hop this repo back over to main, everything here is committed"
    answers: list[str | None] = []
    rewriter = model_rewriter(sdk, model="local", extra_body=TEMPERATURE, timeout=300)

    def asked(text: str) -> str | None:
        answers.append(rewriter(text))
        return answers[-1]

    searched, line = searched_text(request, asked)
    (answer,) = answers  # one request to the model for one message
    assert isinstance(answer, str) and answer.strip()  # the real server's reply came back as text
    assert len(answer.split()) <= 2 * REWRITE_MAX_TOKENS  # within max_tokens (a word takes a token or more)
    if line is None:  # not one short line (an answer to the message, or "none"): the request goes as written
        assert searched == request and usable_rewrite(answer) is None
    else:  # the first line of the answer, searched before the request's own words
        assert searched == f"{line}. {request}" and line.lower() in answer.lower() and "\n" not in line
