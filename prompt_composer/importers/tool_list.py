"""Import tool catalogs: JSON tool lists (Anthropic, OpenAI, MCP ``tools/list``) and live MCP servers.

An import turns upstream tool definitions into tool docs: the full form is the upstream description plus a
parameter reference rendered from the input schema; the brief is *drafted* from the description (what the tool
does and when to use it, within the brief limits, without parameter details or the upstream's orders to the
model) and marked ``brief_source: drafted`` for human review. Names the APIs refuse are mapped to valid ones
(``--prefix`` renames them all, mentions of the server's tools in the texts included) and the original is kept
in ``origin`` so calls can be routed back.

Placement by effect: each tool is read as read-only or writing (:func:`classify_effect`: the MCP annotations
``readOnlyHint``/``destructiveHint`` first, else its name and first sentence, and writing when unsure, as the
MCP spec's defaults say). Read-only tools go to the import's group (``mcp``), writing ones to its write group
(``mcp-write``), which the shipped modes allow only in ``code``; the report says where each tool went, why, and
which modes allow it.

Imports are all-or-nothing and re-imports merge (see :func:`plan_import`): every doc is built and the folder's
whole registry validated in memory first; files are written to a staging folder and moved into place only
when everything is valid.

What the importer wrote last time is recorded in ``<folder>/.import-state.json``: per doc, its origin, its
group and a hash of the brief and of the full text as written. A doc whose text no longer hashes to the record
was edited by a person and is kept (an edited brief becomes ``brief_source: human``, and a brief a person marked
``human`` is kept too); one that still does is regenerated. Likewise a group a person changed is theirs. Hashing
what was *written* (rather than re-deriving it from the old upstream definition) keeps the merge right even when
the drafting rules change.

Tool poisoning: every imported doc goes through the security lint (:mod:`prompt_composer.security`). Drafted
briefs never carry an upstream's orders (hidden markup and invisible characters are stripped, sentences that
address the model dropped). A doc with a finding at ``QUARANTINE_SEVERITY`` or above is still written, but
*quarantined*: ``quarantine: [rule ids]`` (with a comment on top of the file saying why and how to clear it), and
no mode allows it. The import report lists each quarantined tool with its findings at ``path:line``. A person
clears a quarantine by reviewing the file and deleting the ``quarantine:`` key; the state file records (under
``scan``) a hash of what upstream sent, so a re-import leaves a cleared doc alone while that is unchanged and
scans it again when upstream changes it (a "rug pull").
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from ..core.docs import BRIEF_MAX_WORDS, NAME_PATTERN, Origin, ToolDoc
from ..core.registry import Registry, load_registry
from ..errors import ImporterError, LoadError
from ..safety.lint import (
    QUARANTINE_SEVERITY,
    Finding,
    at_least,
    clean_prose,
    escape_invisible,
    full_size_limit,
    quarantine_rules,
    scan,
    scan_text,
    sibling_names,
)

ToolListFormat = Literal["anthropic", "openai", "mcp"]
STATE_FILE = ".import-state.json"
_STATE_VERSION = 1
_NAME_RE = re.compile(NAME_PATTERN)
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class UpstreamTool:
    """One tool as an upstream source defines it, whatever the format it came in."""

    name: str
    description: str
    input_schema: dict[str, Any]
    title: str | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)


# --- JSON tool lists: format detection ---------------------------------------------------------------


def _entry_format(entry: Mapping[str, Any]) -> ToolListFormat | None:
    if isinstance(entry.get("function"), Mapping) and entry.get("type", "function") == "function":
        return "openai"  # Chat Completions: {"type": "function", "function": {...}}
    if "inputSchema" in entry:
        return "mcp"
    if "input_schema" in entry:
        return "anthropic"
    if "parameters" in entry:
        return "openai"  # legacy `functions` entries and the Responses API's flat function tools
    return None


def _unwrap(data: Any, source: str) -> tuple[list[Any], ToolListFormat | None]:
    """The list of tool entries, and a format the wrapper itself implies (``functions`` → OpenAI)."""
    if isinstance(data, Mapping) and ("jsonrpc" in data or "result" in data or "error" in data):
        if "error" in data:
            raise ImporterError(f"{source}: the JSON-RPC response is an error: {json.dumps(data['error'])[:200]}")
        data = data.get("result")
    if isinstance(data, list):
        return data, None
    if isinstance(data, Mapping):
        if isinstance(data.get("tools"), list):
            return data["tools"], None
        if isinstance(data.get("functions"), list):
            return data["functions"], "openai"
        if isinstance(data.get("name"), str):
            return [data], None
    raise ImporterError(
        f"{source}: not a tool list: expected a JSON list of tools, an object with a 'tools' (or 'functions') "
        "list, or a JSON-RPC tools/list response"
    )


def _schema(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return dict(EMPTY_SCHEMA)
    if not isinstance(value, Mapping):
        raise ImporterError(f"{where}: the input schema is not a JSON object (got {type(value).__name__})")
    schema = dict(value)
    if "type" not in schema and (not schema or "properties" in schema):
        schema = {"type": "object", **schema}  # `{}` and `{"properties": …}` mean an object
    if schema.get("type") != "object":
        raise ImporterError(f"{where}: the input schema must have type 'object' (got {schema.get('type')!r})")
    schema.setdefault("properties", {})
    return schema


def _text(value: Any, where: str, key: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ImporterError(f"{where}: '{key}' must be a string (got {type(value).__name__})")
    return value


def parse_tool_list(data: Any, *, source: str = "<json>") -> tuple[ToolListFormat, list[UpstreamTool]]:
    """Detect the format of a decoded JSON tool list and read its tools (raises :class:`ImporterError`).

    Accepted: Anthropic tool lists (``input_schema``), OpenAI tool/function lists (``{"type": "function",
    "function": …}`` or ``parameters``), MCP ``tools/list`` results (``inputSchema``), bare or wrapped in
    ``{"tools": […]}``, ``{"functions": […]}`` or a JSON-RPC response. A tool without a schema gets an empty
    object schema.
    """
    entries, implied = _unwrap(data, source)
    if not entries:
        raise ImporterError(f"{source}: the tool list is empty")
    formats: dict[ToolListFormat, int] = {}
    for index, entry in enumerate(entries, 1):
        if not isinstance(entry, Mapping):
            raise ImporterError(f"{source}: tool #{index} is not a JSON object")
        entry_kind = _entry_format(entry)
        if entry_kind is not None:
            formats.setdefault(entry_kind, index)
        elif "type" in entry and entry["type"] not in ("function", "custom"):
            label = entry.get("name", entry["type"])
            raise ImporterError(
                f"{source}: tool #{index} ({label!r}) is a built-in tool of type {entry['type']!r} with no schema "
                "to import"
            )
    if implied is not None:
        formats.setdefault(implied, 0)
    if len(formats) > 1:
        described = ", ".join(f"{kind} (tool #{i})" if i else kind for kind, i in formats.items())
        raise ImporterError(f"{source}: the list mixes tool formats: {described}")
    kind: ToolListFormat = next(iter(formats), "openai")  # name + description only: OpenAI functions without parameters
    tools: list[UpstreamTool] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries, 1):
        body = entry["function"] if kind == "openai" and isinstance(entry.get("function"), Mapping) else entry
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ImporterError(f"{source}: tool #{index} has no name")
        where = f"{source}: tool #{index} ({name!r})"
        if name in seen:
            raise ImporterError(f"{source}: duplicate tool name {name!r} (tools #{seen[name]} and #{index})")
        seen[name] = index
        schema_key = {"anthropic": "input_schema", "mcp": "inputSchema", "openai": "parameters"}[kind]
        annotations = body.get("annotations") if kind == "mcp" else None
        title = body.get("title") or (annotations.get("title") if isinstance(annotations, Mapping) else None)
        tools.append(
            UpstreamTool(
                name=name,
                description=_text(body.get("description"), where, "description"),
                input_schema=_schema(body.get(schema_key), where),
                title=title if isinstance(title, str) and title.strip() else None,
                annotations=dict(annotations) if isinstance(annotations, Mapping) else {},
            )
        )
    return kind, tools


def read_tool_list(path: str | Path) -> tuple[ToolListFormat, list[UpstreamTool]]:
    """Read and parse a JSON tool list file; invalid JSON is reported as ``file:line:col``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImporterError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImporterError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    return parse_tool_list(data, source=str(path))


