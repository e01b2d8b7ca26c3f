"""What code depends on: a hash of the source of modules, so that something derived by that code (a validated
model, a fingerprint, a search index) is kept only as long as the code is the same, a checkout's edits included
(the package version alone does not change with them)."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable

from .version import VERSION

_SOURCES: dict[tuple[str, tuple[tuple[str, int], ...]], str | None] = {}


def source_digest(modules: Iterable[str], *, salt: str = "") -> str | None:
    """A hash of this package's version, ``salt`` (the versions of libraries the code relies on) and the source of
    the (imported) ``modules``. ``None`` when a module's source cannot be read (a zip import, a frozen build): then
    nothing derived from that code is to be trusted. Each module is read once per process (again if imported
    again)."""
    names = tuple(sorted(set(modules)))
    key = (salt, tuple((name, id(sys.modules.get(name))) for name in names))
    if key not in _SOURCES:
        _SOURCES[key] = _digest(names, salt)
    return _SOURCES[key]


def _digest(modules: tuple[str, ...], salt: str) -> str | None:
    digest = hashlib.sha256(f"{VERSION}\0{salt}".encode())
    try:
        for module in modules:
            source = getattr(sys.modules.get(module), "__file__", None)
            if not source or not source.endswith(".py"):
                return None
            with open(source, "rb") as handle:
                digest.update(b"\0" + module.encode() + b"\0" + handle.read())
    except OSError:
        return None
    return digest.hexdigest()
