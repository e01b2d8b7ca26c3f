"""One readable problem per mistake: a list that is short only because one of its own items failed is reported at
the item, once; a list too short as written is still reported as such."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field, ValidationError

from prompt_composer.shared.yamlfile import validation_problems


class Pair(BaseModel):
    names: tuple[str, ...] = Field(min_length=2)


def messages(data: object) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        Pair.model_validate(data)
    return [p.message for p in validation_problems(Path("pair.yaml"), {}, caught.value, Pair)]


def test_a_list_short_only_by_its_bad_item_reports_the_item() -> None:
    assert messages({"names": ["a", 1]}) == ["names.1: Input should be a valid string"]


def test_a_list_too_short_as_written_is_reported_even_beside_a_bad_item() -> None:
    found = messages({"names": [1]})
    assert found[0] == "names.0: Input should be a valid string"
    assert len(found) == 2 and found[1].startswith("names: Tuple should have at least 2 items")
