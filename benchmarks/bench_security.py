"""Tool-poisoning lint benchmark: recall on the poisoned corpus (tests/data/poison), false positives on real
catalogs (Roo Code, the GitHub MCP server, the MCP reference servers, Playwright, Chrome DevTools, Notion) and
the shipped tool_docs, and precision over both.

    python benchmarks/bench_security.py [--details]

Every catalog tool becomes a tool doc the way ``prompt-composer import json`` builds one (drafted brief, full =
description + parameter reference); Roo Code's XML-protocol texts are taken verbatim as full forms. The
LiveMCPBench community servers (527 tools of uneven quality) are reported on a separate line, outside the
totals. Catalogs missing from ``../shared/corpora`` (or ``$PROMPT_COMPOSER_SHARED/corpora``) are skipped with a
note. Prints Markdown tables; ``--details`` also lists every flagged clean tool and every missed poisoned one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prompt_composer import ToolDoc, load_registry
from prompt_composer.importers.brief import draft_brief
from prompt_composer.importers.drafting import tool_docs_from_upstream
from prompt_composer.importers.tool_list import parse_tool_list
from prompt_composer.safety.lint import Finding, full_size_limit, scan, sibling_names
from prompt_composer.safety.rules import QUARANTINE_SEVERITY, SEVERITIES, at_least

ROOT = Path(__file__).resolve().parents[1]
POISON = ROOT / "tests" / "data" / "poison"


def shared_corpora() -> Path:
    explicit = os.environ.get("PROMPT_COMPOSER_SHARED")
    shared = Path(explicit).expanduser() if explicit else ROOT.parent / "shared"
    return shared / "corpora"


# --- the clean side -------------------------------------------------------------------------------------


def _imported(server: str, data: Any) -> list[ToolDoc]:
    _, tools = parse_tool_list(data, source=server)
    return tool_docs_from_upstream(tools, server=server, group="clean")


def clean_catalogs(corpora: Path | None = None, *, community: bool = False) -> dict[str, list[ToolDoc]]:
    """Real tool docs per catalog (those whose files exist). ``community`` adds LiveMCPBench's 527 tools."""
    corpora = corpora or shared_corpora()
    out: dict[str, list[ToolDoc]] = {"shipped tool_docs": list(load_registry().tools.values())}
    roo = corpora / "roocode" / "tools.json"
    if roo.is_file():
        docs = []
        for tool in json.loads(roo.read_text(encoding="utf-8")):
            schema = tool.get("native_parameters") or {"type": "object", "properties": {}}
            upstream = parse_tool_list([{"name": tool["name"], "description": tool["full"], "parameters": schema}])[1]
            docs.append(
                ToolDoc(
                    name=tool["name"],
                    group="clean",
                    brief=draft_brief(upstream[0]),
                    full=tool["full"],
                    input_schema=upstream[0].input_schema,
                )
            )
        out["Roo Code (XML prompt)"] = docs
    head = corpora / "roocode" / "native_tools_head.json"
    if head.is_file():
        tools = json.loads(head.read_text(encoding="utf-8"))
        entries = [{"name": t["name"], "description": t["description"], "parameters": t["parameters"]} for t in tools]
        out["Roo Code (native)"] = _imported("roo", entries)
    github = corpora / "github_mcp" / "tools.json"
    if github.is_file():
        out["GitHub MCP server"] = _imported("github", {"tools": json.loads(github.read_text(encoding="utf-8"))})
    reference = corpora / "mcp_reference" / "tools.json"
    if reference.is_file():
        tools = json.loads(reference.read_text(encoding="utf-8"))
        docs = []
        for server in sorted({t["server"] for t in tools}):
            docs += _imported(server, {"tools": [t for t in tools if t["server"] == server]})
        out["MCP reference servers"] = docs
    for file, label in (
        ("playwright-mcp.json", "Playwright MCP"),
        ("chrome-devtools-mcp.json", "Chrome DevTools MCP"),
        ("notion-mcp-server.json", "Notion MCP"),
    ):
        path = corpora / "mcp_servers" / file
        if path.is_file():
            tools = json.loads(path.read_text(encoding="utf-8"))
            out[label] = _imported(
                file.removesuffix(".json"), [{k: t[k] for k in ("name", "description", "input_schema")} for t in tools]
            )
    live = corpora / "livemcpbench" / "tools.jsonl"
    if community and live.is_file():
        by_server: dict[str, list[dict[str, Any]]] = {}
        for line in live.read_text(encoding="utf-8").splitlines():
            tool = json.loads(line)
            server, _, name = tool["name"].partition("::")
            entry = {
                "name": name or server,
                "description": tool.get("description") or "",
                "input_schema": tool["input_schema"],
            }
            by_server.setdefault(server, []).append(entry)
        docs = []
        for server, entries in sorted(by_server.items()):
            try:
                docs += _imported(server, entries)
            except Exception:  # a community schema the importer refuses is not a lint question
                continue
        out["LiveMCPBench (community)"] = docs
    return out


