"""Task sets for the agent-level A/B benchmark (``prompt-composer bench``): which tool does a real model call first?

A task set is a docs folder (tool docs + ``modes/<slug>.yaml``), a mode slug and a ``tasks.jsonl`` file, one task
a line::

    {"id": str, "task": str, "expect": [tool, ...], "args": {key: value}, "workspace": "folder"}

``expect`` lists every tool a reasonable agent could correctly call first (empty: the right answer is to call no
tool); ``args`` (optional) is a subset of the expected call's input that must match exactly; ``workspace``
(optional) is a folder relative to the task file.

Three sets, in this order:

- **coding** (committed, ``benchmarks/agent/coding/``): hand-written tasks over a small fixture repository, run
  against the shipped ``tool_docs/`` in mode ``code``.
- **bfcl** (generated): questions of the Berkeley Function Calling Leaderboard (``bfcl-eval`` package data):
  ``multiple`` and ``live_multiple`` (pick the right one of several functions) and ``irrelevance`` (no function
  fits: call none). The catalog is the union of the sampled questions' functions, imported with the project's
  own importer.
- **metatool** (generated): single-tool MetaTool dev queries (``../shared/corpora/metatool``) over their labelled
  tools plus seeded distractors.

Generated catalogs are capped so that sending every tool in full (the static variant) stays small for a CPU
model: the native definitions of all tools (full text + input schema, counted with tiktoken) stay within
:data:`MAX_STATIC_TOKENS`. ``build_task_sets(workdir)`` writes the generated sets under ``workdir`` and is
deterministic for a seed.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.search_corpora import shared_dir
from prompt_composer import (
    Composer,
    ImporterError,
    ModeConfig,
    Origin,
    Registry,
    ToolDoc,
    default_counter,
    default_docs_dir,
    strip_descriptions,
)
from prompt_composer.core.audit import run_audit
from prompt_composer.core.tokens import count_tools
from prompt_composer.importers.brief import draft_brief
from prompt_composer.importers.drafting import api_name, tool_docs_from_upstream
from prompt_composer.importers.render import render_full
from prompt_composer.importers.tool_list import UpstreamTool, parse_tool_list
from prompt_composer.importers.yaml_out import doc_yaml, dump_yaml

__all__ = [
    "BENCH_MODE",
    "CODING_DIR",
    "MAX_STATIC_TOKENS",
    "TaskSet",
    "bfcl_data_available",
    "bfcl_data_dir",
    "build_bfcl",
    "build_metatool",
    "build_task_sets",
    "coding_set",
    "definition_tokens",
    "json_schema",
    "missing_metatool_files",
    "static_tokens",
]

HERE = Path(__file__).resolve().parent
CODING_DIR = HERE / "agent" / "coding"
CORPORA = shared_dir() / "corpora"
METATOOL_DIR = CORPORA / "metatool"
METATOOL_FILES = ("tools.json", "dev_queries.jsonl")

BENCH_MODE = "bench"
# Native definitions (full text + schema) of a whole generated catalog: what the static variant sends each turn.
MAX_STATIC_TOKENS = 7000
METATOOL_CATALOG_SIZE = 40
BFCL_PACKAGE = "bfcl-eval==2026.3.23"
# BFCL categories (file stems): about a third of a set is irrelevance (call nothing); of the rest, a third
# live_multiple (user-contributed APIs) and two thirds multiple (pick one of 2–4 functions).
BFCL_CHOICE = ("multiple", "live_multiple")
BFCL_NONE = "irrelevance"
BFCL_MAX_FUNCTIONS = 5  # per question; more makes one question dominate the catalog
BENCH_ROLE = (
    "You are a helpful assistant with access to tools. When one of your tools fits the user's request, call it; "
    "when none fits, answer directly without calling a tool."
)


@dataclass(frozen=True)
class TaskSet:
    """One task set: its docs folder, the mode to run in, and its tasks (JSONL)."""

    name: str
    docs: Path
    mode: str
    tasks: Path


def build_task_sets(workdir: Path, *, per_set: int = 20, seed: int = 7) -> list[TaskSet]:
    """The coding set (committed) and the bfcl and metatool sets, generated under ``workdir/<name>/``.

    Each generated set's folder is replaced as a whole. At most ``per_set`` tasks a generated set (fewer when the
    catalog cap :data:`MAX_STATIC_TOKENS` is reached first).
    """
    workdir = Path(workdir)
    return [
        coding_set(),
        build_bfcl(workdir / "bfcl", per_set=per_set, seed=seed),
        build_metatool(workdir / "metatool", per_set=per_set, seed=seed),
    ]


def bfcl_data_available() -> bool:
    """Whether :func:`bfcl_data_dir` finds the BFCL data (:func:`build_bfcl` needs it)."""
    try:
        bfcl_data_dir()
    except RuntimeError:
        return False
    return True


def missing_metatool_files(corpus: Path = METATOOL_DIR) -> list[Path]:
    """The MetaTool corpus files :func:`build_metatool` reads that are not in ``corpus``."""
    return [corpus / f for f in METATOOL_FILES if not (corpus / f).is_file()]


def coding_set() -> TaskSet:
    """The committed coding set: the shipped tool docs, mode ``code``, tasks over ``agent/coding/repo``."""
    return TaskSet("coding", default_docs_dir(), "code", CODING_DIR / "tasks.jsonl")


# --- shared ----------------------------------------------------------------------------------------------


def _bench_mode(docs: Sequence[ToolDoc], budget_tokens: int) -> ModeConfig:
    return ModeConfig(
        slug=BENCH_MODE,
        name="Bench",
        role=BENCH_ROLE,
        groups=tuple(sorted({d.group for d in docs})),
        permanent=(),
        recent_size=4,
        budget_tokens=budget_tokens,
    )


def _budget(docs: Sequence[ToolDoc]) -> int:
    """A budget the audit passes with: the larger of the static and the worst composed prompt, plus a margin."""
    registry = Registry.from_docs(docs, [_bench_mode(docs, 10_000_000)])
    composer = Composer(registry)
    audit = run_audit(composer).modes[0]
    need = max(audit.worst_tokens, audit.baseline_tokens)
    return -(-int(need * 1.1) // 500) * 500


def definition_tokens(doc: ToolDoc, *, full: bool = True) -> int:
    """Tokens of ``doc``'s native definition, full or brief, counted as :meth:`Composer.definition` counts them."""
    schema = doc.input_schema if full else strip_descriptions(doc.input_schema)
    definition = {"name": doc.name, "description": doc.full if full else doc.brief, "input_schema": schema}
    return count_tools(default_counter(), [definition])


