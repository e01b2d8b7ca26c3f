"""Settings in one place (flag → environment → [tool.prompt-composer] → default), `config`, `init`, the default
mode, did-you-mean on unknown names, -v/-q, and `stats LOG`."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from prompt_composer import load_registry
from prompt_composer.cli import cli_logging, main
from prompt_composer.cli.settings import ENV, resolve
from prompt_composer.errors import InputFileError

SHIPPED = Path(__file__).resolve().parents[2] / "tool_docs"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with no setting from the environment, the working directory one level below it."""
    for variable in ENV.values():
        monkeypatch.delenv(variable, raising=False)
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")
    return tmp_path


def write_pyproject(folder: Path, table: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text(f'[project]\nname = "demo"\n\n[tool.prompt-composer]\n{table}', encoding="utf-8")
    return path


def test_init_then_every_command_finds_the_docs_through_pyproject(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    code, out, err = run(capsys, "init", str(project / "my_docs"))
    assert code == 0, err
    assert "[tool.prompt-composer]" in out and 'default-mode = "helper"' in out
    hint = f"#   prompt-composer import mcp --out {project / 'my_docs'} --servers .mcp.json --prefix '{{server}}_'"
    assert hint in err.splitlines()  # a line of its own, after the settings (not a newline shown escaped)
    # What init printed, appended to the project's pyproject.toml, is all the setup there is.
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n\n' + out, encoding="utf-8")
    code, out, err = run(capsys, "validate")
    assert (code, out.split(":")[0]) == (0, "ok"), err
    assert "3 tools, 1 mode" in out
    code, out, err = run(capsys, "audit", "--check")
    assert code == 0, err
    assert "helper" in out
    code, out, err = run(capsys, "compose")  # the mode comes from default-mode
    assert code == 0, err
    assert "# mode helper:" in err and "read_file" in out


def test_init_writes_a_valid_commented_folder_and_refuses_to_overwrite(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    target = project / "docs"
    assert run(capsys, "init", str(target))[0] == 0
    registry = load_registry(target)
    assert len(registry.tools) >= 3 and list(registry.modes) == ["helper"]
    for path in target.rglob("*.yaml"):
        assert path.read_text(encoding="utf-8").startswith("# "), f"{path} has no comment"
    before = {p: p.read_bytes() for p in target.rglob("*.yaml")}
    code, out, err = run(capsys, "init", str(target))
    assert (code, out) == (1, "")
    assert "already exists" in err and "nothing was written" in err
    assert {p: p.read_bytes() for p in target.rglob("*.yaml")} == before
    (project / "empty").mkdir()
    assert run(capsys, "init", str(project / "empty"))[0] == 0  # an empty folder is filled


def test_precedence_flag_over_environment_over_pyproject_over_default(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, "config", "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert {name: data[name]["source"] for name in ("docs", "mode", "overlay", "event_log")} == dict.fromkeys(
        ("docs", "mode", "overlay", "event_log"), "default"
    )
    assert data["pyproject"] is None

    run(capsys, "init", str(project / "mine"))
    pyproject = write_pyproject(project, 'docs = "mine"\ndefault-mode = "helper"\nevent-log = "ev.jsonl"\n')
    data = json.loads(run(capsys, "config", "--format", "json")[1])
    assert data["docs"] == {"value": str(project / "mine"), "source": f"{pyproject} [tool.prompt-composer] docs"}
    assert data["mode"]["value"] == "helper"
    assert data["event_log"]["value"] == str(project / "ev.jsonl")  # relative to the pyproject, not the cwd
    assert data["pyproject"] == str(pyproject)

    shutil.copytree(SHIPPED, project / "shipped")  # a path from the environment stays inside the project
    monkeypatch.setenv("PROMPT_COMPOSER_DOCS", str(project / "shipped"))
    monkeypatch.setenv("PROMPT_COMPOSER_MODE", "code")
    data = json.loads(run(capsys, "config", "--format", "json")[1])
    assert data["docs"] == {"value": str(project / "shipped"), "source": "env PROMPT_COMPOSER_DOCS"}
    assert data["mode"] == {"value": "code", "source": "env PROMPT_COMPOSER_MODE"}
    code, _, err = run(capsys, "compose")
    assert code == 0 and "# mode code:" in err

    data = json.loads(run(capsys, "--docs", str(project / "mine"), "config", "--format", "json")[1])
    assert data["docs"] == {"value": str(project / "mine"), "source": "flag --docs"}
    code, _, err = run(capsys, "compose", "--docs", str(project / "mine"), "--mode", "helper")
    assert code == 0 and "# mode helper:" in err

    code, out, _ = run(capsys, "config")
    assert code == 0
    assert out.splitlines()[1] == "mode\tcode\tenv PROMPT_COMPOSER_MODE"


def test_a_pyproject_without_the_table_is_passed_over(project: Path) -> None:
    write_pyproject(project, 'default-mode = "ask"\n')
    (project / "src" / "pyproject.toml").write_text('[project]\nname = "inner"\n', encoding="utf-8")
    settings = resolve({}, environ={})
    assert settings.mode.value == "ask" and settings.pyproject == project / "pyproject.toml"


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('default_mode = "code"\n', "unknown key 'default_mode'; did you mean 'default-mode'?"),
        ("docs = 3\n", "docs must be a non-empty string, not 3"),
        ('docs = "nowhere"\n', "docs: folder"),
        ('docs = "x"\n[tool.prompt-composer.extra]\n', "unknown key 'extra'"),
    ],
)
def test_a_bad_setting_names_the_file_and_the_key(
    capsys: pytest.CaptureFixture[str], project: Path, table: str, expected: str
) -> None:
    pyproject = write_pyproject(project, table)
    code, out, err = run(capsys, "validate")
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {pyproject}: [tool.prompt-composer]") and expected in err
    assert "Traceback" not in err


def test_a_pyproject_that_is_not_toml_is_named(capsys: pytest.CaptureFixture[str], project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.prompt-composer\n", encoding="utf-8")
    code, _, err = run(capsys, "audit")
    assert code == 2
    assert f"{project / 'pyproject.toml'}: not valid TOML" in err and "line 1" in err
    with pytest.raises(InputFileError):
        resolve({}, environ={})


def test_init_and_version_do_not_read_settings(capsys: pytest.CaptureFixture[str], project: Path) -> None:
    """A broken pyproject.toml does not stop the commands that do not need a setting."""
    (project / "pyproject.toml").write_text("not toml at all [", encoding="utf-8")
    assert run(capsys, "init", str(project / "d"))[0] == 0


def test_a_needed_mode_without_a_setting_says_how_to_give_one(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    code, out, err = run(capsys, "compose")
    assert (code, out) == (2, "")
    assert "compose needs a mode: --mode SLUG, $PROMPT_COMPOSER_MODE, or default-mode" in err


def test_did_you_mean_on_a_misspelt_recent_tool_and_mode(capsys: pytest.CaptureFixture[str], project: Path) -> None:
    code, out, err = run(capsys, "compose", "--mode", "code", "--recent", "globb")
    assert (code, out) == (2, "")
    assert err == "error: unknown tool 'globb'; did you mean 'glob'?\n"
    code, _, err = run(capsys, "compose", "--mode", "cod")
    assert code == 2
    assert "unknown mode 'cod'; did you mean 'code'? (available modes: architect, ask, code" in err
    code, _, err = run(capsys, "tools", "--mode", "debgu")
    assert "did you mean 'debug'?" in err
    code, _, err = run(capsys, "compose", "--mode", "code", "--recent", "zzzzzz")
    assert "available tools: " in err  # nothing close: the names, so the user can pick


def test_verbose_and_quiet_set_the_package_logger(capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("prompt_composer")
    before = (logger.level, list(logger.handlers))
    for verbose, quiet, level in ((1, 0, logging.INFO), (2, 0, logging.DEBUG), (0, 1, logging.ERROR)):
        with cli_logging(verbose, quiet):
            assert logger.level == level
    with cli_logging(1, 0):
        logging.getLogger("prompt_composer.core.demo").info("seen at -v")
    assert "INFO prompt_composer.core.demo: seen at -v" in capsys.readouterr().err
    with cli_logging(0, 2):
        logging.getLogger("prompt_composer.core.demo").critical("not seen at -qq")
    assert "not seen" not in capsys.readouterr().err
    assert (logger.level, logger.handlers) == before  # each run leaves logging as it found it


@pytest.mark.parametrize("argv", [["-v", "modes"], ["modes", "-vv"], ["-q", "modes"], ["modes", "-qq"]])
def test_verbosity_flags_are_accepted_before_and_after_the_subcommand(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, _ = run(capsys, *argv)
    assert code == 0 and out.startswith("architect\t")


def test_stats_reads_event_logs_positionally_and_from_the_setting(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = project / "src" / "ev.jsonl"  # the project root here is the working directory: no pyproject, no .git
    log.write_text(
        json.dumps({"kind": "tool_call", "mode": "code", "tool": "glob", "ok": True, "ts": 1.0}) + "\n",
        encoding="utf-8",
    )
    code, positional, err = run(capsys, "stats", str(log), "--format", "json")
    assert code == 0, err
    code, flagged, err = run(capsys, "stats", "--log", str(log), "--format", "json")
    assert code == 0, err
    assert json.loads(positional) == json.loads(flagged)
    monkeypatch.setenv("PROMPT_COMPOSER_EVENT_LOG", str(log))
    code, from_setting, err = run(capsys, "stats", "--format", "json")
    assert code == 0, err
    assert json.loads(from_setting) == json.loads(flagged)
    monkeypatch.delenv("PROMPT_COMPOSER_EVENT_LOG")
    code, out, err = run(capsys, "stats")
    assert (code, out) == (2, "")
    assert "stats needs an event log" in err


def test_tune_reads_the_event_log_setting(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, "tune", "--mode", "code")
    assert (code, out) == (2, "")
    assert "tune needs --log FILE (or the event-log setting) or --traces FILE" in err
    empty = project / "src" / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    monkeypatch.setenv("PROMPT_COMPOSER_EVENT_LOG", str(empty))
    code, _, err = run(capsys, "tune", "--mode", "code")
    assert code == 2
    assert f"{empty}: no tool calls in mode 'code' to tune on" in err  # the setting's file was the one read


@pytest.mark.parametrize(
    ("before", "after", "env", "toml", "cached"),
    [
        ([], [], None, None, True),
        (["--no-cache"], [], None, None, False),
        ([], ["--no-cache"], None, None, False),
        ([], [], "off", None, False),
        ([], [], "on", None, True),
        ([], [], None, "registry-cache = false\n", False),
        ([], [], None, 'registry-cache = "off"\n', False),
        ([], [], None, "registry-cache = true\n", True),
        ([], [], "on", 'registry-cache = "off"\n', True),  # the environment wins over the file
        (["--no-cache"], [], "on", None, False),  # and the flag over both
    ],
    ids=["default", "flag", "flag-after", "env-off", "env-on", "toml-false", "toml-off", "toml-true", "env-over-toml",
         "flag-over-env"],
)  # fmt: skip
def test_the_registry_cache_is_on_unless_a_flag_or_setting_turns_it_off(
    capsys: pytest.CaptureFixture[str],
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    before: list[str],
    after: list[str],
    env: str | None,
    toml: str | None,
    cached: bool,
) -> None:
    cache = project / "user-cache"
    monkeypatch.setenv("PROMPT_COMPOSER_CACHE", str(cache))
    if env is not None:
        monkeypatch.setenv("PROMPT_COMPOSER_REGISTRY_CACHE", env)
    if toml is not None:
        write_pyproject(project, toml)
    code, _, err = run(capsys, *before, "--docs", str(SHIPPED), "validate", *after)
    assert code == 0, err
    assert (cache / "registry").is_dir() == cached


def test_a_bad_registry_cache_setting_names_where_it_came_from(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMPT_COMPOSER_REGISTRY_CACHE", "sometimes")
    assert run(capsys, "validate") == (
        2,
        "",
        "error: the registry-cache setting (env PROMPT_COMPOSER_REGISTRY_CACHE) is on or off, not 'sometimes'\n",
    )
    monkeypatch.delenv("PROMPT_COMPOSER_REGISTRY_CACHE")
    pyproject = write_pyproject(project, 'registry-cache = "maybe"\n')
    code, _, err = run(capsys, "validate")
    assert code == 2
    assert err == (
        f"error: the registry-cache setting ({pyproject} [tool.prompt-composer] registry-cache) is on or off, "
        "not 'maybe'\n"
    )
