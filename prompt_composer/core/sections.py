"""The system prompt's sections, rendered from their templates.

A section a user's templates folder does not replace is rendered by the shipped template's precompiled code (see
:mod:`.templating`) through :mod:`.template_runtime`, without importing Jinja (a sixth of a warm ``compose``'s
start); anything else, and any section that runtime does not render (it raises rather than differ), is
rendered by Jinja itself, with the environment :func:`.templating.environment` makes. Both give the same text.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import template_runtime
from .shipped import SHIPPED, shipped_code

__all__ = ["Sections"]


@functools.cache  # the shipped code is the package's: one render function a template and process
def _shipped_root(name: str) -> template_runtime.Root | None:
    """The render function of the shipped template ``name``, when its code is the package's for its text; else
    None (Jinja renders it)."""
    try:
        source = (SHIPPED / name).read_bytes()
    except OSError:
        return None
    code = shipped_code(name, hashlib.sha1(source).hexdigest())  # Jinja's checksum
    if code is None:
        return None
    try:
        return template_runtime.load(code)
    except Exception:  # the code needs what the runtime does not have
        return None


class Sections:
    """Renders the templates ``<section>.j2``: from the folder ``templates`` where it has them, else the shipped
    ones (see the module docstring)."""

    def __init__(self, templates: str | Path | None = None) -> None:
        self.templates = templates
        self._env: Any = None
        self._lock = threading.Lock()

    def render(self, name: str, values: Mapping[str, Any]) -> str:
        """The text of the template ``name`` rendered with ``values`` (as Jinja's ``Template.render``)."""
        root = _shipped_root(name) if self.templates is None else None
        if root is not None:
            try:
                return template_runtime.render(root, values)
            except Exception:  # Jinja renders it again: its text, or its error, is the answer
                pass
        return str(self.jinja().get_template(name).render(values))

    def jinja(self) -> Any:
        """The Jinja environment of these sections, made at its first use."""
        with self._lock:
            if self._env is None:
                from .templating import environment

                self._env = environment(self.templates)
            return self._env
