"""Agent subcommands: ``run`` (the tool loop against the Messages API or an OpenAI-compatible API) and ``replay``
(the policy cost replay)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ..learn.costs import COST_MODELS
from ..shared.text import plural
from ._common import (
    add_learn_from,
    add_mode_option,
    checked_mode,
    drops_line,
    log_failing,
    positive_int,
    registry_of,
    search_for,
    warn_over_budget,
)

if TYPE_CHECKING:
    from ..agent.providers import Sdk
    from ..discovery.search import ToolSearch
    from ..learn.events import EventLog
    from ..learn.replay import ReplayReport

DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-5"}
PROVIDER_HELP = (
    "wire format (default: anthropic): anthropic = the Messages API; openai = Chat Completions, for OpenAI and any "
    "server that copies it (llama.cpp, vLLM, Ollama, LM Studio, LiteLLM, OpenRouter)"
)
# run also speaks OpenAI's Responses API (tool search needs gpt-5.4 or later); bench keeps the two above.
RUN_MODELS = {**DEFAULT_MODELS, "openai-responses": "gpt-5.4"}
RUN_PROVIDER_HELP = f"{PROVIDER_HELP}; openai-responses = OpenAI's Responses API, the one whose --native defers tools"
SEPARATE_MODEL = "doubao"  # loops and emits malformed steps: reported on its own (see traces SOURCE.md)
# What the parser offers, written here so that building it imports neither the core nor the replay
# (tests/cli/test_startup.py holds them equal to core.promotion.POLICIES and ReplayParams().result_tokens).
POLICIES = ("every_turn", "task_start", "inline")
RESULT_TOKENS = 400


def register(sub: Any) -> None:
    _register_run(sub)
    _register_replay(sub)


def _register_run(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run the tool loop on a task against a model API (read-only executors; native or text-style modes)",
    )
    add_mode_option(p, "the mode the task runs in")
    p.add_argument("--task", required=True, help="the user's task message")
    p.add_argument("--provider", choices=tuple(RUN_MODELS), default="anthropic", help=RUN_PROVIDER_HELP)
    p.add_argument(
        "--base-url",
        default=None,
        help="API base URL (default: the SDK's, or ANTHROPIC_BASE_URL / OPENAI_BASE_URL); a server on this machine "
        "needs no key",
    )
    p.add_argument("--model", default=None, help="model name (default: claude-sonnet-4-6 / gpt-5 / gpt-5.4)")
    p.add_argument("--workspace", default=".", help="folder the read-only tools may read (default: .)")
    p.add_argument(
        "--servers",
        metavar="FILE",
        default=None,
        help='route imported tools to their MCP servers ({"mcpServers": {...}}, the format MCP clients use)',
    )
    p.add_argument("--policy", choices=POLICIES, default=None, help="promotion policy (default: the mode's)")
    p.add_argument(
        "--native",
        nargs="?",
        const="provider",
        choices=("provider", "emulate"),
        default=None,
        help="the provider's own tool deferral (--native: every tool but the permanent and recent ones deferred and "
        "loaded by tool_search's references), or --native emulate: the same for a server that cannot defer (a "
        "local model), the loop appending what is loaded",
    )
    p.add_argument(
        "--hosted-search",
        action="store_true",
        help="with --provider openai-responses --native: OpenAI searches the deferred tools itself (a hosted "
        "tool_search) instead of the loop's own search",
    )
    p.add_argument(
        "--rewrite",
        action="store_true",
        help="in a mode with preselect: the model first puts the task as the operation it asks for, in one line "
        "that preselection searches before the task's words (one short request more)",
    )
    p.add_argument(
        "--max-iterations", type=positive_int, default=25, help="model requests for the task at most (default: 25)"
    )
    p.add_argument("--max-tokens", type=positive_int, default=4096, help="per response (default: 4096)")
    p.add_argument("--temperature", type=float, default=None, help="sampling temperature (default: the server's)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument(
        "--log",
        metavar="FILE",
        default=None,
        help="append one JSON line per request, tool call, fetch, search, refusal and promotion (read it with "
        "stats); no tool input or output unless --log-content",
    )
    p.add_argument(
        "--log-content",
        action="store_true",
        help="with --log: also log tool inputs, outputs and search queries (what learned search phrasings need)",
    )
    add_learn_from(p)
    p.set_defaults(handler=cmd_run)


def _register_replay(sub: Any) -> None:
    p = sub.add_parser("replay", help="replay tool-use sequences through each promotion policy and price them")
    p.add_argument("--traces", metavar="FILE", help="JSONL traces (SWE-agent format); default: own sequences")
    p.add_argument("--mode", action="append", help="replay in this mode (repeatable; default: every mode)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--no-fetch", action="store_true", help="assume the model uses a brief tool without fetching")
    p.add_argument("--result-tokens", type=positive_int, default=RESULT_TOKENS, help="tokens per tool result")
    p.add_argument(
        "--provider",
        choices=tuple(COST_MODELS),
        default="anthropic",
        help="prompt-cache cost model (default: anthropic): anthropic writes the prefix at each cache_control "
        "breakpoint, a breakpoint looks back at most 20 blocks for an earlier one, writes cost 1.25x and reads 0.1x "
        "the input price; openai caches every prefix automatically, with no write premium, hits in 128-token steps, "
        "cached input at 0.1x; both cache nothing under 1,024 tokens",
    )
    p.add_argument(
        "--min-cached-tokens",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="the model's minimum cacheable prompt length (default: 1,024; Anthropic's Haiku 3 and 3.5 need 2,048, "
        "Opus 4.5 and 4.6 and Haiku 4.5 4,096)",
    )
    p.set_defaults(handler=cmd_replay)


def non_negative_int(text: str) -> int:
    """An argparse type for a token count that may be 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def sdk_client(provider: str, base_url: str | None, *, timeout: float | None = None) -> Sdk | str:
    """The SDK client for ``provider`` (the key from ANTHROPIC_API_KEY / OPENAI_API_KEY; a placeholder for a server
    on this machine, e.g. `prompt-composer model serve`), or why there is none."""
    if provider in ("openai", "openai-responses"):
        try:
            from ..agent import openai as adapter
        except ImportError:
            from ..shared.extras import needs_extra

            return needs_extra(f"--provider {provider}", "openai")
        return adapter.sdk_client(base_url, timeout=timeout)
    from ..agent import anthropic as anthropic_adapter

    return anthropic_adapter.sdk_client(base_url, timeout=timeout)