# --- drafting: names, briefs, full texts --------------------------------------------------------------


def api_name(original: str, *, prefix: str = "") -> str:
    """A name the Anthropic and OpenAI APIs accept (``^[a-zA-Z0-9_-]{1,64}$``), as close to ``original`` as may be."""
    name = prefix + original
    if _NAME_RE.match(name):
        return name
    mapped = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_") or "tool"
    if len(mapped) > 64:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        mapped = f"{mapped[:55].rstrip('_-')}_{digest}"
    return mapped


_ABBREVIATION_END = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl)$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f]+(?=\s|$)")
_SECTION_HEAD = re.compile(
    r"^\s*(?:#+\s|args?:|arguments:|parameters?:|params:|inputs?:|returns?:|example|usage:|note:|error\s+responses?:|```)",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s)")
_BOLD = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")
_BRIEF_TARGET_WORDS = 60


def _sentences(text: str) -> list[str]:
    """Split prose into sentences the way the brief validator counts them (``e.g.`` ends nothing)."""
    out, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if _ABBREVIATION_END.search(text[: match.start() + 1].rstrip(".")) and match.group() == ".":
            continue
        out.append(text[start : match.end()].strip())
        start = match.end()
    if text[start:].strip():
        out.append(text[start:].strip())
    return [s for s in out if s]


def _lead_prose(description: str) -> str:
    """The description's opening prose: up to the first parameter list, heading, example or bullet list."""
    lines: list[str] = []
    for line in description.strip().splitlines():
        if _SECTION_HEAD.match(line) or (_LIST_ITEM.match(line) and lines):
            break
        lines.append(_LIST_ITEM.sub("", line).strip())
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


def _mentions_parameter(sentence: str, parameters: Iterable[str]) -> bool:
    for name in parameters:
        distinctive = "_" in name or any(c.isupper() for c in name[1:])
        quoted = (f"`{name}`", f"'{name}'", f'"{name}"')
        if any(q in sentence for q in quoted) or (
            distinctive and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", sentence) is not None
        ):
            return True
    return False


# What a brief may keep. A sentence addresses the model (and stays in the full form only) when it opens with an
# order or a shout, lays down a rule ("should", "must"), or speaks to "you" outside a use-it-when clause:
# upstreams write "Although originally you did not have internet access …" to steer the model, not to describe.
_ORDER_START = re.compile(
    r"^(?:important|critical|attention|note|warning|remember|always|never|do\s+not|don'?t|make\s+sure|be\s+sure"
    r"|ensure|please|ignore|you)\b",
    re.IGNORECASE,
)
_SECOND_PERSON = re.compile(r"\b(?:you|yourself)\b", re.IGNORECASE)  # not "your": "in your account" describes
_RULE = re.compile(r"\b(?:should|must|shall)\b", re.IGNORECASE)
# "Use this tool when …", "Great for finding files when …", "… when you need to compare files": when to use it.
_USAGE = re.compile(
    r"^(?:use|call|invoke|choose|pick|prefer|try)\s+(?:this|it|me)\b"
    r"|\b(?:useful|helpful|handy|great|perfect|ideal|best|good|essential|designed|intended|meant)\s+(?:for|when|to|if)\b"
    r"|\b(?:when|if)\s+(?:you|the\s+user|a\s+task|the\s+task|an?\s+agent)\s+(?:need|needs|want|wants|must|ha(?:s|ve)\s+to)\b"
    r"|\b(?:use|call)\s+(?:this|it)\s+(?:\w+\s+){0,2}?(?:when|whenever|first|before|after|to|for|if)\b",
    re.IGNORECASE,
)
# A heading that introduces a list of situations: "When to use this tool:", "Use it for:", "Use cases:".
_USAGE_HEAD = re.compile(
    r"^\s*(?:#+\s*)?(?:when\s+to\s+use(?:\s+(?:it|this(?:\s+tool)?))?|use\s+(?:it|this(?:\s+tool)?)\s+(?:when|for|to)"
    r"|use\s+cases?|good\s+for|useful\s+for)\s*:?\s*$",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"`[^`]+`|'[^'\s][^']*'|\"[^\"\s][^\"]*\"")
_BRIEF_PURPOSE_SENTENCES = 2  # what it does; then one sentence saying when to use it


# Shouted orders: "You MUST use this tool BEFORE …", "PRIMARY TOOL FOR FILE ANALYSIS", "REQUIRED FIRST STEP" (a
# capitalised "ALL GitHub repositories" is emphasis, not an order).
_SHOUT = re.compile(
    r"\b(?:MUST|IMPORTANT|REQUIRED|ALWAYS|NEVER|CRITICAL|MANDATORY|CANNOT|DO\s+NOT|WILL\s+FAIL)\b"
    r"|\b[A-Z]{3,}(?:\s+[A-Z]{2,}){2,}\b"
)


def _gives_orders(sentence: str, siblings: Sequence[str]) -> bool:
    """Whether ``sentence`` speaks to the model rather than about the tool (see ``_ORDER_START``)."""
    opening = re.sub(r"^[^\w]+", "", sentence)  # "🚨 IMPORTANT: …"
    if _addresses_model(sentence, siblings) or _ORDER_START.match(opening) or _SHOUT.search(sentence):
        return True
    if _USAGE.search(sentence):
        return False
    return _SECOND_PERSON.search(sentence) is not None or _RULE.search(sentence) is not None


def _is_detail(sentence: str, siblings: Sequence[str]) -> bool:
    """Formats and examples ("Each entry includes 'name', 'type' …"): the full form's business. Quoted names of
    the server's other tools are no detail ("combine `delete_slide` and `insert_blank_slide`")."""
    quoted = [q[1:-1] for q in _QUOTED.findall(sentence)]
    return len([q for q in quoted if q not in siblings]) >= 2


def _usage_list(description: str, siblings: Sequence[str]) -> str | None:
    """A "When to use this tool:" list turned into one sentence (its first three plain items), if there is one."""
    lines = description.splitlines()
    for index, line in enumerate(lines):
        if not _USAGE_HEAD.match(line):
            continue
        items: list[str] = []
        for following in lines[index + 1 :]:
            if not following.strip():
                if items:
                    break
                continue
            if not _LIST_ITEM.match(following):
                break
            item = " ".join(_BOLD.sub(r"\1", _LIST_ITEM.sub("", following)).replace("`", "").split()).rstrip(".;,")
            if item and len(item.split()) <= 12 and not _gives_orders(item, siblings):
                items.append(item[0].lower() + item[1:] if item[1:2].islower() else item)
        if items:
            shown = items[:3]
            listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + ", or " + shown[-1]
            return f"Use it for {listed}."
    return None


