"""Tool docs: the :class:`ToolDoc` model and YAML loading that reports ``path:line: message``.

A tool doc is one YAML file; unknown keys are refused so a typo (``breif:``) is an error, not a silently
missing field. Validation problems are collected, never raised one at a time, so a user fixing a folder of
docs sees every problem in one run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from ..errors import Problem
from ..shared.yamlfile import ValidatedModels, YamlReader, load_named_model, read_yaml

NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"  # what the Anthropic and OpenAI tool APIs accept
BRIEF_MAX_WORDS = 100
BRIEF_MAX_SENTENCES = 5

# Abbreviations whose dot does not end a sentence.
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl)\.", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f]+(?=\s|$)")  # also CJK full stops


def count_words(text: str) -> int:
    return len(text.split())


def count_sentences(text: str) -> int:
    """Sentences in ``text``: runs of ``.!?`` followed by whitespace or the end; a trailing fragment counts."""
    text = _ABBREVIATIONS.sub("", text.strip())
    if not text:
        return 0
    ends = list(_SENTENCE_END.finditer(text))
    trailing = text[ends[-1].end() :].strip() if ends else text
    return len(ends) + (1 if trailing else 0)


def _schema_error(message: str, *at: str | int) -> PydanticCustomError:
    """A schema problem that remembers where inside the schema it is, so it is reported at that line."""
    return PydanticCustomError("schema", message.replace("{", "{{").replace("}", "}}"), {"at": at})


# Every model here is declared ``defer_build``: pydantic builds a model's validator on its first validation, not
# when the class is made, so a process that loads a registry from the cache's records (shared/yamlcache.py)
# builds none.


class Origin(BaseModel):
    """Where an imported tool came from, so a call can be routed back under its original name."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)
    server: str
    name: str


class ToolDoc(BaseModel):
    """One tool's documentation: a brief form, a full form and the input schema."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str = Field(pattern=NAME_PATTERN)
    group: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    brief: str
    full: str = Field(min_length=1)
    input_schema: dict[str, Any]
    queries: tuple[str, ...] = ()
    hint: str | None = None
    brief_source: Literal["human", "drafted"] = "human"
    origin: Origin | None = None
    # Security findings that hold this tool back (rule ids of prompt_composer.security). While non-empty the tool
    # is quarantined: no mode allows it, so it is never listed, fetched, found or called. Importers set it; a
    # person clears it by deleting the key after reviewing the doc.
    quarantine: tuple[str, ...] = ()

    @field_validator("brief")
    @classmethod
    def _brief_limits(cls, value: str) -> str:
        words = count_words(value)
        if words > BRIEF_MAX_WORDS:
            raise ValueError(f"brief has {words} words; at most {BRIEF_MAX_WORDS} allowed")
        sentences = count_sentences(value)
        if not 1 <= sentences <= BRIEF_MAX_SENTENCES:
            raise ValueError(f"brief has {sentences} sentences; 1 to {BRIEF_MAX_SENTENCES} allowed")
        return value

    @field_validator("input_schema")
    @classmethod
    def _object_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if schema.get("type") != "object":
            raise _schema_error(f"must be 'object' (got {schema.get('type')!r})", "type")
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            raise _schema_error("must map each parameter name to a schema object", "properties")
        for name, sub in properties.items():
            if not isinstance(sub, dict):
                raise _schema_error("must be a schema object", "properties", name)
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise _schema_error("must be a list of parameter names", "required")
        for index, name in enumerate(required):
            if name not in properties:
                raise _schema_error(f"names undefined parameter {name!r}", "required", index)
        return schema

    @field_validator("queries")
    @classmethod
    def _non_empty_queries(cls, queries: tuple[str, ...]) -> tuple[str, ...]:
        if any(not q.strip() for q in queries):
            raise ValueError("queries must be non-empty strings")
        return queries

    @field_validator("quarantine")
    @classmethod
    def _rule_ids(cls, rules: tuple[str, ...]) -> tuple[str, ...]:
        bad = [r for r in rules if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", r)]
        if bad:
            raise ValueError(f"quarantine lists security rule ids (like hidden-markup); got {bad[0]!r}")
        return rules

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(self.input_schema.get("properties", {}))

    @property
    def quarantined(self) -> bool:
        """Held back by a security finding until a person reviews it: no mode allows a quarantined tool."""
        return bool(self.quarantine)


def load_tool_file(
    path: Path, *, read: YamlReader = read_yaml, models: ValidatedModels | None = None
) -> tuple[ToolDoc | None, list[Problem]]:
    """Load one tool doc (read with ``read``, validated unless ``models`` holds it: see
    :func:`~prompt_composer.shared.yamlfile.load_model`); its ``name`` must equal the file's stem."""
    doc, _, problems = load_named_model(path, ToolDoc, "name", read=read, models=models)
    return doc, problems


class GroupDoc(BaseModel):
    """Workflow guidance for one tool group (``tool_docs/groups/<name>.yaml``), shown by tool_search beside
    the group's tools."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    workflow: str = Field(min_length=1)
    description: str = ""


def load_group_file(
    path: Path, *, read: YamlReader = read_yaml, models: ValidatedModels | None = None
) -> tuple[GroupDoc | None, list[Problem]]:
    """Load one group doc (read with ``read``, validated unless ``models`` holds it); its ``name`` must equal the
    file's stem."""
    group, _, problems = load_named_model(path, GroupDoc, "name", read=read, models=models)
    return group, problems
