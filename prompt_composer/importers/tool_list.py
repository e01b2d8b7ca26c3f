"""JSON tool lists: detecting the format (Anthropic, OpenAI, MCP ``tools/list``) and reading the tools.

Whatever the format, each tool becomes an :class:`UpstreamTool`: its name, description, input schema, and (from
MCP) its title and annotations. Every problem is an :class:`ImporterError` naming the source and the tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..core.bounds import MAX_SCHEMA_DEPTH, json_depth
from ..errors import ImporterError, InputFileError
from ..shared.files import read_text

ToolListFormat = Literal["anthropic", "openai", "mcp"]
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
_SCHEMA_KEY: Mapping[ToolListFormat, str] = {"anthropic": "input_schema", "mcp": "inputSchema", "openai": "parameters"}
# The longest description kept (the longest of the real catalogs measured is ~6,000 characters). A longer one is
# cut here, with a note saying so: drafting and the security lint read every character, a model could never use
# megabytes of it, and the doc's file must stay under the size the registry loads (MAX_YAML_BYTES).
MAX_DESCRIPTION_CHARS = 64_000
# The largest input schema taken (as compact JSON; real ones are a few kilobytes): the schema is kept verbatim, so
# a larger one is refused, naming the tool, rather than drafted, scanned and written for minutes.
MAX_SCHEMA_BYTES = 1024 * 1024


@dataclass(frozen=True)
class UpstreamTool:
    """One tool as an upstream source defines it, whatever the format it came in."""

    name: str
    description: str
    input_schema: dict[str, Any]
    title: str | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)


# --- format detection ----------------------------------------------------------------------------------------


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


def _list_format(entries: list[Any], implied: ToolListFormat | None, source: str) -> ToolListFormat:
    """The one format every entry is in (a list that mixes formats, or holds a built-in tool, is refused)."""
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
    return next(iter(formats), "openai")  # name + description only: OpenAI functions without parameters


# --- reading the tools ---------------------------------------------------------------------------------------


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
    if json_depth(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
        raise ImporterError(f"{where}: the input schema is nested more than {MAX_SCHEMA_DEPTH} levels deep")
    size = len(json.dumps(schema, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > MAX_SCHEMA_BYTES:
        raise ImporterError(
            f"{where}: the input schema is {size:,} bytes as JSON, over the limit of {MAX_SCHEMA_BYTES:,}"
        )
    return schema


def _text(value: Any, where: str, key: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ImporterError(f"{where}: '{key}' must be a string (got {type(value).__name__})")
    return value


def _cut(description: str) -> str:
    """``description``, or its first :data:`MAX_DESCRIPTION_CHARS` characters and a note saying it was cut."""
    if len(description) <= MAX_DESCRIPTION_CHARS:
        return description
    kept = description[:MAX_DESCRIPTION_CHARS].rstrip()
    note = f"the upstream description has {len(description):,} characters; the first {MAX_DESCRIPTION_CHARS:,} are kept"
    return f"{kept}\n\n[cut by the importer: {note}]"


def _tool(body: Mapping[str, Any], kind: ToolListFormat, name: str, where: str) -> UpstreamTool:
    """One entry's tool (``body`` is the entry, or its ``function`` object in the Chat Completions format)."""
    annotations = body.get("annotations") if kind == "mcp" else None
    title = body.get("title") or (annotations.get("title") if isinstance(annotations, Mapping) else None)
    return UpstreamTool(
        name=name,
        description=_cut(_text(body.get("description"), where, "description")),
        input_schema=_schema(body.get(_SCHEMA_KEY[kind]), where),
        title=title if isinstance(title, str) and title.strip() else None,
        annotations=dict(annotations) if isinstance(annotations, Mapping) else {},
    )


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
    kind = _list_format(entries, implied, source)
    tools: list[UpstreamTool] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries, 1):
        body = entry["function"] if kind == "openai" and isinstance(entry.get("function"), Mapping) else entry
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ImporterError(f"{source}: tool #{index} has no name")
        if name in seen:
            raise ImporterError(f"{source}: duplicate tool name {name!r} (tools #{seen[name]} and #{index})")
        seen[name] = index
        tools.append(_tool(body, kind, name, f"{source}: tool #{index} ({name!r})"))
    return kind, tools


def read_tool_list(path: str | Path) -> tuple[ToolListFormat, list[UpstreamTool]]:
    """Read and parse a JSON tool list file; invalid JSON is reported as ``file:line:col``."""
    path = Path(path)
    try:  # regular files only, at most MAX_INPUT_BYTES: a FIFO or a device is refused without blocking
        text = read_text(path, what="tool list")
    except InputFileError as exc:
        raise ImporterError(str(exc)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImporterError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ImporterError(f"{path}: invalid JSON: nested too deeply to read") from None
    return parse_tool_list(data, source=str(path))