def draft_brief(tool: UpstreamTool, *, server: str = "", siblings: Iterable[str] = ()) -> str:
    """A brief drafted from the description: what the tool does and when to use it, ≤ 60 words.

    From the opening prose (up to the first heading, parameter list or example) it keeps up to two sentences
    saying what the tool does and the first sentence saying when to use it ("Use this tool when …", "Great
    for …"), wherever it stands; sentences naming parameters, giving formats or rules, or addressing the model
    are left to the full form. Without a when-sentence it takes one from a "When to use this tool:" list, or
    derives a plain one from the first sentence's verb or the tool's name (:func:`_derived_use`).

    An upstream's orders to the model are not carried over: markup that hides text (comments, ``<IMPORTANT>``
    blocks with their content, hidden elements) and invisible characters are stripped first, and every
    sentence the security lint flags at ``QUARANTINE_SEVERITY`` or above (see :mod:`prompt_composer.security`)
    is dropped. ``siblings`` are the names of the server's other tools (calling one first is no finding).
    """
    parameters = tuple(tool.input_schema.get("properties", {}))
    siblings = tuple(siblings)
    description = clean_prose(tool.description)
    found = _sentences(_lead_prose(description))
    sentences = [s for s in found if not _addresses_model(s, siblings)]
    plain = [s for s in sentences if not _gives_orders(s, siblings)]
    kept = [s for s in plain if not _mentions_parameter(s, parameters) and not _is_detail(s, siblings)] or plain[:1]
    usage = next((s for s in kept if _USAGE.search(s)), None)
    reserve = len(usage.split()) if usage else 0
    chosen: list[str] = []
    words = 0
    for sentence in kept:
        if sentence is usage or _USAGE.search(sentence):
            continue
        n = len(sentence.split())
        if chosen and (words + n + reserve > _BRIEF_TARGET_WORDS or len(chosen) == _BRIEF_PURPOSE_SENTENCES):
            break
        chosen.append(sentence)
        words += n
    if usage is not None:
        chosen.append(usage)
    chosen.sort(key=kept.index)
    brief = _BOLD.sub(r"\1", " ".join(_terminated(s) for s in chosen)).replace("`", "").strip()
    label = clean_prose(tool.title or "") or tool.name
    where = f" of the {server} server" if server else ""
    if not brief:
        if found:  # every sentence addressed the model
            return f"The {label} tool{where}; its upstream description needs review before use."
        brief = f"The {label} tool{where}; its upstream definition has no description."
        chosen = []
    if len(brief.split()) > BRIEF_MAX_WORDS:
        brief = " ".join(brief.split()[:_BRIEF_TARGET_WORDS]).rstrip(",;:") + " …"
    brief = _terminated(brief)
    if usage is None and not re.search(r"\bdeprecated\b", brief, re.IGNORECASE) and _mostly_latin(brief):
        when = _usage_list(description, siblings) or _derived_use(tool, chosen[0] if chosen else "", label, server)
        if when and len(brief.split()) + len(when.split()) <= BRIEF_MAX_WORDS:
            brief = f"{brief} {when}"
    return brief


def _mostly_latin(text: str) -> bool:
    """Whether ``text`` is written in a Latin script (an English "Use it when …" would not suit another)."""
    letters = [c for c in text if c.isalpha()]
    return sum(c.isascii() for c in letters) * 2 >= len(letters)


def _terminated(sentence: str) -> str:
    """``sentence`` ending in a full stop unless it already ends a sentence (so the next one stays separate)."""
    sentence = sentence.rstrip()
    if sentence.endswith(":"):
        return sentence[:-1] + "."
    return sentence if sentence.endswith((".", "!", "?", "…", "\u3002")) else sentence + "."


def _addresses_model(sentence: str, siblings: Sequence[str]) -> bool:
    """Whether the lint flags ``sentence`` at quarantine severity (an order to the model, a hidden character …)."""
    return any(at_least(m.severity, QUARANTINE_SEVERITY) for m in scan_text(sentence, siblings=siblings))


# "Shows the commit logs" → "Use it when you need the commit logs"; "Records changes" → "… to record changes".
_WANTS_OBJECT = frozenset({"get", "show", "display", "return", "retrieve", "view", "provide"})
_LEAD_IN = re.compile(
    r"^(?:this\s+(?:tool|function|endpoint|operation)\s+(?:will\s+|can\s+)?|(?:an?\s+)?(?:tool|function)\s+(?:to|that)\s+"
    r"|allows?\s+(?:you\s+|the\s+user\s+|users\s+)?to\s+|lets?\s+(?:you|the\s+user)\s+|(?:can\s+be\s+)?used\s+to\s+)",
    re.IGNORECASE,
)
# Where the object of the first sentence's verb ends: a clause, an aside, an example (list commas stay).
_OBJECT_END = re.compile(
    r"[;:]|\s\(|\s[-–—]\s|\.(?:\s|$)"
    r"|,\s+(?:or|which|allowing|including|so|but|while|where|returning|using|then|if|depending|e\.g|i\.e)\b",
    re.IGNORECASE,
)
_OBJECT_MAX_WORDS = 12
_DANGLING = re.compile(r"(?:\s+(?:including|such\s+as|like|and|or))+$", re.IGNORECASE)  # a list cut off
_RELATIVE = frozenset({"that", "which", "who", "where", "when", "if", "while", "so"})


def _verb_phrase(words: Sequence[str], inflected: bool) -> str:
    """``words`` after the main verb, with verbs coordinated to it ("… and optionally extracts …") in its base form
    when it was inflected ("Fetches" → "fetch"), up to a relative clause, whose verbs keep their form."""
    out: list[str] = []
    coordinated = False
    for word in words:
        lower = word.lower()
        if lower in _RELATIVE:
            inflected = False
        base = _base_verb(word) if inflected and coordinated else None
        out.append(base if base is not None and base != lower else word)
        if lower in ("and", "or"):
            coordinated = True
        elif not re.fullmatch(r"[a-z]+ly", lower):
            coordinated = False
    return " ".join(out)


def _derived_use(tool: UpstreamTool, first: str, label: str, server: str) -> str:
    """A plain "Use it when …" sentence from the first sentence's verb and object, else from the tool's name."""
    text = _BOLD.sub(r"\1", first).replace("`", "").strip()
    text = _LEAD_IN.sub("", re.sub(r"^[^|]{1,30}\|\s*", "", text))  # "Notion | Delete a block"
    words = text.split()
    while words and re.fullmatch(r"[A-Za-z]+ly", words[0]):  # "Recursively search …"
        words = words[1:]
    verb = _base_verb(words[0]) if words else None
    if verb is not None:
        rest = _OBJECT_END.split(" ".join(words[1:]), maxsplit=1)[0].strip().rstrip(".,")
        rest = _DANGLING.sub("", rest)  # "… a file or directory including" (the list followed)
        parameters = tuple(tool.input_schema.get("properties", {}))
        if rest and len(rest.split()) <= _OBJECT_MAX_WORDS and not _mentions_parameter(rest, parameters):
            if verb in _WANTS_OBJECT:
                return f"Use it when you need {rest}."
            phrase = _verb_phrase(rest.split(), inflected=words[0].lower() != verb)
            return f"Use it when you need to {verb} {phrase}."
    named = _name_words(tool.name)
    while named and _base_verb(named[0]) is None:  # "browser_stop_recording", "API-delete-a-block"
        named = named[1:]
    if len(named) > 1:
        return f"Use it when you need to {' '.join(named)}."
    where = f" of the {server} server" if server else ""
    return f"Use it when you need the {label} tool{where}."


# --- placement by effect: read-only tools and writing tools go to different groups -----------------------

Effect = Literal["read-only", "writing"]


@dataclass(frozen=True)
class Placement:
    """What an imported tool does to the world (as the importer reads it), why, and the group that gives it."""

    effect: Effect
    reason: str  # "readOnlyHint", "destructiveHint", "name reads as writing ('commit')", "unsure: treated as writing" …
    group: str

    def describe(self) -> str:
        return f"{self.effect}: {self.reason}"


