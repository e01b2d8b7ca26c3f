"""Validated models written down as data (prompt_composer.shared.model_records): a record rebuilds the very model
validation gave, on real catalogs; a value or a model that has no exact record gets none; a damaged record is
refused, never half-used; the definition hash follows the model's source; and the JSON the fingerprint hashes is
the one pydantic's serializer writes."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from benchmarks.search_corpora import missing_files
from prompt_composer import ModeConfig, Registry, ToolDoc, load_registry
from prompt_composer.core.cards import ServerCard
from prompt_composer.shared.model_records import Unrecordable, definition, dumps, rebuild, record
from tests.helpers import LARGE_CATALOG_GROUP


def identical(a: Any, b: Any) -> bool:
    """Equal, of the same types all the way down, with the same fields set."""
    if type(a) is not type(b):
        return False
    if isinstance(a, BaseModel):
        return a.model_fields_set == b.model_fields_set and identical(vars(a), vars(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(identical(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.fixture(scope="module")
def large(request: pytest.FixtureRequest) -> Registry:
    """The large catalog (the session's one build, tests/conftest.py's ``large_catalog``), loaded here without
    the parsed-docs cache: every model is validated."""
    if missing_files():
        pytest.skip("the shared corpora are not beside the repository")
    return load_registry(request.getfixturevalue("large_catalog").docs, cache=False)


# The shipped docs, and the large catalog on the worker that builds it once (tests/conftest.py).
WHICH = ["shipped", pytest.param("large", marks=pytest.mark.xdist_group(LARGE_CATALOG_GROUP))]


def models(registry: Registry) -> Iterator[BaseModel]:
    yield from registry.tools.values()
    yield from (mode.config for mode in registry.modes.values())
    yield from registry.groups.values()
    yield from registry.servers.values()


@pytest.mark.parametrize("which", WHICH)
def test_a_record_read_back_from_json_rebuilds_the_validated_model(which: str, request: pytest.FixtureRequest) -> None:
    registry = load_registry(cache=False) if which == "shipped" else request.getfixturevalue("large")
    count = 0
    for obj in models(registry):
        written = record(obj)
        assert written is not None, obj
        rebuilt = rebuild(json.loads(json.dumps(written, ensure_ascii=False)), type(obj))
        assert identical(rebuilt, obj), obj
        count += 1
    assert count >= (30 if which == "shipped" else 330)
    restricted = [m.config for m in registry.modes.values() if m.config.file_restrictions]
    assert restricted  # nested models in a dict (architect's file_restrictions) are among them


def test_the_fields_set_and_defaults_come_back_as_validated() -> None:
    doc = ToolDoc.model_validate(
        {"name": "x", "group": "g", "brief": "  Does x.  ", "full": "Full.", "input_schema": {"type": "object"}}
    )
    rebuilt = rebuild(record(doc), ToolDoc)
    assert identical(rebuilt, doc) and rebuilt.brief == "Does x."  # stripped, as validation left it
    assert rebuilt.model_fields_set == {"name", "group", "brief", "full", "input_schema"}
    assert rebuilt.model_dump(exclude_unset=True) == doc.model_dump(exclude_unset=True)


def schema_doc(schema: dict[str, Any]) -> ToolDoc:
    return ToolDoc(name="x", group="g", brief="Does x.", full="Full.", input_schema={"type": "object", **schema})


@pytest.mark.parametrize(
    "value",
    [math.nan, (1, 2), {1: "a"}, {"a", "b"}, b"bytes", Path("p")],
    ids=["nan", "tuple", "int-key", "set", "bytes", "object"],
)
def test_a_value_json_would_not_give_back_gets_no_record(value: Any) -> None:
    """Built in memory (a YAML file gives none of these), such a doc is validated in every process instead."""
    assert record(schema_doc({"default": value})) is None
    assert record(schema_doc({"default": [1.5, -0.0, math.inf, None, True, "é"]})) is not None


class Extra(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int = 0


class Sets(BaseModel):
    a: set[str] = set()


class Nested(BaseModel):
    inner: tuple[Sets, ...] = ()


@pytest.mark.parametrize("obj", [Extra(a=1, b=2), Sets(a={"x"}), Nested(inner=(Sets(),))], ids=type)
def test_a_model_outside_the_shapes_a_record_holds_gets_none(obj: BaseModel) -> None:
    assert record(obj) is None
    assert definition(type(obj)) is None


def damaged(path: str, value: Any) -> dict[str, Any]:
    written = record(
        ModeConfig(
            slug="m", name="M", role="R.", groups=("edit",), file_restrictions={"edit": {"file_regex": r"\.md$"}}
        )
    )
    assert written is not None
    target = written
    *parents, last = path.split("/")
    for part in parents:
        target = target[part]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return written


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("fields/slug", 7),
        ("fields/recent_size", True),
        ("fields/recent_size", "4"),
        ("fields/groups", "edit"),
        ("fields/groups", [1]),
        ("fields/tool_style", "shell"),
        ("fields/promotion", "never"),
        ("fields/tiers", {"share": 0.1}),
        ("fields/file_restrictions", {"edit": {"file_regex": "x"}}),
        ("fields/file_restrictions", {"edit": {"set": [], "fields": {"file_regex": 1, "description": ""}}}),
        ("fields/slug", KeyError),
        ("fields/extra", 1),
        ("set", ["slug", "nope"]),
        ("set", "slug"),
        ("fields", []),
    ],
)
def test_a_damaged_record_is_refused_whole(path: str, value: Any) -> None:
    with pytest.raises(Unrecordable):
        rebuild(damaged(path, value), ModeConfig)


def test_a_record_nested_past_any_file_is_refused() -> None:
    deep: Any = {"set": [], "fields": {}}
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(Unrecordable):
        rebuild({"set": [], "fields": {**record(schema_doc({}))["fields"], "queries": deep}}, ToolDoc)  # type: ignore[index]


def load_module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


MODEL_SOURCE = """
from pydantic import BaseModel, ConfigDict, field_validator

