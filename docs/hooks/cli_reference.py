"""The command-line reference in ``docs/cli.md``, generated from the real argument parser.

``docs/cli.md`` holds a hand-written introduction, the marker ``<!-- cli-reference -->``, and below the marker
the generated reference: one section per subcommand (nested ones included: ``model setup``, ``import json``, ...),
each with its description, usage line, every option and its examples, read from
:func:`prompt_composer.cli.build_parser`. The page is in the repository, so it reads on GitHub too. Regenerate it
with one command, from the top of the checkout::

    python3 docs/hooks/cli_reference.py

``--check`` exits 1 when the page is stale (``tests/cli/test_help.py`` does the same), and as an mkdocs hook the
module fails the site build on a stale page, so the reference cannot drift from the code.
"""

from __future__ import annotations

import argparse
import functools
import html
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PAGE = "cli.md"
MARKER = "<!-- cli-reference -->"
WIDTH = 100  # usage lines are wrapped at this width whatever the terminal is
ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "python3 docs/hooks/cli_reference.py"


def _escape(text: str) -> str:
    """Help text as Markdown that shows exactly these characters."""
    text = html.escape(" ".join(text.split()), quote=False)
    return re.sub(r"([\\`*_\[\]])", r"\\\1", text)


def _slug(path: tuple[str, ...]) -> str:
    return "-".join(path) if path else "global-options"


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each direct subcommand, in registration order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def _option_names(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    if not action.option_strings:  # a positional argument
        return formatter._metavar_formatter(action, action.dest)(1)[0]
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    args = formatter._format_args(action, action.dest.upper())
    return ", ".join(f"{option} {args}" for option in action.option_strings)


def _default(action: argparse.Action) -> str | None:
    default: Any = action.default
    if action.nargs == 0 or action.required or default in (None, argparse.SUPPRESS, False, [], ""):
        return None
    return ", ".join(map(str, default)) if isinstance(default, list | tuple) else str(default)


def _key(action: argparse.Action) -> tuple[tuple[str, ...], str | None]:
    return tuple(action.option_strings), action.help


def _options(parser: argparse.ArgumentParser, shared: frozenset[tuple[tuple[str, ...], str | None]]) -> list[str]:
    """One bullet per option; options that repeat a global one (``--docs``, ``--overlay``) share a last bullet."""
    formatter = parser._get_formatter()
    lines = []
    repeated = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if _key(action) in shared:
            repeated.append(f"`{_option_names(action, formatter)}`")
            continue
        names = f"`{_option_names(action, formatter)}`"
        notes = []
        if action.required and action.option_strings:
            notes.append("required")
        help_text = formatter._expand_help(action) if action.help else ""
        default = _default(action)
        if default is not None and "default" not in help_text.lower():
            notes.append(f"default: `{default}`")
        text = _escape(help_text) if help_text else ""
        if notes:
            text = f"{text} ({'; '.join(notes)})" if text else f"({'; '.join(notes)})"
        lines.append(f"- {names}" + (f": {text}" if text else ""))
    if repeated:
        lines.append(f"- {', '.join(repeated)}: as in [Global options](#global-options), given after the subcommand")
    return lines


def _section(
    path: tuple[str, ...],
    summary: str,
    parser: argparse.ArgumentParser,
    shared: frozenset[tuple[tuple[str, ...], str | None]] = frozenset(),
) -> Iterator[str]:
    title = " ".join(("prompt-composer", *path)) if path else "Global options"
    level = "#" * min(len(path) + 1, 4) if path else "##"
    yield f"{level} `{title}` {{#{_slug(path)}}}" if path else f"{level} {title} {{#{_slug(path)}}}"
    yield ""
    if summary:
        yield _escape(summary[:1].upper() + summary[1:]) + "."
        yield ""
    if parser.description:
        yield _escape(parser.description)
        yield ""
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=WIDTH)
    yield "```text"
    yield parser.format_usage().strip()
    yield "```"
    yield ""
    options = _options(parser, shared)
    if options:
        yield from options
        yield ""
    if parser.epilog:
        head, _, rest = parser.epilog.partition("\n")
        if head == "examples:":  # help_text.py's examples: shown as they are typed
            yield "Examples:"
            yield ""
            yield "```sh"
            yield from (line.strip() for line in rest.splitlines())
            yield "```"
        else:
            yield _escape(parser.epilog)
        yield ""


def _walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], str, argparse.ArgumentParser]]:
    for name, summary, sub in _subcommands(parser):
        yield (*path, name), summary, sub
        yield from _walk(sub, (*path, name))


def render() -> str:
    """The reference: the global options, an index of the subcommands, then one section per subcommand."""
    from prompt_composer.cli import build_parser  # the code being documented (main() puts the checkout first)

    parser = build_parser()
    commands = list(_walk(parser))
    out = ["| command | what it does |", "|---|---|"]
    for path, summary, _ in commands:
        out.append(f"| [`{' '.join(path)}`](#{_slug(path)}) | {_escape(summary)} |")
    out.append("")
    out.extend(_section((), "", parser))
    shared = frozenset(_key(action) for action in parser._actions if action.option_strings)
    for path, summary, sub in commands:
        out.extend(_section(path, summary, sub, shared))
    return "\n".join(out)


def generated(page: str) -> str:
    """``page`` (docs/cli.md's text) with everything below its marker replaced by the current reference."""
    if MARKER not in page:
        raise ValueError(f"docs/{PAGE} has lost its marker {MARKER}: the CLI reference has nowhere to go")
    return page.split(MARKER, 1)[0] + MARKER + "\n\n" + render().rstrip("\n") + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs: fail the build when the committed reference is not what the code says."""
    from mkdocs.exceptions import PluginError

    if page.file.src_uri != PAGE:
        return markdown
    try:
        current = generated(markdown)
    except ValueError as exc:
        raise PluginError(str(exc)) from None
    if current != markdown:
        raise PluginError(f"docs/{PAGE} is stale: regenerate it with `{REGENERATE}`")
    return markdown


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))  # document this checkout's code, whatever is installed
    path = ROOT / "docs" / PAGE
    text = path.read_text(encoding="utf-8")
    current = generated(text)
    if argv[1:] == ["--check"]:
        if current != text:
            print(f"docs/{PAGE} is stale: regenerate it with `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        path.write_text(current, encoding="utf-8")
        print(f"wrote docs/{PAGE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
