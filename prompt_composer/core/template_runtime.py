"""Running the shipped templates' precompiled code without importing Jinja.

The code in :mod:`.precompiled` is what Jinja generates from the shipped templates (see :mod:`.templating`); it
needs of Jinja only a small runtime: the names it imports from ``jinja2.runtime`` and an environment and context
with a few methods (``getattr``, ``undefined``, ``concat``, three filters and a test; ``resolve_or_missing``,
``call``, ``vars``). Importing Jinja is a sixth of a warm ``compose``'s start, so this module gives the code that
runtime, with Jinja's semantics for what the shipped templates use (``StrictUndefined``, ``autoescape`` off, the
``default``, ``join`` and ``tojson`` filters, the ``defined`` test, ``loop.index``), and nothing more.

Whatever the code meets beyond that (a name, filter, attribute or value this runtime does not have, an undefined
variable) raises, and :class:`~.sections.Sections` then renders the section with Jinja itself, whose output or
error is the one a user gets: this runtime can make a section faster, never different.
``tests/core/test_sections.py`` renders every shipped mode both ways and compares.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import CodeType
from typing import Any

__all__ = ["Root", "Unsupported", "load", "render"]


class Unsupported(Exception):  # a signal to render with Jinja, not an error anyone sees
    """The code met something this runtime does not do as Jinja does (or an error Jinja should report)."""


class _Missing:
    """Jinja's ``missing``: a name the context does not hold."""

    def __repr__(self) -> str:
        return "missing"


missing = _Missing()


def _fail(self: Undefined, *args: Any, **kwargs: Any) -> Any:
    raise Unsupported(f"an undefined value ({self.name!r}) was used")


class Undefined:
    """``StrictUndefined``: any use of the value raises (and Jinja, rendering again, says which)."""

    __slots__ = ("name",)

    def __init__(self, hint: str | None = None, obj: Any = missing, name: str | None = None, exc: Any = None) -> None:
        self.name = name

    __iter__ = __str__ = __len__ = __eq__ = __ne__ = __bool__ = __hash__ = __contains__ = _fail
    __getattr__ = __getitem__ = __add__ = __radd__ = __call__ = __lt__ = __le__ = __gt__ = __ge__ = _fail


def _unsupported(*args: Any, **kwargs: Any) -> Any:
    raise Unsupported("a part of Jinja's runtime the shipped templates do not use")


# What the generated code imports from jinja2.runtime; the names it never uses raise if it ever does.
Macro = Markup = Namespace = TemplateReference = escape = markup_join = _unsupported


class TemplateRuntimeError(Exception):
    """Raised by the generated code for a filter or test it cannot find."""


TemplateNotFound = TemplateRuntimeError


def identity(value: Any) -> Any:
    return value


def internalcode(function: Callable[..., Any]) -> Callable[..., Any]:
    return function


def str_join(seq: Iterable[Any]) -> str:
    return "".join(map(str, seq))


class _Loop:
    """The ``loop`` of a ``for``: its ``index`` (from 1), ``index0`` and ``first``; any other attribute is missing
    here (an undefined value, and so Jinja's rendering)."""

    __slots__ = ("index0",)

    def __init__(self) -> None:
        self.index0 = -1

    @property
    def index(self) -> int:
        return self.index0 + 1

    @property
    def first(self) -> bool:
        return self.index0 == 0


def _loop_context(iterable: Iterable[Any], undefined: Any, recurse: Any = None, depth0: int = 0) -> Iterator[Any]:
    if recurse is not None or depth0:
        raise Unsupported("a recursive loop")
    loop = _Loop()
    for item in iterable:
        loop.index0 += 1
        yield item, loop


LoopContext = _loop_context


class _EvalContext:
    autoescape = False
    volatile = False


def _default(value: Any, default_value: Any = "", boolean: bool = False) -> Any:
    return default_value if isinstance(value, Undefined) or (boolean and not value) else value


def _join(eval_ctx: Any, value: Iterable[Any], d: str = "", attribute: Any = None) -> str:
    if attribute is not None:
        raise Unsupported("join with an attribute")
    return str(d).join(map(str, value))


def _tojson(eval_ctx: Any, value: Any, indent: int | None = None) -> str:
    # Jinja's htmlsafe_json_dumps with its default policy (sort_keys), as text (autoescape is off).
    text = json.dumps(value, sort_keys=True) if indent is None else json.dumps(value, sort_keys=True, indent=indent)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")


class _Environment:
    """What the generated code asks of ``environment``."""

    filters: Mapping[str, Callable[..., Any]] = {"default": _default, "join": _join, "tojson": _tojson}
    tests: Mapping[str, Callable[..., Any]] = {"defined": lambda value: not isinstance(value, Undefined)}
    undefined = Undefined

    @staticmethod
    def concat(parts: Iterable[str]) -> str:
        return "".join(parts)

    @staticmethod
    def getattr(obj: Any, attribute: str) -> Any:
        try:
            return getattr(obj, attribute)
        except AttributeError:
            pass
        try:
            return obj[attribute]
        except (TypeError, LookupError, AttributeError):
            return Undefined(obj=obj, name=attribute)


class _Context:
    """What the generated code asks of ``context``: the variables given, those the template sets, and calls."""

    eval_ctx = _EvalContext()

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.parent = values
        self.vars: dict[str, Any] = {}
        self.exported_vars: set[str] = set()

    def resolve_or_missing(self, key: str) -> Any:
        if key in self.vars:
            return self.vars[key]
        return self.parent.get(key, missing)

    @staticmethod
    def call(function: Any, *args: Any, **kwargs: Any) -> Any:
        if hasattr(function, "jinja_pass_arg") or hasattr(getattr(function, "__call__", None), "jinja_pass_arg"):  # noqa: B004
            raise Unsupported("a callable that takes Jinja's context")
        return function(*args, **kwargs)


_ENVIRONMENT = _Environment()


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    """The generated code's one import, ``from jinja2.runtime import …``, answered by this module."""
    if name == "jinja2.runtime" and level == 0:
        import sys

        return sys.modules[__name__]
    raise Unsupported(f"the code imports {name}")


_BUILTINS = {**builtins.__dict__, "__import__": _import}

Root = Callable[[_Context], Iterator[str]]


def load(code: CodeType) -> Root:
    """The render function of the template whose generated code is ``code`` (run once, in a namespace of its own
    whose one import this module answers)."""
    namespace: dict[str, Any] = {"environment": _ENVIRONMENT, "__builtins__": _BUILTINS}
    exec(code, namespace)  # the package's own generated code (see .templating)
    root: Root = namespace["root"]
    return root


def render(root: Root, values: Mapping[str, Any]) -> str:
    """The text ``root`` (from :func:`load`) renders from ``values``, as Jinja's ``Template.render`` makes it;
    :class:`Unsupported`, or whatever the code raised, where Jinja must render it instead."""
    return _ENVIRONMENT.concat(root(_Context(values)))
