"""Writing imported docs as YAML a person can read and edit: keys in a fixed order, multi-line text as block
scalars, no line wrapping, and a quarantined doc's file opening with a comment that says why and how to clear it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from ..core.docs import ToolDoc
from ..errors import ImporterError
from ..shared.yamlfile import MAX_YAML_BYTES


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


# libyaml's loader, when PyYAML has it: ten times faster than the pure-Python one the registry loads with.
_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", None)


def _load_back(text: str) -> Any:
    """``text`` loaded as the registry loads it. ASCII text (most docs) is read by libyaml, which reads what this
    dumper writes in ASCII as the pure-Python loader does; other text by the registry's own (pure-Python) loader,
    so a character the two read differently cannot slip through the check."""
    if _FAST_LOADER is not None and text.isascii():
        return yaml.load(text, Loader=_FAST_LOADER)  # CSafeLoader: the safe loader, in C
    return yaml.safe_load(text)


def doc_yaml(doc: ToolDoc) -> str:
    """The YAML file of ``doc``, checked to load back as the same doc."""
    data = doc.model_dump(mode="json", exclude_defaults=True)
    ordered = {key: data[key] for key in _KEY_ORDER if key in data}
    text = dump_yaml(ordered)
    if doc.quarantine:
        text = quarantine_comment(doc.quarantine) + text
    size = len(text.encode("utf-8"))
    if size > MAX_YAML_BYTES:  # the registry would refuse the file: write nothing rather than a folder that fails
        raise ImporterError(
            f"tool {doc.name!r}: its doc would be {size:,} bytes, over the {MAX_YAML_BYTES:,} a tool doc file may "
            "have (its input schema is too large to import)"
        )
    if ToolDoc.model_validate(_load_back(text)) != doc:  # never write what would not load back the same
        raise ImporterError(f"tool {doc.name!r}: its YAML does not round-trip; please report this")
    return text
