"""The gateway tests' fixtures: the shipped docs plus the tools of the real time and git servers (and the slow
fixture server) imported as a user would, with modes of our own over them, and a servers file for ``serve``."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("mcp_server_time")
pytest.importorskip("mcp_server_git")

from prompt_composer import load_registry
from prompt_composer.importers.from_mcp import import_mcp
from tests.helpers import REPO
from tests.mcp.support import GIT, SLOW_SERVER, TIME, mode_yaml


@pytest.fixture(scope="session")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped docs plus the imported tools, and four modes over them: ``gw`` (brief and full), ``gw-find``
    (discovery), ``gw-tier`` (tiers: two tools as catalog lines) and ``gw-lean`` (task_start promotion)."""
    folder = tmp_path_factory.mktemp("gateway") / "docs"
    shutil.copytree(REPO / "tool_docs", folder)
    import_mcp(TIME, folder, server="time")
    import_mcp(GIT, folder, server="git")
    import_mcp([sys.executable, str(SLOW_SERVER)], folder, server="slow")
    modes = folder / "modes"
    (modes / "gw.yaml").write_text(mode_yaml("gw"), encoding="utf-8")
    (modes / "gw-find.yaml").write_text(mode_yaml("gw-find", discovery=True, permanent=()), encoding="utf-8")
    (modes / "gw-tier.yaml").write_text(
        mode_yaml("gw-tier", tiers="{share: 1.0, context_tokens: 650}"), encoding="utf-8"
    )
    (modes / "gw-lean.yaml").write_text(mode_yaml("gw-lean", promotion="task_start"), encoding="utf-8")
    load_registry(folder)  # the folder loads: a broken import would fail here, not in a gateway test
    return folder


@pytest.fixture
def servers(tmp_path: Path) -> Path:
    """A servers file as MCP clients write it. The time and git servers write their pids first, so a test can kill
    them."""
    pidfile, git_pidfile = tmp_path / "time.pid", tmp_path / "git.pid"
    command = f"echo $$ > {pidfile} && exec {' '.join(TIME)}"
    git_command = f"echo $$ > {git_pidfile} && exec {' '.join(GIT)}"
    path = tmp_path / "servers.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": "sh", "args": ["-c", command], "alwaysAllow": []},
                    "git": {"command": "sh", "args": ["-c", git_command]},
                    "slow": {"command": sys.executable, "args": [str(SLOW_SERVER)]},
                }
            }
        ),
        encoding="utf-8",
    )
    return path
