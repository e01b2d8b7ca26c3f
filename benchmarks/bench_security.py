"""Tool-poisoning lint benchmark: recall on the poisoned cases of the corpus (tests/data/poison), false positives
on its clean cases and on real catalogs (Roo Code, the GitHub MCP server, the MCP reference servers, Playwright,
Chrome DevTools, Notion, LiveMCPBench's community servers, MetaTool's OpenAI plugins) and the shipped tool_docs.

    python benchmarks/bench_security.py [--details] [--semantic] [--timing [--against REV]]

The corpus is labelled case by case (``_label``: poisoned or clean; ``_expect``: the rules a poisoned case
should hit). It has rounds: the *known* cases (``tools/*.json`` and ``docs/``), which the rules were tuned on, and
blind rounds written after the rules were frozen and never tuned on: ``tools/blind.json`` (round 1, poisoned
only), ``blind/`` (round 2, poisoned and clean), ``round3-heldout/`` (blind-3, issue 34) and ``round5-heldout/``
(blind-5, issue 37's second held-out set, scored when the folder is there); ``round3/`` (round-3, issue 34) and
``round4/`` (round-4, issue 37: schema strings, other languages, authority claims): new shapes and tricky clean
docs, written before that round's tuning, then tuned on; and ``round4-heldout/`` (round-4-heldout): issue 37's
first held-out set, measured once (8/12 quarantined), then tuned on; ``round4-classes/`` (round-4-classes): cases
of the classes that set showed (placement, authority claims, redirects, other families), written before the second
pass's rules, then tuned on. Each round's recall and false positives are
printed separately: a blind round is the honest estimate for wording the rules have not seen.

``--semantic`` adds the lint's semantic layer (the ``embeddings`` extra's multilingual encoder; see
``prompt_composer/safety/semantic.py``); ``--timing`` times the lint on the real catalogs (and with the layer, when
it is on); ``--against REV`` adds the lint's CPU time at git revision ``REV`` (extracted with ``git archive``) and
here, run in alternation, as a ratio.

Recall is the share of poisoned docs *quarantined* (a finding at QUARANTINE_SEVERITY, high); a false positive is
a clean doc quarantined. Docs only sent to review (a medium finding) are counted in their own column.

Every catalog tool becomes a tool doc the way ``prompt-composer import json`` builds one (drafted brief, full =
description + parameter reference); Roo Code's XML-protocol texts are taken verbatim as full forms, and a MetaTool
plugin's model-facing text (``description_for_model``) is its description. Catalogs missing from
``../shared/corpora`` (or ``$PROMPT_COMPOSER_SHARED/corpora``) are skipped with a note. Prints Markdown tables;
``--details`` also lists every flagged clean doc, every reviewed one and every missed poisoned one.
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
from prompt_composer.safety.fields import doc_texts
from prompt_composer.safety.lint import Finding, full_size_limit, review_rules, scan, sibling_names
from prompt_composer.safety.rules import QUARANTINE_SEVERITY, REVIEW_SEVERITY, SEVERITIES, at_least
from prompt_composer.safety.semantic import SemanticLayer

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
    metatool = corpora / "metatool" / "tools.json"
    if community and metatool.is_file():
        plugins = json.loads(metatool.read_text(encoding="utf-8"))
        entries = [
            {"name": t["name"], "description": t.get("description_for_model") or t["description"], "parameters": {}}
            for t in plugins
        ]
        out["MetaTool (OpenAI plugins)"] = _imported("metatool", entries)
    return out


# --- the corpus -----------------------------------------------------------------------------------------

KNOWN = "known"  # the round the rules were tuned on


@dataclass(frozen=True)
class Case:
    """One labelled doc of the corpus."""

    doc: ToolDoc
    attack: str  # the pattern a poisoned case follows, or what a clean one is
    expect: tuple[str, ...]  # rule ids that should fire (none for a clean case)
    source: Path
    label: str = "poisoned"  # or "clean"
    round: str = KNOWN  # "known", or the blind round it belongs to

    @property
    def set_name(self) -> str:
        """The set a case is counted in: its file's stem ("docs" for the hand-written docs), under its round."""
        stem = self.source.parent.name if self.source.suffix == ".yaml" else self.source.stem
        return stem if self.round == KNOWN else f"{self.round}/{stem}"


