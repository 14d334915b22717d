"""Every exercise checker passes a right answer, says "not yet" to the stub, and rejects a typical
wrong answer with the hint written for that mistake."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import adapterlab as al
from adapterlab import exercises, inject
from adapterlab.exercises import check


def stub(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- right answers: the teacher's solution files

ROOT = Path(__file__).resolve().parents[1]
SOLUTION_FILES = sorted((ROOT / "notebooks" / "solutions").glob("*.py"))


def _solutions():
    """{exercise: the function its solution defines}, each section run as the solution notebook runs it."""
    found = {}
    for path in SOLUTION_FILES:
        for name, source in exercises.read_solutions(path).items():
            imported = {"torch": torch, "F": F, "np": np, "al": al, "inject": inject}  # the exercise sections' imports
            namespace = dict(imported)
            exec(source, namespace)
            (found[name],) = [v for k, v in namespace.items() if k not in imported and k != "__builtins__"]
    return found


RIGHT = _solutions()

# ---------------------------------------------------------------- typical mistakes, with the hint each must get


def _freeze_all_but_adapters(model):
    for name, p in model.named_parameters():
        p.requires_grad_(".adapter." in name or name.startswith("classifier"))  # LayerNorms forgotten


def _step_everything(model, batch, optimizer):
    model.requires_grad_(True)
    full = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(**batch).loss
    loss.backward()
    full.step()
    return loss


def _spans_one_short(model, inputs):
    L = len(inject.blocks(model)["encoder"])
    model.eval()
    with torch.no_grad():
        out = {}
        for i in range(L):
            for j in range(i, L):
                with inject.adapters_disabled(model, layers=range(i, j)):  # forgets block j
                    out[(i, j)] = model(**inputs).logits
        return out


def _best_seed_within(df, points):
    full = df[df["method"] == "full"]["value"].mean()
    by_label = df[df["method"] != "full"].groupby("label")
    best, trainable = by_label["value"].max(), by_label["trainable"].first()
    return trainable[best >= full - points / 100].idxmin()


def _higher_mean(df, method):
    means = df.groupby(["train_size", "method"])["value"].mean().unstack()
    return [int(n) for n in means.index if means.loc[n, method] > means.loc[n, "full"]]


WRONG = {
    "01.adapter_forward": (lambda h, Wd, bd, Wu, bu: F.gelu(h @ Wd + bd) @ Wu + bu, "skip connection"),
    "01.identity_init": (lambda d, m: (torch.zeros(d, m), torch.zeros(m), torch.zeros(m, d), torch.zeros(d)),
                         "no gradient"),
    "01.houlsby_count": (lambda d, L, m: L * (2 * m * d + d + m), "two adapters"),
    "02.kron": (lambda A, B: torch.kron(B, A), "swapped"),
    "02.phm_forward": (lambda x, A, B: x @ sum(torch.kron(B[i], A[i]) for i in range(len(A))), "rule A comes first"),
    "02.compacter_count": (lambda d, m, n, k: k * (n * (d // n + m // n) * 2 + d + m + n ** 3), "once"),
    "03.choose_trainable": (_freeze_all_but_adapters, "LayerNorm"),
    "03.train_step": (_step_everything, "frozen parameter changed"),
    "04.block_evaluations": (lambda L: (L * L * (L + 1) // 2, L + sum((L - i) * (L - i + 1) // 2 for i in range(L))),
                             "nothing removed"),
    "04.naive_spans": (_spans_one_short, "includes block j"),
    "05.relative_change": (lambda adapter, h: (adapter(h).norm() / h.norm()).item(), "adapter(h) - h"),
    "05.deviation_exponent": (1, "two small matrices"),
    "05.collapsed": (lambda df: int((df["value"] == df["baseline"]).sum()), "allow one point"),
    "06.percent_trained": (lambda model: 100 * sum(p.numel() for p in model.parameters() if p.requires_grad)
                           / sum(p.numel() for p in model.parameters()), "base model's size"),
    "06.smallest_within": (_best_seed_within, "seed means"),
    "07.nested_subsets": (lambda n, sizes, seed: {s: np.random.default_rng(seed + s).permutation(n)[:s] for s in sizes},
                          "inside every larger one"),
    "07.better_beyond_noise": (_higher_mean, "twice its standard error"),
}


def test_every_exercise_has_a_solution_a_wrong_answer_and_a_place_in_a_notebook():
    in_notebooks = [name for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
                    for name, _ in exercises.exercise_cells(json.loads(path.read_text()))]
    assert sorted(in_notebooks) == sorted(set(in_notebooks)), "an exercise appears twice in the notebooks"
    assert set(RIGHT) == set(WRONG) == set(exercises.EXERCISES) == set(in_notebooks)


@pytest.mark.parametrize("name", sorted(exercises.EXERCISES))
def test_right_answer_passes(name, capsys):
    result = check(name, RIGHT[name])
    assert result.passed, result.message
    assert "[PASS]" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(exercises.EXERCISES))
def test_stub_is_not_yet(name):
    for answer in (stub, None):
        result = check(name, answer, quiet=True)
        assert not result.passed
        assert "stub" in result.message or "no answer" in result.message


@pytest.mark.parametrize("name", sorted(exercises.EXERCISES))
def test_wrong_answer_gets_its_hint(name):
    answer, hint = WRONG[name]
    result = check(name, answer, quiet=True)
    assert not result.passed
    assert hint in result.message, result.message


def test_a_crash_is_reported_not_raised():
    result = check("02.kron", lambda A, B: A @ B, quiet=True)  # 2x3 @ 4x5: a shape error
    assert not result.passed and "raised RuntimeError" in result.message


def test_unknown_exercise_names_the_known_ones():
    with pytest.raises(ValueError, match="01.adapter_forward"):
        check("01.adaptor", RIGHT["01.adapter_forward"])


def test_the_course_build_writes_students_stubs_and_teachers_solutions(tmp_path):
    student, solved = exercises.build_course(tmp_path, ROOT / "notebooks")
    names = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(p.name for p in student.glob("*.ipynb")) == names == sorted(p.name for p in solved.glob("*.ipynb"))
    for name in names:
        stubs = exercises.exercise_cells(json.loads((student / name).read_text()))
        filled = json.loads((solved / name).read_text())
        assert not exercises.exercise_cells(filled)  # no stub is left in the solution version
        solution_cells = [c for c in filled["cells"] if "solution" in c["metadata"].get("tags", [])]
        assert [c["metadata"]["exercise"] for c in solution_cells] == [n for n, _ in stubs]
        # a stub raises NotImplementedError, or leaves a value as `...` (e.g. `exponent = ...`)
        assert all("NotImplementedError" in "".join(c["source"]) or "".join(c["source"]).rstrip().endswith("= ...")
                   for _, c in stubs)
        assert not any("NotImplementedError" in "".join(c["source"]) for c in solution_cells)


def test_a_missing_solution_is_named():
    nb = {"cells": [{"cell_type": "code", "source": "raise NotImplementedError",
                     "metadata": {"tags": ["exercise"], "exercise": "01.kron"}}]}
    with pytest.raises(ValueError, match="no solution for exercise '01.kron'"):
        exercises.with_solutions(nb, {})


# ---------------------------------------------------------------- the notebooks themselves, headless

from test_notebooks import smoke_run, smoke_runner  # noqa: E402,F401  (the session's smoke runs, shared)

WITH_EXERCISES = [p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
                  if exercises.exercise_cells(json.loads(p.read_text()))]


def _printed(executed):
    nb = json.loads(Path(executed).read_text())
    return "".join(out.get("text", "") if isinstance(out.get("text", ""), str) else "".join(out["text"])
                   for cell in nb["cells"] if cell["cell_type"] == "code" for out in cell.get("outputs", []))


@pytest.mark.slow
@pytest.mark.parametrize("notebook", WITH_EXERCISES, ids=lambda p: p.stem)
def test_with_the_stubs_left_in_every_check_says_not_yet_and_the_notebook_completes(notebook, smoke_run):
    run = smoke_run(notebook)
    assert run.status == 0, run.output[-3000:]
    printed = _printed(run.executed)
    assert printed.count("[NOT YET]") == len(exercises.exercise_cells(json.loads(notebook.read_text())))
    assert "[PASS]" not in printed


@pytest.mark.slow
def test_with_the_solutions_filled_in_every_check_passes(tmp_path):
    from adapterlab.regenerate import regenerate

    _, solved = exercises.build_course(tmp_path / "course", ROOT / "notebooks")
    only = ",".join(p.name[:2] for p in WITH_EXERCISES)
    status = regenerate(profile="smoke", only=only, fresh=True, out=tmp_path / "out", notebooks_dir=solved,
                        jobs=2, progress=False)
    assert status == 0
    for notebook in WITH_EXERCISES:
        printed = _printed(tmp_path / "out" / "build" / "notebooks" / "smoke" / notebook.name)
        expected = len(exercises.exercise_cells(json.loads(notebook.read_text())))
        assert printed.count("[PASS]") == expected and "[NOT YET]" not in printed, (notebook.name, printed[-2000:])
