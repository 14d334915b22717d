"""The package's import graph: every module imports on its own, and no two modules import each other.

A cycle makes a module's meaning depend on which side was imported first (and has hidden a missing
name until a notebook happened to import the other side first); issue 23 removed the last one.
"""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "adapterlab"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__main__")


def package_imports(path):
    """The sibling modules a module imports (`from . import x`, `from .x import y`), at any depth of the
    file (imports inside functions count: they still tie the two modules together)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(alias.name for alias in node.names)
    return out & set(MODULES) - {path.stem}


def find_cycle(graph):
    """One cycle of the graph as a list of nodes (first == last), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_package_import_graph_has_no_cycle():
    graph = {m: package_imports(PACKAGE / f"{m}.py") for m in MODULES}
    graph.pop("__init__", None)  # the package itself re-exports; it is imported by everything
    cycle = find_cycle(graph)
    assert cycle is None, (f"import cycle {' -> '.join(cycle)}: move what both need into a third module "
                           "(as labels.py and planning.py did for experiments/sweep)")


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# One interpreter loads the third-party names the package's modules import (read from their source), then
# forks a child per module: each child starts with no adapterlab module loaded and imports one. (A fresh
# interpreter per module cost ~15 s each on a busy 2-core machine, nearly all of it torch and transformers;
# isolation from the package's own modules is what this test is about.)
FORK_EACH = """
import importlib, json, os, sys, traceback
for module, names in json.loads(sys.argv[1]):
    try:
        loaded = importlib.import_module(module)
        for name in names:
            getattr(loaded, name, None)  # transformers loads its classes lazily
    except Exception:
        pass  # an optional library: the child reports it if a module really needs it
failed = []
for name in sys.argv[2:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module("adapterlab." + name)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    if os.waitpid(pid, 0)[1]:
        failed.append(name)
print("FAILED:" + ",".join(failed))
"""


def third_party_imports():
    """[(module, [names])] of every absolute import in the package's modules."""
    out = {}
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    out.setdefault(alias.name, set())
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                out.setdefault(node.module, set()).update(a.name for a in node.names)
    return sorted((m, sorted(n)) for m, n in out.items() if not m.startswith("adapterlab"))


def test_every_module_imports_alone():
    modules = [m for m in MODULES if m != "__init__"]
    run = subprocess.run([sys.executable, "-c", FORK_EACH, json.dumps(third_party_imports()), *modules],
                         capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}, cwd=PACKAGE.parent)
    failed = run.stdout.strip().splitlines()[-1].removeprefix("FAILED:") if run.stdout.strip() else run.stderr
    assert not failed, f"modules that fail to import on their own: {failed}\n{run.stderr[-3000:]}"


@pytest.mark.parametrize("module", ["labels", "profiles", "results"])
def test_the_plain_data_modules_import_no_heavy_library(module):
    """labels, profiles and results hold names, settings and the store: findings and the site read
    them, so they import neither torch nor pandas themselves (the package's __init__ still does)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
              and not node.level}
    assert not names & {"torch", "pandas", "numpy", "transformers"}, names