def _verbs(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Verbs that change state whatever else a name says ("get_or_create_user" writes), and verbs that do when they
# lead a name or a description ("commit", "add"; as nouns they are common: "get_commit"). Everything else that is
# not read below is unsure, and unsure is writing: the MCP spec's default is readOnlyHint false.
_STRONG_WRITE_VERBS = _verbs(
    """write create delete remove update upsert edit modify move rename reset push kill drop destroy purge overwrite
    insert append replace truncate wipe install uninstall deploy publish merge rebase revert restore checkout submit
    send assign unassign archive unarchive fork approve dismiss cancel terminate execute exec trigger unstage"""
)
_WRITE_VERBS = _STRONG_WRITE_VERBS | _verbs(
    """commit add set unset close reopen lock unlock star unstar follow unfollow comment label tag record run rerun
    start stop restart stage apply mark manage toggle enable disable copy clone upload transfer switch resolve reply
    request post put patch save store import sync pull share invite grant revoke register unregister subscribe
    unsubscribe click type fill press drag select navigate mkdir touch rm mv cp schedule abort clear empty batch
    generate evaluate handle resize hover login logout authenticate simulate"""
)
_READ_VERBS = _verbs(
    """get list read search show status diff fetch find query lookup look view describe inspect count stat info
    explain browse retrieve return tree ls cat grep head tail display preview compare analyze analyse summarize
    calculate compute validate verify whoami echo wait"""
)
# Verbs a drafted "Use it when you need to …" may start with, beyond the two lists above.
_OTHER_VERBS = _verbs(
    """convert compress decompress open take capture check test format parse translate extract render scroll measure
    monitor track notify plan solve build make download encode decode sort filter map perform provide"""
)
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _name_words(name: str) -> list[str]:
    """``git_create_branch``, ``createBranch``, ``API-get-user`` → their lower-case words."""
    return [w.lower() for w in _NAME_WORD.findall(name)]


def _base_verb(word: str) -> str | None:
    """The known verb ``word`` is a form of ("Shows" → "show", "Switches" → "switch"), or ``None``."""
    w = word.lower()
    forms = (
        w,
        w[:-1] if w.endswith("s") else "",
        w[:-2] if w.endswith("es") else "",
        w[:-3] + "y" if w.endswith("ies") else "",
    )
    for candidate in forms:
        if candidate in _WRITE_VERBS or candidate in _READ_VERBS or candidate in _OTHER_VERBS:
            return candidate
    return None


def _lead_verb(description: str) -> tuple[str, str | None]:
    """The first sentence's leading word (after "This tool …", "Allows you to …" and adverbs) and its verb."""
    text = _LEAD_IN.sub("", _lead_prose(clean_prose(description)))
    for word in re.findall(r"[A-Za-z]+", text)[:4]:
        if not re.fullmatch(r"[a-z]+ly", word.lower()):
            return word, _base_verb(word)
    return "", None


def classify_effect(tool: UpstreamTool) -> tuple[Effect, str]:
    """Whether ``tool`` only reads or may write, and why.

    The server's annotations come first: ``destructiveHint: true`` or ``readOnlyHint: false`` is writing,
    ``readOnlyHint: true`` read-only (unless the name itself says delete, write, create … : a server's hints are
    claims, and a wrong read-only claim is the costly mistake). Without them the importer reads the name and the
    first sentence of the description; what reads as neither is treated as writing.
    """
    read_only, destructive = tool.annotations.get("readOnlyHint"), tool.annotations.get("destructiveHint")
    words = _name_words(tool.name)
    strong = next((w for w in words if w in _STRONG_WRITE_VERBS), None)
    if destructive is True:
        return "writing", "destructiveHint" if read_only is not True else "destructiveHint (despite readOnlyHint)"
    if read_only is True:
        if strong is not None:
            return "writing", f"readOnlyHint, but the name reads as writing ({strong!r})"
        return "read-only", "readOnlyHint"
    if read_only is False:
        return "writing", "readOnlyHint: false"
    if strong is not None:
        return "writing", f"name reads as writing ({strong!r})"
    first = next((w for w in words if w in _WRITE_VERBS or w in _READ_VERBS), None)
    if first in _WRITE_VERBS:
        return "writing", f"name reads as writing ({first!r})"
    word, verb = _lead_verb(tool.description)
    sentence = next(iter(_sentences(_lead_prose(clean_prose(tool.description)))), "")
    also = next((w for w in re.findall(r"[A-Za-z]+", sentence) if _base_verb(w) in _STRONG_WRITE_VERBS), None)
    if verb in _WRITE_VERBS or also is not None:  # "List, create, close, or select a browser tab."
        return "writing", f"text reads as writing ({(word if verb in _WRITE_VERBS else also)!r})"
    if first is not None:
        return "read-only", f"name reads as read-only ({first!r})"
    if verb is not None and verb in _READ_VERBS:
        return "read-only", f"text reads as read-only ({word!r})"
    return "writing", "unsure: treated as writing"


def place(tool: UpstreamTool, *, group: str = "mcp", write_group: str | None = None) -> Placement:
    """The group ``tool`` goes to: ``group`` when it only reads, ``write_group`` (default ``<group>-write``) else."""
    effect, reason = classify_effect(tool)
    write_group = write_group or f"{group}-write"
    return Placement(effect, reason, group if effect == "read-only" else write_group)


def _type_label(schema: Any, depth: int = 0) -> str:
    if not isinstance(schema, Mapping):
        return "any"
    if "$ref" in schema and isinstance(schema["$ref"], str):
        return schema["$ref"].rsplit("/", 1)[-1]
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array":
        items = schema.get("items")
        return f"array of {_type_label(items, depth + 1)}" if isinstance(items, Mapping) and depth < 3 else "array"
    if isinstance(kind, str):
        return kind
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            labels = list(dict.fromkeys(_type_label(o, depth + 1) for o in options))
            return " or ".join(labels)
    if "enum" in schema:
        return "enum"
    if "const" in schema:
        return "constant"
    return "any"


def _value(value: Any) -> str:
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _facts(schema: Mapping[str, Any]) -> list[str]:
    facts = []
    if isinstance(schema.get("enum"), list):
        facts.append("one of " + ", ".join(_value(v) for v in schema["enum"]))
    if "const" in schema:
        facts.append(f"always {_value(schema['const'])}")
    if "default" in schema:
        facts.append(f"default {_value(schema['default'])}")
    for key, label in (
        ("minimum", "min"),
        ("exclusiveMinimum", "greater than"),
        ("maximum", "max"),
        ("exclusiveMaximum", "less than"),
        ("minLength", "min length"),
        ("maxLength", "max length"),
        ("minItems", "min items"),
        ("maxItems", "max items"),
        ("pattern", "pattern"),
        ("format", "format"),
    ):
        if key in schema:
            facts.append(f"{label} {_value(schema[key])}")
    return facts


_MAX_NESTING = 3  # nested parameter levels shown in the full form's reference


def _deref(
    schema: Mapping[str, Any], root: Mapping[str, Any], seen: frozenset[str]
) -> tuple[Mapping[str, Any], frozenset[str]]:
    """``schema`` with a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) followed; a cycle or a miss stops."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/") or ref in seen:
        return schema, seen
    target: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        target = target.get(part) if isinstance(target, Mapping) else None
    if not isinstance(target, Mapping):
        return schema, seen
    merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}  # siblings of $ref (a description) win
    return _deref(merged, root, seen | {ref})


def _object_variants(
    schema: Mapping[str, Any], root: Mapping[str, Any], seen: frozenset[str] = frozenset(), depth: int = 0
) -> list[tuple[str | None, Mapping[str, Any], frozenset[str]]]:
    """The object schemas whose parameters a nested list shows, with a label for each and the refs followed.

    An object; the items of an array; and every object among ``anyOf``/``oneOf`` options, wherever they
    nest (pydantic's ``Optional[Model]`` is ``anyOf: [{$ref: Model}, {type: null}]``); ``allOf`` members are
    merged into one object.
    """
    if depth > 6:
        return []
    schema, seen = _deref(schema, root, seen)
    if isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        return [(None, schema, seen)]
    items = schema.get("items")
    if isinstance(items, Mapping):
        return _object_variants(items, root, seen, depth + 1)
    variants: list[tuple[str | None, Mapping[str, Any], frozenset[str]]] = []
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        for option in options if isinstance(options, list) else ():
            if isinstance(option, Mapping):
                for label, variant, refs in _object_variants(option, root, seen, depth + 1):
                    variants.append((label or _variant_label(option, variant), variant, refs))
    members = schema.get("allOf")
    if isinstance(members, list) and members:
        merged: dict[str, Any] = {}
        required: list[str] = []
        for member in members:
            for _, variant, refs in (
                _object_variants(member, root, seen, depth + 1) if isinstance(member, Mapping) else ()
            ):
                merged.update(variant.get("properties", {}))
                required += [r for r in variant.get("required", []) if isinstance(r, str)]
                seen = seen | refs
        if merged:
            variants.append((None, {"type": "object", "properties": merged, "required": required}, seen))
    return variants


def _variant_label(option: Mapping[str, Any], variant: Mapping[str, Any]) -> str | None:
    """A name for one object among several: its title, its ``$ref`` name, or the constant that tells it apart."""
    if isinstance(variant.get("title"), str) and variant["title"].strip():
        return str(variant["title"]).strip()
    if isinstance(option.get("$ref"), str):
        return str(option["$ref"]).rsplit("/", 1)[-1]
    for name, sub in variant.get("properties", {}).items():
        if isinstance(sub, Mapping) and "const" in sub:
            return f"`{name}` = {_value(sub['const'])}"
        if isinstance(sub, Mapping) and isinstance(sub.get("enum"), list) and len(sub["enum"]) == 1:
            return f"`{name}` = {_value(sub['enum'][0])}"
    return None


def _parameter_lines(
    schema: Mapping[str, Any],
    depth: int = 0,
    root: Mapping[str, Any] | None = None,
    seen: frozenset[str] = frozenset(),
) -> list[str]:
    root = schema if root is None else root
    properties = schema.get("properties", {})
    required = set(schema.get("required", [])) if isinstance(schema.get("required"), list) else set()
    indent = "  " * depth
    lines: list[str] = []
    for name, sub in properties.items():
        sub = sub if isinstance(sub, Mapping) else {}
        shown, _ = _deref(sub, root, seen)  # a `$ref`'d parameter: its enum, default and description
        head = [_type_label(sub), "required" if name in required else "optional", *_facts(shown)]
        description = " ".join(str(shown.get("description") or shown.get("title") or "").split())
        line = f"{indent}- `{name}` ({', '.join(head)})"
        lines.append(f"{line}: {description}" if description else line)
        if depth >= _MAX_NESTING:
            continue
        variants = _object_variants(sub, root, seen)
        if len(variants) == 1:
            lines += _parameter_lines(variants[0][1], depth + 1, root, variants[0][2])
        else:  # several objects (oneOf): each under its own heading
            for index, (label, variant, refs) in enumerate(variants, 1):
                kind = f"an object, {label}" if label and label.startswith("`") else (label or "an object")
                lines.append(f"{indent}  - variant {index} of {len(variants)}: {kind}")
                lines += _parameter_lines(variant, depth + 2, root, refs)
    return lines


_HINTS = (
    ("readOnlyHint", True, "read-only"),
    ("destructiveHint", True, "may delete or overwrite data"),
    ("idempotentHint", True, "idempotent"),
    ("openWorldHint", True, "reaches systems outside this workspace"),
)


def render_full(tool: UpstreamTool, name: str) -> str:
    """The full form: heading, upstream description, a parameter reference, and the server's behaviour hints."""
    parts = [f"## {name}"]
    if tool.title and tool.title.strip() != name:
        parts[0] += f" — {tool.title.strip()}"
    description = "\n".join(line.rstrip() for line in tool.description.strip().splitlines()).strip()
    parts.append(description or "(The upstream definition has no description.)")
    lines = _parameter_lines(tool.input_schema)
    parts.append("### Parameters\n" + ("\n".join(lines) if lines else "None."))
    hints = [label for key, want, label in _HINTS if tool.annotations.get(key) is want]
    if tool.annotations.get("readOnlyHint") is True:
        hints = [h for h in hints if h != "may delete or overwrite data"]
    if hints:
        parts.append("### Behaviour (declared by the server)\n" + ", ".join(hints).capitalize() + ".")
    return "\n\n".join(parts)


def _distinctive(name: str) -> bool:
    """A name no sentence uses as a plain word (``read_text_file``, ``createEntities``, ``get-env``)."""
    return any(c in name for c in "_-.") or any(c.isupper() or c.isdigit() for c in name[1:])


def _rename_mentions(text: str, renamed: Mapping[str, str]) -> str:
    """``text`` with mentions of the server's tools under the names they are imported as (``--prefix``, mapping).

    A distinctive name is replaced wherever it stands as a whole word; a plain word (``add``, ``fetch``) only
    where it is quoted as code, since "add" in a sentence is seldom the tool.
    """
    if not renamed or not text:
        return text
    alternatives = []
    for original in sorted(renamed, key=len, reverse=True):
        escaped = re.escape(original)
        if _distinctive(original):
            alternatives.append(rf"(?<![\w-]){escaped}(?![\w-]|\.\w)")
        else:
            alternatives.append(rf"(?<=[`'\"]){escaped}(?=[`'\"])")
    return re.sub("|".join(alternatives), lambda m: renamed[m.group()], text)


def _with_renamed_mentions(tool: UpstreamTool, renamed: Mapping[str, str]) -> UpstreamTool:
    """``tool`` as the drafts see it: its description and parameter descriptions naming the imported names."""

    def schema(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {
                k: _rename_mentions(v, renamed) if k == "description" and isinstance(v, str) else schema(v)
                for k, v in node.items()
            }
        return [schema(v) for v in node] if isinstance(node, list) else node

    if not renamed:
        return tool
    return replace(
        tool, description=_rename_mentions(tool.description, renamed), input_schema=schema(tool.input_schema)
    )


def draft_docs(
    tools: Sequence[UpstreamTool],
    *,
    server: str,
    group: str = "mcp",
    write_group: str | None = None,
    prefix: str = "",
) -> list[tuple[ToolDoc, Placement]]:
    """One drafted tool doc per upstream tool, with where it goes (:func:`place`) and why.

    Read-only tools go to ``group``, writing ones to ``write_group`` (default ``<group>-write``; pass ``group``
    to keep them together). Two originals mapping to one name (or file) are an error. When names change
    (``prefix``, or a name the APIs refuse), mentions of the server's tools in the texts follow.
    """
    by_name: dict[str, str] = {}
    out: list[tuple[ToolDoc, Placement]] = []
    names = {tool.name: api_name(tool.name, prefix=prefix) for tool in tools}
    renamed = {original: mapped for original, mapped in names.items() if original != mapped}
    for upstream in tools:
        name = names[upstream.name]
        siblings = [n for original, mapped in names.items() if original != upstream.name for n in (original, mapped)]
        clash = by_name.get(name.casefold())
        if clash is not None:
            raise ImporterError(
                f"tools {clash!r} and {upstream.name!r} of {server!r} both map to the name {name!r} "
                "(names must match ^[a-zA-Z0-9_-]{1,64}$ and differ in more than case)"
            )
        by_name[name.casefold()] = upstream.name
        placement = place(upstream, group=group, write_group=write_group)
        tool = _with_renamed_mentions(upstream, renamed)
        try:
            doc = ToolDoc(
                name=name,
                group=placement.group,
                brief=draft_brief(tool, server=server, siblings=siblings),
                full=render_full(tool, name),
                input_schema=upstream.input_schema,
                brief_source="drafted",
                origin=Origin(server=server, name=upstream.name),
            )
        except ValueError as exc:  # pydantic's ValidationError: one line per problem, prefixed with the tool
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {str(e['msg']).removeprefix('Value error, ')}"
                for e in getattr(exc, "errors", lambda: [])()
            )
            raise ImporterError(f"tool {upstream.name!r} of {server!r}: {detail or exc}") from None
        out.append((doc, placement))
    return out


def tool_docs_from_upstream(
    tools: Sequence[UpstreamTool],
    *,
    server: str,
    group: str = "mcp",
    prefix: str = "",
    write_group: str | None = None,
) -> list[ToolDoc]:
    """One drafted tool doc per upstream tool (see :func:`draft_docs`, which also says where each went)."""
    return [doc for doc, _ in draft_docs(tools, server=server, group=group, write_group=write_group, prefix=prefix)]


# --- YAML output --------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)

_KEY_ORDER = (
    "name",
    "group",
    "quarantine",
    "brief_source",
    "origin",
    "brief",
    "full",
    "input_schema",
    "queries",
    "hint",
)


def dump_yaml(data: Mapping[str, Any]) -> str:
    """Readable YAML: keys in the given order, multi-line text as block scalars, no line wrapping."""
    return yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1_000_000)


def quarantine_comment(rules: Sequence[str]) -> str:
    """The comment a quarantined doc's YAML file starts with: why, and how a person clears it."""
    return (
        f"# QUARANTINED by prompt-composer import: the security lint flagged text that addresses the model\n"
        f"# ({', '.join(rules)}). No mode allows this tool until a person clears it:\n"
        "#   1. see each finding with its line: prompt-composer --docs <this folder> audit --security\n"
        "#   2. read the brief, the full text and every description and enum value of the input schema;\n"
        "#      delete what gives the model orders rather than describing the tool (or judge it harmless);\n"
        "#   3. delete the `quarantine:` key below (and this comment).\n"
        "# Re-imports keep it cleared while the upstream text stays the same; new text is checked again.\n"
    )


def doc_yaml(doc: ToolDoc) -> str:
    data = doc.model_dump(mode="json", exclude_defaults=True)
    ordered = {key: data[key] for key in _KEY_ORDER if key in data}
    text = dump_yaml(ordered)
    if doc.quarantine:
        text = quarantine_comment(doc.quarantine) + text
    if ToolDoc.model_validate(yaml.safe_load(text)) != doc:  # never write what would not load back the same
        raise ImporterError(f"tool {doc.name!r}: its YAML does not round-trip; please report this")
    return text


# --- merge plan --------------------------------------------------------------------------------------


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class DocChange:
    """What an import does to one doc.

    ``updated`` names the fields regenerated (brief, full, input_schema, group, quarantine); ``kept`` what a
    person's hand kept ("edited brief", "reviewed brief", "edited full", "group"). ``placement`` is where the
    importer would put the tool and why; ``group`` where the doc is after the import (a person's group stands).
    """

    name: str
    origin: str
    action: Literal["add", "update", "unchanged"]
    updated: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    placement: Placement | None = None
    group: str = ""

    def describe(self) -> str:
        notes = []
        if self.updated:
            notes.append("updated " + ", ".join(self.updated))
        if self.kept:
            notes.append("kept " + ", ".join(self.kept))
        suffix = f": {'; '.join(notes)}" if notes else ""
        return f"{self.action:<9} {self.name}  ({self.origin}){suffix}"

    def placed(self, modes: Sequence[str], *, quarantined: bool = False) -> str:
        """``git_status → mcp (read-only: readOnlyHint) → modes ask, code``: where it went, why, who may call it."""
        if self.placement is None:
            why = "group given"
        elif self.placement.group == self.group:
            why = self.placement.describe()
        else:
            why = f"kept: a person's group; the importer reads it as {self.placement.describe()}"
        allowed = f"modes {', '.join(modes)}" if modes else "no mode"
        if quarantined:
            allowed = "no mode: quarantined"
        return f"{self.name} → {self.group} ({why}) → {allowed}"


@dataclass(frozen=True)
class ImportPlan:
    """Everything an import would do; :func:`apply_plan` writes ``files`` (paths relative to ``out``)."""

    out: Path
    server: str
    changes: tuple[DocChange, ...]
    vanished: tuple[str, ...]  # docs of this server whose tool is no longer listed upstream (left in place)
    files: Mapping[str, str]  # relative path -> text, only files whose text changes
    state: Mapping[str, Any]
    registry: Registry  # the folder's registry after the import, validated
    # Docs of this import that are quarantined after it, with their findings (located in their files).
    quarantined: Mapping[str, tuple[Finding, ...]] = field(default_factory=dict)
    # Docs a person cleared whose upstream text is unchanged: left cleared, though the lint still flags them.
    cleared: tuple[str, ...] = ()

    @property
    def drafted(self) -> tuple[str, ...]:
        return tuple(n for n, d in self.registry.tools.items() if d.brief_source == "drafted")

    def report(self, *, dry_run: bool = False) -> list[str]:
        lines = [c.describe() for c in self.changes if c.action != "unchanged" or c.kept]
        unchanged = sum(1 for c in self.changes if c.action == "unchanged" and not c.kept)
        if unchanged:
            lines.append(f"unchanged {unchanged} tool{'s' if unchanged != 1 else ''}")
        for name in self.vanished:
            origin = self.registry.tools[name].origin
            upstream = origin.name if origin else name
            lines.append(f"vanished  {name}  ({self.server}: {upstream}) is no longer listed upstream; doc kept")
        lines += self.placement_report()
        lines += self.budget_report()
        drafted = [c.name for c in self.changes if self.registry.tools[c.name].brief_source == "drafted"]
        if drafted:
            lines.append(
                f"{len(drafted)} drafted brief(s) to review: prompt-composer --docs {self.out} audit. A brief is "
                "reviewed once you edit it or set `brief_source: human`; re-imports keep a reviewed brief"
            )
        lines += self.quarantine_report()
        lines.append(files_summary(self.files, self.out, dry_run=dry_run))
        return lines

    def modes_allowing(self, name: str) -> tuple[str, ...]:
        """The folder's modes that allow the tool ``name`` after the import."""
        return tuple(slug for slug, mode in self.registry.modes.items() if mode.allows(name))

    def placement_report(self) -> list[str]:
        """For each new or changed tool: its group, why it is there, and the modes that allow it."""
        moved = [c for c in self.changes if c.action != "unchanged" or "group" in c.kept]
        if not moved:
            return []
        lines = ["where the new and changed tools go (group, why, modes that allow them):"]
        for change in moved:
            quarantined = self.registry.tools[change.name].quarantined
            lines.append("  " + change.placed(self.modes_allowing(change.name), quarantined=quarantined))
        idle = sorted(
            {c.group for c in moved if not self.modes_allowing(c.name) and not self.registry.tools[c.name].quarantined}
        )
        if idle and self.registry.modes:
            lines.append(
                f"no mode allows group(s) {', '.join(idle)}: add a group to the `groups:` of the modes that may use "
                "its tools (writing tools belong only in modes that may change things, such as code)"
            )
        return lines

    def budget_report(self) -> list[str]:
        """The modes that allow a new or changed tool and whose worst case is now over their token budget."""
        touched = {slug for c in self.changes if c.action != "unchanged" for slug in self.modes_allowing(c.name)}
        if not touched:
            return []
        from ..core.audit import run_audit
        from ..core.composer import Composer

        lines = []
        for audit in run_audit(Composer(self.registry)).over_budget:
            if audit.mode in touched:
                path = self.out / "modes" / f"{audit.mode}.yaml"
                path = path if path.is_file() or not path.with_suffix(".yml").is_file() else path.with_suffix(".yml")
                lines.append(
                    f"over budget: mode {audit.mode!r} worst case is now {audit.worst_tokens} tokens, over its "
                    f"budget_tokens {audit.budget_tokens} ({path}): raise budget_tokens, or drop groups or tools "
                    "from the mode (prompt-composer audit --check fails until then)"
                )
        return lines

    def quarantine_report(self, *, per_tool: int = 12) -> list[str]:
        """The quarantined tools with their findings (``path:line``), and how a person clears them."""
        lines: list[str] = []
        for name, findings in sorted(self.quarantined.items()):
            doc = self.registry.tools[name]
            upstream = escape_invisible(f"{self.server}: {doc.origin.name if doc.origin else name}")
            lines.append(f"quarantined {name}  ({upstream}): {', '.join(doc.quarantine)}")
            shown = sorted(findings, key=lambda f: (-_SEVERITY_RANK[f.severity], f.line or 0))
            lines += [f"  {finding}" for finding in shown[:per_tool]]
            if len(findings) > per_tool:
                lines.append(f"  … and {len(findings) - per_tool} more")
        if self.quarantined:
            lines.append(
                f"{len(self.quarantined)} tool(s) quarantined: no mode allows them until a person clears them. Review "
                f"each file, remove what gives the model orders, then delete its `quarantine:` key "
                f"(prompt-composer --docs {self.out} audit --security lists every finding)"
            )
        for name in self.cleared:
            lines.append(
                f"cleared     {name}: a person lifted its quarantine and the upstream text is unchanged, so it stays "
                f"allowed (the lint still flags it: prompt-composer --docs {self.out} audit --security)"
            )
        return lines


def files_summary(files: Mapping[str, str], out: Path, *, dry_run: bool) -> str:
    """The last line of an import report: how many files were (or would be) written."""
    written = [p for p in files if p != STATE_FILE]
    if dry_run:
        return f"dry run: would write {len(written)} file(s) to {out}; nothing written"
    return f"wrote {len(written)} file(s) to {out}"


def load_output_folder(out: Path) -> Registry | None:
    """The registry already in an import's output folder (``None`` if the folder does not exist yet)."""
    if not out.exists():
        return None
    if not out.is_dir():
        raise ImporterError(f"{out}: the output path exists and is not a folder")
    try:
        return load_registry(out)
    except LoadError as exc:
        raise ImporterError(f"the output folder does not load: {exc.summary()}") from None


def _empty_state() -> dict[str, Any]:
    return {"version": _STATE_VERSION, "tools": {}, "modes": {}}


def read_state(out: Path) -> dict[str, Any]:
    """What the importers wrote into ``out`` last time (see the module docstring)."""
    path = out / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return _empty_state()
    except (OSError, ValueError) as exc:
        raise ImporterError(f"{path}: unreadable import state: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != _STATE_VERSION:
        raise ImporterError(f"{path}: unknown import state version; remove the file to treat every doc as edited")
    data.setdefault("tools", {})
    data.setdefault("modes", {})
    return data


def _validated(tools: Iterable[ToolDoc], existing: Registry | None, out: Path) -> Registry:
    modes = [m.config for m in existing.modes.values()] if existing is not None else []
    groups = existing.groups.values() if existing is not None else ()  # so the plan's audit is the folder's
    try:
        return Registry.from_docs(tools, modes, root=out, groups=groups)
    except LoadError as exc:
        raise ImporterError(f"the imported docs do not validate: {exc.summary()}") from None


_SEVERITY_RANK = {"high": 0, "medium": 1, "low": 2}


def _upstream_hash(doc: ToolDoc) -> str:
    """A hash of what upstream sent for a doc (as drafted), to tell whether it changed since the last import."""
    origin = doc.origin.name if doc.origin else ""
    payload = [origin, doc.brief, doc.full, doc.input_schema]
    return text_hash(json.dumps(payload, sort_keys=True, ensure_ascii=False))


def _quarantine(
    doc: ToolDoc, old: ToolDoc | None, upstream: str, record: Mapping[str, Any], rules: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """The doc's ``quarantine`` after this import, the rules to record, and whether a person's clearing stands.

    ``rules`` are what the lint flags now. A person clears a quarantine by deleting the key: that stands while
    upstream sends the same text (recorded as ``scan.upstream``); new upstream text is checked afresh. While the
    text is unchanged a quarantine is never lifted by the importer; rule ids a person added by hand are kept.
    """
    scan_record = record.get("scan") if isinstance(record.get("scan"), Mapping) else None
    written = tuple(scan_record.get("quarantine", ())) if scan_record is not None else ()
    same = scan_record is not None and scan_record.get("upstream") == upstream
    if old is not None and same and written and not old.quarantine:
        return (), written, True
    by_hand = set(old.quarantine) - set(written) if old is not None else set()
    unchanged = set(old.quarantine) if old is not None and same else set()
    quarantine = tuple(sorted(set(rules) | by_hand | unchanged))
    return quarantine, quarantine, False


def plan_import(
    out: str | Path,
    docs: Sequence[ToolDoc],
    *,
    server: str,
    placements: Mapping[str, Placement] | None = None,
) -> ImportPlan:
    """Merge freshly drafted ``docs`` of ``server`` into the folder ``out``, in memory only.

    Rules, per doc: a new name is added; for an existing doc of the same origin, the brief and the full text
    are each regenerated if the doc still holds what the importer wrote last time, and kept if a person edited
    them (or there is no record). A kept brief is a reviewed one: an edit sets ``brief_source: human``, and a
    brief marked ``human`` by hand is kept too. The input schema always follows upstream; the group follows
    ``placements`` (see :func:`draft_docs`) while the doc holds the group the importer gave it, and is the
    person's once changed by hand; queries and hint are the person's. A name already used by a doc from
    elsewhere is an error. Docs of ``server`` whose tool is no longer listed are reported as vanished and left
    in place. The resulting registry (with the folder's modes) must validate.

    Every doc of the import is then scanned (:func:`prompt_composer.security.scan`): one with a finding at
    ``QUARANTINE_SEVERITY`` or above is written with ``quarantine: [rule ids]`` (and a comment saying how to
    clear it), so no mode allows it. A person clears it by deleting the key after review; that stands until the
    upstream text changes, when the doc is scanned again (a "rug pull" is caught on the next import).
    """
    out = Path(out)
    existing = load_output_folder(out)
    state = read_state(out) if existing is not None else _empty_state()
    records: dict[str, Any] = dict(state["tools"])
    current = dict(existing.tools) if existing is not None else {}
    changes: list[DocChange] = []
    files: dict[str, str] = {}
    merged: dict[str, ToolDoc] = dict(current)
    placements = dict(placements or {})
    import_groups = {p.group for p in placements.values()} or {doc.group for doc in docs}
    for doc in docs:
        assert doc.origin is not None
        label = escape_invisible(f"{server}: {doc.origin.name}")
        placement = placements.get(doc.name)
        new_record: dict[str, Any] = {
            "server": server,
            "name": doc.origin.name,
            "brief": text_hash(doc.brief),
            "full": text_hash(doc.full),
            "group": doc.group,
        }
        old = current.get(doc.name)
        if old is None:
            merged[doc.name] = doc
            records[doc.name] = new_record
            changes.append(DocChange(doc.name, label, "add", placement=placement, group=doc.group))
            continue
        if old.origin != doc.origin:
            source = f"imported from {old.origin.server!r} as {old.origin.name!r}" if old.origin else "written by hand"
            raise ImporterError(
                f"tool {doc.origin.name!r} of {server!r} maps to {doc.name!r}, which already exists in {out} "
                f"({source}); import with --prefix to keep both"
            )
        record = records.get(doc.name) or {}
        updates: dict[str, Any] = {"input_schema": doc.input_schema}
        updated, kept = [], []
        for key in ("brief", "full"):
            mine, theirs = getattr(old, key), getattr(doc, key)
            edited = record.get(key) != text_hash(mine)  # by a person since the last import (or never ours)
            reviewed = key == "brief" and old.brief_source == "human"  # a person marked the draft as reviewed
            if edited or reviewed:
                if mine != theirs:
                    new_record[key] = record.get(key)  # stays "edited" until the text matches again
                    if key == "brief" and edited and record.get(key) is not None and not reviewed:
                        updates["brief_source"] = "human"  # an edited brief is a reviewed one
                        kept.append("edited brief (now brief_source: human)")
                    else:
                        kept.append(f"{'edited' if edited else 'reviewed'} {key}")
            elif mine != theirs:
                updates[key] = theirs
                updated.append(key)
        if "brief" in updated:
            updates["brief_source"] = "drafted"
        if old.input_schema != doc.input_schema:
            updated.append("input_schema")
        # The group is the importer's while it holds what the importer gave it (records from before groups were
        # recorded: one of this import's groups), so a re-import moves a writing tool out of a read-only group.
        written = record.get("group")
        ours = bool(record) and (old.group == written if written is not None else old.group in import_groups)
        if old.group != doc.group:
            if ours:
                updates["group"] = doc.group
                updated.append("group")
            else:
                kept.append("group")
        merged[doc.name] = old.model_copy(update=updates)
        records[doc.name] = new_record
        action: Literal["update", "unchanged"] = "update" if updated or "brief_source" in updates else "unchanged"
        group = merged[doc.name].group
        changes.append(DocChange(doc.name, label, action, tuple(updated), tuple(kept), placement, group))
    listed = {doc.origin.name for doc in docs if doc.origin is not None}
    vanished = tuple(
        name
        for name, doc in sorted(current.items())
        if doc.origin is not None and doc.origin.server == server and doc.origin.name not in listed
    )
    # The security lint: quarantine what addresses the model (see _quarantine for a person's clearing).
    limit = full_size_limit(merged.values())
    incoming = {doc.name: doc for doc in docs}
    cleared: list[str] = []
    for index, change in enumerate(changes):
        doc, old = merged[change.name], current.get(change.name)
        upstream = _upstream_hash(incoming[change.name])
        rules = quarantine_rules(scan(doc, full_limit=limit, siblings=sibling_names(doc, merged.values())))
        previous = state["tools"].get(change.name) if old is not None else None
        quarantine, recorded, stands = _quarantine(doc, old, upstream, previous or {}, rules)
        records[change.name] = {**records[change.name], "scan": {"upstream": upstream, "quarantine": list(recorded)}}
        if stands and rules:
            cleared.append(change.name)
        if quarantine != doc.quarantine:
            merged[change.name] = doc.model_copy(update={"quarantine": quarantine})
            if change.action != "add":
                changes[index] = replace(change, action="update", updated=(*change.updated, "quarantine"))
    registry = _validated(merged.values(), existing, out)
    texts: dict[str, tuple[Path, str | None]] = {}
    for change in changes:
        # Rewrite a doc where it lives: a second file beside a hand-renamed `.yml` would be a duplicate.
        stem = f"{change.name}.yml" if (out / f"{change.name}.yml").is_file() else f"{change.name}.yaml"
        if change.action != "unchanged":
            files[stem] = doc_yaml(registry.tools[change.name])
        texts[change.name] = (out / stem, files.get(stem))
    quarantined: dict[str, tuple[Finding, ...]] = {}
    for change in changes:
        doc = registry.tools[change.name]
        if doc.quarantined:
            path, text = texts[change.name]
            siblings = sibling_names(doc, registry.tools.values())
            quarantined[change.name] = tuple(scan(doc, path=path, source=text, full_limit=limit, siblings=siblings))
    new_state = {"version": _STATE_VERSION, "tools": dict(sorted(records.items())), "modes": state["modes"]}
    if files or new_state != state:
        files[STATE_FILE] = json.dumps(new_state, indent=2, ensure_ascii=False) + "\n"
    return ImportPlan(out, server, tuple(changes), vanished, files, new_state, registry, quarantined, tuple(cleared))


def write_files(out: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` (relative path → text) under ``out`` via a staging folder, then move them into place.

    A new ``out`` appears whole in one rename; into an existing one, each file is replaced atomically.
    """
    if not files:
        return
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = out.parent / f".{out.name}.import-{secrets.token_hex(4)}"
        staging.mkdir()  # not mkdtemp: the folder becomes `out`, so it gets the usual permissions
        try:
            _write_tree(staging, files)
            staging.rename(out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=out))
    try:
        _write_tree(staging, files)
        for relative in files:
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / relative, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_tree(root: Path, files: Mapping[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def apply_plan(plan: ImportPlan) -> None:
    write_files(plan.out, plan.files)


def import_json(
    path: str | Path,
    out: str | Path,
    *,
    server: str | None = None,
    group: str = "mcp",
    write_group: str | None = None,
    prefix: str = "",
    dry_run: bool = False,
) -> ImportPlan:
    """Import a JSON tool list file into the folder ``out`` (all or nothing; merges with earlier imports).

    Read-only tools go to ``group``, writing ones to ``write_group`` (default ``<group>-write``).
    """
    _, tools = read_tool_list(path)
    server = server or Path(path).stem
    plan = _plan(tools, out, server=server, group=group, write_group=write_group, prefix=prefix)
    if not dry_run:
        apply_plan(plan)
    return plan


def _plan(
    tools: Sequence[UpstreamTool], out: str | Path, *, server: str, group: str, write_group: str | None, prefix: str
) -> ImportPlan:
    drafted = draft_docs(tools, server=server, group=group, write_group=write_group, prefix=prefix)
    placements = {doc.name: placement for doc, placement in drafted}
    return plan_import(out, [doc for doc, _ in drafted], server=server, placements=placements)


# --- MCP servers over stdio ---------------------------------------------------------------------------


@dataclass(frozen=True)
class McpListing:
    server: str  # the server's self-declared name (initialize → serverInfo.name)
    version: str | None
    tools: tuple[UpstreamTool, ...]


_MAX_PAGES = 1000


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _exceptions(exc: BaseException) -> Iterable[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _exceptions(inner)
    else:
        yield exc


def _one_line(exc: BaseException) -> str:
    """An exception as one short line (pydantic's multi-line reports reduced to their first error)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            return f"invalid answer from the server: {where}: {first['msg']}"
        except (TypeError, IndexError, KeyError):
            pass
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def list_mcp_tools(
    command: Sequence[str],
    *,
    timeout: float = 30.0,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> McpListing:
    """Start the MCP server ``command`` over stdio, list every tool (following pagination), stop it.

    ``timeout`` bounds the start and the listing together. The server inherits this process's environment
    (plus ``env``). Needs the optional ``mcp`` SDK (``pip install 'prompt-composer[mcp]'``).
    """
    if not command:
        raise ImporterError("no MCP server command given (put it after --)")
    try:
        import anyio
        from mcp import Client, StdioServerParameters, stdio_client
    except ImportError:
        raise ImporterError(
            "importing from an MCP server needs the mcp SDK: pip install 'prompt-composer[mcp]'"
        ) from None

    shown = " ".join(command)
    logger = logging.getLogger("mcp")
    collect = _Collect()

    async def run(errlog: Any) -> McpListing:
        params = StdioServerParameters(
            command=command[0], args=list(command[1:]), env={**os.environ, **(env or {})}, cwd=cwd
        )
        with anyio.fail_after(timeout):
            async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
                info = client.server_info
                tools: list[Any] = []
                cursor: str | None = None
                seen: set[str] = set()
                for _ in range(_MAX_PAGES):
                    page = await client.list_tools(cursor=cursor)
                    tools += page.tools
                    cursor = page.next_cursor
                    if not cursor or cursor in seen:
                        break
                    seen.add(cursor)
        raw = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
        _, parsed = parse_tool_list({"tools": raw}, source=f"MCP server {shown!r}") if raw else ("mcp", [])
        name = info.name if info is not None and info.name else Path(command[0]).name
        return McpListing(name, info.version if info is not None else None, tuple(parsed))

    def stderr_tail(errlog: Any) -> str:
        errlog.seek(0)
        lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
        return f"; its last stderr line: {lines[-1][:200]}" if lines else ""

    propagate = logger.propagate
    logger.addHandler(collect)
    logger.propagate = False
    try:
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                return anyio.run(run, errlog)
            except ImporterError:
                raise
            except TimeoutError:
                raise ImporterError(
                    f"MCP server {shown!r} did not list its tools within {timeout:g} s (--timeout){stderr_tail(errlog)}"
                ) from None
            except OSError as exc:
                raise ImporterError(f"cannot start MCP server {shown!r}: {exc}") from None
            except Exception as exc:
                inner = [e for e in _exceptions(exc) if not isinstance(e, ImporterError)]
                nested = [e for e in _exceptions(exc) if isinstance(e, ImporterError)]
                if nested:
                    raise nested[0] from None
                if any(isinstance(e, TimeoutError) for e in inner):
                    raise ImporterError(
                        f"MCP server {shown!r} did not list its tools within {timeout:g} s{stderr_tail(errlog)}"
                    ) from None
                if any(isinstance(e, OSError) for e in inner):
                    error = next(e for e in inner if isinstance(e, OSError))
                    raise ImporterError(f"cannot start MCP server {shown!r}: {error}") from None
                detail = "; ".join(dict.fromkeys(_one_line(e) for e in inner)) or _one_line(exc)
                if "closed" in detail.lower():
                    detail = "it exited or closed its output before listing its tools"
                raise ImporterError(f"MCP server {shown!r} failed: {detail}{stderr_tail(errlog)}") from None
    finally:
        logger.removeHandler(collect)
        logger.propagate = propagate


def import_mcp(
    command: Sequence[str],
    out: str | Path,
    *,
    server: str | None = None,
    group: str = "mcp",
    write_group: str | None = None,
    prefix: str = "",
    timeout: float = 30.0,
    dry_run: bool = False,
) -> ImportPlan:
    """List an MCP server's tools over stdio and import them into ``out`` (all or nothing; merges).

    Read-only tools go to ``group``, writing ones to ``write_group`` (default ``<group>-write``).
    """
    listing = list_mcp_tools(command, timeout=timeout)
    if not listing.tools:
        raise ImporterError(f"MCP server {' '.join(command)!r} lists no tools")
    server = server or listing.server
    plan = _plan(listing.tools, out, server=server, group=group, write_group=write_group, prefix=prefix)
    if not dry_run:
        apply_plan(plan)
    return plan