# --- the poisoned side ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Poisoned:
    doc: ToolDoc
    attack: str  # the pattern it follows, e.g. "hidden <IMPORTANT> block"
    expect: tuple[str, ...]  # rule ids that should fire
    source: Path


def poisoned_docs(folder: Path = POISON) -> list[Poisoned]:
    """The poisoned corpus: every tool of ``tools/*.json`` imported as ``import json`` would, plus the hand-written
    docs of ``docs/`` as they are."""
    out: list[Poisoned] = []
    for path in sorted((folder / "tools").glob("*.json")):
        entries = json.loads(path.read_text(encoding="utf-8"))
        _, tools = parse_tool_list({"tools": entries}, source=str(path))
        docs = tool_docs_from_upstream(tools, server=path.stem, group="poison")
        for entry, doc in zip(entries, docs, strict=True):
            out.append(Poisoned(doc, entry["_attack"], tuple(entry["_expect"]), path))
    docs_dir = folder / "docs"
    if docs_dir.is_dir():
        registry = load_registry(docs_dir)
        notes = json.loads((docs_dir / "expect.json").read_text(encoding="utf-8"))
        for name, doc in registry.tools.items():
            note = notes[name]
            out.append(Poisoned(doc, note["attack"], tuple(note["expect"]), docs_dir / f"{name}.yaml"))
    return out


# --- measuring ------------------------------------------------------------------------------------------


def findings_of(docs: Sequence[ToolDoc]) -> list[list[Finding]]:
    """Each doc's findings (in order), the oversized threshold taken from its own catalog and the siblings
    from its own server, as ``audit --security`` and the importers see them."""
    limit = full_size_limit(docs)
    return [scan(doc, full_limit=limit, siblings=sibling_names(doc, docs)) for doc in docs]


def flagged(findings: Iterable[Finding], threshold: str) -> bool:
    return any(at_least(f.severity, threshold) for f in findings)


@dataclass(frozen=True)
class Counts:
    """How many of ``total`` docs have a finding at or above each severity."""

    total: int
    flagged: dict[str, int]

    @classmethod
    def of(cls, findings: Sequence[Sequence[Finding]]) -> Counts:
        return cls(len(findings), {s: sum(flagged(f, s) for f in findings) for s in SEVERITIES})

    def share(self, threshold: str) -> float:
        return self.flagged[threshold] / self.total if self.total else 0.0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.total + other.total, {s: self.flagged[s] + other.flagged[s] for s in SEVERITIES})


def precision(poisoned: Counts, clean: Counts, threshold: str) -> float:
    caught, wrong = poisoned.flagged[threshold], clean.flagged[threshold]
    return caught / (caught + wrong) if caught + wrong else 1.0


@dataclass(frozen=True)
class Measurement:
    poisoned: dict[str, Counts]  # per poisoned set (file stem, or "docs")
    clean: dict[str, Counts]  # per clean catalog
    missed: list[Poisoned]  # poisoned docs with nothing at quarantine severity
    flagged_clean: list[tuple[str, str, Finding]]  # (catalog, doc, finding) at quarantine severity

    def poisoned_total(self, *, blind: bool | None = None) -> Counts:
        sets = [c for name, c in self.poisoned.items() if blind is None or (name == "blind") == blind]
        return sum(sets[1:], sets[0]) if sets else Counts(0, dict.fromkeys(SEVERITIES, 0))

    def clean_total(self, *, community: bool = False) -> Counts:
        sets = [c for name, c in self.clean.items() if community or "community" not in name]
        return sum(sets[1:], sets[0]) if sets else Counts(0, dict.fromkeys(SEVERITIES, 0))


