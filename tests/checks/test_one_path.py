"""The one path every family takes, checked on the source: a family is one registration, so no module
outside the family registry compares a value with a family's name; and notebooks use the package's public
names, never its private ones or the result store's keys."""
import ast
import json
from pathlib import Path

import pytest

from adapterlab.experiments import families
from adapterlab.report import figures

PACKAGE = Path(__file__).resolve().parents[2] / "adapterlab"
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
# where family names are registered: the registry itself (experiments/families.py) and the per-family
# tables of settings, plans, builders, figures and readings are dicts keyed by name, which this check allows
REGISTRY = {PACKAGE / "experiments" / "families.py"}
NAMES = set(families.PLANNED) | set(figures.FIGURES)
# the store's keys are the package's business: a notebook asks for records, runs and files by config
STORE_KEYS = {"config_key", "run_key", "span_key", "ResultStore"}


def _names_compared(tree):
    """(line, name) of every comparison with a family's name: x == "stream", x in ("a", "b"), "a" != x."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for operand in (node.left, *node.comparators):
            values = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
            found += [(node.lineno, v.value) for v in values
                      if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value in NAMES]
    return found


def test_no_module_outside_the_registry_branches_on_a_familys_name():
    branches = [f"{path.relative_to(PACKAGE.parent)}:{line}: {name!r}"
                for path in sorted(PACKAGE.rglob("*.py")) if path not in REGISTRY
                for line, name in _names_compared(ast.parse(path.read_text(), str(path)))]
    assert not branches, ("per-family behaviour belongs in the family's registration or settings, not in a "
                          "branch on its name:\n" + "\n".join(branches))


def test_the_check_sees_a_branch_on_a_name():
    code = 'if family == "layer_removal": pass\nx = kind in ("init_scale", "other")\nok = family == "other"'
    assert [name for _, name in _names_compared(ast.parse(code))] == ["layer_removal", "init_scale"]


def _code_cells(notebook):
    for i, cell in enumerate(json.loads(notebook.read_text())["cells"]):
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            # IPython's magics and shell lines are not Python
            yield i, "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _private_or_store(tree):
    """Private attributes read from anything (x._name, not dunders) and the store's key helpers."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            found.append(node.attr)
        elif isinstance(node, (ast.Name, ast.Attribute)) and getattr(node, "id", getattr(node, "attr", "")) in STORE_KEYS:
            found.append(getattr(node, "id", None) or node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("adapterlab"):
            found += [a.name for a in node.names if a.name.startswith("_") or a.name in STORE_KEYS]
    return found


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebooks_use_public_names_and_no_store_keys(notebook):
    found = [f"cell {i}: {name}" for i, code in _code_cells(notebook) for name in _private_or_store(ast.parse(code))]
    assert not found, f"{notebook.name} reaches past the package's public names:\n" + "\n".join(found)


def test_the_notebook_check_sees_private_names_and_store_keys():
    code = "r = result._recall(0, 1)\nk = planning.run_key(c, p, f)\nfrom adapterlab.experiments.results import ResultStore"
    assert sorted(_private_or_store(ast.parse(code))) == ["ResultStore", "_recall", "run_key"]


def test_every_registered_family_has_its_entry_in_every_layer():
    """A family's registration spans the layers (its settings, its planner; its table, figures and reading when
    it has a table): each layer's table lists exactly the registered families that layer serves."""
    from adapterlab.experiments import planning, profiles
    from adapterlab.report import findings, tables

    planned = set(families.PLANNED)
    with_tables = planned - {f.name for f in families.REGISTRY if f.trained and not f.figure}  # 03 draws, no table
    assert set(profiles.SETTINGS) == planned
    assert set(planning._WORK) == planned
    assert set(tables.BUILDERS) == with_tables == set(findings.READERS)
    drawn = {entry.family or name for name, entry in figures.FIGURES.items()}
    assert planned <= drawn, f"no figure entry for {planned - drawn}"
