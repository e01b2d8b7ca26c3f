"""Import tool catalogs: JSON tool lists (Anthropic, OpenAI, MCP ``tools/list``) and live MCP servers.

An import turns upstream tool definitions into tool docs: the full form is the upstream description plus a
parameter reference rendered from the input schema; the brief is *drafted* from the description (within the
brief limits, without parameter details) and marked ``brief_source: drafted`` for human review. Names the
APIs refuse are mapped to valid ones and the original is kept in ``origin`` so calls can be routed back.

Imports are all-or-nothing and re-imports merge (see :func:`plan_import`): every doc is built and the folder's
whole registry validated in memory first; files are written to a staging folder and moved into place only
when everything is valid.

What the importer wrote last time is recorded in ``<folder>/.import-state.json``: per doc, its origin and a
hash of the brief and of the full text as written. A doc whose text no longer hashes to the record was edited
by a person and is kept; one that still does is regenerated. Hashing what was *written* (rather than
re-deriving it from the old upstream definition) keeps the merge right even when the drafting rules change.

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

from .docs import BRIEF_MAX_WORDS, NAME_PATTERN, Origin, ToolDoc
from .errors import ImporterError, LoadError
from .registry import Registry, load_registry
from .security import (
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

__all__ = [
    "STATE_FILE",
    "DocChange",
    "ImportPlan",
    "McpListing",
    "ToolListFormat",
    "UpstreamTool",
    "api_name",
    "apply_plan",
    "doc_yaml",
    "draft_brief",
    "dump_yaml",
    "import_json",
    "import_mcp",
    "list_mcp_tools",
    "parse_tool_list",
    "plan_import",
    "read_tool_list",
    "render_full",
    "tool_docs_from_upstream",
]

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
    r"^\s*(?:#+\s|args?:|arguments:|parameters?:|params:|inputs?:|returns?:|example|usage:|note:|```)",
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


def draft_brief(tool: UpstreamTool, *, server: str = "", siblings: Iterable[str] = ()) -> str:
    """A brief drafted from the description: its opening sentences without parameter details, ≤ 60 words.

    An upstream's orders to the model are not carried over: markup that hides text (comments, ``<IMPORTANT>``
    blocks with their content, hidden elements) and invisible characters are stripped first, and every
    sentence the security lint flags at ``QUARANTINE_SEVERITY`` or above (see :mod:`prompt_composer.security`)
    is dropped. ``siblings`` are the names of the server's other tools (calling one first is no finding).
    """
    parameters = tuple(tool.input_schema.get("properties", {}))
    siblings = tuple(siblings)
    prose = _lead_prose(clean_prose(tool.description))
    found = _sentences(prose)
    sentences = [s for s in found if not _addresses_model(s, siblings)]
    kept = [s for s in sentences if not _mentions_parameter(s, parameters)] or sentences[:1]
    chosen: list[str] = []
    words = 0
    for sentence in kept:
        n = len(sentence.split())
        if chosen and (words + n > _BRIEF_TARGET_WORDS or len(chosen) == 3):
            break
        chosen.append(sentence)
        words += n
    brief = _BOLD.sub(r"\1", " ".join(chosen)).replace("`", "").strip()
    if not brief:
        label = clean_prose(tool.title or "") or tool.name
        where = f" of the {server} server" if server else ""
        if found:  # every sentence addressed the model
            return f"The {label} tool{where}; its upstream description needs review before use."
        return f"The {label} tool{where}; its upstream definition has no description."
    if len(brief.split()) > BRIEF_MAX_WORDS:
        brief = " ".join(brief.split()[:_BRIEF_TARGET_WORDS]).rstrip(",;:") + " …"
    if brief[-1].isalnum() or brief[-1] in ")]'\"":
        brief += "."
    elif brief.endswith(":"):
        brief = brief[:-1] + "."
    return brief


def _addresses_model(sentence: str, siblings: Sequence[str]) -> bool:
    """Whether the lint flags ``sentence`` at quarantine severity (an order to the model, a hidden character …)."""
    return any(at_least(m.severity, QUARANTINE_SEVERITY) for m in scan_text(sentence, siblings=siblings))


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


def _nested(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The object schema whose properties deserve a nested list (an object, or an array of objects)."""
    if isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        return schema
    items = schema.get("items")
    if isinstance(items, Mapping) and isinstance(items.get("properties"), Mapping) and items["properties"]:
        return items
    return None


def _parameter_lines(schema: Mapping[str, Any], depth: int = 0) -> list[str]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", [])) if isinstance(schema.get("required"), list) else set()
    indent = "  " * depth
    lines: list[str] = []
    for name, sub in properties.items():
        sub = sub if isinstance(sub, Mapping) else {}
        head = [_type_label(sub), "required" if name in required else "optional", *_facts(sub)]
        description = " ".join(str(sub.get("description") or sub.get("title") or "").split())
        line = f"{indent}- `{name}` ({', '.join(head)})"
        lines.append(f"{line}: {description}" if description else line)
        nested = _nested(sub)
        if nested is not None and depth < 3:
            lines += _parameter_lines(nested, depth + 1)
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


