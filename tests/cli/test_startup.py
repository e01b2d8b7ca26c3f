"""A command imports what it needs: the parser of every subcommand is built without importing the library behind
it, so ``--version`` and ``--help`` import no part of it and ``compose`` only the core (and, with the user cache
warm, not the tokenizer). Each set is pinned: a module that joins one is a choice to make here, with its cost in
mind (``python -X importtime -c 'import prompt_composer.cli'``; benchmarks/bench_startup.py times the commands).

The parser's choices and defaults are written in the command modules, so that building it imports nothing; they
are held equal to the library's own here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from prompt_composer.agent.bench import DEFAULT_CONTEXT_TOKENS, VARIANTS
from prompt_composer.agent.providers import PROVIDERS
from prompt_composer.cli import agent, bench, local, registry, stats, tune
from prompt_composer.core.promotion import POLICIES
from prompt_composer.learn.replay import ReplayParams
from prompt_composer.learn.stats import DEFAULT_TOP
from prompt_composer.learn.tune import DEFAULT_HELDOUT_FRACTION, DEFAULT_SEED
from prompt_composer.local.server import CHAT_TEMPLATES
from prompt_composer.safety.rules import QUARANTINE_SEVERITY, SEVERITIES

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "tool_docs"
# Third-party packages no command needs to start: each is imported by the handler that uses it.
HEAVY = ("tiktoken", "numpy", "anthropic", "openai", "mcp", "httpx", "asyncio", "jsonschema", "xllamacpp")
# What every run imports of the package: the command, its messages and settings, and what they need.
BASE_MODULES = frozenset(
    {
        "prompt_composer",
        "prompt_composer.cli",
        *(f"prompt_composer.cli.{name}" for name in ["_common", "help_text", "output", "project", "settings"]),
        "prompt_composer.errors",
        "prompt_composer.shared",
        *(f"prompt_composer.shared.{name}" for name in ["annotations", "files", "lazy", "progress", "text", "version"]),
    }
)
# What the whole parser (--version, --help, a command line main cannot read ahead) imports: every command module,
# and what their parsers need.
COMMAND_MODULES = "_common agent bench discovery gateway help_text interop local project registry serve_http settings"
PARSER_MODULES = BASE_MODULES | {
    *(f"prompt_composer.cli.{name}" for name in f"{COMMAND_MODULES} stats tune".split()),
    "prompt_composer.cli.lint_layers",  # audit's --semantic option (the layer itself is imported when made)
    "prompt_composer.learn",
    "prompt_composer.learn.costs",  # the cost models' names: run --provider's and tune's choices
    "prompt_composer.local",
    "prompt_composer.local.weights",  # the default weights' name and size, in `model setup --help`
    "prompt_composer.shared.cache_dir",
    "prompt_composer.shared.journal",  # the import commands' interruption handling, and its records
    "prompt_composer.shared.journal_records",
    "prompt_composer.shared.journal_state",
    "prompt_composer.shared.jsontext",
    "prompt_composer.shared.logs",  # loggers that import logging at their first record
    "prompt_composer.shared.nofollow",
}
# A command line that names its subcommand builds that module's parsers alone (cli.COMMANDS).
ALONE_MODULES = {
    "compose": BASE_MODULES | {"prompt_composer.cli.registry", "prompt_composer.cli.lint_layers"},
    "import": BASE_MODULES
    | {
        "prompt_composer.cli.interop",
        *(f"prompt_composer.shared.{n}" for n in ["journal", "journal_records", "journal_state", "logs", "nofollow"]),
    },
}
CORE_MODULES = (
    "access bounds builtins cards composer counts definitions docs fetch mentions modes precompiled prompt registry "
    "schema sections shipped template_runtime"  # precompiled: the shipped templates' code, run by template_runtime (not
    # imported as modules), without Jinja: templating (Jinja's environment) is for a user's templates
)
# What a warm `compose` imports (of the agent layer, the providers module only for a format not the composer's own;
# the audit only for a mode over its budget).
COMPOSE_MODULES = ALONE_MODULES["compose"] | {
    "prompt_composer.core",
    *(f"prompt_composer.core.{name}" for name in f"{CORE_MODULES} schema session tiers tokens".split()),
    "prompt_composer.shared.cache_dir",
    "prompt_composer.shared.cache_files",
    "prompt_composer.shared.journal_records",  # a folder with an interrupted import is refused
    "prompt_composer.shared.journal_state",
    "prompt_composer.shared.jsonwrite",  # the printed JSON
    "prompt_composer.shared.logs",
    "prompt_composer.shared.nofollow",
    "prompt_composer.shared.model_records",  # the validated models the cache keeps
    "prompt_composer.shared.sources",
    "prompt_composer.shared.yamlcache",
    "prompt_composer.shared.yamlfile",
    "prompt_composer.shared.yamltypes",  # not yamlparse: with the cache warm, no YAML is parsed
}

PROBE = """
import contextlib, io, json, sys
from prompt_composer.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code

