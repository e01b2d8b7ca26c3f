"""prompt_composer.shared.jsonwrite.indented writes exactly what json.dumps(indent=2, ensure_ascii=False) writes:
on composed tool lists, on any JSON data, and on what JSON cannot hold (left to json.dumps, which writes or refuses
it as it always has)."""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_composer import Composer, load_registry
from prompt_composer.shared.jsonwrite import indented


def reference(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=5)
        | st.tuples(children, children)
        | st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_any_json_data_is_written_as_json_dumps_writes_it(value: Any) -> None:
    assert indented(value) == reference(value)


def test_a_composed_tool_list_is_written_as_json_dumps_writes_it() -> None:
    registry = load_registry(cache=False)
    composer = Composer(registry)
    for slug in registry.modes:
        prompt = composer.compose(slug)
        assert indented(list(prompt.tools)) == reference(list(prompt.tools))
        assert indented(prompt.as_dict()) == reference(prompt.as_dict())


class Colour(enum.IntEnum):
    RED = 1


class Name(enum.StrEnum):
    A = "a"


@pytest.mark.parametrize(
    "value",
    [
        {1: "a", False: "b", None: "c", 2.5: "d"},
        [Colour.RED, Name.A],
        {"big": 10**30, "odd": [math.inf, -math.inf, math.nan, -0.0, 1e-300]},
        "\u2028 \x00 \ud800 é \x7f",
        [[[[[]]]], {}, [{}], {"a": []}],
    ],
    ids=["non-string-keys", "enums", "numbers", "controls", "empties"],
)
def test_edge_values_are_written_as_json_dumps_writes_them(value: Any) -> None:
    assert indented(value) == reference(value)


@pytest.mark.parametrize("value", [{"a": {1, 2}}, {("a", 1): 1}, object()], ids=["set", "tuple-key", "object"])
def test_what_json_cannot_hold_is_refused_as_json_dumps_refuses_it(value: Any) -> None:
    with pytest.raises(TypeError) as ours:
        indented(value)
    with pytest.raises(TypeError) as theirs:
        reference(value)
    assert str(ours.value) == str(theirs.value)


def test_a_circular_or_very_deep_value_is_left_to_json_dumps() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        indented(loop)
    deep: Any = "x"
    for _ in range(600):
        deep = [deep]
    assert indented(deep) == reference(deep)
