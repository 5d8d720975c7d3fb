"""The import graph of irkit is a hierarchy: no cycle, a leaf registry, light dialects.

Every import counts, the ones inside functions too: a cycle closed by a
function-level import is still a cycle (module A needs B needs A), only
hidden from Python's loader.  Imports under `if TYPE_CHECKING:` run never
and are left out.  `from pkg import name` depends on `pkg.name` when that is
a module, else on `pkg`; a package's `__init__`, which Python runs before
any of its submodules, is not counted as a dependency of those submodules.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import irkit

ROOT = Path(irkit.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = ("irkit", *path.relative_to(ROOT).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def _targets(module: str, node: ast.Import | ast.ImportFrom, is_package: bool, mods: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in mods]
    if node.level:
        base = module.split(".")
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    subs = [f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in mods]
    found = list(subs)
    if len(subs) < len(node.names) and prefix in mods:
        found.append(prefix)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the irkit modules it imports anywhere in its text (not under TYPE_CHECKING)."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_only = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                type_only |= {id(inner) for inner in ast.walk(node)}
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in type_only:
                deps.update(_targets(module, node, path.name == "__init__.py", mods))
        deps.discard(module)
        graph[module] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return found


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_function_level_imports():
    graph = import_graph()
    assert "irkit.api" in graph["irkit"], "irkit.compile imports irkit.api inside the function"


def test_irkit_has_no_import_cycle():
    found = cycles(import_graph())
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_registry_is_a_leaf():
    assert import_graph()["irkit.registry"] == set()


def test_importing_the_design_dialect_loads_no_pass_and_no_backend():
    code = "import sys, irkit.dialects.design; print(' '.join(m for m in sys.modules if m.startswith('irkit')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "irkit.dialects.design" in loaded
    heavy = [m for m in loaded if m.startswith(("irkit.passes", "irkit.backends", "irkit.perf", "irkit.extend"))]
    assert heavy == []
