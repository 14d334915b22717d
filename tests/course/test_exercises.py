"""Every exercise checker passes a right answer, says "not yet" to the stub, rejects a typical
wrong answer with the hint written for that mistake, and cannot be fooled: a table of trivially
wrong answers (a constant, the forbidden shortcut, the wrong type) must each get NOT YET with a
hint, never a traceback and never a PASS."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import adapterlab as al
from adapterlab.course import checks_study, exercises
from adapterlab.methods import inject, params
from adapterlab.course.exercises import check


def stub(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- right answers: the teacher's solution files

ROOT = Path(__file__).resolve().parents[2]
SOLUTION_FILES = sorted((ROOT / "notebooks" / "solutions").glob("*.py"))


def _solutions():
    """{exercise: the function its solution defines}, each section run as the solution notebook runs it."""
    found = {}
    for path in SOLUTION_FILES:
        for name, source in exercises.read_solutions(path).items():
            imported = {"torch": torch, "F": F, "np": np, "al": al, "inject": inject, "params": params}  # the exercise sections' imports
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


def _kron_swapped(A, B):  # written by hand, but B ⊗ A
    (a, b), (p, q) = A.shape, B.shape
    return (B[:, None, :, None] * A[None, :, None, :]).reshape(a * p, b * q)


def _phm_swapped(x, A, B):  # blockwise (no W), but Σ B_i ⊗ A_i
    n, p, q = B.shape
    return torch.einsum("bpj,ipq,ijk->bqk", x.reshape(len(x), p, n), B, A).reshape(len(x), q * n)


def _prompt_after(embeds, mask, P):
    prompts = P.expand(len(embeds), -1, -1)
    return torch.cat([embeds, prompts], 1), torch.cat([mask, torch.ones(len(mask), len(P), dtype=mask.dtype)], 1)


def _hadamard_normalised(v):
    from adapterlab.nn.fastfood import hadamard_transform
    return hadamard_transform(v) / v.shape[-1] ** 0.5


def _hadamard_by_matrix(v):  # right numbers, but H built (Sylvester, by hand)
    from adapterlab.nn.fastfood import hadamard_matrix
    return v @ hadamard_matrix(v.shape[-1], dtype=v.dtype)


def _prompt_mask_of_zeros(embeds, mask, P):
    return (torch.cat([P.expand(len(embeds), -1, -1), embeds], 1),
            torch.cat([torch.zeros(len(mask), len(P), dtype=mask.dtype), mask], 1))


WRONG = {
    "02.prompt_inputs": (_prompt_after, "in front of the input"),
    "02.hadamard_transform": (_hadamard_normalised, "do not divide by sqrt(L)"),
    "02.lora_merge": (lambda W, A, B, alpha: W + B @ A, "alpha / r"),
    "01.adapter_forward": (lambda h, Wd, bd, Wu, bu: F.gelu(h @ Wd + bd) @ Wu + bu, "skip connection"),
    "01.identity_init": (lambda d, m: (torch.zeros(d, m), torch.zeros(m), torch.zeros(m, d), torch.zeros(d)),
                         "no gradient"),
    "01.houlsby_count": (lambda d, L, m: L * (2 * m * d + d + m), "two adapters"),
    "02.kron": (_kron_swapped, "swapped"),
    "02.phm_forward": (_phm_swapped, "rule A comes first"),
    "02.compacter_count": (lambda d, m, n, k: k * (n * (d // n + m // n) * 2 + d + m + n ** 3), "once"),
    "03.choose_trainable": (_freeze_all_but_adapters, "LayerNorm"),
    "03.train_step": (_step_everything, "frozen parameter changed"),
    "04.block_evaluations": (lambda L: (L * L * (L + 1) // 2, L + sum((L - i) * (L - i + 1) // 2 for i in range(L))),
                             "nothing removed"),
    "04.naive_spans": (_spans_one_short, "includes block j"),
    "05.relative_change": (lambda adapter, h: (adapter(h).norm() / h.norm()).item(), "adapter(h) - h"),
    "05.deviation_exponent": (1, "two small matrices"),
    "05.collapsed": (lambda df: int((df["value"] == df["baseline"]).sum()), "allow 3 points"),
    "06.percent_trained": (lambda model: 100 * sum(p.numel() for p in model.parameters() if p.requires_grad)
                           / sum(p.numel() for p in model.parameters()), "base model's size"),
    "06.smallest_within": (_best_seed_within, "seed means"),
    "07.nested_subsets": (lambda n, sizes, seed: {s: np.random.default_rng(seed + s).permutation(n)[:s] for s in sizes},
                          "inside every larger one"),
    "07.better_beyond_noise": (_higher_mean, "a higher mean is not enough"),
    "08.forgetting": (lambda m: (np.asarray(m)[:, -1] - np.diag(np.asarray(m)))[:-1], "the sign"),
    "08.storage_ratio": (lambda model, adapter, n: model / adapter, "count the base model too"),
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


# ---------------------------------------------------------------- answers that must never pass
# For every exercise: a constant, the forbidden shortcut, a near miss, or the wrong type, each with the words
# its hint must contain. None of them may pass, and none may surface as a traceback.

def _add_one_and_return_zero(model, batch, optimizer):  # "moves" the trainable parameters without training
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(1.0)
    return 0.0


def _never_zero_grad(model, batch, optimizer):
    loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    return loss


def _step_then_report_new_loss(model, batch, optimizer):
    _never_zero_grad(model, batch, optimizer)
    optimizer.zero_grad()
    with torch.no_grad():
        return model(**batch).loss


def _phm_by_einsum_w(x, A, B):  # W built without torch.kron
    n, p, q = B.shape
    return x @ torch.einsum("ijk,ipq->jpkq", A, B).reshape(n * p, n * q)


def _unpaired_2se(df, method):
    return RIGHT_BY_RULE(df, method, lambda a, b: a.mean() - b.mean() > 2 * np.sqrt(a.var(ddof=1) / 3 + b.var(ddof=1) / 3))


def _paired_2se(df, method):
    return RIGHT_BY_RULE(df, method, lambda a, b: (a - b).mean() > 2 * (a - b).std(ddof=1) / np.sqrt(3))


def RIGHT_BY_RULE(df, method, rule):
    by_seed = df.pivot_table(index=["train_size", "seed"], columns="method", values="value")
    return [int(n) for n, g in by_seed.groupby(level=0) if rule(g[method].to_numpy(), g["full"].to_numpy())]


F64 = dict(dtype=torch.float64)
NEVER_PASS = {
    "01.adapter_forward": [(lambda h, Wd, bd, Wu, bu: h, "check each term"),
                           (lambda h, Wd, bd, Wu, bu: h + F.gelu(h @ Wd + bd) @ Wu, "b_up is missing"),
                           (lambda h, Wd, bd, Wu, bu: h + F.gelu(h @ Wd + bd, approximate="tanh") @ Wu + bu,
                            "tanh approximation"),
                           (lambda h, Wd, bd, Wu, bu: 0.0, "should be a torch.Tensor")],
    "01.identity_init": [(lambda d, m: 0, "return four tensors")],
    "01.houlsby_count": [(lambda d, L, m: 1_000_000, "off by"), (lambda d, L, m: "many", "should be a number")],
    "02.kron": [(lambda A, B: torch.kron(A, B), "without torch.kron"), (lambda A, B: A.kron(B), "without torch.kron"),
                (lambda A, B: torch.from_numpy(np.kron(A.numpy(), B.numpy())), "without torch.kron"),
                (lambda A, B: torch.zeros(8, 15, **F64), "block (i, j)")],
    "02.phm_forward": [(lambda x, A, B: x @ sum(torch.kron(A[i], B[i]) for i in range(len(A))), "builds W"),
                       (_phm_by_einsum_w, "at least as many as W"),
                       (lambda x, A, B: [0.0], "should be a torch.Tensor")],
    "02.compacter_count": [(lambda d, m, n, k: 10_000, "off by"), (lambda d, m, n, k: torch.tensor([1, 2]), "one number")],
    "02.prompt_inputs": [(lambda embeds, mask, P: (embeds, mask), "has shape"), (_prompt_mask_of_zeros, "not zeros"),
                         (lambda embeds, mask, P: embeds, "return two things")],
    "02.hadamard_transform": [(lambda v: v, "mixes every entry"), (_hadamard_by_matrix, "building H"),
                              (lambda v: torch.from_numpy(__import__("scipy.linalg").linalg.hadamard(v.shape[-1])
                                                          .astype(float)) @ v, "not to build H with scipy"),
                              (lambda v: torch.zeros_like(v), "differs from H v"), (lambda v: 0.0, "torch.Tensor")],
    "02.lora_merge": [(lambda W, A, B, alpha: W, "update B A is missing"),
                      (lambda W, A, B, alpha: W + alpha * B @ A, "divide by the rank"),
                      (lambda W, A, B, alpha: (W + alpha / len(A) * B @ A).T, "has shape"),
                      (lambda W, A, B, alpha: "W'", "torch.Tensor")],
    "03.choose_trainable": [(lambda model: None, "base parameters still train")],
    "03.train_step": [(_add_one_and_return_zero, "not where one optimizer step"),
                      (_never_zero_grad, "zero_grad"), (_step_then_report_new_loss, "loss before the step"),
                      (lambda model, batch, optimizer: 0.0, "no trainable parameter moved"),
                      (lambda model, batch, optimizer: "loss", "should be a number")],
    "04.block_evaluations": [(lambda L: (1, 1), "off by"), (lambda L: 132, "return two numbers")],
    "04.naive_spans": [(lambda model, inputs: {}, "expected the"), (lambda model, inputs: "logits", "return a dict")],
    "05.relative_change": [(lambda adapter, h: ((adapter(h) - h).norm(dim=-1) / h.norm(dim=-1)).detach(), "one number"),
                           (lambda adapter, h: 0.01, "times what it should be")],
    "05.deviation_exponent": [(1, "two small matrices"), ("2", "should be a number"), (np.float64(7), "measure it")],
    "05.collapsed": [(lambda df: 4, "three different tables"), (lambda df: int((df.value < 0.65).sum()), "baseline"),
                     (lambda df: df, "should be a number")],
    "06.percent_trained": [(lambda model: "1.2 %", "should be a number"), (lambda model: 1.0, "your value is")],
    "06.smallest_within": [(lambda df, points: "layernorm", "for every `points`"), (lambda df, points: df["label"], "the label")],
    "07.nested_subsets": [(lambda n, sizes, seed: {s: np.arange(s) for s in sizes}, "first rows"),
                          (lambda n, sizes, seed: 3, "return a dict")],
    "07.better_beyond_noise": [(lambda df, method: [100, 500], "differ from the rule"),
                               (lambda df, method: 100, "return a list"), (_unpaired_2se, "pair them"),
                               (_paired_2se, "4.30 SE"), (_higher_mean, "not enough")],
    "08.forgetting": [(lambda m: np.zeros(len(m) - 1), "diagonal minus the last column"),
                      (lambda m: np.diag(np.asarray(m)) - np.asarray(m)[:, -1], "no time to forget"),
                      (lambda m: 0.1, "as a list or array")],
    "08.storage_ratio": [(lambda model, adapter, n: n, "not free"), (lambda model, adapter, n: 9.0, "your ratio is"),
                         (lambda model, adapter, n: "9x", "should be a number")],
}
NEVER_PASS_CASES = [pytest.param(name, i, id=f"{name}-{i}") for name in sorted(NEVER_PASS) for i in range(len(NEVER_PASS[name]))]


def test_every_exercise_has_answers_that_must_never_pass():
    assert set(NEVER_PASS) == set(exercises.EXERCISES)


@pytest.mark.parametrize("name, i", NEVER_PASS_CASES)
def test_a_trivially_wrong_answer_gets_a_hint_not_a_pass_or_a_traceback(name, i, capsys):
    answer, hint = NEVER_PASS[name][i]
    result = check(name, answer)  # must not raise
    printed = capsys.readouterr().out
    assert not result.passed and printed.startswith(f"[NOT YET] {name}: ")
    assert hint in result.message, result.message
    assert "Traceback" not in printed and "could not use your answer" not in result.message  # a hint written for it


@pytest.mark.parametrize("exponent", [2, 2.0, np.int64(2), np.float32(2), torch.tensor(2.0), torch.tensor([2])])
def test_a_number_of_any_numeric_type_is_a_number(exponent):
    assert check("05.deviation_exponent", exponent, quiet=True).passed


def test_a_pass_does_not_print_the_answer():
    message = check("07.better_beyond_noise", RIGHT["07.better_beyond_noise"], quiet=True).message
    table = checks_study._low_resource_frame()
    assert not any(str(size) in message for size in table["train_size"].unique()), message


def test_forbidden_shortcuts_are_restored_after_the_check():
    check("02.kron", torch.kron, quiet=True)
    check("02.phm_forward", _phm_by_einsum_w, quiet=True)
    A, B = torch.eye(2), torch.ones(2, 2)
    assert torch.equal(torch.kron(A, B), A.kron(B)) and np.kron(np.eye(2), np.ones(2)).shape == (2, 4)
    assert "kron" not in torch.Tensor.__dict__
    import scipy.linalg
    check("02.hadamard_transform", lambda v: torch.from_numpy(scipy.linalg.hadamard(v.shape[-1]) * 1.0) @ v, quiet=True)
    assert scipy.linalg.hadamard(2).tolist() == [[1, 1], [1, -1]]  # the refused library function is back


def test_an_answer_no_hint_foresaw_still_gets_no_traceback():
    class Weird:
        def __iter__(self):
            raise RuntimeError("cannot iterate")

    result = check("07.better_beyond_noise", lambda df, method: Weird(), quiet=True)
    assert not result.passed and "could not use your answer" in result.message


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
    from adapterlab.course.regenerate import regenerate

    _, solved = exercises.build_course(tmp_path / "course", ROOT / "notebooks")
    only = ",".join(p.name[:2] for p in WITH_EXERCISES)
    status = regenerate(profile="smoke", only=only, fresh=True, out=tmp_path / "out", notebooks_dir=solved,
                        jobs=2, progress=False)
    assert status == 0
    for notebook in WITH_EXERCISES:
        printed = _printed(tmp_path / "out" / "build" / "notebooks" / "smoke" / notebook.name)
        expected = len(exercises.exercise_cells(json.loads(notebook.read_text())))
        assert printed.count("[PASS]") == expected and "[NOT YET]" not in printed, (notebook.name, printed[-2000:])