def measure(poisoned: Sequence[Poisoned], clean: Mapping[str, Sequence[ToolDoc]]) -> Measurement:
    """Scan both sides once. Each poisoned set is scanned as one catalog (its own size threshold)."""
    sets: dict[str, list[Poisoned]] = {}
    for p in poisoned:
        sets.setdefault(p.source.parent.name if p.source.suffix == ".yaml" else p.source.stem, []).append(p)
    poisoned_counts, missed = {}, []
    for name, items in sorted(sets.items()):
        found = findings_of([p.doc for p in items])
        poisoned_counts[name] = Counts.of(found)
        missed += [p for p, f in zip(items, found, strict=True) if not flagged(f, QUARANTINE_SEVERITY)]
    clean_counts, flagged_clean = {}, []
    for name, docs in clean.items():
        found = findings_of(docs)
        clean_counts[name] = Counts.of(found)
        flagged_clean += [
            (name, doc.name, f)
            for doc, fs in zip(docs, found, strict=True)
            for f in fs
            if at_least(f.severity, QUARANTINE_SEVERITY)
        ]
    return Measurement(poisoned_counts, clean_counts, missed, flagged_clean)


def _pct(x: float) -> str:
    return f"{x:.1%}"


_LABEL = {"high": "high", "medium": "≥ medium", "low": "any"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--details", action="store_true", help="list flagged clean tools and missed poisoned ones")
    args = parser.parse_args(argv)
    corpora = shared_corpora()
    clean = clean_catalogs(corpora, community=True)
    if len(clean) == 1:
        print(f"_note: no real catalogs in {corpora}; the clean side is the shipped tool_docs only._\n")
    m = measure(poisoned_docs(), clean)

    print("## Poisoned corpus (tests/data/poison): docs caught\n")
    print("`blind` was written after the rules were frozen and never tuned on; every other set was.\n")
    print("| set | docs | at high | at ≥ medium (quarantined on import) | at any |")
    print("|---|---:|---:|---:|---:|")
    for name, c in m.poisoned.items():
        print(f"| {name} | {c.total} | {c.flagged['high']} | {c.flagged['medium']} | {c.flagged['low']} |")
    for label, total in (
        ("tuned sets", m.poisoned_total(blind=False)),
        ("blind", m.poisoned_total(blind=True)),
        ("all", m.poisoned_total()),
    ):
        shares = " | ".join(_pct(total.share(s)) for s in SEVERITIES)
        print(f"| **{label}** | {total.total} | {shares} |")

    print("\n## Clean catalogs: tools flagged (false positives)\n")
    print("| catalog | tools | at high | at ≥ medium (quarantined on import) | at any (incl. low: links) |")
    print("|---|---:|---:|---:|---:|")
    for name, c in m.clean.items():
        print(f"| {name} | {c.total} | {c.flagged['high']} | {c.flagged['medium']} | {c.flagged['low']} |")
    clean_total = m.clean_total()
    cells = " | ".join(f"{clean_total.flagged[s]} ({_pct(clean_total.share(s))})" for s in SEVERITIES)
    print(f"| **all but community** | {clean_total.total} | {cells} |")

    print("\n## Over all poisoned docs and the clean catalogs but community\n")
    print("| flagged at | recall | false-positive rate | precision |")
    print("|---|---:|---:|---:|")
    poisoned_total = m.poisoned_total()
    for s in SEVERITIES:
        recall, fp_rate = poisoned_total.share(s), clean_total.share(s)
        print(f"| {_LABEL[s]} | {_pct(recall)} | {_pct(fp_rate)} | {_pct(precision(poisoned_total, clean_total, s))} |")

    if args.details:
        print(f"\n## Clean tools flagged at ≥ {QUARANTINE_SEVERITY}\n")
        for catalog, doc, f in m.flagged_clean:
            print(f"- {catalog} / {doc}: {f.severity} [{f.rule}] {f.field}: {f.excerpt}")
        print(f"\n## Poisoned docs missed (nothing at ≥ {QUARANTINE_SEVERITY})\n")
        for p in m.missed:
            print(f"- {p.source.name} / {p.doc.name}: {p.attack}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
