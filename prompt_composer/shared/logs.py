"""Loggers that import :mod:`logging` when they are first used: what a command imports on every start should not
include a module it needs only to say something (a warm ``compose`` logs nothing; ``logging`` and the
``traceback`` it imports are ~2 ms of its start). The logger is :func:`logging.getLogger`'s own, so handlers,
levels and ``caplog`` see no difference."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging

__all__ = ["get_logger"]


class _Deferred:
    """Stands for ``logging.getLogger(name)``, which it gets at its first attribute."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attribute: str) -> Any:
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self._name)
        return getattr(self._logger, attribute)


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``, got at its first use."""
    return cast("logging.Logger", _Deferred(name))
