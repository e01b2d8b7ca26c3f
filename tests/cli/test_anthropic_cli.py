"""``prompt-composer run`` against the scripted server, on the shipped docs; and the README example."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prompt_composer import Composer, Registry
from prompt_composer.cli import main
from prompt_composer.testing.replies import Usage, text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import REPO, learned_use_log

REPO = REPO


def test_run_json_on_the_shipped_code_mode(
    workspace: Path, shipped: Registry, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    script = [
        tool_use_reply(("c1", "read_file", {"path": "README.md"}), usage=Usage(100, 10, 80, 0)),
        tool_use_reply(
            ("c2", "read_file", {"path": "../secret.txt"}),
            ("c3", "list_files", {"path": "."}),
            ("c4", "execute_command", {"command": "rm -rf /"}),
            usage=Usage(20, 5, 0, 90),
        ),
        tool_use_reply(("c5", "glob", {"pattern": "*.md"}), usage=Usage(30, 6, 10, 95)),
        text_reply("It is a demo.", usage=Usage(40, 7, 0, 100)),
    ]
    with ScriptedMessagesServer(script) as server:
        code = main(
            ["run", "--mode", "code", "--task", "What is here?", "--base-url", server.base_url,
             "--workspace", str(workspace), "--policy", "inline", "--format", "json"]
        )  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["text"] == "It is a demo."
    assert out["iterations"] == 4
    assert out["tool_calls"] == [
        {"name": "read_file", "input": {"path": "README.md"}, "is_error": False},
        {"name": "read_file", "input": {"path": "../secret.txt"}, "is_error": True},
        {"name": "list_files", "input": {"path": "."}, "is_error": False},
        {"name": "execute_command", "input": {"command": "rm -rf /"}, "is_error": True},
        {"name": "glob", "input": {"pattern": "*.md"}, "is_error": False},
    ]
    assert out["usage"] == {
        "input_tokens": 190,
        "output_tokens": 28,
        "cache_creation_input_tokens": 90,
        "cache_read_input_tokens": 285,
    }
    bodies = [r.body for r in server.requests]
    assert bodies[0]["messages"][0]["content"][0]["text"] == "What is here?"
    assert server.requests[0].headers["authorization"] == "Bearer test-key"
    composed = Composer(shipped).compose("code")
    system = bodies[0]["system"][0]["text"]  # run detects the machine: workspace, OS, shell, date
    assert f"====\nSYSTEM INFORMATION\n\nWorkspace folder: {workspace.resolve()}\nOperating system: " in system
    assert "\nDefault shell: " in system and "\nCurrent date: " in system
    assert all(b["system"][0]["text"] == system for b in bodies)  # read once per run
    sent = [{k: v for k, v in t.items() if k != "cache_control"} for t in bodies[0]["tools"]]
    assert sent == list(composed.tools)
    assert all(b["tools"] == bodies[0]["tools"] for b in bodies)  # inline: fixed for the task
    results = bodies[2]["messages"][-1]["content"]
    assert "outside the workspace" in results[0]["content"][0]["text"]
    assert results[2]["content"][0]["text"] == "Error: tool 'execute_command' has no executor here; it was not run."
    # glob is brief in code mode: its first executed result carries its full text once
    glob_result = bodies[3]["messages"][-1]["content"][0]["content"]
    assert glob_result[0]["text"] == "README.md"
    assert shipped.tools["glob"].full in glob_result[1]["text"]


def test_run_text_output_and_errors(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with ScriptedMessagesServer([tool_use_reply(("c1", "list_files", {"path": "."}))] * 2) as server:
        args = ["run", "--mode", "code", "--task", "t", "--base-url", server.base_url, "--workspace", str(workspace)]
        assert main([*args, "--max-iterations", "2"]) == 1
    captured = capsys.readouterr()
    assert "max_iterations=2" in captured.err
    assert "# list_files" in captured.err
    assert main(["run", "--mode", "nope", "--task", "t"]) == 2
    assert main(["run", "--mode", "code", "--task", "t", "--workspace", str(workspace / "missing")]) == 2
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    assert main(["run", "--mode", "code", "--task", "t", "--base-url", "https://api.example.com"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


@pytest.mark.slow
def test_the_readme_example_runs_with_one_command() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-W", "error", "examples/agent_loop.py"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "iteration 1: ['list_files']" in done.stdout
    assert "This is the prompt-composer project" in done.stdout


def test_run_needs_no_key_for_a_server_on_this_machine(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`prompt-composer model serve` answers on 127.0.0.1 and checks no key: run sends a placeholder."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with ScriptedMessagesServer([text_reply("hi")]) as server:
        code = main(["run", "--mode", "code", "--task", "hi", "--base-url", server.base_url,
                     "--workspace", str(workspace)])  # fmt: skip
    assert code == 0 and capsys.readouterr().out.strip() == "hi"
    assert server.requests[0].headers["authorization"] == "Bearer local"


def shipped_with_mode(tmp_path: Path, mode: str) -> Path:
    """A copy of the shipped docs with one more mode (``mode``: its YAML, whose first line names its slug)."""
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "tool_docs", docs)
    slug = mode.split("\n", 1)[0].removeprefix("slug: ")
    (docs / "modes" / f"{slug}.yaml").write_text(mode, encoding="utf-8")
    return docs


def test_run_learns_search_phrasings_from_an_event_log(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run --learn-from LOG``: the loop's ``tool_search`` finds a tool by a request that once led to its use;
    without the log the same request is an explained miss. An unreadable log stops the run before any request."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    docs = shipped_with_mode(
        tmp_path,
        "slug: find\nname: Find\nrole: You find the tools you need before you use them.\n"
        "include: [read_file, search_files, list_files]\npermanent: []\nrecent_size: 2\nbudget_tokens: 100000\n"
        "discovery: true\n",
    )
    log = learned_use_log(
        tmp_path / "events.jsonl", query="summon the oracle", tool="search_files", mode="find", provider="anthropic"
    )

    def run(*extra: str) -> tuple[str, list[str]]:
        script = [tool_use_reply(("c1", "tool_search", {"query": "summon the oracle"})), text_reply("Found it.")]
        with ScriptedMessagesServer(script) as server:
            code = main(
                ["--docs", str(docs), "run", "--mode", "find", "--task", "Summon the oracle.",
                 "--base-url", server.base_url, "--workspace", str(workspace), "--format", "json", *extra]
            )  # fmt: skip
            assert code == 0
            second = server.requests[1].body
        capsys.readouterr()
        found = second["messages"][-1]["content"][0]["content"][0]["text"]
        return found, [t["name"] for t in second["tools"]]

    plain, plain_tools = run()
    assert plain.startswith("No tool of") and "search_files" not in plain_tools
    learned, learned_tools = run("--learn-from", str(log))
    assert not learned.startswith("No tool of") and "search_files" in learned
    assert "search_files" in learned_tools  # activated for the rest of the task
    with ScriptedMessagesServer([text_reply("never asked")]) as server:
        missing = ["--docs", str(docs), "run", "--mode", "find", "--task", "x", "--base-url", server.base_url]
        assert main([*missing, "--learn-from", str(tmp_path / "nope.jsonl")]) == 2
        assert server.requests == []
    assert "cannot read the event log" in capsys.readouterr().err


def test_run_rewrite_asks_the_model_for_the_operation_before_preselection_searches(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run --rewrite``: one request for the task's operation (no tools), then the task, whose preselection note
    names what the line found; a mode without preselect is refused before any request."""
    from prompt_composer.discovery.rewrite import REWRITE_SYSTEM

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    docs = shipped_with_mode(
        tmp_path,
        "slug: pick\nname: Pick\nrole: You answer questions about the code.\n"
        "include: [read_file, search_files, list_code_definitions, glob, list_files]\npermanent: [read_file]\n"
        "recent_size: 2\nbudget_tokens: 100000\npreselect: {k: 1, min_confidence: 0.1}\n",
    )
    base = ["--docs", str(docs), "run", "--task", "Summon the oracle.", "--workspace", str(workspace)]
    script = [text_reply("list the class and function definitions in source code files"), text_reply("Done.")]
    with ScriptedMessagesServer(script) as server:
        code = main([*base, "--mode", "pick", "--base-url", server.base_url, "--rewrite", "--temperature", "0"])
        rewrite, task = (r.body for r in server.requests)
    assert code == 0 and "Done." in capsys.readouterr().out
    assert rewrite["system"] == REWRITE_SYSTEM and "tools" not in rewrite and rewrite["temperature"] == 0
    assert rewrite["messages"][-1] == {"role": "user", "content": "Summon the oracle."}
    note = task["messages"][0]["content"][-1]["text"]
    assert "Tools a search of this request found: list_code_definitions" in note
    with ScriptedMessagesServer([text_reply("never asked")]) as server:
        assert main([*base, "--mode", "code", "--base-url", server.base_url, "--rewrite"]) == 2
        assert server.requests == []
    assert "--rewrite needs a mode with preselect; mode 'code' has none" in capsys.readouterr().err
    assert main([*base, "--mode", "pick", "--rewrite", "--native", "--base-url", "http://127.0.0.1:9"]) == 2
    assert "--rewrite and --native cannot go together" in capsys.readouterr().err
