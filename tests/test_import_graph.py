"""The project's import graph, read from the source with ``ast`` (issue #32): no circle, core/nets/ depends on torch
only, no module ``__getattr__`` shim, no re-export kept for callers, one bounded cache class, no file over 450 lines.

Every import counts, wherever it is written: at the top, inside a function, under ``if TYPE_CHECKING``, and the
module names given to ``lazy_import(...)`` or ``importlib.import_module(...)``. An import that runs late is still a
dependency, so a circle closed by one is still a circle.
"""
from __future__ import annotations

import ast
import re
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
    tests/loading/test_caches.py): no hand-written OrderedDict-and-lock cache elsewhere."""
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


# ----------------------------------------------------------------------------------------------------------------
# One package per chapter (issue #50): core/<chapter>/ computes, demo/<chapter>/ shows. A package's ``__all__``
# lists its public modules; the others are its internals, which no other chapter imports. Shared layers are not
# chapters: core/loading, core/text, core/nets, core/checks, demo/kit, demo/server.

CHAPTERS = ("ngram", "embeddings", "recurrent", "attention", "transformer", "mlm", "tasks", "why", "ladder", "seq2seq")


def chapter_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] in ("core", "demo") and parts[1] in CHAPTERS else None


def public_modules(package: str) -> set[str]:
    """The names in a package's ``__all__`` (read from its __init__.py, without importing it)."""
    tree = ast.parse((ROOT / package.replace(".", "/") / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def test_every_chapter_package_lists_its_public_modules():
    """Each chapter package says what other chapters may use: its ``__all__`` names modules it holds."""
    packages = [f"{top}.{name}" for top in ("core", "demo") for name in CHAPTERS
                if (ROOT / top / name / "__init__.py").is_file()]
    assert len(packages) >= 18, packages  # core has all ten chapters, demo all but seq2seq
    files = source_files(PRODUCT)
    for package in packages:
        public = public_modules(package)
        assert public, f"{package}/__init__.py lists no public module (__all__)"
        assert {f"{package}.{name}" for name in public} <= set(files), f"{package}.__all__ names a missing module"


def chapter_crossings(files: dict[str, Path]) -> list[tuple[str, int, str, str]]:
    """(module, line, imported module, name read) for every import of one chapter's module from outside it,
    and every ``alias._private`` read through such an import."""
    found = []
    for module, file in files.items():
        tree = ast.parse(file.read_text(encoding="utf-8"))
        own, aliases = chapter_of(module), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):  # remember the local names of other chapters' modules
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in files and chapter_of(full) not in (None, own):
                        aliases.add(alias.asname or alias.name)
        for name, line in imported_names(tree, module, file.name == "__init__.py"):
            target = name
            while target and target not in files:
                target = target.rpartition(".")[0]
            if target and chapter_of(target) not in (None, own):
                found.append((module, line, target, name[len(target) + 1:]))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                found.append((module, node.lineno, node.value.id, node.attr))
    return found


def shown(file: Path) -> str:
    return str(file.relative_to(ROOT)) if file.is_relative_to(ROOT) else file.name


def internals_used(files: dict[str, Path]) -> list[str]:
    bad = []
    for module, line, target, name in chapter_crossings(files):
        parts = target.split(".")
        inner = len(parts) > 2 and parts[2] not in public_modules(".".join(parts[:2]))
        if inner or name.split(".")[0].startswith("_"):
            bad.append(f"{shown(files[module])}:{line} uses {target}{'.' + name if name else ''}")
    return bad


def test_no_chapter_imports_another_chapters_internals():
    """A chapter (or app.py, the kit, the checks) uses another chapter only through the modules its package lists,
    and never a ``_`` name of them. Chapters build on each other (GPT reads the LSTM's vocabulary, fine-tuning the
    embeddings); ladder and why use many."""
    files = source_files(PRODUCT)
    assert sum(chapter_of(module) is not None for module in files) >= 75  # the chapters' files were read
    assert len(chapter_crossings(files)) >= 30  # and their crossings found
    assert internals_used(files) == []


def test_the_chapter_rule_can_fail(tmp_path):
    """An import of an unlisted module, or of a ``_`` name of a listed one, from another chapter is reported."""
    mlm_public = public_modules("core.mlm")
    internal = next(name for name in ("masking", "char_train", "char_heldout") if name not in mlm_public)
    source = (f"from core.mlm import {internal}\nfrom core.mlm.mlm import _secret\nfrom core.mlm import mlm\n"
              "mlm._hidden\n")
    probe = tmp_path / "probe.py"
    probe.write_text(source, encoding="utf-8")
    files = {**source_files(PRODUCT), "core.ngram.probe": probe}
    found = internals_used(files)
    assert len(found) == 3 and all("probe.py" in line for line in found), found


# ----------------------------------------------------------------------------------------------------------------
# Gradio beyond its public API (issue #50): only demo/server/ reaches inside Gradio. Outside it a file imports
# ``gradio`` itself, reads no ``_`` name that Gradio defines, and reassigns no attribute of Gradio's modules.

SERVER = "demo.server"
GRADIO_SOURCE = Path(__import__("gradio").__file__).parent


def gradio_private_names() -> set[str]:
    import re

    return {name for file in GRADIO_SOURCE.rglob("*.py")
            for name in re.findall(r"\b(_[a-zA-Z]\w*)", file.read_text(encoding="utf-8", errors="ignore"))}


def beyond_gradios_api(files: dict[str, Path], gradio_private: set[str]) -> list[str]:
    import re

    found = []
    for module, file in files.items():
        if module == SERVER or module.startswith(SERVER + "."):
            continue
        source = file.read_text(encoding="utf-8")
        ours = set(re.findall(r"(?:def|class)\s+(_\w+)", source)) | set(re.findall(r"\b(_\w+)\s*[:=(]", source))
        where = shown(file)
        gradio_names = {"gradio", "gr"}
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found += [f"{where}:{node.lineno} imports {a.name}" for a in node.names if a.name.startswith("gradio.")]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gradio."):
                found.append(f"{where}:{node.lineno} imports from {node.module}")
            elif isinstance(node, ast.Attribute):
                root = node
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(node.ctx, ast.Store) and isinstance(root, ast.Name) and root.id in gradio_names:
                    found.append(f"{where}:{node.lineno} reassigns {ast.unparse(node)}")
                elif (node.attr.startswith("_") and not node.attr.startswith("__") and node.attr in gradio_private
                      and node.attr not in ours and getattr(root, "id", None) != "self"):
                    found.append(f"{where}:{node.lineno} reads Gradio's private {node.attr}")
                elif (isinstance(node.value, ast.Name) and node.value.id in gradio_names
                      and node.attr in ("blocks", "context", "utils", "queueing", "route_utils", "networking",
                                        "component_meta", "data_classes", "server_messages", "i18n")):
                    found.append(f"{where}:{node.lineno} reads the module {ast.unparse(node)}")
    return found


def test_only_the_server_package_reaches_inside_gradio():
    files = source_files(PRODUCT)
    server = [module for module in files if module.startswith(SERVER + ".")]
    assert len(files) - len(server) >= 140 and len(server) >= 6  # both sides were read (demo/server: 6 modules)
    assert beyond_gradios_api(files, gradio_private_names()) == []


def test_the_gradio_rule_can_fail(tmp_path):
    source = ("import gradio as gr\nimport gradio.blocks\nfrom gradio.context import Context\n"
              "gr.networking.url_ok = None\napp._queue\nx = gr.blocks.BlockContext\n")
    probe = tmp_path / "probe.py"
    probe.write_text(source, encoding="utf-8")
    found = beyond_gradios_api({"demo.kit.probe": probe}, gradio_private_names())
    assert sorted({line.split(" ", 1)[0] for line in found}) == [f"probe.py:{n}" for n in (2, 3, 4, 5, 6)], found


def test_every_browser_module_is_in_the_e2e_lane():
    """The fast lane (-m "not e2e and not slow", README) runs no browser: every test module under tests/e2e/ marks its
    tests e2e (a module left unmarked ran its Chromium tests in the fast lane)."""
    modules = sorted((ROOT / "tests" / "e2e").glob("test_*.py"))
    assert len(modules) >= 20, len(modules)
    unmarked = [m.name for m in modules
                if not re.search(r"^pytestmark = .*pytest\.mark\.e2e", m.read_text(encoding="utf-8"), re.M)]
    assert unmarked == []


def test_the_tests_mirror_the_packages():
    """Every folder of tests/ that holds tests names a package of core/ or demo/ (tests/e2e: the browser tests), so a
    chapter's tests sit where its code does; the app-wide tests stay at tests/."""
    folders = {path.parent.name for path in (ROOT / "tests").glob("*/test_*.py")}
    packages = {path.parent.name for side in ("core", "demo") for path in (ROOT / side).glob("*/__init__.py")}
    assert len(folders) >= 17 and len(packages) >= 17  # both sides were read
    assert sorted(folders - packages - {"e2e"}) == []
    moved = sum(1 for _ in (ROOT / "tests").glob("*/test_*.py"))
    assert moved > 2 * sum(1 for _ in (ROOT / "tests").glob("test_*.py"))  # most tests are in a package's folder