class Probe(BaseModel):
    model_config = ConfigDict(defer_build=True)
    a: str

    @field_validator("a")
    @classmethod
    def _check(cls, value: str) -> str:
        return value{rule}
"""


def test_the_definition_follows_the_source_of_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A validator edited in a checkout (the package version unchanged) makes a new definition, so no record
    written under the old one is used; a model whose source cannot be read has none, and no record is trusted."""
    path = tmp_path / "records_probe.py"
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    path.write_text(MODEL_SOURCE.format(rule=""))
    first = definition(load_module(path, "records_probe").Probe)
    path.write_text(MODEL_SOURCE.format(rule=".strip()"))
    second = load_module(path, "records_probe").Probe
    assert first is not None and definition(second) not in (None, first)
    path.unlink()
    del sys.modules["records_probe"]
    exec_module = type(sys)("records_nosource")
    exec(MODEL_SOURCE.format(rule=""), exec_module.__dict__)  # a module without a source file
    sys.modules["records_nosource"] = exec_module
    exec_module.Probe.__module__ = "records_nosource"
    assert definition(exec_module.Probe) is None
    assert definition(ToolDoc) == definition(ToolDoc) is not None


HELPED_SOURCE = """
from typing import ClassVar
from pydantic import BaseModel, ConfigDict, field_validator
from records_helper import check

class Helped(BaseModel):
    model_config = ConfigDict(defer_build=True)
    definition_modules: ClassVar[tuple[str, ...]] = ("records_helper",)
    a: str

    @field_validator("a")
    @classmethod
    def _check(cls, value: str) -> str:
        return check(value)
"""


def test_the_definition_follows_the_modules_a_model_names_for_its_validators(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A validator's helper in another module (a server card's sentence count is core/docs.py's) is part of the
    definition when the model names its module: editing the helper alone makes a new definition."""
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    helper, model = tmp_path / "records_helper.py", tmp_path / "records_helped.py"
    model.write_text(HELPED_SOURCE)
    helper.write_text("def check(value: str) -> str:\n    return value\n")
    load_module(helper, "records_helper")
    first = definition(load_module(model, "records_helped").Helped)
    helper.write_text("def check(value: str) -> str:\n    return value.strip()\n")
    load_module(helper, "records_helper")
    second = definition(load_module(model, "records_helped").Helped)
    assert first is not None and second not in (None, first)
    assert ServerCard.definition_modules == ("prompt_composer.core.docs",)
    assert "definition_modules" not in ServerCard.model_fields


def old_fingerprint_text(registry: Registry) -> str:
    payload: dict[str, Any] = {
        "tools": [
            doc.model_dump(mode="json", exclude=None if doc.quarantine else {"quarantine"})
            for doc in registry.tools.values()
        ],
        "modes": [mode.config.model_dump(mode="json") for mode in registry.modes.values()],
    }
    if registry.groups:
        payload["groups"] = [group.model_dump(mode="json") for group in registry.groups.values()]
    if registry.servers:
        payload["servers"] = [card.model_dump(mode="json") for card in registry.servers.values()]
    return json.dumps(payload, sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize("which", WHICH)
def test_dumps_writes_models_as_pydantic_does(which: str, request: pytest.FixtureRequest) -> None:
    """What the registry's fingerprint hashes is unchanged: the same text as from model_dump(mode="json")."""
    registry = load_registry(cache=False) if which == "shipped" else request.getfixturevalue("large")
    payload: dict[str, Any] = {
        "tools": [
            {k: getattr(doc, k) for k in ToolDoc.model_fields if k != "quarantine" or doc.quarantine}
            for doc in registry.tools.values()
        ],
        "modes": [mode.config for mode in registry.modes.values()],
        **({"groups": list(registry.groups.values())} if registry.groups else {}),
        **({"servers": list(registry.servers.values())} if registry.servers else {}),
    }
    assert dumps(payload, lambda: pytest.fail("no fallback"), sort_keys=True, ensure_ascii=False) == (
        old_fingerprint_text(registry)
    )
    # and the registry's own fingerprint is that text's, server cards included (the large catalog has them)
    assert registry.fingerprint == hashlib.sha256(old_fingerprint_text(registry).encode()).hexdigest()[:16]
    assert bool(registry.servers) == (which == "large")


def test_where_json_and_pydantic_part_ways_the_fallback_writes() -> None:
    doc = schema_doc({"maximum": math.inf})
    text = dumps([doc], lambda: [doc.model_dump(mode="json")], sort_keys=True)
    assert json.loads(text)[0]["input_schema"]["maximum"] is None  # pydantic's null, not JSON's Infinity
    registry = Registry.from_docs([doc])
    assert registry.fingerprint == Registry.from_docs([schema_doc({"maximum": None})]).fingerprint
