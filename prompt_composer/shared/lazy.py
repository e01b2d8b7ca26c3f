"""Lazy package exports: a package's public names are imported on first use, not when the package is.

A package lists its exports once, as imports under ``if TYPE_CHECKING:`` (what type checkers and readers see),
and hands its ``__name__`` and ``__file__`` to :func:`attach`, which reads that block and returns the module's
``__getattr__`` and ``__dir__``. So ``import prompt_composer`` costs nothing until a name is used, and
``from prompt_composer import Composer`` imports the composer's modules and nothing else.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def exports_of(source: str) -> dict[str, str]:
    """Name → relative module of every ``from .x import name`` under a top-level ``if TYPE_CHECKING:``."""
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for item in node.body:
                if isinstance(item, ast.ImportFrom) and item.level:
                    module = "." * item.level + (item.module or "")
                    for alias in item.names:
                        found[alias.asname or alias.name] = module
    return found


def attach(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package ``package`` whose ``__init__.py`` is ``init_file``."""
    exports = exports_of(Path(init_file).read_text(encoding="utf-8"))

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