# The environment variables each provider's SDK takes its key (and its base URL) from.
KEY_VARIABLES = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "openai": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
}
BASE_URL_VARIABLES = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "openai-responses": "OPENAI_BASE_URL",
}


def missing_key(provider: str, base_url: str | None) -> str | None:
    """Why ``run`` has no key for ``provider``, from the environment alone, else ``None``. Checked first, before
    the registry or an SDK is loaded: the SDK would say the same, seconds later. A server on this machine (a local
    model, the scripted demo server) needs none."""
    from ..shared.net import is_loopback_url

    names = KEY_VARIABLES.get(provider, ())
    if not names or any(os.environ.get(name) for name in names):
        return None
    if is_loopback_url(base_url or os.environ.get(BASE_URL_VARIABLES[provider])):
        return None
    return (
        f"no API key: set {names[0]}, or give --base-url a server on this machine "
        "(`python -m prompt_composer.testing --demo` is one that needs no key)"
    )


def cmd_run(args: argparse.Namespace) -> int:
    # Options that cannot go together are wrong whatever the key: said first.
    if args.native == "provider" and args.provider not in ("anthropic", "openai-responses"):
        print(f"error: --native needs a provider that defers tools itself; {args.provider} (Chat Completions) does "
              "not: use --provider openai-responses (--native emulate works everywhere)", file=sys.stderr)  # fmt: skip
        return 2
    if args.hosted_search and (args.provider != "openai-responses" or args.native != "provider"):
        print("error: --hosted-search needs --provider openai-responses --native", file=sys.stderr)
        return 2
    no_key = missing_key(args.provider, args.base_url)
    if no_key is not None:
        print(f"error: {no_key}", file=sys.stderr)
        return 2
    from ..errors import ExecutorError
    from ..learn.events import EventLog
    from ..safety.executors import workspace_executors

    registry = registry_of(args)
    # an unknown mode, or one showing text that names a tool it lacks: exit 2 before any request
    warn_over_budget(registry, checked_mode(registry, args.mode))
    config = registry.mode(args.mode).config
    if args.native and (config.tool_style == "text" or config.discovery):
        print(f"error: mode {args.mode!r} cannot use --native: it is a text-style or discovery mode", file=sys.stderr)
        return 2
    if args.rewrite and config.preselect is None:
        print(f"error: --rewrite needs a mode with preselect; mode {args.mode!r} has none", file=sys.stderr)
        return 2
    if args.rewrite and args.native == "provider":
        print("error: --rewrite and --native cannot go together: with the provider's deferral nothing is "
              "preselected (--native emulate can)", file=sys.stderr)  # fmt: skip
        return 2
    search = search_for(args, registry)  # so does an unreadable --learn-from log
    try:
        executors: dict[str, Any] = dict(workspace_executors(args.workspace))
    except ExecutorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sdk = sdk_client(args.provider, args.base_url)
    if isinstance(sdk, str):
        print(f"error: {sdk}", file=sys.stderr)
        return 2
    events = None
    if args.log is not None:
        try:
            events = EventLog(args.log, include_content=args.log_content, on_sink_error=log_failing(args.log))
        except OSError as exc:
            sdk.client.close()
            print(f"error: cannot open the event log: {exc}", file=sys.stderr)
            return 2

    def close_log(log: EventLog) -> None:
        drops = log.close()
        if drops.total:  # a slow or failing log never held the run up; say what it lost
            print(f"# event log {args.log}: {drops_line(drops)}", file=sys.stderr)

    with contextlib.ExitStack() as stack:
        if events is not None:
            stack.callback(close_log, events)
        if args.servers is not None:  # imported tools go to their servers (started on first use, stopped at exit)
            from ..mcp.upstreams import mcp_executors

            executors.update(stack.enter_context(mcp_executors(registry, args.servers)))
        return _run_task(args, registry, sdk, executors, events, search)


