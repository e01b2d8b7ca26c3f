"""Drafted briefs on every server of ../shared/corpora (issue 38): how many repeat themselves, and what they cost.

Every catalog of the corpora is drafted server by server as an import drafts it
(:func:`prompt_composer.importers.drafting.draft_docs`, in memory: nothing is written): the GitHub MCP server, the
MCP reference servers, Playwright, Chrome DevTools, Notion, LiveMCPBench's 70 servers, MetaTool's plugins and Roo
Code's native tools. A brief *repeats* when one of its sentences after the first says nothing the sentences before
it do not ("Star a GitHub repository. Use it when you need to star a GitHub repository."): every word of content it
has (articles, pronouns, "use it when you need to" left out; plurals folded) is in them. The check is this
module's own, apart from the drafter's.

Run ``python3 benchmarks/brief_quality.py [--examples N]``; with an older checkout on ``PYTHONPATH`` it measures
that one's drafter (the "before" of docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.search_corpora import CORPORA
from prompt_composer.core.tokens import default_counter
from prompt_composer.importers.drafting import draft_docs
from prompt_composer.importers.tool_list import UpstreamTool

__all__ = ["BriefFigures", "corpus_servers", "draft_all", "repeats", "sentences_of"]

_FILLER = frozenset(
    re.findall(
        r"\w+",
        "use it this tool when whenever you your need needs want wants to the a an of in on for and or from with by "
        "at as be is are can will that which any all its into about via",
    )
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _fold(word: str) -> str:
    for end, keep in (("ies", "y"), ("ches", "ch"), ("shes", "sh"), ("sses", "ss"), ("xes", "x")):
        if word.endswith(end) and len(word) > len(end) + 1:
            return word[: -len(end)] + keep
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def _content(text: str) -> set[str]:
    return {_fold(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _FILLER}


def sentences_of(brief: str) -> list[str]:
    return [s for s in _SENTENCE.split(brief.strip()) if s]


def repeats(brief: str) -> bool:
    """Whether a sentence of ``brief`` after the first adds no word of content to the ones before it."""
    parts = sentences_of(brief)
    return any(_content(part) <= _content(" ".join(parts[:i])) for i, part in enumerate(parts) if i)


def _schema(value: Any) -> dict[str, Any]:
    schema = dict(value) if isinstance(value, dict) else {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def corpus_servers(root: Path = CORPORA) -> Iterator[tuple[str, list[UpstreamTool]]]:
    """(server, its tools) for every server of every catalog of the corpora, in a fixed order."""
    github = json.loads((root / "github_mcp" / "tools.json").read_text(encoding="utf-8"))
    yield "github", [UpstreamTool(t["name"], t["description"], _schema(t["inputSchema"])) for t in github]
    reference: dict[str, list[UpstreamTool]] = {}
    for t in json.loads((root / "mcp_reference" / "tools.json").read_text(encoding="utf-8")):
        tool = UpstreamTool(t["name"], t["description"], _schema(t["inputSchema"]), t.get("title"))
        reference.setdefault(t["server"], []).append(tool)
    yield from reference.items()
    for file in ("playwright-mcp.json", "chrome-devtools-mcp.json", "notion-mcp-server.json"):
        tools = json.loads((root / "mcp_servers" / file).read_text(encoding="utf-8"))
        yield (
            file.removesuffix(".json"),
            [UpstreamTool(t["name"], t["description"], _schema(t["input_schema"])) for t in tools],
        )
    live: dict[str, list[UpstreamTool]] = {}
    for line in (root / "livemcpbench" / "tools.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            t = json.loads(line)
            tool = UpstreamTool(t["tool"], t.get("description") or "", _schema(t.get("input_schema")))
            if all(other.name != tool.name for other in live.get(t["server"], [])):
                live.setdefault(t["server"], []).append(tool)
    yield from live.items()
    metatool = json.loads((root / "metatool" / "tools.json").read_text(encoding="utf-8"))
    yield "metatool", [UpstreamTool(t["name"], t.get("description") or "", _schema(None)) for t in metatool]
    roo = json.loads((root / "roocode" / "native_tools_head.json").read_text(encoding="utf-8"))
    yield "roocode", [UpstreamTool(t["name"], t.get("description") or "", _schema(t.get("parameters"))) for t in roo]


@dataclass(frozen=True)
class BriefFigures:
    servers: int
    briefs: int
    repeating: tuple[tuple[str, str], ...]  # (tool, brief)
    mean_tokens: float

    def lines(self, examples: int = 5) -> list[str]:
        share = len(self.repeating) / self.briefs if self.briefs else 0.0
        out = [
            f"{self.briefs} drafted briefs of {self.servers} servers: {len(self.repeating)} repeat themselves "
            f"({share:.0%}); mean brief {self.mean_tokens:.1f} tokens (cl100k_base)"
        ]
        out += [f"  {name}: {brief}" for name, brief in self.repeating[:examples]]
        return out


def draft_all(servers: Sequence[tuple[str, list[UpstreamTool]]]) -> BriefFigures:
    counter = default_counter()
    briefs: list[tuple[str, str]] = []
    for server, tools in servers:
        briefs += [
            (f"{server}:{doc.origin.name if doc.origin else doc.name}", doc.brief)
            for doc, _ in draft_docs(tools, server=server)
        ]
    tokens = [counter.count(brief) for _, brief in briefs]
    return BriefFigures(
        len(servers),
        len(briefs),
        tuple((name, brief) for name, brief in briefs if repeats(brief)),
        sum(tokens) / len(tokens) if tokens else 0.0,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=5, help="repeating briefs to show")
    args = parser.parse_args()
    print("\n".join(draft_all(list(corpus_servers())).lines(args.examples)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