Poisoned = Case  # the name the tests knew


# Folders of rounds written after a freeze: blind ones were never tuned on; round 3 was written before its
# tuning (issue 34) and then tuned on, its held-out half scored once after the tuning. Round 4's held-out half was
# measured once (8/12) and then tuned on (issue 37's second pass): it is a tuning set now, not a blind one.
ROUND_FOLDERS = {
    "blind": "blind-2",
    "round3": "round-3",
    "round3-heldout": "blind-3",
    "round4": "round-4",
    "round4-heldout": "round-4-heldout",
    "round4-classes": "round-4-classes",
    "round5-heldout": "blind-5",
}
# How each round is labelled in the summary (a blind round not named here: "blind, never tuned on").
ROUND_NOTES = {
    "round-3": "written before tuning, then tuned on",
    "round-4": "written before tuning, then tuned on",
    "round-4-heldout": "held out, measured once (8/12), then tuned on",
    "round-4-classes": "written for issue 37's second pass before its rules, then tuned on",
}


def _round_of(path: Path, folder: Path) -> str:
    if path.parent.name in ROUND_FOLDERS:
        return ROUND_FOLDERS[path.parent.name]
    return "blind-1" if path.name == "blind.json" else KNOWN


def _json_cases(path: Path, folder: Path) -> list[Case]:
    entries = json.loads(path.read_text(encoding="utf-8"))
    _, tools = parse_tool_list({"tools": entries}, source=str(path))
    docs = tool_docs_from_upstream(tools, server=path.stem, group="poison")
    round_ = _round_of(path, folder)
    return [
        Case(
            doc, e.get("_attack") or e.get("_about", ""), tuple(e["_expect"]), path, e.get("_label", "poisoned"), round_
        )
        for e, doc in zip(entries, docs, strict=True)
    ]


def corpus_cases(folder: Path = POISON) -> list[Case]:
    """Every labelled case: each tool of ``tools/*.json`` and ``blind/*.json`` imported as ``import json`` would,
    and the hand-written (poisoned) docs of ``docs/`` as they are."""
    out: list[Case] = []
    paths = sorted((folder / "tools").glob("*.json"))
    for name in ROUND_FOLDERS:
        paths += sorted((folder / name).glob("*.json"))
    for path in paths:
        out += _json_cases(path, folder)
    docs_dir = folder / "docs"
    if docs_dir.is_dir():
        registry = load_registry(docs_dir)
        notes = json.loads((docs_dir / "expect.json").read_text(encoding="utf-8"))
        for name, doc in registry.tools.items():
            note = notes[name]
            out.append(Case(doc, note["attack"], tuple(note["expect"]), docs_dir / f"{name}.yaml"))
    return out


def poisoned_docs(folder: Path = POISON) -> list[Case]:
    """The poisoned cases of the corpus, every round."""
    return [c for c in corpus_cases(folder) if c.label == "poisoned"]


def clean_cases(folder: Path = POISON) -> list[Case]:
    """The clean cases of the corpus, every round."""
    return [c for c in corpus_cases(folder) if c.label == "clean"]


# --- measuring ------------------------------------------------------------------------------------------


def findings_of(docs: Sequence[ToolDoc], semantic: SemanticLayer | None = None) -> list[list[Finding]]:
    """Each doc's findings (in order), the oversized threshold taken from its own catalog and the siblings
    from its own server, as ``audit --security`` and the importers see them; ``semantic`` adds that layer."""
    limit = full_size_limit(docs)
    if semantic is not None:
        semantic.prime(text for doc in docs for _, _, text in doc_texts(doc))
    return [scan(doc, full_limit=limit, siblings=sibling_names(doc, docs), semantic=semantic) for doc in docs]


def semantic_layer() -> SemanticLayer:
    """The semantic layer over the default embedder (the embeddings extra)."""
    from prompt_composer.discovery.embeddings import default_embedder

    return SemanticLayer(default_embedder())


