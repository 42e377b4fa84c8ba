"""The project's import graph, read from the source with ``ast`` (issue #32): no circle, core/nets/ depends on torch
only, no module ``__getattr__`` shim, no re-export kept for callers, one bounded cache class, no file over 450 lines.

Every import counts, wherever it is written: at the top, inside a function, under ``if TYPE_CHECKING``, and the
module names given to ``lazy_import(...)`` or ``importlib.import_module(...)``. An import that runs late is still a
dependency, so a circle closed by one is still a circle.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app.py", "core", "demo", "benchmarks", "scripts", "tests")
PRODUCT = ("app.py", "core", "demo")
MAX_LINES = 450
SHARED_NETS = {"core.nets.bert_encoder"}  # the parts BERT, DistilBERT and RoBERTa share


def source_files(roots=PACKAGES) -> dict[str, Path]:
    """Module name -> file, for every Python file of the project."""
    files = {}
    for root in roots:
        path = ROOT / root
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            parts = list(file.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = file
    return files


def imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, int]]:
    """(module name, line) for every import in the tree, relative ones resolved; a ``from x import y`` names
    ``x.y`` too, since y may be a module."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names] + [(base, node.lineno)]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None))
              in ("lazy_import", "import_module") and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            found.append((node.args[0].value, node.lineno))
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    files = source_files()
    graph = {}
    for module, file in files.items():
        edges = set()
        for name, _ in imported_names(ast.parse(file.read_text(encoding="utf-8")), module,
                                      file.name == "__init__.py"):
            while name and name not in files:  # "core.nets.bert.BertConfig" -> the module core.nets.bert
                name = name.rpartition(".")[0]
            if name and name != module:
                edges.add(name)
        graph[module] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_circle_finder_finds_circles_closed_late():
    """The checks below can fail: a circle through a function-level import, and one through lazy_import."""
    late = ast.parse("def f():\n    from core import b\n")
    lazy = ast.parse("from core.loading.lazy import lazy_import\na = lazy_import('core.a')\n")
    assert ("core.b", 2) in imported_names(late, "core.a", False)
    assert ("core.a", 2) in imported_names(lazy, "core.b", False)
    assert circles({"core.a": {"core.b"}, "core.b": {"core.a"}, "core.c": {"core.a"}}) == [["core.a", "core.b"]]
    assert circles({"core.a": {"core.b"}, "core.b": set()}) == []


def test_no_import_circle_among_the_project_modules():
    graph = import_graph()
    assert len(graph) > 150 and sum(map(len, graph.values())) > 500  # the whole project was read
    assert circles(graph) == []


def test_nets_import_only_nets_and_torch_and_families_only_the_shared_module():
    """core/nets/ is nn.Module code: besides the standard library it imports torch and core/nets only, and one
    family's file never imports another's (shared parts live in SHARED_NETS, which imports no other nets file)."""
    files = source_files(("core/nets",))
    assert {"core.nets.bert", "core.nets.distilbert", "core.nets.gpt"} <= set(files)
    outside, between = [], []
    for module, file in files.items():
        for name, line in imported_names(ast.parse(file.read_text(encoding="utf-8")), module,
                                         file.name == "__init__.py"):
            top = name.split(".")[0]
            if name == "core.nets" or top in sys.stdlib_module_names or top == "__future__":
                continue
            if top == "torch":
                continue
            if not name.startswith("core.nets."):
                outside.append(f"{file.relative_to(ROOT)}:{line} imports {name}")
                continue
            target = name if name in files else name.rpartition(".")[0]
            if target not in SHARED_NETS or module in SHARED_NETS:
                between.append(f"{file.relative_to(ROOT)}:{line} imports {target}")
    assert outside == [] and between == []


def module_getattr_shims() -> list[str]:
    return [str(file.relative_to(ROOT)) for file in source_files(PRODUCT).values()
            if any(isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
                   for node in ast.parse(file.read_text(encoding="utf-8")).body)]


def test_no_module_getattr_shim_and_no_re_export():
    """Laziness is core/loading/lazy.py's LazyModule (a class) or an import at the use; no module has a ``__getattr__``,
    and no product file imports a name it does not use so that callers find it there (``noqa: F401``)."""
    assert module_getattr_shims() == []
    re_exports = [f"{file.relative_to(ROOT)}:{number}" for file in source_files(PRODUCT).values()
                  for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1) if "F401" in line]
    assert re_exports == []


def test_one_bounded_cache_class():
    """Bounded caches are core/loading/cache.py's BoundedCache (or functools.lru_cache with a maxsize, checked in
    tests/test_caches.py): no hand-written OrderedDict-and-lock cache elsewhere."""
    users = [str(file.relative_to(ROOT)) for file in source_files(PRODUCT).values()
             if "OrderedDict" in file.read_text(encoding="utf-8")]
    assert users == ["core/loading/cache.py"]


@pytest.mark.parametrize("root", PACKAGES)
def test_no_file_over_450_lines(root):
    long = {str(file.relative_to(ROOT)): count for file in source_files((root,)).values()
            if (count := len(file.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, "split these along a natural seam"


def test_tests_run_coroutines_through_run_async():
    """The browser tests' Playwright keeps an event loop running in the xdist worker's main thread; a later test on
    that worker that calls asyncio.run fails with "cannot be called from a running event loop" (25 tests failed in CI
    that way). tests/conftest.run_async runs the coroutine in a thread of its own."""
    calls = []
    for module, file in source_files(("tests",)).items():
        if module == "tests.conftest":
            continue
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "asyncio"):
                calls.append(f"{file.relative_to(ROOT)}:{node.lineno}")
    assert not calls, f"use tests.conftest.run_async instead of asyncio.run: {calls}"
