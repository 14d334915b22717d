"""What notebook 08's stream stores as its table, read from the stored steps (experiments/stream.py): the
exact-recall checks, the storage bill and the serving cost, and stream.csv, the one table that the stream's
figures (figures.stream) and its reading (findings.READERS["stream"]) are drawn from, like every family's.
"""
from itertools import accumulate

import numpy as np
import pandas as pd

from ..experiments import profiles as profiles_module
from ..experiments.results import write_csvs
from ..experiments.stream import FAMILY, LEARNERS, adapter_step, order_name, sequential_step, serving_step
from ..methods.saving import ADAPTER_WEIGHTS


def forgetting_from_matrix(matrix):
    """Per task: its accuracy right after its own training (the diagonal) minus its accuracy after the
    last task (the last column). Positive = forgotten. The last task has had no time to forget: NaN."""
    m = np.asarray(matrix, dtype=float)
    drop = np.diag(m) - m[:, -1]
    drop[-1] = np.nan
    return drop


def recall_checks(result):
    """The exact-recall evidence, per (order, seed): one row with
      same_logits      after the last task every earlier adapter's test logits are bit-identical (sha256)
                       to those right after it arrived (same process, same batches);
      same_classes     ... and its predicted classes equal those its training step recorded;
      base_unchanged   the frozen base's hash is the same after every arrival, equals the hash before
                       and after each adapter's training, and every adapter training left it as it was;
      files_unchanged  every adapter file's sha256 at the end equals the one recorded right after saving."""
    s, rows = result.settings, []
    for i, order in enumerate(s.orders):
        for seed in s.seeds:
            recall = result._recall(order, seed)
            adapters = {t: result.record(adapter_step(s, t, seed)) for t in order}
            last = recall["tests"][-1]
            same_logits = all(recall["tests"][k][t]["logits_sha256"] == last[t]["logits_sha256"]
                              for k, t in enumerate(order))
            same_classes = all(adapters[t]["test"]["classes"] == last[t]["classes"] for t in order)
            base = {h for a in adapters.values() for h in (a["base_sha256_before"], a["base_sha256_after"])}
            base_unchanged = len(set(recall["base_sha256"]) | base) == 1
            files_unchanged = all(recall["adapter_sha256_after"][t] == adapters[t]["adapter_sha256"][ADAPTER_WEIGHTS]
                                  == recall["adapter_sha256_before"][t] for t in order)
            rows.append(dict(order=i, seed=seed, same_logits=same_logits, same_classes=same_classes,
                             base_unchanged=base_unchanged, files_unchanged=files_unchanged))
    return pd.DataFrame(rows)


def storage_bill(result, order=0, seed=None):
    """Bytes on disk after each arrival (tasks 1..T of one order), measured from the saved files:
    adapters = the shared base (frozen weights, saved once) + every adapter file so far; copies = every
    fine-tuned model so far (body + head); sequential = its one model file (body + every head so far).
    Also each learner's bytes as a multiple of one model (Houlsby Table 1's "total parameters")."""
    s = result.settings
    seed = s.seeds[0] if seed is None else seed
    order_tasks = tuple(s.orders[order])
    recall = result._recall(order_tasks, seed)
    copies = [result.record(sequential_step(s, (t,), seed))["model_bytes"] for t in order_tasks]
    adapters = [result.record(adapter_step(s, t, seed))["adapter_bytes"] for t in order_tasks]
    sequential = [result.record(sequential_step(s, order_tasks[:k + 1], seed))["model_bytes"]
                  for k in range(len(order_tasks))]
    bills = {"adapters": [recall["base_bytes"] + b for b in accumulate(adapters)],
             "copies": list(accumulate(copies)), "sequential": sequential}
    return pd.DataFrame([dict(tasks=n + 1, learner=learner, bytes=bill[n], per_model=bill[n] / copies[0])
                         for n in range(len(order_tasks)) for learner, bill in bills.items()])


def serving(result):
    """The serving record: swap_median, load_median (seconds), their lists, sizes and the machine."""
    return result.record(serving_step(result.settings))


def trained_by(result, learner, order, task, seed):
    """The record of the run that trained `learner`'s model on `task`: its adapter step, its copy (the
    sequential step on the task alone), or the sequential step at the task's arrival in `order`."""
    s, order = result.settings, tuple(order)
    if learner == "adapters":
        return result.record(adapter_step(s, task, seed))
    prefix = (task,) if learner == "copies" else order[:order.index(task) + 1]
    return result.record(sequential_step(s, prefix, seed))


def table(result):
    """stream.csv: one row per test of a learner on a task after an arrival, tidy like every family's table:
      learner, order (index), order_name (its tasks' short names, in arrival order), seed, task, time (tasks
      seen), metric, value (test accuracy), test_correct, test_examples (its per-example bits: the findings'
      paired noise), converged (the verdict of the run that trained this model on this task);
      stored_bytes, stored_models  the learner's bytes on disk after `time` arrivals (storage_bill), also in
                   units of one fine-tuned model;
      exact_recall the recall checks of the order and seed all hold (adapters only; empty for the others);
      switch_seconds  the median time to switch the served task: an adapter swap onto the loaded base, or
                   loading a fine-tuned copy (empty for the sequential learner, which serves one model);
      split        "test"."""
    s = result.settings
    recall = recall_checks(result).set_index(["order", "seed"]).all(axis=1)
    serve = serving(result)
    switch = {"adapters": serve["swap_median"], "copies": serve["load_median"]}
    rows = []
    for i, order in enumerate(s.orders):
        for seed in s.seeds:
            bill = storage_bill(result, i, seed).set_index(["learner", "tasks"])
            for learner in LEARNERS:
                for (task, t), test in result.tests(learner, order, seed).items():
                    stored = bill.loc[(learner, t + 1)]
                    rows.append(dict(
                        learner=learner, order=i, order_name=order_name(order), seed=seed, task=task, time=t + 1,
                        metric="accuracy", value=test["accuracy"], test_correct=test["correct"],
                        test_examples=test["examples"],
                        converged=trained_by(result, learner, order, task, seed).get("converged"),
                        stored_bytes=int(stored["bytes"]), stored_models=float(stored["per_model"]),
                        exact_recall=bool(recall[(i, seed)]) if learner == "adapters" else None,
                        switch_seconds=switch.get(learner), split="test"))
    return pd.DataFrame(rows)


def write_tables(result, profile, root=None):
    """stream.csv (table) in <root>/data/results/<profile>/, where findings.load and figures.redraw read it."""
    folder = profiles_module.results_dir(profiles_module.resolve(profile), root)
    return write_csvs({FAMILY: table(result)}, folder)