def flagged(findings: Iterable[Finding], threshold: str) -> bool:
    return any(at_least(f.severity, threshold) for f in findings)


@dataclass(frozen=True)
class Counts:
    """How many of ``total`` docs have a finding at or above each severity (high: quarantined; medium: at least
    sent to review; low: any finding)."""

    total: int
    flagged: dict[str, int]

    @classmethod
    def of(cls, findings: Sequence[Sequence[Finding]]) -> Counts:
        return cls(len(findings), {s: sum(flagged(f, s) for f in findings) for s in SEVERITIES})

    @classmethod
    def zero(cls) -> Counts:
        return cls(0, dict.fromkeys(SEVERITIES, 0))

    def share(self, threshold: str) -> float:
        return self.flagged[threshold] / self.total if self.total else 0.0

    @property
    def quarantined(self) -> int:
        return self.flagged[QUARANTINE_SEVERITY]

    @property
    def review_only(self) -> int:
        return self.flagged[REVIEW_SEVERITY] - self.flagged[QUARANTINE_SEVERITY]

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.total + other.total, {s: self.flagged[s] + other.flagged[s] for s in SEVERITIES})


def _sum(counts: Iterable[Counts]) -> Counts:
    total = Counts.zero()
    for c in counts:
        total = total + c
    return total


def precision(poisoned: Counts, clean: Counts, threshold: str) -> float:
    caught, wrong = poisoned.flagged[threshold], clean.flagged[threshold]
    return caught / (caught + wrong) if caught + wrong else 1.0


@dataclass(frozen=True)
class Measurement:
    poisoned: dict[str, Counts]  # per poisoned set (file stem, "docs", or "<blind round>/<stem>")
    clean: dict[str, Counts]  # per clean set: the corpus's clean cases ("cases/<stem>") and each catalog
    rounds: dict[str, str]  # each set's round: "known" (catalogs too) or a blind round
    missed: list[Case]  # poisoned docs not quarantined
    flagged_clean: list[tuple[str, str, Finding]]  # (set, doc, finding) that quarantines a clean doc
    reviewed_clean: list[tuple[str, str, tuple[str, ...]]]  # (set, doc, rules) of clean docs sent to review only

    def _in(self, name: str, round_: str | None) -> bool:
        got = self.rounds.get(name, KNOWN)
        return round_ is None or got == round_ or (round_ == "blind" and got.startswith("blind"))

    def poisoned_total(self, round_: str | None = None) -> Counts:
        """All poisoned docs of ``round_`` ("known", "blind" for every blind round, "blind-2" …; None: all)."""
        return _sum(c for name, c in self.poisoned.items() if self._in(name, round_))

    def clean_total(self, round_: str | None = KNOWN, *, community: bool = True, cases: bool = True) -> Counts:
        """The clean docs of ``round_``: the corpus's clean cases (unless ``cases`` is false) and, for the known
        round, the catalogs (the community ones, LiveMCPBench and MetaTool, unless ``community`` is false)."""
        return _sum(
            c
            for name, c in self.clean.items()
            if self._in(name, round_)
            and (cases or not name.startswith(("cases/", "blind", "round-")))
            and (community or not _community(name))
        )


def _community(name: str) -> bool:
    return "community" in name or "MetaTool" in name


