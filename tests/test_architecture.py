"""The package's structure, held to its rule (docs/architecture.md): no import cycles, the layers contract kept,
modules of one concern and a readable size."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "prompt_composer"
# Modules allowed past MAX_LINES, each with its reason (docs/architecture.md says why).
LONG_MODULES: dict[str, str] = {}
MAX_LINES = 650


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path, modules: set[str], *, typing: bool = False) -> set[str]:
    """The package modules ``path`` imports at run time: lazy (in-function) imports included, imports under
    ``if TYPE_CHECKING:`` excluded (included with ``typing``)."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not typing:
                visit(node.orelse)
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in modules else target)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            for field in ("body", "orelse", "finalbody", "handlers"):
                child = getattr(node, field, None)
                if isinstance(child, list):
                    visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {m for m in found if m in modules and m != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def test_no_module_imports_itself_back_through_others() -> None:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: _runtime_imports(path, set(files)) for name, path in files.items()}
    assert _cycles(graph) == []


def test_no_module_needs_the_types_of_a_module_of_its_package_that_imports_it() -> None:
    """Within one subpackage, type-only imports count too: a module that needs the types of a module importing it
    is one tangle with it (the MCP server and the gateway, the test server's replies and wire formats were), to be
    untied by moving what both need down (a protocol the server declares, the reply's data in its own module)."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {
        name: {m for m in _runtime_imports(path, set(files), typing=True) if _package(m) == _package(name)}
        for name, path in files.items()
    }
    assert _cycles(graph) == []


def _package(module: str) -> str:
    return module.rsplit(".", 1)[0]


def test_the_type_import_scan_sees_imports_for_type_checking() -> None:
    # The scan must see an import made for type checking only (the server's of answers.ClientTask), or it proves
    # nothing about them.
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    server = PACKAGE / "mcp" / "server.py"
    assert "prompt_composer.mcp.answers" in _runtime_imports(server, modules, typing=True)
    assert "prompt_composer.mcp.answers" not in _runtime_imports(server, modules)


def test_the_cycle_scan_sees_lazy_imports() -> None:
    # The scan must fail on a cycle made of one top-level and one in-function import, or it proves nothing.
    graph = {"a": {"b"}, "b": {"a"}, "c": set()}
    assert _cycles(graph) == [["a", "b"]]


def test_modules_stay_readable() -> None:
    long = {
        _module_name(p): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert set(long) <= set(LONG_MODULES), long


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter is a dev dependency")
def test_the_layers_contract_holds() -> None:
    done = subprocess.run(["lint-imports", "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 broken" in done.stdout


def test_no_test_imports_another_test_module() -> None:
    for path in (ROOT / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                assert not module.split(".")[-1].startswith("test_"), f"{path.name} imports {module}"
