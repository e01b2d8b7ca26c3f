"""A new user's first hour, from the README alone (issue 40): the messages that tell them what to do, and the
whole path replayed from a fresh folder: init, two tool docs and a mode of their own, compose, audit (the gate,
SARIF, the HTML report), fetch, search, an import, and the library from a script."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from prompt_composer import load_registry
from prompt_composer.cli import main
from prompt_composer.cli.gateway import unrouted_servers
from prompt_composer.core.fetch import handle_fetch
from prompt_composer.core.modes import DEFAULT_BUDGET_TOKENS, DEFAULT_RECENT_SIZE
from tests.helpers import REPO

HTTP_GET = """\
name: http_get
group: web
brief: Fetch a web page or an API's JSON by URL and return its body as text.
full: |-
  Send an HTTP GET request and return the response body (text, at most 100 kB).

  - `url` (string, required): the address, e.g. `https://example.org/api/items`.
input_schema:
  type: object
  properties:
    url:
      type: string
      description: The URL to fetch.
  required: [url]
  additionalProperties: false
"""
LIST_DIR = """\
name: list_dir
group: read
brief: List the files and folders of a directory of the project, to see what is there before reading.
full: |-
  List a directory's entries, one a line, folders first.

  - `path` (string, optional): the folder, relative to the project root. Default: the root.
input_schema:
  type: object
  properties:
    path:
      type: string
      description: The folder to list.
  additionalProperties: false
"""
# Only what a mode must say: recent_size and budget_tokens take their defaults.
REVIEWER = """\
slug: reviewer
name: Reviewer
role: You review changes to this project and check facts on the web.
groups: [read, web]
"""
TOOLS_JSON = [
    {
        "type": "function",
        "function": {
            "name": "weather_now",
            "description": "Get the current weather for a city: temperature, wind and sky.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def cli_env(tmp_path: Path) -> dict[str, str]:
    """``prompt-composer`` on PATH running this checkout; no settings or keys of the user's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "prompt-composer"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m prompt_composer "$@"\n')
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "PROMPT_COMPOSER_"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env["PROMPT_COMPOSER_CACHE"] = str(tmp_path / "cache")
    return env


