"""The event log on a failing disk: ``JsonlSink`` on ``/dev/full`` (every write fails with ENOSPC), a line cut short
by a failing write, and ``run --log /dev/full`` / ``serve --log /dev/full``: the task finishes (exit 0), the log
says once that it cannot write, and what it dropped is counted at the end."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from prompt_composer.cli import main
from prompt_composer.learn.events import EventLog, JsonlSink
from prompt_composer.testing.replies import text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import REPO

DEV_FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not DEV_FULL.exists(), reason="needs /dev/full (Linux)")


@needs_dev_full
def test_a_jsonl_sink_on_dev_full_raises_from_write_and_keeps_nothing() -> None:
    sink = JsonlSink(DEV_FULL)
    for n in range(3):
        with pytest.raises(OSError, match="No space left on device"):
            sink.write({"v": 1, "event": "request", "n": n})
    sink.close()  # nothing buffered: closing has nothing left to fail on
    sink.close()


def test_a_line_cut_short_is_ended_before_the_next_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log.jsonl"
    sink = JsonlSink(path)
    sink.write({"n": 1})
    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[:5]))  # a short write: the disk fills mid-line
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", failing_write)
    with pytest.raises(OSError, match="No space left"):
        sink.write({"n": 2, "text": "lost"})
    monkeypatch.setattr(os, "write", real_write)
    sink.write({"n": 3})
    sink.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"n": 1} and json.loads(lines[-1]) == {"n": 3}
    assert lines[1] == '{"n":'  # the torn line stays torn, and costs no other line
    assert len(lines) == 3


def test_a_lone_surrogate_is_written_escaped_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    sink = JsonlSink(path)
    sink.write({"output": "bad \udc80 byte"})
    sink.close()
    assert json.loads(path.read_text(encoding="utf-8")) == {"output": "bad \udc80 byte"}


class RaisingSink:
    def write(self, event: Mapping[str, Any]) -> None:
        raise OSError(28, "No space left on device")

    def close(self) -> None:
        pass


def test_the_log_says_once_that_its_sink_fails_and_counts_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Exception] = []
    with EventLog(RaisingSink(), on_sink_error=seen.append) as log:
        for n in range(5):
            log.emit("request", n=n)
    assert len(seen) == 1 and isinstance(seen[0], OSError)
    assert log.sink_error is seen[0] and log.drops.sink_errors == 5  # the closing "dropped" line fails too
    with caplog.at_level(logging.WARNING, logger="prompt_composer.learn.events"), EventLog(RaisingSink()) as log:
        for n in range(5):
            log.emit("request", n=n)
    warnings = [r for r in caplog.records if r.name == "prompt_composer.learn.events"]
    assert len(warnings) == 1
    assert warnings[0].getMessage() == (
        "event log: the sink failed (OSError: [Errno 28] No space left on device); events it cannot take are "
        "dropped and counted"
    )


def test_a_report_that_raises_does_not_stop_the_log() -> None:
    def broken(exc: Exception) -> None:
        raise RuntimeError("no")

    with EventLog(RaisingSink(), on_sink_error=broken) as log:
        log.emit("request")
    assert log.drops.sink_errors == 1


@needs_dev_full
def test_run_with_its_log_on_dev_full_finishes_warns_once_and_counts(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    script = [tool_use_reply(("c1", "list_files", {"path": "."})), text_reply("Listed.")]
    with ScriptedMessagesServer(script) as server:
        code = main(
            ["run", "--mode", "code", "--task", "What is here?", "--base-url", server.base_url,
             "--workspace", str(workspace), "--log", str(DEV_FULL)]
        )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0 and out.strip() == "Listed."
    warnings = [line for line in err.splitlines() if "cannot write" in line]
    assert warnings == [
        "# event log /dev/full: cannot write: No space left on device (errno 28); going on without it, counting "
        "the events lost"
    ]
    [dropped] = [line for line in err.splitlines() if "events dropped" in line]
    count = re.fullmatch(r"# event log /dev/full: (\d+) events dropped \(sink_errors (\d+)\)", dropped)
    assert count is not None and count[1] == count[2], dropped
    assert int(count[1]) >= 3  # at least the two requests and the call


@needs_dev_full
def test_serve_with_its_log_on_dev_full_answers_warns_once_and_counts(tmp_path: Path) -> None:
    """``serve --log /dev/full`` over stdio with the SDK's own client: the list and the call are answered; the
    server's stderr says once that the log cannot be written, and counts what it dropped when it stops."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client, StdioServerParameters, stdio_client

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("hello")
    args = ["-m", "prompt_composer", "serve", "--mode", "code", "--workspace", str(tmp_path / "ws"),
            "--log", str(DEV_FULL)]  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=args, env={**os.environ, "PYTHONPATH": str(REPO)})

    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:

        async def scenario() -> None:
            with anyio.fail_after(120):
                async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
                    listed = await client.list_tools()
                    assert any(tool.name == "list_files" for tool in listed.tools)
                    result = await client.call_tool("list_files", {"path": "."})
                    assert not result.is_error and "a.txt" in str(result.content)

        anyio.run(scenario)
        errlog.seek(0)
        err = errlog.read()
    warnings = [line for line in err.splitlines() if "cannot write" in line]
    assert warnings == [
        "# event log /dev/full: cannot write: No space left on device (errno 28); going on without it, counting "
        "the events lost"
    ], err
    assert "Traceback" not in err
