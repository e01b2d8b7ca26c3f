"""Each tool's forms as a composer uses them: its native definition (full, brief or stub) with its token count,
and the view of its doc that templates see; built once per tool and form, then shared."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from .docs import ToolDoc
from .prompt import DocView, doc_view
from .schema import strip_descriptions
from .tiers import summary
from .tokens import TokenCounter, count_tools


class ToolDefinitions:
    """The definitions of ``tools`` counted with ``counter``, cached (thread-safe: a race only builds the same value
    twice). A :class:`~prompt_composer.core.composer.Composer` has one as ``composer.definitions``."""

    def __init__(self, tools: Mapping[str, ToolDoc], counter: TokenCounter) -> None:
        self.tools = tools
        self.counter = counter
        self.views: Mapping[str, DocView] = {name: doc_view(doc) for name, doc in tools.items()}
        self._built: dict[tuple[str, bool | str], tuple[dict[str, Any], int]] = {}

    def get(self, name: str, *, full: bool) -> tuple[dict[str, Any], int]:
        """A tool's native definition (full or brief) and its token count.

        The schema is a private copy, so a caller editing a composed tool cannot reach the registry's docs."""
        doc = self.tools[name]
        if full:
            return self._build((name, full), lambda: {
                "name": name, "description": doc.full, "input_schema": copy.deepcopy(doc.input_schema)
            })  # fmt: skip
        return self._build((name, full), lambda: {
            "name": name, "description": doc.brief, "input_schema": strip_descriptions(doc.input_schema)
        })  # fmt: skip

    def stub(self, name: str, *, summarised: bool) -> tuple[dict[str, Any], int]:
        """A tool's stub definition (a tiered mode with ``stubs: true``): its name, its catalog summary when
        ``summarised`` (else no description), and a schema that takes any object; and its token count."""
        doc = self.tools[name]
        return self._build((name, "stub" if summarised else "bare"), lambda: {
            "name": name, "description": summary(doc) if summarised else "", "input_schema": {"type": "object"}
        })  # fmt: skip

    def _build(self, key: tuple[str, bool | str], build: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], int]:
        """The definition cached under ``key`` and its token count, built and counted on first use."""
        cached = self._built.get(key)
        if cached is None:
            definition = build()
            cached = (definition, count_tools(self.counter, [definition]))
            self._built[key] = cached  # a race only builds the same value twice
        return cached