def _run_task(
    args: argparse.Namespace,
    registry: Any,
    sdk: Sdk,
    executors: dict[str, Any],
    events: EventLog | None,
    search: ToolSearch | None,
) -> int:
    import uuid

    from ..agent.results import MaxIterationsError, partial_result
    from ..agent.rewriting import model_rewriter
    from ..agent.wrapping import wrap
    from ..core.prompt import SystemInfo

    responses = {"api": "responses", "hosted_search": args.hosted_search} if args.provider == "openai-responses" else {}
    model = args.model or RUN_MODELS[args.provider]
    # As a raw body field: the same spelling for both SDKs and every OpenAI-compatible server.
    body = {} if args.temperature is None else {"temperature": args.temperature}
    rewriter = model_rewriter(sdk.client, model=model, extra_body=body) if args.rewrite else None
    with sdk.client:
        # The system information section (workspace, OS, shell, today's date) is read here, once per run: it
        # is an input of composition, so `compose` (and the golden prompts) stay deterministic.
        client = wrap(
            sdk.client,
            registry=registry,
            mode=args.mode,
            task_id=f"run-{uuid.uuid4().hex[:12]}",
            policy=args.policy,
            system_info=SystemInfo.detect(args.workspace),
            events=events,
            search=search,
            native="emulate" if args.native == "emulate" else args.native == "provider",
            rewriter=rewriter,
            **responses,
        )
        try:
            result = client.run(
                args.task,
                model=model,
                max_tokens=args.max_tokens,
                executors=executors,
                max_iterations=args.max_iterations,
                **({"extra_body": body} if body else {}),
            )
            code = 0
        except (MaxIterationsError, sdk.api_error) as exc:
            print(f"error: {exc}", file=sys.stderr)
            partial = partial_result(exc)
            if partial is None:
                return 1
            result, code = partial, 1
    if args.format == "json":
        print(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
        return code
    for call in result.tool_calls:
        status = "error" if call.is_error else "ok"
        name = call.name or "(unreadable tool_call block)"
        print(f"# {name} {json.dumps(dict(call.input), ensure_ascii=False)} → {status}", file=sys.stderr)
    if result.text:
        print(result.text)
    usage = result.usage
    print(
        f"# {plural(len(result.iterations), 'iteration')}, {plural(len(result.tool_calls), 'tool call')}, "
        f"policy {client.policy}; "
        f"tokens: input {usage.input_tokens}, output {usage.output_tokens}, cache write "
        f"{usage.cache_creation_input_tokens}, cache read {usage.cache_read_input_tokens}",
        file=sys.stderr,
    )
    return code


def cmd_replay(args: argparse.Namespace) -> int:
    from ..core.composer import Composer
    from ..learn.replay import ReplayParams, replay, synthetic_replay
    from ..learn.traces import load_traces, split_by_model

    composer = Composer(registry_of(args))
    modes = args.mode or list(composer.registry.modes)
    for slug in modes:
        composer.registry.mode(slug)
    cost_model = COST_MODELS[args.provider]
    if args.min_cached_tokens is not None:
        cost_model = cost_model.with_min_cached_tokens(args.min_cached_tokens)
    params = ReplayParams(
        fetch_first_use=not args.no_fetch,
        result_tokens=args.result_tokens,
        cost_model=cost_model,
    )
    separate: ReplayReport | None = None
    if args.traces:
        tasks = load_traces(args.traces)
        main_tasks, other = split_by_model(tasks, SEPARATE_MODEL)
        report = replay(composer, main_tasks, modes, params=params, label=f"{args.traces} (without {SEPARATE_MODEL})")
        if other:
            separate = replay(composer, other, modes, params=params, label=f"{args.traces} ({SEPARATE_MODEL} only)")
    else:
        report = synthetic_replay(composer, modes, params=params)
    if args.format == "json":
        payload = report.as_dict()
        if separate is not None:
            payload[SEPARATE_MODEL] = separate.as_dict()
        print(json.dumps(payload, indent=2))
        return 0
    print(report.to_table())
    if len(modes) > 1:
        for sub in report.per_mode.values():
            print()
            print(sub.to_table())
    if separate is not None:
        print()
        print(separate.to_table())
    return 0
