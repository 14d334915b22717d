"""Notebook 08's table, read from the records of its stored steps (experiments/stream.py): the exact-recall
checks, the storage bill, and stream.csv, the one table that the stream's figures (figures.stream) and its
reading (findings.READERS["stream"]) are drawn from. tables.BUILDERS builds it like every family's table, from
the records alone: each record says which step it is, so no store key is needed to find it.

    steps = StepRecords(settings, records)     # records: running.run_plan's, or provenance.stored_runs'
    table(steps)                               # stream.csv
"""
from itertools import accumulate

import numpy as np
import pandas as pd

from ..experiments.stream import LEARNERS, order_name
from ..methods.saving import ADAPTER_WEIGHTS


def forgetting_from_matrix(matrix):
    """Per task: its accuracy right after its own training (the diagonal) minus its accuracy after the
    last task (the last column). Positive = forgotten. The last task has had no time to forget: NaN."""
    m = np.asarray(matrix, dtype=float)
    drop = np.diag(m) - m[:, -1]
    drop[-1] = np.nan
    return drop


# a step's kind -> what its record says it ran on (the fields its worker records)
RAN_ON = {"sequential": lambda r: tuple(r["tasks"]), "adapter": lambda r: r["task"],
          "recall": lambda r: tuple(r["order"])}


def step_of(record):
    """What a stored step is: (kind, its tasks | task | order, seed), or ("serving",) for the one serving step."""
    kind = record["step"]
    return (kind,) if kind == "serving" else (kind, RAN_ON[kind](record), record["seed"])


class StepRecords:
    """The records of one stream's steps (its settings' orders and seeds), found by what each step is."""

    def __init__(self, settings, records):
        self.settings = settings
        self.records = {step_of(r): r for r in records}

    def find(self, *step):
        """The record of a step named as step_of names it; a ValueError naming the fix when it is not stored."""
        record = self.records.get(step)
        if record is None:
            raise ValueError(f"the stream's records lack its step {step}; run the stream's plan first: "
                             "tables.get('stream', profile) or `python -m adapterlab sweep --profile P --only 08`")
        return record

    def sequential(self, prefix, seed):
        """The sequential learner after the tasks of `prefix` (one task: that task's fine-tuned copy)."""
        return self.find("sequential", tuple(prefix), seed)

    def adapter(self, task, seed):
        return self.find("adapter", task, seed)

    def recall(self, order, seed):
        return self.find("recall", tuple(order), seed)

    def serving(self):
        """The serving record: swap_median, load_median (seconds), their lists, sizes and the machine."""
        return self.find("serving")

    def trained(self, learner, order, task, seed):
        """The record of the step that trained `learner`'s model on `task`: its adapter step, its copy (the
        sequential step on the task alone), or the sequential step at the task's arrival in `order`."""
        if learner == "adapters":
            return self.adapter(task, seed)
        if learner == "copies":
            return self.sequential((task,), seed)
        if learner == "sequential":
            order = tuple(order)
            return self.sequential(order[:order.index(task) + 1], seed)
        raise ValueError(f"unknown learner {learner!r}; choose one of {', '.join(LEARNERS)}")

    def tests(self, learner, order, seed):
        """{(task, time): test dict} of one learner on one order and seed (time 0 = after the first task).
        The adapters are tested again after every arrival on one base (their recall step); a copy never
        trains again, so it keeps the test of the step that trained it; the sequential model after the
        t-th arrival is the one trained on that task, tested on every task so far."""
        order, out = tuple(order), {}
        for t, newest in enumerate(order):
            for task in order[:t + 1]:
                if learner == "adapters":
                    out[(task, t)] = self.recall(order, seed)["tests"][t][task]
                else:
                    model = newest if learner == "sequential" else task
                    out[(task, t)] = self.trained(learner, order, model, seed)["tests"][task]
        return out


def recall_checks(steps):
    """The exact-recall evidence, per (order, seed): one row with
      same_logits      after the last task every earlier adapter's test logits are bit-identical (sha256)
                       to those right after it arrived (same process, same batches);
      same_classes     ... and its predicted classes equal those its training step recorded;
      base_unchanged   the frozen base's hash is the same after every arrival, equals the hash before
                       and after each adapter's training, and every adapter training left it as it was;
      files_unchanged  every adapter file's sha256 at the end equals the one recorded right after saving."""
    s, rows = steps.settings, []
    for i, order in enumerate(s.orders):
        for seed in s.seeds:
            recall = steps.recall(order, seed)
            adapters = {t: steps.adapter(t, seed) for t in order}
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


def storage_bill(steps, order=0, seed=None):
    """Bytes on disk after each arrival (tasks 1..T of one order), measured from the saved files:
    adapters = the shared base (frozen weights, saved once) + every adapter file so far; copies = every
    fine-tuned model so far (body + head); sequential = its one model file (body + every head so far).
    Also each learner's bytes as a multiple of one model (Houlsby Table 1's "total parameters")."""
    s = steps.settings
    seed = s.seeds[0] if seed is None else seed
    order_tasks = tuple(s.orders[order])
    recall = steps.recall(order_tasks, seed)
    copies = [steps.trained("copies", order_tasks, t, seed)["model_bytes"] for t in order_tasks]
    adapters = [steps.adapter(t, seed)["adapter_bytes"] for t in order_tasks]
    sequential = [steps.trained("sequential", order_tasks, t, seed)["model_bytes"] for t in order_tasks]
    bills = {"adapters": [recall["base_bytes"] + b for b in accumulate(adapters)],
             "copies": list(accumulate(copies)), "sequential": sequential}
    return pd.DataFrame([dict(tasks=n + 1, learner=learner, bytes=bill[n], per_model=bill[n] / copies[0])
                         for n in range(len(order_tasks)) for learner, bill in bills.items()])


def table(steps):
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
    s = steps.settings
    recall = recall_checks(steps).set_index(["order", "seed"]).all(axis=1)
    serve = steps.serving()
    switch = {"adapters": serve["swap_median"], "copies": serve["load_median"]}
    rows = []
    for i, order in enumerate(s.orders):
        for seed in s.seeds:
            bill = storage_bill(steps, i, seed).set_index(["learner", "tasks"])
            for learner in LEARNERS:
                for (task, t), test in steps.tests(learner, order, seed).items():
                    stored = bill.loc[(learner, t + 1)]
                    rows.append(dict(
                        learner=learner, order=i, order_name=order_name(order), seed=seed, task=task, time=t + 1,
                        metric="accuracy", value=test["accuracy"], test_correct=test["correct"],
                        test_examples=test["examples"],
                        converged=steps.trained(learner, order, task, seed).get("converged"),
                        stored_bytes=int(stored["bytes"]), stored_models=float(stored["per_model"]),
                        exact_recall=bool(recall[(i, seed)]) if learner == "adapters" else None,
                        switch_seconds=switch.get(learner), split="test"))
    return pd.DataFrame(rows)
