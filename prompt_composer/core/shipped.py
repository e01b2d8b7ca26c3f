"""The shipped section templates and their code generated ahead of time (:mod:`.precompiled`): where they are,
and the code of one whose text is the one it was generated from. Read by :mod:`.sections` (which runs that code
without Jinja) and :mod:`.templating` (which hands it to Jinja)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from types import CodeType

__all__ = ["PACKAGE", "PRECOMPILED", "SHIPPED", "shipped_code"]

PACKAGE = "prompt_composer.core"
PRECOMPILED = f"{PACKAGE}.precompiled"
SHIPPED = Path(__file__).parent / "templates"


def shipped_code(name: str, checksum: str) -> CodeType | None:
    """The package's generated code of the template ``name`` when it was generated from a source whose checksum
    (Jinja's: SHA-1 of the text) is ``checksum``; else None."""
    try:
        from . import precompiled
    except ImportError:  # a build without it
        return None
    entry = precompiled.TEMPLATES.get(name)
    if entry is None or entry[0] != checksum:
        return None
    try:
        spec = importlib.util.find_spec(f"{PRECOMPILED}.{entry[1]}")
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None
        return spec.loader.get_code(spec.name)  # from its byte-compiled file, as an import would
    except (ImportError, OSError, SyntaxError, ValueError):
        return None
