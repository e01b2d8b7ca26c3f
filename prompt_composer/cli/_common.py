"""What the subcommands share: reading the registry (``--docs``, ``--overlay``), ``--learn-from``, and argument
types.

Importing a command module builds no part of the library: the parser of every subcommand is built on each run
(for ``--help`` and ``--version`` too), so the library modules a command needs are imported by its handler, when
it runs (see tests/cli/test_startup.py).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.composer import Composer
    from ..core.modes import Mode
    from ..core.registry import Registry
    from ..discovery.search import ToolSearch
    from ..learn.events import DropCounts
    from ..shared.journal import Recovery

OVERLAY_ENV = "PROMPT_COMPOSER_OVERLAY"  # the per-user mode overlay the CLI applies when --overlay is not given


def positive_int(text: str) -> int:
    """An argparse type for counts and limits: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def registry_of(args: argparse.Namespace) -> Registry:
    """The registry of ``--docs`` (given before or after the subcommand; else the docs setting, which ``main``
    has filled in), else the shipped one; with the per-user overlay of ``--overlay`` or the overlay setting
    (filled in by ``main`` too, from the environment or pyproject.toml, confined: see :mod:`.settings`); through
    the parsed-docs cache unless ``--no-cache`` or the registry-cache setting turned it off."""
    from ..core.registry import load_registry

    overlay = getattr(args, "overlay", None)  # main filled it from the settings (flag, env, pyproject)
    # load_registry refuses a folder with a committed interrupted import and never recovers it: only `import`
    # and `import --recover` do, for a journal this tool wrote (see shared/journal.py).
    return load_registry(getattr(args, "docs", None), overlay=overlay, cache=getattr(args, "cache", True))


@contextlib.contextmanager
def composer_of(args: argparse.Namespace, registry: Registry) -> Iterator[Composer]:
    """A composer of ``registry`` for one command, whose token counts are kept between runs in the user cache
    (:class:`~prompt_composer.core.counts.CountMemo`; not with ``--no-cache`` or the registry-cache setting off):
    a command composing what it composed before never loads the tokenizer."""
    from ..core.composer import Composer
    from ..core.counts import CountMemo
    from ..core.tokens import DEFAULT_ENCODING, TiktokenCounter

    memo = None
    if getattr(args, "cache", True) and registry.root is not None:
        with contextlib.suppress(RuntimeError, OSError):  # no user cache folder (no home): counted afresh
            memo = CountMemo(registry.root, DEFAULT_ENCODING)
    if memo is None:
        yield Composer(registry)
        return
    try:
        yield Composer(registry, counter=TiktokenCounter(memo=memo))
    finally:
        memo.save()


def add_mode_option(parser: Any, what: str = "the mode to use") -> None:
    """``--mode SLUG`` where a mode is needed: when it is left out, ``main`` fills it from the default-mode
    setting (``PROMPT_COMPOSER_MODE`` or ``default-mode`` in ``[tool.prompt-composer]``), or stops with exit 2."""
    parser.add_argument(
        "--mode",
        default=None,
        metavar="SLUG",
        help=f"{what} (default: the default-mode setting; `prompt-composer config` shows it)",
    )
    parser.set_defaults(mode_from_settings=True)


def say_recovered(recoveries: list[Recovery]) -> None:
    """One stderr line per interrupted import that ``recover`` finished or undid (or ``discard`` removed)."""
    for recovery in recoveries:
        print(f"# {recovery.describe()}", file=sys.stderr, flush=True)


def checked_mode(registry: Registry, slug: str, composer: Composer | None = None) -> Mode:
    """The mode a composing command (compose, fetch, run, serve, bench) is about to use, refused
    (:class:`LoadError`: the mode's file, each text and the tool it names) when a text it shows names a tool it
    does not allow: the model would be told to call what it cannot. ``composer``: the command's own, if it has
    one (its templates compiled and counts kept for what the command composes next)."""
    from ..core.composer import Composer
    from ..core.mentions import mention_problems
    from ..errors import LoadError

    mode = registry.mode(slug)
    problems = mention_problems(composer or Composer(registry), mode)
    if problems:
        raise LoadError(problems)
    return mode


def warn_over_budget(
    registry: Registry, mode: Mode, tokens: int | None = None, composer: Composer | None = None
) -> None:
    """One warning line on stderr when ``mode`` composes over its budget: ``tokens`` is what the command composed
    (default: the prompt a task starts with, composed with ``composer`` if given)."""
    if tokens is not None and tokens <= mode.config.budget_tokens:
        return  # under its budget: nothing to say, and the audit need not be imported
    from ..core.audit import budget_warning, start_tokens
    from ..core.composer import Composer

    if tokens is None:
        tokens = start_tokens(composer or Composer(registry), mode)
    warning = budget_warning(mode, tokens)
    if warning:
        print(warning, file=sys.stderr, flush=True)


def add_learn_from(parser: Any) -> None:
    """``--learn-from LOG`` (repeatable): what :func:`search_for` reads."""
    parser.add_argument(
        "--learn-from",
        action="append",
        default=[],
        metavar="LOG",
        help="an event log written with --log-content: the searches that led to a tool's use become its phrasings "
        "(repeatable)",
    )


def log_failing(path: str) -> Callable[[Exception], None]:
    """What ``run`` and ``serve`` say, once, on stderr when their ``--log`` cannot be written (a full disk): the
    task goes on, and the count of what the log lost follows at the end (:func:`drops_line`)."""

    def report(exc: Exception) -> None:
        reason = f"{exc.strerror} (errno {exc.errno})" if isinstance(exc, OSError) and exc.strerror else exc
        print(
            f"# event log {path}: cannot write: {reason}; going on without it, counting the events lost",
            file=sys.stderr,
            flush=True,
        )

    return report


def drops_line(drops: DropCounts) -> str:
    """``7 events dropped (sink_errors 7)``: what an event log lost, by cause."""
    causes = ", ".join(f"{cause} {n}" for cause, n in drops.as_dict().items() if cause != "dropped" and n)
    return f"{drops.total} events dropped ({causes})"


def search_for(args: argparse.Namespace, registry: Registry) -> ToolSearch | None:
    """The tool search of ``--learn-from``'s logs (their phrasings learned) and of ``--no-cache`` (the keyword
    index not kept), or ``None`` when neither was given: the caller's default then applies (the loop and the
    gateway build a plain one on their first search)."""
    cache = getattr(args, "cache", True)
    if not args.learn_from and cache:
        return None
    from ..discovery.search import ToolSearch
    from ..learn.phrasings import load_phrasings

    return ToolSearch(registry, phrasings=load_phrasings(args.learn_from), index_cache=cache)