def static_tokens(docs: Iterable[ToolDoc]) -> int:
    """Tokens of the native full definitions of ``docs`` (what the static variant sends)."""
    return sum(definition_tokens(d) for d in docs)


def _write_set(out: Path, name: str, docs: Sequence[ToolDoc], tasks: Sequence[Mapping[str, Any]]) -> TaskSet:
    """Write ``out/docs/*.yaml``, ``out/docs/modes/bench.yaml`` and ``out/tasks.jsonl`` (replacing ``out``)."""
    if out.exists():
        shutil.rmtree(out)
    folder = out / "docs"
    (folder / "modes").mkdir(parents=True)
    docs = sorted(docs, key=lambda d: d.name)
    for doc in docs:
        (folder / f"{doc.name}.yaml").write_text(doc_yaml(doc), encoding="utf-8")
    mode = _bench_mode(docs, _budget(docs)).model_dump(mode="json")
    (folder / "modes" / f"{BENCH_MODE}.yaml").write_text(
        dump_yaml({key: mode[key] for key in _MODE_KEYS}), encoding="utf-8"
    )
    lines = [json.dumps(task, ensure_ascii=False, sort_keys=False) for task in tasks]
    (out / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return TaskSet(name, folder, BENCH_MODE, out / "tasks.jsonl")


_MODE_KEYS = ("slug", "name", "role", "groups", "permanent", "recent_size", "budget_tokens")


def _task(task_id: str, text: str, expect: Sequence[str], args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {"id": task_id, "task": text, "expect": list(expect)}
    if args:
        task["args"] = dict(args)
    return task


# --- BFCL -----------------------------------------------------------------------------------------------


def bfcl_data_dir() -> Path:
    """The data folder of the installed ``bfcl-eval`` package, found without importing it (the import is slow)."""
    spec = importlib.util.find_spec("bfcl_eval")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        data = Path(location) / "data"
        if data.is_dir():
            return data
    raise RuntimeError(f"the BFCL data is not installed: pip install --no-deps {BFCL_PACKAGE}")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# BFCL writes its schemas in an OpenAPI-ish dialect (Python type names); these are their JSON Schema types.
_BFCL_TYPES = {
    "dict": "object",
    "object": "object",
    "float": "number",
    "double": "number",
    "number": "number",
    "integer": "integer",
    "int": "integer",
    "long": "integer",
    "string": "string",
    "str": "string",
    "char": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
}
_SCHEMA_KEYS = (
    "type",
    "description",
    "enum",
    "default",
    "items",
    "properties",
    "required",
    "format",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
)


def json_schema(schema: Any) -> dict[str, Any]:
    """A BFCL parameter schema as JSON Schema: types mapped (``dict`` → object, ``float`` → number, ``tuple`` →
    array; ``any`` drops the type), BFCL's own keys (``optional``) dropped, ``required`` limited to real names."""
    if not isinstance(schema, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key in _SCHEMA_KEYS:
        if key not in schema:
            continue
        value = schema[key]
        if key == "type":
            mapped = _BFCL_TYPES.get(str(value).lower()) if isinstance(value, str) else None
            if mapped is not None:
                out["type"] = mapped
        elif key == "items":
            out["items"] = json_schema(value)
        elif key == "properties" and isinstance(value, Mapping):
            out["properties"] = {str(name): json_schema(sub) for name, sub in value.items()}
        elif key != "properties":
            out[key] = value
    if "properties" in out and "type" not in out:
        out["type"] = "object"
    if out.get("type") != "object":
        out.pop("properties", None)
        out.pop("required", None)
    elif isinstance(out.get("required"), list):
        out["required"] = [r for r in out["required"] if r in out.get("properties", {})]
    else:
        out.pop("required", None)
    return out


def _bfcl_function(function: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL function as an OpenAI function tool (what :func:`parse_tool_list` reads)."""
    schema = json_schema(function.get("parameters") or {"type": "dict", "properties": {}})
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return {"name": function["name"], "description": function.get("description") or "", "parameters": schema}


_STOP_WORDS = """the a an and or of to in on for with by from at as is are be this that these those it its into given
    using use used based specific specified provided certain any all some can will would should could may
    get find calculate compute retrieve return returns provide information details data about what which how
    me my you your i we our please want need know tell show give list number value default many much one
    another other new"""
_STOP = frozenset(_STOP_WORDS.split())
# Words that name a unit or a currency stand for the concept too, so "kilograms in a pound" meets "unit_convert".
_CONCEPTS = {
    "unit": """kilogram kilo gram pound ounce ton tonne meter metre kilometer mile feet foot inch yard celsius
        fahrenheit kelvin liter litre gallon pint cup teaspoon tablespoon""",
    "currency": "currency euro dollar usd eur gbp yen jpy rupee franc peso yuan won",
}
_CONCEPT_OF = {word: concept for concept, words in _CONCEPTS.items() for word in words.split()}
_PREFIX = 6  # words agreeing on their first six letters count as one (convert/conversion, currency/currencies)


def _words(text: str) -> frozenset[str]:
    """Content-word stems of ``text``: lower case, snake_case and camelCase split, stop words dropped, cut to
    their first letters, plus the concept (unit, currency) a word names. Crude on purpose: it only guards labels.
    """
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    out: set[str] = set()
    for word in re.findall(r"[a-z]{3,}", text.lower().replace("_", " ")):
        if word in _STOP:
            continue
        single = word[:-1] if word.endswith("s") and not word.endswith("ss") else word
        out.add(single[:_PREFIX])
        concept = _CONCEPT_OF.get(single) or _CONCEPT_OF.get(word)
        if concept is not None:
            out.add(concept[:_PREFIX])
    return frozenset(out)


def _could_answer(query: frozenset[str], function: Mapping[str, Any]) -> bool:
    """A crude guard: might a function outside a question's own list answer the question?

    Flagged when the question names at least half of the function's name words, or shares three content words
    with its name and description. Used only to keep labels right (an irrelevance question must stay
    unanswerable; a choice question keeps one right answer), so it errs on the side of flagging.
    """
    name = _words(function["name"])
    text = name | _words(function.get("description") or "")
    named = query & name
    return (bool(named) and len(named) * 2 >= len(name)) or len(query & text) >= 3


def _same_job(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two differently named functions that look like the same tool (``convert_currency`` and
    ``currency_exchange.convert``): most name words shared, or most description words."""
    name_a, name_b = _words(a["name"]), _words(b["name"])
    if name_a and name_b and len(name_a & name_b) * 3 >= 2 * min(len(name_a), len(name_b)):
        return True
    text_a, text_b = _words(a.get("description") or ""), _words(b.get("description") or "")
    shared = text_a & text_b
    return len(shared) >= 3 and len(shared) * 3 >= 2 * min(len(text_a), len(text_b))


@dataclass
class _Question:
    id: str
    category: str
    text: str
    functions: list[dict[str, Any]]  # OpenAI function tools, JSON Schema types
    answer: Mapping[str, Any] | None  # {original name: {param: [acceptable values]}}; None for irrelevance


def _bfcl_questions(data: Path, category: str) -> list[_Question]:
    """The single-turn, single-user-message questions of one category whose functions all convert."""
    answers: dict[str, Any] = {}
    if category != BFCL_NONE:
        for row in _read_jsonl(data / "possible_answer" / f"BFCL_v4_{category}.json"):
            answers[row["id"]] = row["ground_truth"]
    out: list[_Question] = []
    for row in _read_jsonl(data / f"BFCL_v4_{category}.json"):
        turns = row["question"]
        if len(turns) != 1 or len(turns[0]) != 1 or turns[0][0].get("role") != "user":
            continue
        functions = row["function"]
        if not 1 <= len(functions) <= BFCL_MAX_FUNCTIONS:
            continue
        answer = None
        if category != BFCL_NONE:
            truth = answers.get(row["id"])
            if not truth or len(truth) != 1 or len(truth[0]) != 1:
                continue
            answer = truth[0]
        text = str(turns[0][0].get("content") or "").strip()
        if text:
            out.append(_Question(row["id"], category, text, [_bfcl_function(f) for f in functions], answer))
    return out


def _bfcl_docs(functions: Sequence[Mapping[str, Any]]) -> list[ToolDoc] | None:
    """Tool docs for BFCL functions through the project's importer; ``None`` if any does not import."""
    try:
        _, tools = parse_tool_list({"functions": list(functions)}, source="bfcl")
        return tool_docs_from_upstream(tools, server="bfcl", group="bfcl")
    except ImporterError:
        return None


def _bfcl_args(call: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Keys of the possible answer with exactly one acceptable value that is a string or a number."""
    properties = schema.get("properties", {})
    args: dict[str, Any] = {}
    for key, values in call.items():
        if key not in properties or not isinstance(values, list) or len(values) != 1:
            continue
        value = values[0]
        if isinstance(value, bool) or not isinstance(value, str | int | float) or value == "":
            continue
        args[key] = value
    return args


def build_bfcl(out: Path, *, per_set: int = 20, seed: int = 7) -> TaskSet:
    """Sample ``per_set`` BFCL questions (about 2/3 choice, 1/3 irrelevance), seeded; write the set to ``out``."""
    if per_set < 1:
        raise ValueError("per_set must be at least 1")
    data = bfcl_data_dir()
    rng = random.Random(f"bfcl-{seed}")
    pools: dict[str, list[_Question]] = {}
    for category in (*BFCL_CHOICE, BFCL_NONE):
        pool = _bfcl_questions(data, category)
        rng.shuffle(pool)
        pools[category] = pool
    n_none = round(per_set / 3)
    n_choice = per_set - n_none
    n_live = n_choice // 3
    # Slots interleaved, so a catalog cap that stops the build early still leaves a balanced set.
    wanted = {"multiple": n_choice - n_live, "live_multiple": n_live, BFCL_NONE: n_none}
    order: list[str] = []
    while any(wanted[c] > sum(1 for o in order if o == c) for c in wanted):
        for category in ("multiple", BFCL_NONE, "live_multiple"):
            if sum(1 for o in order if o == category) < wanted[category]:
                order.append(category)

    chosen: list[_Question] = []
    definitions: dict[str, str] = {}  # original name -> canonical JSON of its definition
    api_names: dict[str, str] = {}  # api name (casefolded) -> original name
    docs: dict[str, ToolDoc] = {}
    used = 0
    cursor = dict.fromkeys(pools, 0)
    for category in order:
        pool = pools[category]
        while cursor[category] < len(pool):
            question = pool[cursor[category]]
            cursor[category] += 1
            new = _admit(question, chosen, definitions, api_names)
            if new is None:
                continue
            new_docs = _bfcl_docs([f for f in question.functions if f["name"] in new])
            if new_docs is None:
                continue
            cost = sum(definition_tokens(d) for d in new_docs)
            slots_left = len(order) - len(chosen)  # this slot and those after it
            fair_share = 2 * (MAX_STATIC_TOKENS - used) / slots_left
            if used + cost > MAX_STATIC_TOKENS or cost > fair_share:
                continue
            used += cost
            chosen.append(question)
            for function in question.functions:
                definitions.setdefault(function["name"], _canonical(function))
                api_names.setdefault(api_name(function["name"]).casefold(), function["name"])
            docs.update((d.name, d) for d in new_docs)
            break

    tasks = []
    for question in sorted(chosen, key=lambda q: _order_key(q.id)):
        expect: list[str] = []
        args: dict[str, Any] = {}
        if question.answer is not None:
            (original, call), *_ = question.answer.items()
            name = api_name(original)
            expect = [name]
            args = _bfcl_args(call, docs[name].input_schema)
        tasks.append(_task(f"bfcl-{question.id}", question.text, expect, args))
    return _write_set(out, "bfcl", list(docs.values()), tasks)


def _order_key(question_id: str) -> tuple[str, int, str]:
    """``multiple_12`` → (multiple, 12, ...): tasks in category order, then by number."""
    match = re.match(r"^(.*?)_(\d+)(.*)$", question_id)
    return (match.group(1), int(match.group(2)), match.group(3)) if match else (question_id, 0, "")


def _canonical(function: Mapping[str, Any]) -> str:
    return json.dumps(function, sort_keys=True, ensure_ascii=False)


def _admit(
    question: _Question, chosen: Sequence[_Question], definitions: Mapping[str, str], api_names: Mapping[str, str]
) -> set[str] | None:
    """The names of ``question``'s functions new to the catalog, or ``None`` if it cannot join.

    It cannot join when one of its function names collides with a different definition (or maps to an API name
    another function holds), when its expected function is missing from its own list, or when the crude lexical
    guard sees that it, or a question already chosen, could be answered by a function of the other.
    """
    names = [f["name"] for f in question.functions]
    if len(set(names)) != len(names):
        return None
    for function in question.functions:
        known = definitions.get(function["name"])
        if known is not None and known != _canonical(function):
            return None
        holder = api_names.get(api_name(function["name"]).casefold())
        if holder is not None and holder != function["name"]:
            return None
    if question.answer is not None and next(iter(question.answer)) not in names:
        return None
    own = set(names)
    foreign = {name: definition for name, definition in definitions.items() if name not in own}
    query = _words(question.text)
    for definition in foreign.values():
        function = json.loads(definition)
        if _could_answer(query, function) or any(_same_job(function, f) for f in question.functions):
            return None
    for other in chosen:
        other_own = {f["name"] for f in other.functions}
        other_query = _words(other.text)
        if any(_could_answer(other_query, f) for f in question.functions if f["name"] not in other_own):
            return None
    return {n for n in names if n not in definitions}


# --- MetaTool ---------------------------------------------------------------------------------------------

_QUERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "The user's request in natural language, with every detail the plugin needs.",
        }
    },
    "required": ["query"],
}


def _metatool_doc(tool: Mapping[str, Any]) -> ToolDoc:
    """Brief drafted from the short description; full = the model-facing description where there is one."""
    original = tool["name"]
    name = api_name(original)
    short = UpstreamTool(name=original, description=tool["description"], input_schema=_QUERY_SCHEMA)
    long = UpstreamTool(
        name=original,
        description=tool.get("description_for_model") or tool["description"],
        input_schema=_QUERY_SCHEMA,
        title=tool.get("name_for_human"),
    )
    return ToolDoc(
        name=name,
        group="metatool",
        brief=draft_brief(short, server="metatool"),
        full=render_full(long, name),
        input_schema=_QUERY_SCHEMA,
        brief_source="drafted",
        origin=Origin(server="metatool", name=original),
    )


def _similar_tools(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two MetaTool tools that say nearly the same thing (a distractor that could be as right as the label)."""
    wa, wb = _words(f"{a['name']} {a['description']}"), _words(f"{b['name']} {b['description']}")
    return len(wa & wb) >= 3 and len(wa & wb) / max(1, min(len(wa), len(wb))) >= 0.4


def build_metatool(
    out: Path,
    *,
    per_set: int = 20,
    seed: int = 7,
    corpus: Path = METATOOL_DIR,
    catalog_size: int = METATOOL_CATALOG_SIZE,
) -> TaskSet:
    """Sample ``per_set`` single-tool MetaTool dev queries (distinct labels), seeded; catalog = their tools plus
    seeded distractors up to ``catalog_size`` tools or the cap; write the set to ``out``."""
    if per_set < 1:
        raise ValueError("per_set must be at least 1")
    if missing_metatool_files(corpus):
        raise RuntimeError(f"the MetaTool corpus is not at {corpus}")
    tools = {t["name"]: t for t in json.loads((corpus / "tools.json").read_text(encoding="utf-8"))}
    docs = {name: _metatool_doc(tool) for name, tool in tools.items()}
    cost = {name: definition_tokens(doc) for name, doc in docs.items()}
    rows = [
        (index, row)
        for index, row in enumerate(_read_jsonl(corpus / "dev_queries.jsonl"), 1)
        if row["kind"] == "single" and len(row["tools"]) == 1 and row["tools"][0] in tools
    ]
    rng = random.Random(f"metatool-{seed}")
    rng.shuffle(rows)
    picked: list[tuple[int, dict[str, Any]]] = []
    labels: list[str] = []
    used = 0
    for index, row in rows:
        if len(picked) >= per_set:
            break
        label = row["tools"][0]
        if label in labels or used + cost[label] > MAX_STATIC_TOKENS:
            continue
        picked.append((index, row))
        labels.append(label)
        used += cost[label]
    catalog = list(labels)
    rest = sorted(set(tools) - set(labels))
    rng.shuffle(rest)
    for name in rest:
        if len(catalog) >= catalog_size:
            break
        if used + cost[name] > MAX_STATIC_TOKENS:
            continue
        if any(_similar_tools(tools[name], tools[label]) for label in labels):
            continue
        catalog.append(name)
        used += cost[name]
    tasks = [
        _task(f"metatool-{index}", row["query"], [api_name(row["tools"][0])])
        for index, row in sorted(picked, key=lambda p: p[0])
    ]
    return _write_set(out, "metatool", [docs[name] for name in catalog], tasks)
