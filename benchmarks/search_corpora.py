"""The retrieval corpora (../shared/corpora/metatool, livemcpbench) as in-memory registries for tool search.

Used by benchmarks/bench_search.py and the evaluation tests. A corpus tool becomes a ToolDoc: its description,
cut to its first sentences (at most 100 words), is the brief; the description plus any model-facing text is
the full doc. Names that break the API name rule (``server::tool``) are mapped with :func:`api_name`, and so
are the expected names of the queries. One mode, ``all``, allows every tool.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from prompt_composer import ModeConfig, Origin, Registry, ToolDoc
from prompt_composer.core.cards import ServerCard
from prompt_composer.core.docs import BRIEF_MAX_WORDS, count_sentences
from prompt_composer.importers.cards import fit_description

SHARED_ENV = "PROMPT_COMPOSER_SHARED"


def shared_dir() -> Path:
    """The folder of real tool catalogs and traces the benchmarks read: ``$PROMPT_COMPOSER_SHARED`` when set,
    else ``shared`` beside the repository (``../shared`` from its root)."""
    explicit = os.environ.get(SHARED_ENV)
    return Path(explicit).expanduser() if explicit else Path(__file__).resolve().parents[2] / "shared"


CORPORA = shared_dir() / "corpora"
# What metatool_docs/livemcp_docs and their queries read (bench_search needs all of them).
CORPUS_FILES = (
    Path("metatool", "tools.json"),
    Path("metatool", "dev_queries.jsonl"),
    Path("livemcpbench", "tools.jsonl"),
    Path("livemcpbench", "dev_queries.jsonl"),
)


def missing_files(root: Path = CORPORA) -> list[Path]:
    """The files of :data:`CORPUS_FILES` that are not under ``root``, as full paths."""
    return [root / f for f in CORPUS_FILES if not (root / f).is_file()]


_BAD = re.compile(r"[^a-zA-Z0-9_-]")
_SENTENCE = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+|(?<=[\u3002\uff01\uff1f])")


def api_name(name: str) -> str:
    """``server::tool`` → ``server__tool``; other characters outside ``[a-zA-Z0-9_-]`` → ``_``; ≤ 64 chars."""
    return _BAD.sub("_", name.replace("::", "__"))[:64] or "tool"


def group_name(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-_") or "misc"


def derive_brief(description: str, name: str) -> str:
    """The first sentences of ``description`` within the brief limits, or a placeholder when it is empty."""
    text = " ".join(description.split())
    if not text:
        return f"Tool {name} (no description was provided)."
    brief = ""
    for sentence in _SENTENCE.split(text):
        candidate = f"{brief} {sentence}".strip() if brief else sentence
        if len(candidate.split()) > BRIEF_MAX_WORDS or count_sentences(candidate) > 3:
            break
        brief = candidate
    if not brief or count_sentences(brief) > 5:  # one long first sentence, or odd punctuation: cut by words
        brief = re.sub(r"[.!?\u3002\uff01\uff1f]+", ",", " ".join(text.split()[: BRIEF_MAX_WORDS - 1])) + "."
    return brief


def clean_schema(schema: Any) -> dict[str, Any]:
    """A corpus schema made acceptable to ToolDoc (object type, property schemas, known required names)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return {"type": "object", "properties": {}}
    out: dict[str, Any] = dict(schema)
    props = out.get("properties")
    out["properties"] = {k: v for k, v in (props if isinstance(props, dict) else {}).items() if isinstance(v, dict)}
    required = out.get("required")
    if isinstance(required, list):
        out["required"] = [r for r in required if isinstance(r, str) and r in out["properties"]]
    else:
        out.pop("required", None)
    return out


def make_doc(name: str, group: str, description: str, extra: str = "", schema: Any = None) -> ToolDoc:
    full = "\n\n".join(p for p in (f"## {name}", description.strip(), extra.strip()) if p)
    return ToolDoc(
        name=name, group=group, brief=derive_brief(description, name), full=full, input_schema=clean_schema(schema)
    )


def registry_of(docs: Iterable[ToolDoc], slug: str = "all", servers: Iterable[ServerCard] = ()) -> Registry:
    """A registry of ``docs`` (and server cards) with one mode, ``slug``, allowing every group."""
    docs = list(docs)
    mode = ModeConfig(
        slug=slug,
        name=slug.title(),
        role="You are an assistant with many tools.",
        groups=tuple(sorted({d.group for d in docs})),
        recent_size=0,
        budget_tokens=10_000_000,
    )
    return Registry.from_docs(docs, [mode], servers=servers)


def metatool_docs(root: Path = CORPORA) -> list[ToolDoc]:
    tools = json.loads((root / "metatool" / "tools.json").read_text(encoding="utf-8"))
    return [
        make_doc(api_name(t["name"]), "metatool", t.get("description") or "", t.get("description_for_model") or "")
        for t in tools
    ]