def measure(
    cases: Sequence[Case], clean: Mapping[str, Sequence[ToolDoc]], semantic: SemanticLayer | None = None
) -> Measurement:
    """Scan the corpus (each set as one catalog: its own size threshold and siblings) and each clean catalog;
    ``semantic`` adds that layer."""
    sets: dict[str, list[Case]] = {}
    for case in cases:
        sets.setdefault(case.set_name, []).append(case)
    poisoned, clean_counts, rounds = {}, {}, {}
    missed: list[Case] = []
    flagged_clean: list[tuple[str, str, Finding]] = []
    reviewed: list[tuple[str, str, tuple[str, ...]]] = []
    for name, items in sorted(sets.items(), key=lambda kv: (kv[1][0].round != KNOWN, kv[0])):  # known first
        found = findings_of([c.doc for c in items], semantic)
        bad = [(c, f) for c, f in zip(items, found, strict=True) if c.label == "poisoned"]
        good = [(c, f) for c, f in zip(items, found, strict=True) if c.label == "clean"]
        if bad:
            poisoned[name] = Counts.of([f for _, f in bad])
            rounds[name] = items[0].round
            missed += [c for c, f in bad if not flagged(f, QUARANTINE_SEVERITY)]
        if good:
            label = name if items[0].round != KNOWN else f"cases/{name}"
            clean_counts[label] = Counts.of([f for _, f in good])
            rounds[label] = items[0].round
            flagged_clean += [
                (label, c.doc.name, x) for c, f in good for x in f if at_least(x.severity, QUARANTINE_SEVERITY)
            ]
            reviewed += [
                (label, c.doc.name, review_rules(f))
                for c, f in good
                if review_rules(f) and not flagged(f, QUARANTINE_SEVERITY)
            ]
    for name, docs in clean.items():
        found = findings_of(docs, semantic)
        clean_counts[name] = Counts.of(found)
        flagged_clean += [
            (name, doc.name, f)
            for doc, fs in zip(docs, found, strict=True)
            for f in fs
            if at_least(f.severity, QUARANTINE_SEVERITY)
        ]
        reviewed += [
            (name, doc.name, review_rules(fs))
            for doc, fs in zip(docs, found, strict=True)
            if review_rules(fs) and not flagged(fs, QUARANTINE_SEVERITY)
        ]
    return Measurement(poisoned, clean_counts, rounds, missed, flagged_clean, reviewed)


def _pct(x: float) -> str:
    return f"{x:.1%}"


def _ratio(part: int, whole: int) -> str:
    return f"{part}/{whole} ({_pct(part / whole if whole else 0.0)})"


def _row(name: str, round_: str, c: Counts) -> str:
    return f"| {name} | {round_} | {c.total} | {c.quarantined} | {c.review_only} | {c.flagged['low']} |"


def _print_sets(m: Measurement) -> None:
    print("## Poisoned cases (tests/data/poison): docs quarantined\n")
    print("| set | round | docs | quarantined (high) | review only (medium) | any finding |")
    print("|---|---|---:|---:|---:|---:|")
    for name, c in m.poisoned.items():
        print(_row(name, m.rounds[name], c))
    print("\n## Clean docs: corpus cases and real catalogs (false positives)\n")
    print("| set | round | docs | quarantined (false positive) | review only | any finding (incl. links) |")
    print("|---|---|---:|---:|---:|---:|")
    for name, c in m.clean.items():
        print(_row(name, m.rounds.get(name, KNOWN), c))


def _print_summary(m: Measurement) -> None:
    print("\n## Summary (quarantined = a finding at high)\n")
    print("| round | poisoned quarantined (recall) | clean quarantined (false positives) | clean sent to review |")
    print("|---|---:|---:|---:|")
    rows = [("known (tuned on)", m.poisoned_total(KNOWN), m.clean_total(KNOWN))]
    rows += [
        (f"{r} ({ROUND_NOTES.get(r, 'blind, never tuned on')})", m.poisoned_total(r), m.clean_total(r))
        for r in sorted({r for r in m.rounds.values() if r != KNOWN})
    ]
    for label, p, c in rows:
        clean = f"{_ratio(c.quarantined, c.total)} | {_ratio(c.review_only, c.total)}" if c.total else "— | —"
        print(f"| {label} | {_ratio(p.quarantined, p.total)} | {clean} |")
    cases = m.clean_total(KNOWN) + Counts.zero()
    catalogs = m.clean_total(KNOWN, cases=False)
    print(
        f"\nKnown clean docs: {cases.total - catalogs.total} clean cases of the corpus plus {catalogs.total} docs of "
        f"the real catalogs and the shipped tool_docs ({_ratio(catalogs.quarantined, catalogs.total)} of those "
        "quarantined)."
    )


def real_catalogs(m: Measurement) -> Counts:
    """Every tool of ``../shared/corpora`` (each presumed clean): the catalogs without the shipped docs and the
    corpus's own cases."""
    return _sum(c for name, c in m.clean.items() if not name.startswith(("cases/", "blind", "round-", "shipped")))


