"""Checkers for the course exercises: `check(name, answer)` in a notebook cell.

A checker compares the student's answer with the package's tested implementation on
fresh random inputs (float64, so rounding never decides a verdict) and prints either a
pass or a hint that names what is wrong -- the wrong shape, a missing skip connection,
a count off by the biases -- without printing the answer. A stub (a function that
raises NotImplementedError, or an answer left as None or ...) reports "not yet", so a
notebook with its stubs left in still runs to the end.

A check must not be foolable by a class: every rule is checked on several inputs (a
constant that happens to fit one table fails on the next), an exercise that forbids a
shortcut makes the shortcut fail inside the check (02.kron runs with torch.kron switched
off; 02.phm_forward watches the size of every tensor the answer computes), a training step
is compared with torch.optim's step on a copy of the model, and nothing the student returns
-- a string, a per-token tensor, an int for a list -- reaches the user as a traceback: a
wrong type gets a hint naming the type expected.

    from adapterlab.course.exercises import check
    check("01.adapter_forward", adapter_forward)

`EXERCISES` lists every exercise with its one-line statement.
"""
import copy
import json
import re
from pathlib import Path

from . import checks_methods as methods, checks_study as study
from .checking import Hint, Result, _stub

EXERCISES = {
    "01.adapter_forward": (methods.check_adapter_forward, "write the adapter's forward pass"),
    "01.identity_init": (methods.check_identity_init,
                         "initialise an adapter that is exactly the identity and can still learn"),
    "01.houlsby_count": (methods.check_houlsby_count, "count Houlsby adapter parameters by formula"),
    "02.kron": (methods.check_kron, "write the Kronecker product by hand"),
    "02.phm_forward": (methods.check_phm_forward, "the PHM forward pass without building W"),
    "02.compacter_count": (methods.check_compacter_count, "count Compacter's parameters"),
    "02.prompt_inputs": (methods.check_prompt_inputs, "what the frozen model reads under prompt tuning"),
    "02.hadamard_transform": (methods.check_hadamard_transform,
                              "the fast Walsh-Hadamard transform, without building H"),
    "02.lora_merge": (methods.check_lora_merge, "fold LoRA's update into the weight"),
    "03.choose_trainable": (methods.check_choose_trainable, "choose which parameters train for Houlsby adapters"),
    "03.train_step": (methods.check_train_step, "one optimizer step that leaves the base unchanged"),
    "04.block_evaluations": (study.check_block_evaluations,
                             "count the block evaluations of the naive and the cached loop"),
    "04.naive_spans": (study.check_naive_spans, "write the naive span-removal loop"),
    "05.relative_change": (study.check_relative_change, "measure how far an adapter moves its input at init"),
    "05.deviation_exponent": (study.check_deviation_exponent, "predict how that change grows with the init std"),
    "05.collapsed": (study.check_collapsed, "count the runs that collapsed to the majority class"),
    "06.percent_trained": (study.check_percent_trained, "the share of parameters a method trains"),
    "06.smallest_within": (study.check_smallest_within, "the smallest method within a point of full fine-tuning"),
    "07.nested_subsets": (study.check_nested_subsets, "nested, seeded training subsets"),
    "07.better_beyond_noise": (study.check_better_beyond_noise, "where an adapter beats full fine-tuning beyond "
                               "the noise of the seeds (paired by seed)"),
    "08.forgetting": (study.check_stream_forgetting, "forgetting per task from a stream's accuracy matrix"),
    "08.storage_ratio": (study.check_storage_ratio, "how many times the bytes n fine-tuned copies take against one "
                         "base plus n adapters"),
}


def check(name, answer, quiet=False):
    """Check an exercise; prints and returns a Result (truthy when it passes)."""
    if name not in EXERCISES:
        raise ValueError(f"unknown exercise {name!r}; the exercises are: {', '.join(EXERCISES)}")
    checker, _ = EXERCISES[name]
    try:
        if _stub(answer):
            raise Hint("no answer yet: fill in the cell above")
        result = Result(name, True, checker(answer))
    except Hint as hint:
        result = Result(name, False, str(hint))
    except Exception as error:  # an answer of a shape no hint foresaw: still a hint, never a traceback
        result = Result(name, False, f"the check could not use your answer ({type(error).__name__}: {error}); "
                                     f"compare what it returns with the exercise: {EXERCISES[name][1]}")
    if not quiet:
        print(result)
    return result


# ------------------------------------------------------------------ the two versions of the course
#
# In the notebooks an exercise is a code cell tagged "exercise" whose metadata names it
# ({"exercise": "01.adapter_forward"}); it holds the stub. Solutions live outside the student
# notebooks, in notebooks/solutions/<notebook>.py, one section per exercise:
#     # %% exercise: 01.adapter_forward
#     def adapter_forward(...): ...
# `python -m adapterlab.course.exercises --out DIR` writes DIR/student/ (the notebooks as they are) and
# DIR/solutions/ (each stub replaced by its solution and tagged "solution", which the course site
# shows collapsed).

EXERCISE_TAG, SOLUTION_TAG = "exercise", "solution"
MARKER = "# %% exercise:"


def exercise_cells(nb):
    """[(exercise name, cell)] for the stub cells of a notebook (an nbformat node or a JSON dict)."""
    return [(cell["metadata"]["exercise"], cell) for cell in nb["cells"]
            if EXERCISE_TAG in cell.get("metadata", {}).get("tags", [])]


def read_solutions(path):
    """{exercise name: source} from a solutions file (sections start with MARKER)."""
    parts = re.split(rf"^{re.escape(MARKER)}(.*)$", Path(path).read_text(encoding="utf-8"), flags=re.M)
    return {name.strip(): source.strip() + "\n" for name, source in zip(parts[1::2], parts[2::2])}


def with_solutions(nb, solutions):
    """A copy of the notebook with every stub replaced by its solution (tagged "solution")."""
    nb = copy.deepcopy(nb)
    for name, cell in exercise_cells(nb):
        if name not in solutions:
            raise ValueError(f"no solution for exercise {name!r}; add a '{MARKER} {name}' section")
        cell["source"] = solutions[name]
        tags = [t for t in cell["metadata"]["tags"] if t != EXERCISE_TAG]
        cell["metadata"]["tags"] = tags + [SOLUTION_TAG]
    return nb


def build_course(out, notebooks_dir=None):
    """Write out/student/ and out/solutions/ (every numbered notebook); returns the two folders."""
    notebooks_dir = Path(notebooks_dir or Path(__file__).resolve().parents[2] / "notebooks")
    student, solved = Path(out) / "student", Path(out) / "solutions"
    for folder in (student, solved):
        folder.mkdir(parents=True, exist_ok=True)
    for path in sorted(notebooks_dir.glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        solutions_file = notebooks_dir / "solutions" / f"{path.stem}.py"
        solutions = read_solutions(solutions_file) if solutions_file.exists() else {}
        for folder, version in ((student, nb), (solved, with_solutions(nb, solutions))):
            text = json.dumps(version, indent=1, ensure_ascii=False) + "\n"
            target = folder / path.name
            if not target.exists() or target.read_text(encoding="utf-8") != text:  # unchanged: keep its mtime
                target.write_text(text, encoding="utf-8")
    return student, solved


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m adapterlab.course.exercises",
                                     description="write the student and the solution version of the notebooks")
    parser.add_argument("--out", default="build/course", help="folder for student/ and solutions/")
    args = parser.parse_args()
    for folder in build_course(args.out):
        print(f"wrote {folder}")