def tool_docs_from_upstream(
    tools: Sequence[UpstreamTool], *, server: str, group: str = "mcp", prefix: str = ""
) -> list[ToolDoc]:
    """One drafted tool doc per upstream tool; two originals mapping to one name (or file) are an error."""
    by_name: dict[str, str] = {}
    docs: list[ToolDoc] = []
    names = {tool.name: api_name(tool.name, prefix=prefix) for tool in tools}
    for tool in tools:
        name = names[tool.name]
        siblings = [n for original, mapped in names.items() if original != tool.name for n in (original, mapped)]
        clash = by_name.get(name.casefold())
        if clash is not None:
            raise ImporterError(
                f"tools {clash!r} and {tool.name!r} of {server!r} both map to the name {name!r} "
                "(names must match ^[a-zA-Z0-9_-]{1,64}$ and differ in more than case)"
            )
        by_name[name.casefold()] = tool.name
        try:
            docs.append(
                ToolDoc(
                    name=name,
                    group=group,
                    brief=draft_brief(tool, server=server, siblings=siblings),
                    full=render_full(tool, name),
                    input_schema=tool.input_schema,
                    brief_source="drafted",
                    origin=Origin(server=server, name=tool.name),
                )
            )
        except ValueError as exc:  # pydantic's ValidationError: one line per problem, prefixed with the tool
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {str(e['msg']).removeprefix('Value error, ')}"
                for e in getattr(exc, "errors", lambda: [])()
            )
            raise ImporterError(f"tool {tool.name!r} of {server!r}: {detail or exc}") from None
    return docs


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
    """What an import does to one doc. ``updated``/``kept`` name fields: brief, full, input_schema."""

    name: str
    origin: str
    action: Literal["add", "update", "unchanged"]
    updated: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()

    def describe(self) -> str:
        notes = []
        if self.updated:
            notes.append("updated " + ", ".join(self.updated))
        if self.kept:
            notes.append("kept edited " + ", ".join(self.kept))
        suffix = f": {'; '.join(notes)}" if notes else ""
        return f"{self.action:<9} {self.name}  ({self.origin}){suffix}"


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
        drafted = [c.name for c in self.changes if self.registry.tools[c.name].brief_source == "drafted"]
        if drafted:
            lines.append(f"{len(drafted)} drafted brief(s) to review: prompt-composer --docs {self.out} audit")
        lines += self.quarantine_report()
        lines.append(files_summary(self.files, self.out, dry_run=dry_run))
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
    try:
        return Registry.from_docs(tools, modes, root=out)
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


def plan_import(out: str | Path, docs: Sequence[ToolDoc], *, server: str) -> ImportPlan:
    """Merge freshly drafted ``docs`` of ``server`` into the folder ``out``, in memory only.

    Rules, per doc: a new name is added; for an existing doc of the same origin, the brief and the full text
    are each regenerated if the doc still holds what the importer wrote last time, and kept if a person edited
    them (or there is no record); the input schema always follows upstream; group, queries and hint are the
    person's. A name already used by a doc from elsewhere is an error. Docs of ``server`` whose tool is no
    longer listed are reported as vanished and left in place. The resulting registry (with the folder's modes)
    must validate.

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
    for doc in docs:
        assert doc.origin is not None
        label = escape_invisible(f"{server}: {doc.origin.name}")
        new_record: dict[str, Any] = {
            "server": server,
            "name": doc.origin.name,
            "brief": text_hash(doc.brief),
            "full": text_hash(doc.full),
        }
        old = current.get(doc.name)
        if old is None:
            merged[doc.name] = doc
            records[doc.name] = new_record
            changes.append(DocChange(doc.name, label, "add"))
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
            if record.get(key) != text_hash(mine):  # edited by a person since the last import (or never ours)
                if mine != theirs:
                    kept.append(key)
                    new_record[key] = record.get(key)  # stays "edited" until the text matches again
            elif mine != theirs:
                updates[key] = theirs
                updated.append(key)
        if "brief" in updated:
            updates["brief_source"] = "drafted"
        if old.input_schema != doc.input_schema:
            updated.append("input_schema")
        merged[doc.name] = old.model_copy(update=updates)
        records[doc.name] = new_record
        changes.append(DocChange(doc.name, label, "update" if updated else "unchanged", tuple(updated), tuple(kept)))
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
    prefix: str = "",
    dry_run: bool = False,
) -> ImportPlan:
    """Import a JSON tool list file into the folder ``out`` (all or nothing; merges with earlier imports)."""
    _, tools = read_tool_list(path)
    server = server or Path(path).stem
    plan = plan_import(out, tool_docs_from_upstream(tools, server=server, group=group, prefix=prefix), server=server)
    if not dry_run:
        apply_plan(plan)
    return plan


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
    prefix: str = "",
    timeout: float = 30.0,
    dry_run: bool = False,
) -> ImportPlan:
    """List an MCP server's tools over stdio and import them into ``out`` (all or nothing; merges)."""
    listing = list_mcp_tools(command, timeout=timeout)
    if not listing.tools:
        raise ImporterError(f"MCP server {' '.join(command)!r} lists no tools")
    server = server or listing.server
    plan = plan_import(
        out, tool_docs_from_upstream(listing.tools, server=server, group=group, prefix=prefix), server=server
    )
    if not dry_run:
        apply_plan(plan)
    return plan
