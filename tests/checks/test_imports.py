"""The package's import graph: every module imports on its own, no two modules import each other, and
imports flow one way through the parts (nn -> methods -> training -> experiments -> report -> families ->
course: DESIGN.md).

A cycle makes a module's meaning depend on which side was imported first; a backward import between
parts makes an early part (say, the layers) depend on machinery a reader meets later.
"""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "adapterlab"
FLOW = ["nn", "methods", "training", "experiments", "report", "families", "course"]


def dotted(path):
    """adapterlab/report/labels.py -> "report.labels"; adapterlab/__init__.py -> "__init__"."""
    rel = path.relative_to(PACKAGE).with_suffix("")
    return ".".join(rel.parts)


MODULES = sorted(dotted(p) for p in PACKAGE.rglob("*.py")
                 if p.stem != "__main__" and not (p.stem == "__init__" and p.parent != PACKAGE))


def package_imports(path):
    """The package modules a module imports, as dotted names, at any depth of the file (imports inside
    functions count: they still tie the two modules together)."""
    here = dotted(path).split(".")[:-1]  # the module's own subpackage, [] at the top
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[:len(here) - (node.level - 1)] if node.level > 1 else here
            stem = base + (node.module.split(".") if node.module else [])
            names = [".".join(stem)] if node.module else []
            names += [".".join(stem + [alias.name]) for alias in node.names]
            out.update(n for n in names if n in MODULES)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("adapterlab."):
            stem = node.module.removeprefix("adapterlab.")
            out.update(n for n in [stem] + [f"{stem}.{a.name}" for a in node.names] if n in MODULES)
        elif isinstance(node, ast.Import):
            out.update(a.name.removeprefix("adapterlab.") for a in node.names
                       if a.name.removeprefix("adapterlab.") in MODULES)
    return out - {dotted(path)}


def graph():
    return {m: package_imports(PACKAGE / (m.replace(".", "/") + ".py")) for m in MODULES if m != "__init__"}


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


def test_every_module_belongs_to_a_part_of_the_flow():
    assert {m.split(".")[0] for m in MODULES} - {"__init__"} == set(FLOW)


def test_the_package_import_graph_has_no_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, f"import cycle {' -> '.join(cycle)}: move what both need into a third module"


def test_imports_flow_one_way_through_the_parts():
    """The package's own `__init__` and `__main__` sit outside the flow: they gather its edges."""
    backward = [f"{m} imports {dep}" for m, deps in graph().items() for dep in deps
                if FLOW.index(dep.split(".")[0]) > FLOW.index(m.split(".")[0])]
    assert not backward, ("imports against the flow nn -> methods -> training -> experiments -> report -> "
                          f"families -> course (move the shared piece into the earlier part): {backward}")


def test_the_graph_reader_resolves_relative_imports(tmp_path):
    # a check of the checker: without this, a reader that resolved nothing would pass the two tests above
    g = graph()
    assert "methods.saving" in g["methods.inject"] or "nn.layers" in g["methods.inject"]
    assert "experiments.stats" in g["report.findings"]
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
    for path in PACKAGE.rglob("*.py"):
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


@pytest.mark.parametrize("module", ["report.labels", "experiments.profiles", "experiments.results",
                                    "experiments.families", "experiments.rules"])
def test_the_plain_data_modules_import_no_heavy_library(module):
    """Names, settings, the family registry, the rules and the store: findings and the site read them, so
    they import neither torch nor pandas themselves (the package's __init__ still does)."""
    tree = ast.parse((PACKAGE / (module.replace(".", "/") + ".py")).read_text())
    names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
              and not node.level}
    assert not names & {"torch", "pandas", "numpy", "transformers"}, names
