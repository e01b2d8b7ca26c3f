"""Native tool definitions in each provider's format, so one registry serves Anthropic and OpenAI agents.

The composer produces Anthropic-format definitions (``name``, ``description``, ``input_schema``); this module
converts them to OpenAI's Chat Completions tools (``{"type": "function", "function": {name, description,
parameters}}``) and Responses tools (``{"type": "function", name, description, parameters}``). The JSON Schema is
passed through unchanged, as a copy the caller may edit (for example to add OpenAI's strict-mode
``additionalProperties: false``) without touching the composer's cached prompts.

Native deferral in the Responses API (:func:`responses_native_tools`): the eager tools as functions, every deferred
tool a function with ``defer_loading: true`` and its brief, inside ``namespace`` tools (one per MCP server for
imported tools, described by the server's card when it has one, else per group; at most
:data:`MAX_NAMESPACE_TOOLS` functions each), and a ``tool_search`` tool.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..core.builtins import TOOL_SEARCH_NAME, tool_search_definition
from ..core.tiers import catalog_group

if TYPE_CHECKING:
    from ..core.composer import Composer
    from ..core.registry import Registry

Provider = Literal["anthropic", "openai", "openai-responses"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai", "openai-responses")
MAX_NAMESPACE_TOOLS = 10  # OpenAI: "aim to keep each namespace to fewer than 10 functions"


def to_openai_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """One Anthropic-format tool definition as an OpenAI Chat Completions function tool."""
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "parameters": copy.deepcopy(tool.get("input_schema", {"type": "object", "properties": {}})),
        },
    }


def to_responses_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """One Anthropic-format tool definition as a Responses API function tool."""
    return {"type": "function", **to_openai_tool(tool)["function"]}


def tools_for(provider: Provider, tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The composed tool list (Anthropic format) in ``provider``'s format."""
    if provider == "anthropic":
        return [copy.deepcopy(dict(t)) for t in tools]
    if provider == "openai":
        return [to_openai_tool(t) for t in tools]
    if provider == "openai-responses":
        return [to_responses_tool(t) for t in tools]
    raise ValueError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")


def anthropic_native_tools(tools: Iterable[Mapping[str, Any]], deferred: Iterable[str]) -> list[dict[str, Any]]:
    """The Messages API's own deferral: the ``deferred`` tools marked ``defer_loading`` (the provider keeps them out
    of the prompt until a ``tool_reference`` loads one), the others as they are."""
    hidden = set(deferred)
    return [{**copy.deepcopy(dict(t)), **({"defer_loading": True} if t["name"] in hidden else {})} for t in tools]


@dataclass(frozen=True)
class Namespace:
    """One ``namespace`` tool of a Responses request: its name, what it says it holds, and its deferred tools."""

    name: str
    description: str
    tools: tuple[str, ...]


def namespaces(deferred: Sequence[str], registry: Registry, *, taken: Collection[str] = ()) -> tuple[Namespace, ...]:
    """The ``deferred`` tools grouped into namespaces: by the MCP server an imported tool came from, else by its
    group (in order of first appearance, tools in the given order). A group of more than
    :data:`MAX_NAMESPACE_TOOLS` is split into ``name-1``, ``name-2``, ... of near-equal size. A name that is also a
    tool's (``taken``) gets ``_tools`` appended. Deterministic: the same tools give the same namespaces."""
    groups: dict[str, list[str]] = {}
    for name in deferred:
        groups.setdefault(catalog_group(registry.tools[name]), []).append(name)
    out: list[Namespace] = []
    for group, names in groups.items():
        base = re.sub(r"[^A-Za-z0-9_-]", "_", group)[:48] or "tools"
        if base in taken:
            base += "_tools"
        doc = registry.tools[names[0]]
        card = registry.card_of(names[0])
        if card is not None:  # what the server is for, in its own words: what OpenAI asks a namespace to say
            about = f"{card.label}: {card.description}"
        elif doc.origin is not None:
            about = f"Tools of the {doc.origin.server} MCP server."
        else:
            described = registry.groups.get(group)
            about = described.description if described is not None and described.description else ""
            about = about or f"Tools of the {group} group."
        parts = -(-len(names) // MAX_NAMESPACE_TOOLS)
        size, extra = divmod(len(names), parts)
        start = 0
        for index in range(parts):
            chunk = names[start : start + size + (1 if index < extra else 0)]
            start += len(chunk)
            name = base if parts == 1 else f"{base}-{index + 1}"
            part = "" if parts == 1 else f" (part {index + 1} of {parts})"
            out.append(Namespace(name, f"{about}{part} Functions: {', '.join(chunk)}.", tuple(chunk)))
    return tuple(out)


def tool_search_tool(definition: Mapping[str, Any] | None = None, *, hosted: bool = False) -> dict[str, Any]:
    """The Responses ``tool_search`` tool: executed by the client (our search, with the composed definition's
    description and parameters, by default the built-in one), or ``hosted`` (OpenAI's own search over the declared
    deferred tools)."""
    if hosted:
        return {"type": "tool_search"}
    definition = definition if definition is not None else tool_search_definition()
    return {
        "type": "tool_search",
        "execution": "client",
        "description": definition.get("description", ""),
        "parameters": copy.deepcopy(definition.get("input_schema", {"type": "object", "properties": {}})),
    }


def _deferred_function(definition: Mapping[str, Any]) -> dict[str, Any]:
    return {**to_responses_tool(definition), "defer_loading": True}


def responses_native_tools(
    tools: Sequence[Mapping[str, Any]], deferred: Collection[str], composer: Composer, *, hosted: bool = False
) -> list[dict[str, Any]]:
    """A native-deferral prompt's tools (Anthropic format: the eager ones, ``tool_search``, the fetch tool and the
    deferred ones in full) as Responses tools: the eager ones as functions, in order; the ``deferred`` ones as
    functions with ``defer_loading: true`` and their brief (and brief schema), in :func:`namespaces`; then the
    ``tool_search`` tool (:func:`tool_search_tool`)."""
    names = [str(t["name"]) for t in tools]
    hidden = [n for n in names if n in deferred]
    search = next((t for t in tools if t["name"] == TOOL_SEARCH_NAME), None)
    eager = [to_responses_tool(t) for t in tools if t["name"] not in deferred and t["name"] != TOOL_SEARCH_NAME]
    grouped = [
        {
            "type": "namespace",
            "name": space.name,
            "description": space.description,
            "tools": [_deferred_function(composer.definitions.get(n, full=False)[0]) for n in space.tools],
        }
        for space in namespaces(hidden, composer.registry, taken=composer.registry.tools.keys())
    ]
    return [*eager, *grouped, tool_search_tool(search, hosted=hosted)] if hidden or search else eager


def loaded_namespaces(loaded: Sequence[str], deferred: Sequence[str], composer: Composer) -> list[dict[str, Any]]:
    """What a ``tool_search_output`` carries for the ``loaded`` tools: their full definitions, in the namespaces
    they are declared in (the same names and descriptions: pass the deferred tools the request declares, in its
    order)."""
    wanted = set(loaded)
    out = []
    for space in namespaces(deferred, composer.registry, taken=composer.registry.tools.keys()):
        found = [_deferred_function(composer.definitions.get(n, full=True)[0]) for n in space.tools if n in wanted]
        if found:
            out.append({"type": "namespace", "name": space.name, "description": space.description, "tools": found})
    return out


@dataclass(frozen=True)
class Sdk:
    """A provider's SDK client, and the base class of its API errors (what the CLI needs to run and report)."""

    client: Any
    api_error: type[Exception]
