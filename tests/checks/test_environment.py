"""Settings are arguments: only the edges read the environment.

The edges are the command line (adapterlab/__main__.py, and the `if __name__ == "__main__":` block of a
module run with python -m) and each notebook's `parameters` cell. Everything else takes what it needs
as arguments (profile=, root=, glue_dir=, live=, ...), so a call says all that decides what it does.
The source is parsed (ast), so a comment or a docstring that names os.environ does not count.
"""
import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "adapterlab"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("*.py"))
ENVIRONMENT = {"environ", "getenv", "putenv", "unsetenv"}  # the names of os that read or write it
COMMAND_LINE = {"__main__.py"}

# (module, function): why it may touch the environment. Each writes a setting for a process it starts, read
# there by a program that is not ours; none is a setting our own code reads back.
ALLOWED = {
    ("experiments/sweep.py", "_pin"):
        "a local sweep worker, a fresh process, sets its own CUDA_VISIBLE_DEVICES before torch starts in it, so "
        "CUDA shows it the one GPU the driver chose (and passed to it as an argument)",
    ("experiments/sweep.py", "RayExecutor.__init__"):
        "RAY_USAGE_STATS_ENABLED=0 as a default before ray.init starts a local cluster: Ray's own switch, so no "
        "usage report leaves the machine; a value the user set still wins",
}


def _is_main_block(node):
    """`if __name__ == "__main__":`, the argument parsing of a module run with python -m."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


def environment_uses(tree):
    """[(qualified name of the enclosing function or class, line)] of every use of os.environ, os.getenv,
    os.putenv, os.unsetenv (or those names imported from os), outside `if __name__ == "__main__":`."""
    found = []

    def visit(node, where):
        if _is_main_block(node):
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            where = f"{where}.{node.name}" if where else node.name
        if isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT and getattr(node.value, "id", None) == "os":
            found.append((where, node.lineno))
        if isinstance(node, ast.ImportFrom) and node.module == "os" and ENVIRONMENT & {a.name for a in node.names}:
            found.append((where, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, where)

    visit(tree, "")
    return found


def test_the_finder_sees_reads_writes_and_imports_but_not_text():
    source = '''
import os
from os import getenv
"""os.environ in a docstring is text"""
def a():
    return os.environ.get("X")  # os.environ in a comment is text
class B:
    def c(self):
        os.environ["Y"] = "1"
if __name__ == "__main__":
    os.getenv("Z")
'''
    assert environment_uses(ast.parse(source)) == [("", 3), ("a", 6), ("B.c", 9)]


def library_modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if str(p.relative_to(PACKAGE)) not in COMMAND_LINE)


def test_no_library_module_reads_the_environment():
    uses, allowed_seen = [], set()
    for path in library_modules():
        module = path.relative_to(PACKAGE).as_posix()
        for where, line in environment_uses(ast.parse(path.read_text(encoding="utf-8"))):
            if (module, where) in ALLOWED:
                allowed_seen.add((module, where))
            else:
                uses.append(f"adapterlab/{module}:{line} ({where or 'module level'})")
    assert not uses, ("these library places use the environment; take the setting as an argument and let the "
                      "command line (adapterlab/__main__.py) or a notebook's parameters cell read it:\n"
                      + "\n".join(uses))
    assert allowed_seen == set(ALLOWED), f"ALLOWED names places that no longer touch it: {set(ALLOWED) - allowed_seen}"


def notebook_cells():
    """(notebook name, cell number, source) of every code cell but the parameters cell."""
    for path in NOTEBOOKS:
        for number, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"], 1):
            if cell["cell_type"] == "code" and "parameters" not in cell["metadata"].get("tags", []):
                yield path.name, number, "".join(cell["source"])


@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks in this checkout")
def test_a_notebook_reads_the_environment_only_in_its_parameters_cell():
    uses = [f"{name} cell {number}" for name, number, source in notebook_cells()
            if environment_uses(ast.parse(source))]
    uses += [f"notebooks/solutions/{path.name}" for path in SOLUTIONS
             if environment_uses(ast.parse(path.read_text(encoding="utf-8")))]
    assert not uses, ("these cells use the environment; read it in the notebook's parameters cell (papermill "
                      "injects its values there) and pass what it gives on:\n" + "\n".join(uses))