def livemcp_docs(root: Path = CORPORA, *, cards: bool = False) -> list[ToolDoc]:
    """LiveMCPBench's tools. Without ``cards`` (the protocol before issue 38) each full text ends with its server's
    ``server_description``; with them, each tool's ``origin`` names its server and the description is the server's
    card instead (:func:`livemcp_cards`)."""
    docs = []
    for line in (root / "livemcpbench" / "tools.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            t = json.loads(line)
            doc = make_doc(
                api_name(t["name"]),
                group_name(t.get("server", "mcp")),
                t.get("description") or "",
                "" if cards else t.get("server_description") or "",
                t.get("input_schema"),
            )
            if cards:
                doc = doc.model_copy(update={"origin": Origin(server=t["server"], name=t["tool"])})
            docs.append(doc)
    return docs


def livemcp_cards(root: Path = CORPORA) -> list[ServerCard]:
    """One card per LiveMCPBench server, from its own ``server_description`` (fitted as an import fits a server's
    description: its first sentences within a card's limits)."""
    cards: dict[str, ServerCard] = {}
    for line in (root / "livemcpbench" / "tools.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            t = json.loads(line)
            description = fit_description(t.get("server_description") or "")
            if t["server"] not in cards and description:
                reference = "LiveMCPBench tools.jsonl server_description"
                cards[t["server"]] = ServerCard(
                    name=t["server"], description=description, source="imported", reference=reference
                )
    return list(cards.values())


def read_queries(path: Path) -> Iterator[dict[str, Any]]:
    """JSONL queries as ``{"query", "tools"}`` with names mapped by :func:`api_name` (``relevant`` accepted)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            tools = row.get("tools", row.get("relevant", []))
            yield {"query": row["query"], "tools": [api_name(t) for t in tools]}


def metatool_queries(root: Path = CORPORA) -> list[dict[str, Any]]:
    return list(read_queries(root / "metatool" / "dev_queries.jsonl"))


def livemcp_queries(root: Path = CORPORA) -> list[dict[str, Any]]:
    return list(read_queries(root / "livemcpbench" / "dev_queries.jsonl"))


def write_queries(rows: Iterable[dict[str, Any]], path: Path) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def baseline_texts(corpus: str, root: Path = CORPORA) -> dict[str, str]:
    """Per tool, what the plain BM25 baseline indexes: the split name and the corpus description."""
    if corpus == "metatool":
        rows = json.loads((root / "metatool" / "tools.json").read_text(encoding="utf-8"))
    else:
        lines = (root / "livemcpbench" / "tools.jsonl").read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
    out: dict[str, str] = {}
    for row in rows:
        name = api_name(row["name"])
        words = " ".join(re.split(r"[_\-:]+|(?<=[a-z])(?=[A-Z])", row["name"]))
        out[name] = f"{words} {row.get('description') or ''}"
    return out


# --- our own query sets, splits and learned phrasings ---------------------------------------------------------

TEST_DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def no_match_queries(path: Path = TEST_DATA / "no_match_queries.jsonl") -> list[dict[str, Any]]:
    """Requests a coding agent's catalog cannot serve (order a pizza, book a flight…), in ten languages:
    ``{"query", "lang"}``."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def shipped_queries(name: str) -> list[dict[str, Any]]:
    """Our queries against the shipped docs: ``shipped_queries.jsonl`` (English, mode code) or
    ``multilingual_queries.jsonl`` (nine languages, mode debug)."""
    return list(read_queries(TEST_DATA / name))


def bucket(text: str, buckets: int) -> int:
    """A stable bucket of a query (sha256 of its text), for seeded splits that do not depend on file order."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % buckets


def is_report_half(text: str) -> bool:
    """Miss calibration fits on one half of each query set and reports on the other (this one)."""
    return bucket(text, 2) == 1


def cross_fitted_phrasings(
    rows: Sequence[dict[str, Any]], folds: int | None
) -> list[tuple[list[int], dict[str, list[str]]]]:
    """Learned phrasings the honest way: the rows split into ``folds`` (by :func:`bucket`; ``None``: one row
    per fold, leave-one-out), and for each fold, the phrasings learned from every other fold (each query was a
    request that led to its tools' use). Returns ``(row indices of the fold, phrasings)`` pairs, so no query is
    ever ranked by a search that learned from it."""
    from prompt_composer.learn.phrasings import phrasings_from_pairs

    if folds is None:
        assignment = list(range(len(rows)))
        folds = len(rows)
    else:
        assignment = [bucket(r["query"], folds) for r in rows]
    out = []
    for fold in range(folds):
        members = [i for i, f in enumerate(assignment) if f == fold]
        if not members:
            continue
        pairs = ((r["query"], t) for i, r in enumerate(rows) if assignment[i] != fold for t in r["tools"])
        out.append((members, phrasings_from_pairs(pairs)))
    return out
