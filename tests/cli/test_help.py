"""The command explains itself: every subcommand's --help has a description and examples that parse, every
option and positional has help text, and docs/cli.md is the reference the parser generates today."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from prompt_composer.cli import build_parser, main
from prompt_composer.cli.help_text import subcommands

ROOT = Path(__file__).resolve().parents[2]
PARSER = build_parser()
ALL = [(" ".join(path), sub) for path, sub in subcommands(PARSER)]


def reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "docs" / "hooks" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_subcommand_is_walked() -> None:
    names = {name for name, _ in ALL}
    assert {"compose", "import json", "model setup", "config", "init"} <= names


@pytest.mark.parametrize(("name", "parser"), ALL, ids=[name for name, _ in ALL])
def test_subcommand_has_a_description_and_examples(name: str, parser: argparse.ArgumentParser) -> None:
    text = parser.format_help()
    assert parser.description and len(parser.description.split()) >= 5, f"`{name}` has no description"
    assert parser.epilog and parser.epilog.startswith("examples:\n"), f"`{name}` has no examples"
    examples = parser.epilog.splitlines()[1:]
    assert examples and all(line.strip().startswith("prompt-composer ") for line in examples), examples
    assert parser.description.split()[0] in text and examples[0].strip() in text


@pytest.mark.parametrize(("name", "parser"), [("(top)", PARSER), *ALL], ids=["top"] + [n for n, _ in ALL])
def test_every_option_and_positional_has_help(name: str, parser: argparse.ArgumentParser) -> None:
    missing = [
        "/".join(action.option_strings) or action.dest
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not (action.help or "").strip()
    ]
    assert not missing, f"`prompt-composer {name}`: no help text for {', '.join(missing)}"


def _example_commands() -> list[tuple[str, list[str]]]:
    """Every example command line (each side of `&&`, without a comment or a redirection), as argv."""
    found = []
    for name, parser in [("(top)", PARSER), *ALL]:
        for line in (parser.epilog or "").splitlines()[1:]:
            for part in line.split("#", 1)[0].split("&&"):
                words = shlex.split(re.split(r"\s[12]?>>?\s", part, maxsplit=1)[0])
                if words and "--help" not in words:
                    assert words[0] == "prompt-composer", line
                    found.append((name, words[1:]))
    return found


@pytest.mark.parametrize(("name", "argv"), _example_commands())
def test_every_example_parses(name: str, argv: list[str]) -> None:
    """An example with a misspelt option or a wrong value would exit 2 in argparse: each one parses."""
    args = build_parser().parse_args(argv)
    assert callable(args.handler), (name, argv)


def test_help_exits_zero_and_prints_the_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["compose", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "examples:\n  prompt-composer compose --mode code" in out
    assert "--mode SLUG" in out and "default-mode setting" in " ".join(out.split())


def test_docs_cli_md_is_current() -> None:
    module = reference()
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert module.generated(page) == page, f"docs/cli.md is stale: regenerate it with `{module.REGENERATE}`"


def test_the_reference_has_a_section_and_the_examples_of_every_subcommand() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name, parser in ALL:
        assert f"`prompt-composer {name}`" in page, name
        assert (parser.epilog or "").splitlines()[1].strip() in page, name


@pytest.mark.slow
def test_the_regenerate_command_reports_a_stale_page(tmp_path: Path) -> None:
    """The named command exists and does what it says: --check passes on the committed page."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "hooks" / "cli_reference.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def test_each_subcommand_is_registered_by_the_module_the_table_names() -> None:
    from prompt_composer.cli import COMMANDS

    top = [path[0] for path, _ in subcommands(PARSER) if len(path) == 1]
    assert sorted(top) == sorted(COMMANDS)
    for command in COMMANDS:
        alone = build_parser(command)
        registered = {path[0] for path, _ in subcommands(alone) if len(path) == 1}
        assert command in registered and {COMMANDS[c] for c in registered} == {COMMANDS[command]}


@pytest.mark.parametrize(("name", "parser"), ALL, ids=[name for name, _ in ALL])
def test_a_subcommands_parser_built_alone_is_the_one_the_whole_parser_has(
    name: str, parser: argparse.ArgumentParser
) -> None:
    """What `main` builds for a command line that names the subcommand: the same help, the same options."""
    alone = dict(subcommands(build_parser(name.split()[0])))[tuple(name.split())]
    assert alone.format_help() == parser.format_help() and alone.format_usage() == parser.format_usage()
    assert [a.option_strings for a in alone._actions] == [a.option_strings for a in parser._actions]
    assert [a.default for a in alone._actions] == [a.default for a in parser._actions]


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["compose", "--mode", "code"], "compose"),
        (["--docs", "d", "-vv", "--no-cache", "--overlay=o", "search", "x"], "search"),
        (["--docs=d", "-q", "import", "json", "f"], "import"),
        (["--docs", "compose", "tools"], "tools"),  # a folder named like a command is the option's value
        (["--help"], None),
        (["--version"], None),
        (["--doc", "d", "compose"], None),  # an abbreviation: the whole parser reads it (or refuses it)
        (["compse"], None),  # mistyped: the whole parser names the commands
        ([], None),
        (["--docs"], None),
        (["-x", "compose"], None),
    ],
)
def test_main_builds_the_parser_of_the_subcommand_named(argv: list[str], command: str | None) -> None:
    from prompt_composer.cli import command_in

    assert command_in(argv) == command


@pytest.mark.parametrize(
    "argv",
    [
        ["--docs", "tool_docs", "compose", "--mode", "code", "--recent", "read_file", "--format", "json"],
        ["--no-cache", "-v", "search", "--mode", "code", "--limit", "2", "read a file"],
        ["import", "json", "tools.json", "--out", "out"],
        ["model", "setup"],
        ["-q", "audit", "--security", "--format", "sarif"],
    ],
)
def test_the_parser_built_alone_reads_a_command_line_as_the_whole_parser_does(argv: list[str]) -> None:
    from prompt_composer.cli import command_in

    command = command_in(argv)
    assert command is not None
    alone, whole = vars(build_parser(command).parse_args(argv)), vars(PARSER.parse_args(argv))
    handlers = alone.pop("handler"), whole.pop("handler")  # made per registration (a closure, some of them)
    assert alone == whole and len({f"{h.__module__}.{h.__qualname__}" for h in handlers}) == 1