def sh(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- messages that say what to do ---------------------------------------------------------------------------------


def test_fetch_of_a_tool_another_mode_has_names_that_mode(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "fetch", "write_to_file", "--mode", "ask")
    assert code == 1 and out == ""
    assert err.strip() == (
        "error: mode 'ask' has no tool 'write_to_file'; modes 'architect', 'code', 'debug' have it: "
        "prompt-composer fetch write_to_file --mode architect"
    )
    code, out, err = run(capsys, "fetch", "write_to_file", "--mode", "code")  # the suggestion works
    assert code == 0 and out.startswith("## write_to_file")
    code, _, err = run(capsys, "fetch", "no_such_tool", "--mode", "ask")  # absent everywhere: the refusal
    assert code == 1 and "there is no tool 'no_such_tool' in mode 'ask'" in err and "--mode" not in err
    assert err.startswith("error: there is no tool")  # the CLI's one error prefix, not the model's `Error:`


def test_the_model_facing_refusal_is_the_same_for_a_hidden_and_an_absent_tool() -> None:
    shipped = load_registry()
    ask = shipped.mode("ask")
    hidden = handle_fetch(shipped, ask, {"name": "write_to_file"})
    absent = handle_fetch(shipped, ask, {"name": "write_to_filf"})
    assert hidden.is_error and absent.is_error
    assert (
        hidden.content.replace("write_to_file", "X").split(".")[0]
        == absent.content.replace("write_to_filf", "X").split(".")[0]
    )
    assert "architect" not in hidden.content and "--mode" not in hidden.content  # the model is told nothing more


def test_validate_suggests_the_key_it_meant(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "modes").mkdir(parents=True)
    (docs / "http_get.yaml").write_text(HTTP_GET + "querys:\n  - fetch a web page\n")
    (docs / "modes" / "reviewer.yaml").write_text(
        REVIEWER.replace("groups: [read, web]", "groups: [web]\nbudget_token: 900")
    )
    code, _, err = run(capsys, "--docs", str(docs), "validate")
    assert code == 2
    assert f"{docs / 'http_get.yaml'}:16: unknown key 'querys'; did you mean 'queries'?" in err
    assert f"{docs / 'modes' / 'reviewer.yaml'}:5: unknown key 'budget_token'; did you mean 'budget_tokens'?" in err


def test_a_mode_without_recent_size_or_budget_gets_the_defaults(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    (docs / "modes").mkdir(parents=True)
    (docs / "http_get.yaml").write_text(HTTP_GET)
    (docs / "list_dir.yaml").write_text(LIST_DIR)
    (docs / "modes" / "reviewer.yaml").write_text(REVIEWER)
    mode = load_registry(docs).mode("reviewer")
    assert (mode.recent_size, mode.config.budget_tokens) == (DEFAULT_RECENT_SIZE, DEFAULT_BUDGET_TOKENS) == (4, 10_000)
    code, out, _ = run(capsys, "--docs", str(docs), "modes")
    assert code == 0 and "2 tools, 0 permanent, recent 4, budget 10000" in out
    code, out, _ = run(capsys, "--docs", str(docs), "audit", "--format", "json")
    (reviewer,) = json.loads(out)["modes"]
    assert code == 0 and reviewer["budget_tokens"] == 10_000 and reviewer["worst_tokens"] < 10_000


def test_init_never_appends_a_second_table(tmp_path: Path) -> None:
    """README's ``init DIR >> pyproject.toml``, on a pyproject without a final newline, then again on one that has
    the table: the file stays valid TOML, and the second time stderr says what to set instead."""
    env = cli_env(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[project]\nname = "demo"')  # no newline at the end
    done = sh("prompt-composer init my_docs >> pyproject.toml", project, env)
    assert done.returncode == 0, done.stderr
    table = tomllib.loads(pyproject.read_text())["tool"]["prompt-composer"]
    assert table == {"docs": "my_docs", "default-mode": "helper"}
    before = pyproject.read_text()
    done = sh("prompt-composer init other_docs >> pyproject.toml", project, env)
    assert done.returncode == 0 and (project / "other_docs" / "modes" / "helper.yaml").is_file()
    assert pyproject.read_text() == before  # nothing appended: still one table, still valid
    assert "already has [tool.prompt-composer]" in done.stderr and 'set docs = "other_docs" in it' in done.stderr
    done = sh("prompt-composer audit", project, env)
    assert done.returncode == 0, done.stderr


def test_import_into_a_folder_with_no_mode_says_how_to_add_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tools, docs = tmp_path / "tools.json", tmp_path / "imported"
    tools.write_text(json.dumps(TOOLS_JSON))
    code, out, _ = run(capsys, "import", "json", str(tools), "--out", str(docs))
    assert code == 0
    assert f"prompt-composer init {docs} --add-mode NAME writes one allowing group(s) mcp" in out
    # the server the calls go to, and how the gateway is told about it
    assert "calls of these tools go to MCP server 'tools'" in out and "an entry named 'tools'" in out
    code, _, err = run(capsys, "--docs", str(docs), "validate")
    assert code == 2 and f"prompt-composer init {docs} --add-mode NAME" in err
    code, _, err = run(capsys, "init", str(docs), "--add-mode", "weather")
    assert code == 0 and "groups mcp" in err
    assert run(capsys, "--docs", str(docs), "validate")[0] == 0
    code, out, _ = run(capsys, "--docs", str(docs), "fetch", "weather_now", "--mode", "weather")
    assert code == 0 and "## weather_now" in out
    code, _, err = run(capsys, "init", str(docs), "--add-mode", "weather")  # never overwritten
    assert code == 1 and "already there" in err
    # serve, started without --servers, says which server its imported tools need
    warning = unrouted_servers(load_registry(docs), "weather", {})
    assert warning is not None and "'tools'" in warning and "--servers FILE" in warning
    assert unrouted_servers(load_registry(docs), "weather", {"tools": object()}) is None


def imported_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    tools, docs = tmp_path / "tools.json", tmp_path / "imported"
    tools.write_text(json.dumps(TOOLS_JSON))
    assert run(capsys, "import", "json", str(tools), "--out", str(docs))[0] == 0
    return docs


def tree(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): p.read_text() if p.is_file() and not p.is_symlink() else "(other)"
        for p in sorted(folder.rglob("*"))
    }


def test_add_mode_writes_only_a_mode_file_inside_the_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder may be a checkout's: --add-mode's slug cannot name a path, and a symlinked modes/ or a symlink
    where the mode file goes is refused, not followed; nothing is written then, inside the folder or outside."""
    monkeypatch.chdir(tmp_path)
    docs = imported_folder(tmp_path, capsys)
    outside = tmp_path / "outside"
    outside.mkdir()
    before = tree(tmp_path)
    for slug in ("../evil", "Web", "a/b", ""):
        code, out, err = run(capsys, "init", str(docs), "--add-mode", slug)
        assert (code, out) == (2, "") and err.startswith("error: --add-mode") and "nothing was written" in err
    assert tree(tmp_path) == before

    (docs / "modes").symlink_to(outside, target_is_directory=True)
    before = tree(tmp_path)
    code, out, err = run(capsys, "init", str(docs), "--add-mode", "weather")
    assert (code, out) == (2, "") and "modes: it is a symlink" in err and "nothing was written" in err
    assert tree(tmp_path) == before and not any(outside.iterdir())

    (docs / "modes").unlink()
    (docs / "modes").mkdir()
    (docs / "modes" / "weather.yaml").symlink_to(outside / "weather.yaml")
    code, out, err = run(capsys, "init", str(docs), "--add-mode", "weather")
    assert (code, out) == (2, "") and err.startswith(f"{docs / 'modes' / 'weather.yaml'}:1: cannot read file")
    assert not (outside / "weather.yaml").exists() and (docs / "modes" / "weather.yaml").is_symlink()
    assert [p.name for p in (docs / "modes").iterdir()] == ["weather.yaml"]  # no partial file left behind


def test_init_reads_the_pyproject_before_writing_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pyproject.toml here that cannot be read (not TOML, over the cap) is one line, exit 2, and init writes
    nothing: neither the starter folder nor a mode."""
    monkeypatch.chdir(tmp_path)
    docs = imported_folder(tmp_path, capsys)
    for text in ("[tool.prompt-composer\n", "x = 1\n" + "# padding\n" * 200_000):
        (tmp_path / "pyproject.toml").write_text(text)
        code, out, err = run(capsys, "init", "my_docs")
        assert (code, out) == (2, "") and err.startswith("error: ") and "pyproject.toml" in err
        assert "Traceback" not in err and "nothing was written" in err
        assert not (tmp_path / "my_docs").exists()
        code, out, err = run(capsys, "init", str(docs), "--add-mode", "weather")
        assert (code, out) == (2, "") and "nothing was written" in err
        assert not (docs / "modes").exists()


def test_run_without_a_key_says_so_before_loading_anything(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    done = sh("prompt-composer --docs /nonexistent run --mode code --task hi", tmp_path, env)
    assert done.returncode == 2  # the key is checked first: not even the (missing) docs folder was read
    assert done.stderr.strip().startswith("error: no API key: set ANTHROPIC_API_KEY")
    assert "python -m prompt_composer.testing --demo" in done.stderr


# --- the whole first hour, replayed --------------------------------------------------------------------------------

LIBRARY_SCRIPT = """\
from prompt_composer import Composer, InMemorySessionStore, load_registry

composer = Composer(load_registry("my_docs"))
session = InMemorySessionStore().get("t1")
prompt = composer.compose("reviewer", session)
print(sorted(prompt.full), sorted(prompt.brief), prompt.tokens.total)
session.record_use("http_get")
print("http_get" in composer.compose("reviewer", session).full)
"""


@pytest.mark.slow
def test_the_new_user_path_from_a_fresh_folder(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n')

    def ok(command: str) -> subprocess.CompletedProcess[str]:
        done = sh(command, project, env)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
        return done

    ok("prompt-composer init my_docs >> pyproject.toml")
    # two tool docs and a mode of the user's own; the starter's stay
    (project / "my_docs" / "http_get.yaml").write_text(HTTP_GET)
    (project / "my_docs" / "list_dir.yaml").write_text(LIST_DIR)
    (project / "my_docs" / "modes" / "reviewer.yaml").write_text(REVIEWER)
    assert "ok: 5 tools, 2 modes" in ok("prompt-composer validate").stdout
    compose = ok("prompt-composer compose --mode reviewer --recent http_get")
    assert "http_get" in compose.stdout and "list_dir" in compose.stdout
    audit = ok("prompt-composer audit --check")  # the CI gate, on the defaults of a mode that names no budget
    assert "reviewer" in audit.stdout and "helper" in audit.stdout and "10000" in audit.stdout
    sarif = json.loads(ok("prompt-composer audit --security --format sarif").stdout)
    assert sarif["version"] == "2.1.0"
    html = ok("prompt-composer audit --format html").stdout
    assert "<html" in html and "reviewer" in html
    fetched = ok("prompt-composer fetch http_get --mode reviewer").stdout
    assert fetched.startswith("Send an HTTP GET request")
    wrong = sh("prompt-composer fetch http_get --mode helper", project, env)
    assert wrong.returncode == 1 and "mode 'reviewer' has it" in wrong.stderr
    found = json.loads(ok("prompt-composer search 'download a web page' --mode reviewer --format json").stdout)
    assert found["hits"][0]["name"] == "http_get"
    (project / "tools.json").write_text(json.dumps(TOOLS_JSON))
    ok("prompt-composer import json tools.json --out weather_docs")
    ok("prompt-composer init weather_docs --add-mode weather")
    assert "ok: 1 tool" in ok("prompt-composer --docs weather_docs validate").stdout
    (project / "use.py").write_text(LIBRARY_SCRIPT)
    library = subprocess.run(
        [sys.executable, "use.py"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )  # fmt: skip
    assert library.returncode == 0, library.stderr
    first, second = library.stdout.splitlines()
    assert first.startswith("[] ['http_get', 'list_dir', 'read_file', 'search_text']") and second == "True"
    config = ok("prompt-composer config").stdout
    assert "my_docs" in config and "helper" in config
    assert textwrap.dedent(REVIEWER) in (project / "my_docs" / "modes" / "reviewer.yaml").read_text()
