"""JSON Schema helpers for tool input schemas: a prose-free copy for brief definitions, and a small validator.

The validator covers the subset tool schemas use (type, properties, required, additionalProperties, items, enum,
const, anyOf, oneOf, allOf, not, minimum/maximum (exclusive too), minLength/maxLength, minItems/maxItems,
pattern, uniqueItems, local $ref). Unknown keywords (format, default, title…) are ignored, as JSON Schema says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

_SCHEMA_ANNOTATIONS = frozenset({"description", "title", "examples", "$comment"})


_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})


def strip_descriptions(schema: Any) -> Any:
    """A copy of a JSON Schema without prose (descriptions, titles, examples); names, types, enums stay.

    Keywords are told apart from property names, so a parameter *called* ``description`` survives.
    """
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_ANNOTATIONS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: strip_descriptions(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [strip_descriptions(sub) for sub in value]
        elif isinstance(value, dict):
            out[key] = strip_descriptions(value)  # items, additionalProperties, not, if/then/else…
        else:
            out[key] = value
    return out


_TYPES: Mapping[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, Mapping),
    "null": lambda v: v is None,
}


_BOUNDS = (
    ("minimum", "less than"),
    ("maximum", "greater than"),
    ("exclusiveMinimum", "at most"),
    ("exclusiveMaximum", "at least"),
)


def _within(key: str, value: float, bound: float) -> bool:
    if key == "minimum":
        return value >= bound
    if key == "maximum":
        return value <= bound
    if key == "exclusiveMinimum":
        return value > bound
    return value < bound


def validate_arguments(schema: Mapping[str, Any], value: Any) -> list[str]:
    """Every way ``value`` breaks ``schema``, as ``path: problem`` lines (empty when it conforms)."""
    problems: list[str] = []
    _check(schema, value, "arguments", problems, schema, 0)
    return problems


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref.lstrip("#").split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def _kind(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


def _check(schema: Any, value: Any, path: str, out: list[str], root: Mapping[str, Any], depth: int) -> None:
    if not isinstance(schema, Mapping) or depth > 32:
        if schema is False:
            out.append(f"{path}: not allowed here")
        return
    if "$ref" in schema:
        target = _resolve_ref(str(schema["$ref"]), root)
        if target is not None:
            _check(target, value, path, out, root, depth + 1)
    if not _check_type(schema, value, path, out):
        return
    _check_values(schema, value, path, out)
    if isinstance(value, str):
        _check_string(schema, value, path, out)
    if _TYPES["number"](value):
        _check_number(schema, value, path, out)
    if isinstance(value, list | tuple):
        _check_array(schema, value, path, out, root, depth)
    if isinstance(value, Mapping):
        _check_object(schema, value, path, out, root, depth)
    _check_combinators(schema, value, path, out, root, depth)


def _check_type(schema: Mapping[str, Any], value: Any, path: str, out: list[str]) -> bool:
    """``type``: False (after reporting it) when ``value`` has none of the allowed types."""
    expected = schema.get("type")
    if expected is not None:
        kinds = [expected] if isinstance(expected, str) else list(expected)
        if not any(_TYPES.get(k, lambda _v: True)(value) for k in kinds):
            out.append(f"{path}: expected {' or '.join(kinds)}, got {_kind(value)}")
            return False
    return True


def _check_values(schema: Mapping[str, Any], value: Any, path: str, out: list[str]) -> None:
    """``enum`` and ``const``."""
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: must be one of {json.dumps(schema['enum'], ensure_ascii=False)}")
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: must be {json.dumps(schema['const'], ensure_ascii=False)}")


def _check_string(schema: Mapping[str, Any], value: str, path: str, out: list[str]) -> None:
    """``minLength``, ``maxLength`` and ``pattern`` (an invalid pattern is ignored)."""
    if "minLength" in schema and len(value) < schema["minLength"]:
        out.append(f"{path}: shorter than {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        out.append(f"{path}: longer than {schema['maxLength']} characters")
    if "pattern" in schema:
        try:
            if re.search(schema["pattern"], value) is None:
                out.append(f"{path}: does not match the pattern {schema['pattern']}")
        except re.error:
            pass


def _check_number(schema: Mapping[str, Any], value: float, path: str, out: list[str]) -> None:
    """``minimum``, ``maximum`` and their exclusive forms."""
    for key, words in _BOUNDS:
        bound = schema.get(key)
        if isinstance(bound, int | float) and not isinstance(bound, bool) and not _within(key, value, bound):
            out.append(f"{path}: {value} is {words} {bound}")


def _check_array(
    schema: Mapping[str, Any],
    value: list[Any] | tuple[Any, ...],
    path: str,
    out: list[str],
    root: Mapping[str, Any],
    depth: int,
) -> None:
    """``minItems``, ``maxItems``, ``uniqueItems`` and ``items``."""
    if "minItems" in schema and len(value) < schema["minItems"]:
        out.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        out.append(f"{path}: more than {schema['maxItems']} items")
    if schema.get("uniqueItems"):
        seen = [json.dumps(v, sort_keys=True, default=str) for v in value]
        if len(set(seen)) != len(seen):
            out.append(f"{path}: items must be unique")
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            _check(items, item, f"{path}[{index}]", out, root, depth + 1)


def _check_object(
    schema: Mapping[str, Any], value: Mapping[str, Any], path: str, out: list[str], root: Mapping[str, Any], depth: int
) -> None:
    """``required``, ``properties`` and ``additionalProperties``."""
    properties = schema.get("properties", {})
    properties = properties if isinstance(properties, Mapping) else {}
    for name in schema.get("required", []):
        if name not in value:
            out.append(f"{path}: missing required {name!r}")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            _check(properties[key], item, f"{path}.{key}", out, root, depth + 1)
        elif extra is False:
            allowed = ", ".join(properties) or "none"
            out.append(f"{path}: unknown parameter {key!r} (allowed: {allowed})")
        elif isinstance(extra, Mapping):
            _check(extra, item, f"{path}.{key}", out, root, depth + 1)


def _check_combinators(
    schema: Mapping[str, Any], value: Any, path: str, out: list[str], root: Mapping[str, Any], depth: int
) -> None:
    """``allOf``, ``anyOf``, ``oneOf`` and ``not``."""
    for sub in schema.get("allOf", []):
        _check(sub, value, path, out, root, depth + 1)
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if isinstance(options, list) and options:
            matches = 0
            for option in options:
                trial: list[str] = []
                _check(option, value, path, trial, root, depth + 1)
                matches += not trial
            if matches == 0:
                out.append(f"{path}: matches none of the allowed forms ({keyword})")
            elif keyword == "oneOf" and matches > 1:
                out.append(f"{path}: matches more than one of the allowed forms (oneOf)")
    if "not" in schema:
        trial = []
        _check(schema["not"], value, path, trial, root, depth + 1)
        if not trial:
            out.append(f"{path}: matches a form that is not allowed")