def models(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from models(sub)

bases = [sys.modules["pydantic.main"].BaseModel] if "pydantic.main" in sys.modules else []
built = sorted({f"{m.__module__}.{m.__qualname__}" for base in bases for m in models(base)
                if m.__module__.startswith("prompt_composer") and getattr(m, "__pydantic_complete__", False)})
print(json.dumps({"code": code, "modules": sorted(sys.modules), "built": built}))
"""


def run_probe(*argv: str, cache: Path) -> dict[str, Any]:
    """What a fresh process running the command had imported when it ended, and the package's pydantic models
    whose validator it had built."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PROMPT_COMPOSER_CACHE": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    assert result["code"] in (0, None), proc.stderr
    return result


def imported(*argv: str, cache: Path) -> tuple[set[str], set[str]]:
    """The package's modules and the third-party top-level packages a fresh process running the command had
    imported when it ended."""
    modules = set(run_probe(*argv, cache=cache)["modules"])
    return {m for m in modules if m.split(".")[0] == "prompt_composer"}, {m.split(".")[0] for m in modules}


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["compose", "--help"], ["import", "json", "--help"]])
def test_the_version_and_help_import_no_library_module(tmp_path: Path, argv: list[str]) -> None:
    package, top = imported(*argv, cache=tmp_path)
    expected = ALONE_MODULES.get(argv[0], PARSER_MODULES)
    assert package == expected, f"joined: {sorted(package - expected)}; left: {expected - package}"
    assert not top & {"pydantic", "yaml", "jinja2", "regex", "cachetools", *HEAVY}


def test_compose_imports_the_core_and_with_a_warm_cache_not_the_tokenizer(tmp_path: Path) -> None:
    argv = ("--docs", str(SHIPPED), "compose", "--mode", "code")
    cold, cold_top = imported(*argv, cache=tmp_path)
    assert "tiktoken" in cold_top  # the first run counts its tokens, and keeps them
    package, top = imported(*argv, cache=tmp_path)
    assert package == COMPOSE_MODULES, f"joined: {sorted(package - COMPOSE_MODULES)}; left: {COMPOSE_MODULES - package}"
    assert cold == package | {"prompt_composer.shared.yamlparse"}
    assert not top & {"yaml", *HEAVY}  # no YAML parsed; no lint, importers, reports, agent loop, discovery, MCP
    # nor what only a record to log, a name not found or an interrupted import needs (tomllib is: the probe runs
    # in the checkout, whose pyproject.toml is read for settings)
    assert not top & {"logging", "difflib", "secrets", "shlex", "hmac"}
    assert not top & {"jinja2", "markupsafe"}  # the shipped sections' code runs without Jinja (core/sections.py)


def test_compose_with_a_warm_cache_validates_nothing(tmp_path: Path) -> None:
    """The docs come back from the cache's records of their validated models (shared/yamlcache.py): no model's
    validator is built (pydantic's costliest step on a first validation). The regex module is not imported
    either way: a mode's file_regex that ``re`` reads is checked with ``re``."""
    argv = ("--docs", str(SHIPPED), "compose", "--mode", "architect")  # architect restricts its edits by regex
    cold = run_probe(*argv, cache=tmp_path)
    assert "prompt_composer.core.docs.ToolDoc" in cold["built"] and "regex" not in cold["modules"]
    warm = run_probe(*argv, cache=tmp_path)
    assert warm["built"] == [] and "regex" not in warm["modules"]


def test_the_console_script_tunes_the_collector_and_main_leaves_it_alone(tmp_path: Path) -> None:
    """``run`` (the console script, ``python -m prompt_composer``) raises the young generation's threshold for
    the process (cli.GC_THRESHOLD); ``main`` called by a program leaves the program's settings as they were."""
    probe = (
        "import gc, sys\nfrom prompt_composer import cli\nbefore = gc.get_threshold()\n"
        "sys.argv = ['prompt-composer', '--version']\ntry:\n    code = cli.%s()\nexcept SystemExit as exc:\n"
        "    code = exc.code\nprint(code, before, gc.get_threshold())"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PROMPT_COMPOSER_CACHE": str(tmp_path)}
    seen = {}
    for entry in ("run", "main"):
        proc = subprocess.run(
            [sys.executable, "-c", probe % entry], capture_output=True, text=True, env=env, timeout=60, check=True
        )
        seen[entry] = proc.stdout.splitlines()[-1].split(" ", 1)
    from prompt_composer.cli import GC_THRESHOLD

    default = f"{seen['main'][1].split(') ')[0]})"  # the interpreter's own (700, 10, 10 on 3.11; 2,000 on 3.13)
    assert seen["run"] == ["0", f"{default} {GC_THRESHOLD}"]
    assert seen["main"] == ["0", f"{default} {default}"]


def test_the_parsers_choices_and_defaults_are_the_librarys() -> None:
    assert registry.PROVIDERS == PROVIDERS
    assert (registry.SEVERITIES, registry.QUARANTINE_SEVERITY) == (SEVERITIES, QUARANTINE_SEVERITY)
    assert agent.POLICIES == POLICIES
    assert ReplayParams().result_tokens == agent.RESULT_TOKENS
    assert (bench.VARIANTS, bench.DEFAULT_CONTEXT_TOKENS) == (VARIANTS, DEFAULT_CONTEXT_TOKENS)
    assert local.CHAT_TEMPLATES == CHAT_TEMPLATES
    assert stats.DEFAULT_TOP == DEFAULT_TOP
    assert (tune.DEFAULT_HELDOUT_FRACTION, tune.DEFAULT_SEED) == (DEFAULT_HELDOUT_FRACTION, DEFAULT_SEED)
