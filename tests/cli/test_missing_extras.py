"""A missing optional extra is one line everywhere: each command (and library entry point) that needs an extra,
run with that extra's modules hidden, says which extra and how to install it, exits 2, and shows no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from prompt_composer.shared.extras import EXTRA_MODULES, install_line
from tests.helpers import REPO

pytestmark = pytest.mark.slow

# Runs the CLI (or a snippet) with the modules of some extras unimportable, as in an environment without them:
# a finder ahead of every other raises what Python raises for a module that is not installed.
HIDE = """\
import sys
hidden = set(sys.argv[1].split(","))

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in hidden:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
if sys.argv[2] == "-c":
    exec(sys.argv[3])
else:
    from prompt_composer.cli import main
    sys.exit(main(sys.argv[2:]))
"""


def modules_of(extra: str) -> str:
    return ",".join(module for module, owner in EXTRA_MODULES.items() if owner == extra)


def run_hidden(extra: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPT_COMPOSER_", "ANTHROPIC_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env["PROMPT_COMPOSER_CACHE"] = str(cwd / "cache")
    return subprocess.run(
        [sys.executable, "-c", HIDE, modules_of(extra), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


CLI_CASES = [
    ("mcp", ["serve", "--mode", "code"]),
    ("mcp", ["serve", "--mode", "code", "--transport", "http", "--port", "0"]),
    ("mcp", ["import", "mcp", "--out", "imported", "--", sys.executable, "-m", "mcp_server_time"]),
    ("mcp", ["run", "--mode", "code", "--task", "hi", "--base-url", "http://127.0.0.1:9", "--servers", "servers.json"]),
    ("openai", ["run", "--mode", "code", "--task", "hi", "--provider", "openai", "--base-url", "http://127.0.0.1:9"]),
    ("openai", ["run", "--mode", "code", "--task", "hi", "--provider", "openai-responses", "--base-url", "http://127.0.0.1:9"]),
    ("local", ["model", "serve", "--port", "0"]),
    ("redis", ["serve", "--mode", "code", "--transport", "http", "--port", "0", "--session-store", "redis://127.0.0.1:1/0"]),
    ("auth", ["serve", "--mode", "code", "--transport", "http", "--port", "0", "--auth-jwks", "jwks.json",
              "--auth-issuer", "https://id.example", "--auth-audience", "gateway"]),
]  # fmt: skip

LIBRARY_CASES = [
    ("otel", "from prompt_composer.learn import OtelSink; OtelSink()"),
    ("redis", "from prompt_composer.core import RedisSessionStore; RedisSessionStore('redis://127.0.0.1:1/0')"),
    ("auth", "from prompt_composer.mcp import JwtVerifier; JwtVerifier('jwks.json', issuer='i', audience='a')"),
    ("local", "from prompt_composer.local.server import runtime; runtime()"),
    ("mcp", "from prompt_composer.importers import import_mcp; import_mcp(['x'], 'out')"),
]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": []}), encoding="utf-8")
    return tmp_path


def assert_one_line(done: subprocess.CompletedProcess[str], extra: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"{extra!r} extra" in lines[0] and install_line(extra) in lines[0], lines[0]


@pytest.mark.parametrize(("extra", "argv"), CLI_CASES, ids=[f"{e}:{' '.join(a[:2])}" for e, a in CLI_CASES])
def test_a_command_without_its_extra_says_which_in_one_line(extra: str, argv: list[str], workdir: Path) -> None:
    done = run_hidden(extra, argv, workdir)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert_one_line(done, extra)
    assert done.stderr.startswith("error: ")
    assert not (workdir / "imported").exists()  # nothing was written


@pytest.mark.parametrize(("extra", "code"), LIBRARY_CASES, ids=[e for e, _ in LIBRARY_CASES])
def test_the_library_without_an_extra_raises_one_line_naming_it(extra: str, code: str, workdir: Path) -> None:
    wrapped = (
        "from prompt_composer.errors import PromptComposerError\n"
        f"try:\n    {code}\nexcept (PromptComposerError, ImportError) as exc:\n"
        "    import sys; print(f'{type(exc).__name__}: {exc}', file=sys.stderr); sys.exit(2)\n"
    )
    done = run_hidden(extra, ["-c", wrapped], workdir)
    assert done.returncode == 2, done.stderr
    assert_one_line(done, extra)


def test_the_semantic_search_fallback_names_the_embeddings_extra(workdir: Path) -> None:
    done = run_hidden("embeddings", ["search", "grep the code", "--mode", "code", "--strategy", "semantic"], workdir)
    assert done.returncode == 0, done.stderr  # it falls back to keyword search, and says so
    assert "Traceback" not in done.stderr
    (warning,) = [line for line in done.stderr.splitlines() if "semantic search" in line]
    assert install_line("embeddings") in warning and "'embeddings' extra" in warning
    assert warning.endswith("using keyword search")


def test_every_extra_has_a_case() -> None:
    covered = {extra for extra, _ in CLI_CASES} | {extra for extra, _ in LIBRARY_CASES} | {"embeddings"}
    assert covered == set(EXTRA_MODULES.values())
