"""The one path every family takes, checked on the source: a family is one registration, its module under
adapterlab/families/, so no module outside it names a family or compares a value with a family's name, and the
engines (experiments/, report/) import no family module; every registered family holds what the engines ask of
it; and notebooks use the package's public names, never its private ones or the result store's keys."""
import ast
import json
import re
from dataclasses import is_dataclass
from pathlib import Path

import pytest

from adapterlab.experiments import families
from adapterlab.report import figures

PACKAGE = Path(__file__).resolve().parents[2] / "adapterlab"
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
# where family names are written: each family's own module (adapterlab/families/), its one registration; no
# module compares a value with a family's name but the registry itself (experiments/families.py), not even a
# family's own (its NAME is its own, and no other family's)
FAMILY_MODULES = PACKAGE / "families"
REGISTRY = {PACKAGE / "experiments" / "families.py"}
NAMES = {f.name for f in families.registered()} | set(figures.registered())
# the engines: they take a Family, or look one up by the name a user gives, and never import one
ENGINES = (PACKAGE / "experiments", PACKAGE / "report")
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


def test_every_registered_family_has_what_every_engine_asks_of_it():
    """A family is one value (families.Family): its settings, its work (a plan of training runs, or units of its
    own), its table, its reading, and its figures (or it teaches): every engine finds what it calls there."""
    from adapterlab.experiments import profiles

    registered = families.registered()
    assert registered, "no family registered: adapterlab.families registers the package's own on import"
    lacking = []
    for f in registered:
        needs = {"settings (a dataclass)": is_dataclass(f.settings), "plan or work": bool(f.plan or f.work),
                 "build": callable(f.build), "read": callable(f.read),
                 "figures or teaches": bool(f.figures or f.teaches)}
        lacking += [f"{f.name}: no {what}" for what, ok in needs.items() if not ok]
        assert isinstance(profiles.get("smoke").settings(f), f.settings), f.name  # a profile holds its settings
    assert not lacking, "\n".join(lacking)


def _quoted_names(text, names):
    """(line, name) of every family name written as a quoted string ("stream", 'init_scale') in a source text."""
    pattern = re.compile(r"([\"'])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\1")
    return [(text.count("\n", 0, m.start()) + 1, m.group(2)) for m in pattern.finditer(text)]


def test_no_module_outside_the_family_modules_names_a_family():
    names = {f.name for f in families.registered()}
    named = [f"{path.relative_to(PACKAGE.parent)}:{line}: {name!r}"
             for path in sorted(PACKAGE.rglob("*.py")) if FAMILY_MODULES not in path.parents
             for line, name in _quoted_names(path.read_text(), names)]
    assert not named, ("a family's name belongs in its own module (adapterlab/families/); the engines take a "
                       "Family or the name a user gives:\n" + "\n".join(named))


def test_the_name_check_sees_a_quoted_name():
    code = 'a = "stream"\nb = get(\'init_scale\')\nc = "streams", "init_scale_x", stream'
    assert _quoted_names(code, {"stream", "init_scale"}) == [(1, "stream"), (2, "init_scale")]


def _family_imports(tree, package):
    """(line, module) of every import of adapterlab.families or a module of it, in a module of `package`
    (["adapterlab", "report"]), relative imports resolved, at any depth of the file."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - (node.level - 1)] if node.level else []
            module = ".".join(base + (node.module.split(".") if node.module else []))
            names = [module, *(f"{module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        hit = next((n for n in names if n == "adapterlab.families" or n.startswith("adapterlab.families.")), None)
        found += [(node.lineno, hit)] if hit else []
    return found


def test_the_engines_import_no_family_module():
    imported = [f"{path.relative_to(PACKAGE.parent)}:{line}: {module}"
                for engine in ENGINES for path in sorted(engine.rglob("*.py"))
                for line, module in _family_imports(ast.parse(path.read_text(), str(path)),
                                                    list(path.relative_to(PACKAGE.parent).parent.parts))]
    assert not imported, ("experiments/ and report/ take a Family (families.get) and import none: "
                          + "\n".join(imported))


def test_the_import_check_resolves_relative_imports():
    code = ("from ..families import stream\nfrom .. import families\nfrom . import families as registry\n"
            "import adapterlab.families.teaching\nfrom adapterlab.experiments import families\n"
            "def f():\n    from ..families.low_resource import schedule\n")
    assert _family_imports(ast.parse(code), ["adapterlab", "report"]) == [
        (1, "adapterlab.families"), (2, "adapterlab.families"), (4, "adapterlab.families.teaching"),
        (7, "adapterlab.families.low_resource")]