def _print_new_shapes(m: Measurement) -> None:
    """Issue 34's bounds: recall on the round 3 shapes (tuned and held out), false positives on every real catalog
    tool and on the tricky clean docs, and precision (quarantined poisoned over everything quarantined)."""
    tuned, held = m.poisoned_total("round-3"), m.poisoned_total("blind-3")
    shapes = tuned + held
    real = real_catalogs(m)
    tricky, held_clean = m.clean_total("round-3"), m.clean_total("blind-3")
    print("\n## New shapes (issue 34): recall, false positives, precision\n")
    print("| measure | tuned (round-3) | held out (blind-3) | together |")
    print("|---|---:|---:|---:|")
    print(
        f"| poisoned quarantined (recall) | {_ratio(tuned.quarantined, tuned.total)} | "
        f"{_ratio(held.quarantined, held.total)} | {_ratio(shapes.quarantined, shapes.total)} |"
    )
    print(
        f"| tricky clean quarantined | {_ratio(tricky.quarantined, tricky.total)} | "
        f"{_ratio(held_clean.quarantined, held_clean.total)} | "
        f"{_ratio(tricky.quarantined + held_clean.quarantined, tricky.total + held_clean.total)} |"
    )
    wrong = tricky.quarantined + held_clean.quarantined + real.quarantined
    print(
        f"\nEvery tool of the real corpora: {_ratio(real.quarantined, real.total)} quarantined (false positives), "
        f"{_ratio(real.review_only, real.total)} sent to review. Precision (poisoned among everything quarantined, "
        f"new shapes + tricky clean + real corpora): {shapes.quarantined}/{shapes.quarantined + wrong} "
        f"({_pct(shapes.quarantined / (shapes.quarantined + wrong) if shapes.quarantined + wrong else 1.0)})."
    )


