"""Notebook hygiene: what git holds is clean, runnable by papermill and listed in the README.

Each failure names its fix.
"""
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "notebooks"
ALL = sorted(p for p in FOLDER.glob("*.ipynb")) if FOLDER.is_dir() else []
NUMBERED = re.compile(r"^(\d\d)_[a-z0-9]+(_[a-z0-9]+)*\.ipynb$")
PARAMETERS_WITHIN = 5  # the parameters cell is among the first cells
CLEAR = "jupyter nbconvert --clear-output --inplace notebooks/*.ipynb"


def ids(path):
    return path.name


def read(path):
    return nbformat.read(path, as_version=4)


def test_there_are_notebooks():
    assert ALL, f"no notebooks in {FOLDER}"


def test_numbered_file_names():
    bad = [p.name for p in ALL if not NUMBERED.match(p.name)]
    assert not bad, f"notebook names must look like NN_lower_case_name.ipynb (e.g. 04_layer_removal.ipynb): rename {bad}"
    numbers = [p.name[:2] for p in ALL]
    twice = sorted({n for n in numbers if numbers.count(n) > 1})
    assert not twice, f"two notebooks share the number(s) {twice}: renumber one of them"
    stray = [p.name for p in FOLDER.glob("*.ipynb") if p.name.startswith(".")] if FOLDER.is_dir() else []
    assert not stray, f"remove {stray}"


@pytest.mark.parametrize("path", ALL, ids=ids)
def test_valid_notebook_format(path):
    nb = read(path)
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as error:
        pytest.fail(f"{path.name} is not a valid notebook ({error.message}); re-save it in JupyterLab")


@pytest.mark.parametrize("path", ALL, ids=ids)
def test_outputs_and_execution_counts_stripped(path):
    nb = read(path)
    dirty = [i for i, cell in enumerate(nb.cells, 1)
             if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: cells {dirty} keep outputs or execution counts; "
                       f"fix: {CLEAR}")
    assert "widgets" not in nb.metadata, (f"{path.name} stores widget state in its metadata; fix: delete "
                                          f"metadata.widgets (JupyterLab: Settings > Save Widget State Automatically off, "
                                          f"then re-save), or run {CLEAR} and remove the \"widgets\" key")


@pytest.mark.parametrize("path", ALL, ids=ids)
def test_kernelspec_python3(path):
    kernelspec = read(path).metadata.get("kernelspec", {})
    assert kernelspec.get("name") == "python3", (
        f"{path.name}: kernelspec is {kernelspec.get('name')!r}, not 'python3' (what papermill and CI start); fix: "
        f"in JupyterLab choose Kernel > Change Kernel > Python 3 (ipykernel) and save, or set "
        f"metadata.kernelspec.name to \"python3\"")


@pytest.mark.parametrize("path", ALL, ids=ids)
def test_one_parameters_cell_near_the_top(path):
    cells = read(path).cells
    tagged = [i for i, cell in enumerate(cells) if "parameters" in cell.metadata.get("tags", [])]
    fix = ("fix: in JupyterLab open the property inspector (gear icon) on the cell with the knobs "
           "(profile = os.environ.get(\"ADAPTERLAB_PROFILE\", \"default\"), fresh = False, ...) and add the tag "
           "\"parameters\" to that one cell only")
    assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged 'parameters' (papermill needs exactly one); {fix}"
    index = tagged[0]
    assert cells[index].cell_type == "code", f"{path.name}: the 'parameters' cell must be a code cell; {fix}"
    assert index < PARAMETERS_WITHIN, (f"{path.name}: the 'parameters' cell is cell {index + 1}; move it among the first "
                                       f"{PARAMETERS_WITHIN} cells (right after the title) so all knobs are at the top")
    assert re.search(r"^\s*profile\s*=", cells[index].source, re.M), (
        f"{path.name}: the 'parameters' cell must set `profile` (regenerate injects profile and fresh there), e.g. "
        f"profile = os.environ.get(\"ADAPTERLAB_PROFILE\", \"default\")")


@pytest.mark.parametrize("path", ALL, ids=ids)
def test_no_cell_asks_nbval_to_compare_outputs(path):
    """Outputs are stripped, so a cell marked for nbval's output check would always fail."""
    marked = [i for i, cell in enumerate(read(path).cells, 1) if cell.cell_type == "code"
              and ("nbval-check-output" in cell.metadata.get("tags", []) or "NBVAL_CHECK_OUTPUT" in cell.source)]
    assert not marked, f"{path.name}: cells {marked} ask nbval to compare outputs; remove the NBVAL_CHECK_OUTPUT marker/tag"


@pytest.mark.parametrize("path", ALL, ids=ids)
def test_listed_in_readme_with_a_summary(path):
    readme = ROOT / "README.md"
    assert readme.exists(), "README.md is missing; it lists every notebook with a one-line summary"
    text = readme.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if path.name in line]
    assert lines, (f"README.md does not list {path.name}; add a line like "
                   f"\"- [{path.name}](notebooks/{path.name}): what it teaches or which figure it makes\"")
    summaries = [line for line in lines if re.search(r"[A-Za-z]{3,}", line.rsplit(path.name, 1)[1])]
    assert summaries, (f"README.md names {path.name} but gives no summary after it on that line: {lines[0]!r}; "
                       f"add a one-line description after the name")



# project text speaks of the project: the study's history lives in docs/protocol.md, by dates, not by tickets
TICKET = re.compile(r"\b(issue|session|ticket)s? #?\d+", re.IGNORECASE)
PROJECT_TEXT = ["adapterlab/**/*.py", "tests/**/*.py", "benchmarks/**/*", "notebooks/*.ipynb", "README.md",
                "FINDINGS.md", "docs/*.md", "Makefile"]


def test_no_project_text_names_an_issue_or_a_session_by_number():
    found = []
    for pattern in PROJECT_TEXT:
        for path in ROOT.glob(pattern):
            hidden = any(part.startswith(".") for part in path.relative_to(ROOT).parts)  # venvs, caches
            if path.is_file() and not hidden and path.suffix not in (".png", ".pyc"):
                for number, line in enumerate(path.read_text(encoding="utf-8", errors="ignore").splitlines(), 1):
                    if TICKET.search(line):
                        found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "say why the code is as it is now, or move the history to docs/protocol.md:\n" + "\n".join(found)
