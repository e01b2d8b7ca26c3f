"""Rendering an imported tool's full form: its upstream description, a parameter reference drawn from the input
schema, and the behaviour hints the server declares.

The reference lists each parameter with its type, whether it is required, its constraints and description, and
the parameters of nested objects (followed through local ``$ref``s, ``anyOf``/``oneOf`` variants and ``allOf``
members) a few levels deep.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .tool_list import UpstreamTool


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