def _print_issue37(m: Measurement, semantic: SemanticLayer | None) -> None:
    """Issue 37's bounds: recall on round 4 (tuned), on its held-out half (measured once, then tuned on) and on the
    second held-out set (blind-5, scored once the folder is there), false positives on every real catalog tool and on
    the tricky clean docs."""
    columns = [("tuned (round-4)", "round-4"), ("measured once, then tuned (round-4-heldout)", "round-4-heldout")]
    columns += [("the classes, tuned (round-4-classes)", "round-4-classes"), ("held out (blind-5)", "blind-5")]
    real = real_catalogs(m)
    layers = f"semantic layer on ({semantic.name})" if semantic is not None else "no semantic layer"
    print(f"\n## A lint that reads every string (issue 37), {layers}\n")
    print("| measure | " + " | ".join(label for label, _ in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    poisoned = [m.poisoned_total(r) for _, r in columns]
    clean = [m.clean_total(r) for _, r in columns]
    absent = "— (not there yet)"
    recall = [_ratio(p.quarantined, p.total) if p.total else absent for p in poisoned]
    review = [f"{p.review_only}/{p.total}" if p.total else absent for p in poisoned]
    wrong = [_ratio(c.quarantined, c.total) if c.total else absent for c in clean]
    print("| poisoned quarantined (recall) | " + " | ".join(recall) + " |")
    print("| poisoned sent to review only | " + " | ".join(review) + " |")
    print("| clean quarantined (false positives) | " + " | ".join(wrong) + " |")
    print(
        f"\nEvery tool of the real corpora: {_ratio(real.quarantined, real.total)} quarantined (false positives), "
        f"{_ratio(real.review_only, real.total)} sent to review."
    )


def _time_lint(clean: Mapping[str, Sequence[ToolDoc]], semantic: SemanticLayer | None, runs: int = 3) -> float:
    """The lint's time on every real catalog (median of ``runs``; a fresh layer cache each run)."""
    import statistics
    import time

    docs = {name: list(found) for name, found in clean.items() if not name.startswith("shipped")}
    times = []
    for _ in range(runs):
        layer = SemanticLayer(semantic.encoder) if semantic is not None else None
        start = time.perf_counter()
        for found in docs.values():
            findings_of(found, layer)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# Times the lint (CPU seconds, no semantic layer) on the real catalogs with the bench module of the tree given as
# argv[1]: run in a child process for each tree, so two versions of the package never share one interpreter.
_TREE_TIMER = """
import importlib.util, sys, time
from pathlib import Path
root, corpora = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(root))
spec = importlib.util.spec_from_file_location("bench_tree", root / "benchmarks" / "bench_security.py")
bench = importlib.util.module_from_spec(spec)
sys.modules["bench_tree"] = bench
spec.loader.exec_module(bench)
docs = [list(d) for n, d in bench.clean_catalogs(corpora, community=True).items() if not n.startswith("shipped")]
bench.findings_of(docs[0][:1])  # the rules are compiled once, outside the timed part
start = time.process_time()
for found in docs:
    bench.findings_of(found)
print(time.process_time() - start)
"""


def _time_trees(rev: str, corpora: Path, runs: int = 3) -> tuple[float, float]:
    """The lint's CPU time on the real catalogs at git revision ``rev`` and in this tree (median of ``runs`` each,
    the two run in alternation so the shared machine's load falls on both)."""
    import io
    import statistics
    import subprocess
    import tarfile
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-security-") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(base, filter="data")
        times: dict[Path, list[float]] = {base: [], ROOT: []}
        for _ in range(runs):
            for tree in times:
                out = subprocess.run(
                    [sys.executable, "-c", _TREE_TIMER, str(tree), str(corpora)],
                    capture_output=True,
                    text=True,
                    check=True,
                    env={**os.environ, "PYTHONPATH": str(tree)},
                )
                times[tree].append(float(out.stdout.split()[-1]))
        return statistics.median(times[base]), statistics.median(times[ROOT])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--details", action="store_true", help="list flagged and reviewed clean docs, missed poisoned")
    parser.add_argument("--semantic", action="store_true", help="add the semantic layer (needs the embeddings extra)")
    parser.add_argument(
        "--timing", action="store_true", help="time the lint on the real catalogs (and with --semantic, with it)"
    )
    parser.add_argument(
        "--against", metavar="REV", help="with --timing: the lint's CPU time against git revision REV's, as a ratio"
    )
    args = parser.parse_args(argv)
    corpora = shared_corpora()
    clean = clean_catalogs(corpora, community=True)
    if len(clean) == 1:
        print(f"_note: no real catalogs in {corpora}; the clean side is the shipped tool_docs only._\n")
    semantic = semantic_layer() if args.semantic else None
    m = measure(corpus_cases(), clean, semantic)
    _print_sets(m)
    _print_summary(m)
    _print_new_shapes(m)
    _print_issue37(m, semantic)
    if args.timing:
        plain = _time_lint(clean, None)
        print(f"\nThe lint on the real catalogs: {plain:.2f} s without the semantic layer (wall clock, median of 3).")
        if semantic is not None:
            layered = _time_lint(clean, semantic, runs=1)
            print(f"With it: {layered:.2f} s ({layered / plain:.1f}x; encoding every sentence, none cached).")
        if args.against:
            before, now = _time_trees(args.against, corpora)
            print(
                f"Against {args.against}: {before:.2f} s there, {now:.2f} s here ({now / before:.2f}x; CPU time, "
                "median of 3 runs of each, in alternation)."
            )
    if args.details:
        print(f"\n## Clean docs quarantined (a finding at {QUARANTINE_SEVERITY})\n")
        for name, doc, f in m.flagged_clean:
            print(f"- {name} / {doc}: {f.severity} [{f.rule}] {f.field}: {f.excerpt}")
        print(f"\n## Clean docs sent to review (a finding at {REVIEW_SEVERITY}, none at {QUARANTINE_SEVERITY})\n")
        for name, doc, rules in m.reviewed_clean:
            print(f"- {name} / {doc}: {', '.join(rules)}")
        print(f"\n## Poisoned docs missed (nothing at {QUARANTINE_SEVERITY})\n")
        for case in m.missed:
            print(f"- {case.set_name} / {case.doc.name}: {case.attack}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
