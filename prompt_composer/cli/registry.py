"""The registry subcommands: validate, modes, tools, compose, fetch, audit."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..errors import LoadError, UnknownToolError
from ..shared.text import plural, shown
from ._common import add_mode_option, checked_mode, composer_of, registry_of, warn_over_budget
from .lint_layers import add_semantic_option, semantic_layer

if TYPE_CHECKING:
    from ..core.audit import ModeAudit
    from ..core.composer import Composer
    from ..core.registry import Registry

AUDIT_FORMATS = ("table", "json", "markdown", "html", "sarif", "github")
# What the parser offers, written here so that building it imports neither the agent layer nor the lint
# (tests/cli/test_startup.py holds each equal to the library's own).
PROVIDERS = ("anthropic", "openai", "openai-responses")  # agent.providers.PROVIDERS
SEVERITIES = ("high", "medium", "low")  # safety.rules.SEVERITIES
QUARANTINE_SEVERITY = "high"  # safety.rules.QUARANTINE_SEVERITY
_SECURITY_ONLY_FORMATS = ("sarif", "github")  # formats of findings at a file and line: the lint's


def register(sub: Any) -> None:
    p = sub.add_parser("validate", help="check every tool doc and mode; list every problem")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("modes", help="list the modes")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=cmd_modes)

    p = sub.add_parser("tools", help="list the tools (of one mode with --mode)")
    p.add_argument("--mode", help="only the tools this mode allows")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=cmd_tools)

    p = sub.add_parser("compose", help="compose a mode's system prompt and tool list")
    add_mode_option(p, "the mode to compose")
    p.add_argument("--recent", default="", help="comma-separated tool uses, oldest first, replayed into the FIFO")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument(
        "--provider", choices=PROVIDERS, default="anthropic", help="native tool definitions in this API's format"
    )
    p.add_argument(
        "--native",
        action="store_true",
        help="compile the mode to the provider's own tool deferral: the permanent and recent tools eager, every "
        "other tool of the mode deferred (anthropic: defer_loading; openai-responses: defer_loading functions in "
        "namespaces), tool_search to load them; not openai (Chat Completions cannot defer)",
    )
    p.set_defaults(handler=cmd_compose)

    p = sub.add_parser("fetch", help="print a tool's full description, as fetch_tool_description answers it")
    p.add_argument("name", help="the tool whose full description to print")
    add_mode_option(p, "the mode the tool must be allowed in")
    p.set_defaults(handler=cmd_fetch)

    p = sub.add_parser(
        "audit",
        help="token counts per mode and tool against the budgets; --security: the tool-poisoning lint",
        description="Token counts per mode (baseline, composed, worst case against the budget) and per tool (brief "
        "and full). With --security, the tool-poisoning lint of every tool doc instead.",
    )
    p.add_argument(
        "--format",
        choices=AUDIT_FORMATS,
        default="table",
        help="table, json, markdown or html (one self-contained page with charts; not with --security); sarif "
        "(SARIF 2.1.0, for GitHub code scanning) and github (workflow annotations) with --security",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if any mode's worst case is over its budget, its composed prompt is not smaller than its "
        "baseline, or a text it shows names a tool it does not allow",
    )
    p.add_argument(
        "--security",
        action="store_true",
        help="lint every tool doc for text that addresses the model (path:line per finding); "
        "exit 1 on a finding at --fail-on or above",
    )
    p.add_argument(
        "--fail-on",
        choices=SEVERITIES,
        default=QUARANTINE_SEVERITY,
        help=f"with --security: the least severity that fails (default {QUARANTINE_SEVERITY}, what imports quarantine)",
    )
    add_semantic_option(p)
    p.set_defaults(handler=cmd_audit)


def cmd_validate(args: argparse.Namespace) -> int:
    from ..core.cards import unused_cards
    from ..core.mentions import mention_problems
    from ..core.registry import modes_folder_problem
    from . import json_out

    try:
        registry = registry_of(args)
        with composer_of(args, registry) as composer:
            problems = [problem for mode in registry.modes.values() for problem in mention_problems(composer, mode)]
        missing = modes_folder_problem(registry.root) if registry.root is not None else None
        problems += [missing] if missing else []
        if problems:
            raise LoadError(problems)
    except LoadError as exc:
        if args.format != "json":
            raise
        print(json_out.dumps(json_out.validate_failed(exc)))  # the problems as data too, for a CI step
        return 2
    warnings = unused_cards(registry)  # loads, but says nothing the registry uses
    if args.format == "json":
        print(json_out.dumps(json_out.validate_ok(registry, warnings)))
        return 0
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    counts = f"{plural(len(registry.tools), 'tool')}, {plural(len(registry.modes), 'mode')}"
    held = sum(1 for doc in registry.tools.values() if doc.quarantined)
    if held:
        counts += f"; {held} quarantined, in no mode (see audit --security)"
    print(f"ok: {counts} (fingerprint {registry.fingerprint})")
    return 0


def cmd_modes(args: argparse.Namespace) -> int:
    from . import json_out

    registry = registry_of(args)
    if args.format == "json":
        print(json_out.dumps(json_out.modes(registry)))
        return 0
    for mode in registry.modes.values():
        c = mode.config
        print(
            f"{c.slug}\t{shown(c.name)}\t{plural(len(mode.allowed), 'tool')}, {len(c.permanent)} permanent, "
            f"recent {c.recent_size}, budget {c.budget_tokens}, {c.tool_style}"
        )
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    from . import json_out

    registry = registry_of(args)
    names = registry.mode(args.mode).allowed if args.mode else tuple(registry.tools)
    if args.format == "json":
        print(json_out.dumps(json_out.tools(registry, names, registry.mode(args.mode).slug if args.mode else None)))
        return 0
    for name in names:
        doc = registry.tools[name]
        # A quarantined tool is in no mode; say so where it is listed (see `audit --security`).
        mark = f"\tQUARANTINED ({', '.join(doc.quarantine)})" if doc.quarantined else ""
        print(f"{name}\t{doc.group}\t{shown(doc.brief)}{mark}")
    return 0


def cmd_compose(args: argparse.Namespace) -> int:
    registry = registry_of(args)
    with composer_of(args, registry) as composer:
        return _compose(args, composer)


def _compose(args: argparse.Namespace, composer: Composer) -> int:
    from ..shared.jsonwrite import indented

    registry = composer.registry
    mode = checked_mode(registry, args.mode, composer)
    recent = [n.strip() for n in args.recent.split(",") if n.strip()]
    for name in recent:
        if name not in registry.tools:
            raise UnknownToolError(name, list(registry.tools))
    if args.native and args.provider not in ("anthropic", "openai-responses"):
        print(f"error: --native is for a provider that defers tools itself; {args.provider} does not", file=sys.stderr)
        return 2
    if args.native:
        try:
            prompt = composer.compose_native(mode, recent=recent)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        from ..agent.providers import anthropic_native_tools, responses_native_tools

        if args.provider == "openai-responses":
            tools = responses_native_tools(prompt.tools, prompt.deferred, composer)
        else:
            tools = anthropic_native_tools(prompt.tools, prompt.deferred)
    else:
        prompt = composer.compose(mode, recent=recent)
        # Printed, not handed on: the composer's own definitions need no private copy (tools_for makes one). The
        # Anthropic format is the composer's own: the providers' module is imported for another.
        if args.provider == "anthropic":
            tools = list(prompt.tools)
        else:
            from ..agent.providers import tools_for

            tools = tools_for(args.provider, prompt.tools)
    warn_over_budget(registry, mode, prompt.tokens.total)
    if args.format == "json":
        print(indented({**prompt.as_dict(), "provider": args.provider, "tools": tools}))
        return 0
    print(prompt.system)
    if tools:
        print(f"\n==== TOOLS (native definitions, {args.provider} format)\n")
        print(indented(tools))
    t = prompt.tokens
    print(
        f"\n# mode {prompt.mode}: {len(prompt.full)} full, {len(prompt.brief)} brief; "
        f"tokens system {t.system} + tools {t.tools} = {t.total}",
        file=sys.stderr,
    )
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from ..core.fetch import handle_fetch

    registry = registry_of(args)
    with composer_of(args, registry) as composer:
        mode = checked_mode(registry, args.mode, composer)
        warn_over_budget(registry, mode, composer=composer)
    result = handle_fetch(registry, mode, {"name": args.name})
    if result.is_error:
        # The model's refusal is the same for a hidden tool and an absent one, on purpose; the operator, who can
        # read every mode, is told where the tool is instead. Either is an error line of the command.
        refusal = f"error: {result.content.removeprefix('Error: ')}"
        print(elsewhere(registry, mode.slug, args.name) or refusal, file=sys.stderr)
        return 1
    print(result.content)
    return 0


def elsewhere(registry: Registry, slug: str, name: str) -> str | None:
    """``error: mode 'helper' has no tool 'http_get'; mode 'reviewer' has it: …--mode reviewer``, when the tool is
    in the registry but not in mode ``slug``; else ``None``."""
    if name not in registry.tools:
        return None
    modes = [m for m in registry.modes if m != slug and registry.modes[m].allows(name)]
    if not modes:
        why = "quarantined by the lint (audit --security)" if registry.tools[name].quarantined else "in no mode"
        return f"error: mode {slug!r} has no tool {name!r}; it is in the tool docs, but {why}"
    which = f"mode {modes[0]!r} has it" if len(modes) == 1 else f"modes {', '.join(map(repr, modes))} have it"
    return f"error: mode {slug!r} has no tool {name!r}; {which}: prompt-composer fetch {name} --mode {modes[0]}"


def cmd_audit(args: argparse.Namespace) -> int:
    from ..core.audit import run_audit

    if args.security:
        return cmd_audit_security(args)
    if args.format in _SECURITY_ONLY_FORMATS:
        print(f"error: --format {args.format} is for the lint's findings: add --security", file=sys.stderr)
        return 2
    registry = registry_of(args)
    with composer_of(args, registry) as composer:
        report = run_audit(composer)
    if args.format == "json":
        print(report.to_json())
    elif args.format == "html":
        from .reports import audit_html

        print(audit_html(report, registry, {m.mode: m.status for m in report.modes}))
    elif args.format == "markdown":
        print(report.to_markdown())
    else:
        print(report.to_table())
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for m in report.not_saving:
        # Without --check a warning; with it, an error below.
        if not args.check:
            print(f"warning: {_not_saving(m)}", file=sys.stderr)
    if args.check and (report.over_budget or report.unclean or report.not_saving):
        for m in report.over_budget:
            print(
                f"error: mode {m.mode!r} worst case {m.worst_tokens} tokens is over its budget {m.budget_tokens}",
                file=sys.stderr,
            )
        for m in report.not_saving:
            print(f"error: {_not_saving(m)}", file=sys.stderr)
        for m in report.unclean:
            print(
                f"error: mode {m.mode!r} shows text naming tools it does not allow (the warnings say where)",
                file=sys.stderr,
            )
        return 1
    return 0


def _not_saving(m: ModeAudit) -> str:
    return (
        f"mode {m.mode!r} composed prompt {m.composed_tokens} tokens is not smaller than its baseline "
        f"{m.baseline_tokens} (saving {m.saving:.0%}): send its tools in full, or hold fewer permanent"
    )


def cmd_audit_security(args: argparse.Namespace) -> int:
    """``audit --security``: every finding of the tool-poisoning lint as ``path:line: severity [rule] tool field:
    excerpt``; exit 1 when one is at ``--fail-on`` or above, 0 otherwise."""
    if args.format == "html":
        print("error: --format html is for the token audit; the lint writes table, json, markdown, sarif or github",
              file=sys.stderr)  # fmt: skip
        return 2
    from ..safety.ci_formats import to_github, to_sarif_json
    from ..safety.lint import scan_registry

    report = scan_registry(registry_of(args), semantic=semantic_layer(args.semantic))
    if args.format == "json":
        print(report.to_json(args.fail_on))
    elif args.format == "sarif":
        print(to_sarif_json(report))
    elif args.format == "github":
        for line in to_github(report, args.fail_on):
            print(line)
    elif args.format == "markdown":
        print(report.to_markdown(args.fail_on))
    else:
        print("\n".join(shown(line) for line in report.to_lines(args.fail_on)))  # paths and excerpts of docs
    return 1 if report.failing(args.fail_on) else 0
