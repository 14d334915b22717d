"""Notebook 08, Houlsby et al.'s online setting: tasks arrive one at a time, and three learners keep up with them.

    from adapterlab.report import tables
    result = tables.get("stream", "smoke")     # the table of the stored steps, as for any family
    result.table                               # stream.csv: each learner's test of each task after each arrival
    read(result.table)                         # the reading: forgetting, exact recall, the storage bill, serving

Houlsby et al. motivate adapters by a stream of tasks (a cloud service's customers): one frozen base
model and a few task-specific parameters per task give "perfect memory" of earlier tasks and a model
that grows by a few percent per task. The three learners (LEARNERS; their workers: training/stream_steps.py):

  sequential  one model fine-tuned on each new task in turn, starting from its previous weights, with a
              new classification head per task (earlier heads are kept, the body moves on);
  adapters    one frozen base; per task a Houlsby adapter + LayerNorms + head, saved with save_adapter
              and swapped in (load_adapter) to evaluate that task;
  copies      one fully fine-tuned model per task: the accuracy upper bound, a whole model per task.

The family's work is a list of steps (work.Work) that the suite's runners run like any training run
(running.run_plan in process, the sweep in parallel) and store under this family, keyed by everything
that determines them; an interrupted run resumes and the notebook redraws from the store:

  sequential(prefix, seed)  train the last task of `prefix` from the weights after prefix[:-1] (from
                            the pretrained model when the prefix has one task), then test every task of
                            the prefix with its own head. One step per arrival.
  adapter(task, seed)       train one task's adapter on the frozen base; save it; test it; hash the
                            frozen base before and after and the saved files.
  recall(order, seed)       one loaded base: after each arrival swap in every adapter seen so far and
                            test it; at the end re-hash the base and the adapter files (exact recall).
  serving                   seconds to switch task: swap an adapter on a loaded base vs load a model.

Work shared between learners, computed once (the store key is the same):
  - the per-task copy of task X is the sequential step with prefix (X,): fine-tuning the pretrained
    model on X alone. So the copies' matrix costs no training beyond one such step per task, and the
    first task's copy IS the sequential learner after task 1;
  - every order starts with the same task, so the orders share their first sequential step;
  - adapters do not depend on the order (each trains on the same frozen base): one adapter step per
    (task, seed) serves every order; only the cheap recall step (evaluation) runs per order.
A copy never changes after its training, so its column entries after arrival are its own test score
(no re-evaluation needed); the adapters are re-evaluated at every time step on purpose: that is the
measurement behind "perfect memory".

Weights a later step needs (the sequential model after each arrival, the adapters) are kept under
data/results/<profile>/stream_files/<step key>/ (not committed: a MiniLM copy is ~90 MB; a model goes
once the next arrival is stored); the records keep every number the notebook draws, including the file
sizes for the storage bill, and each says which step it is (`step`, its tasks, task or order, and its
seed), so stream.csv is built from the records alone (build), the exact-recall checks and the storage bill
included: the reading and the notebook read both from the table (exact_recall, storage_bill). A sequential
step whose predecessor's weights are gone reruns the predecessor first (its record is replaced).
"""
import math
from dataclasses import dataclass, field
from itertools import accumulate

import numpy as np
import pandas as pd

from ..experiments import profiles, rules, stats
from ..experiments.judge import COST_MARGIN, Verdict
from ..experiments.families import Family, register
from ..experiments.work import Work
from ..methods.saving import ADAPTER_CONFIG, ADAPTER_WEIGHTS
from ..report import figures as F
from ..report import labels
from ..report import claims as declared
from ..report.claims import Claim
from ..report.findings import ci_text, judge, verdict_lines
from ..report.tables import FamilyResult
from ..training import stream_steps
from ..training import tasks as task_registry

NAME = "stream"
LEARNERS = ("sequential", "adapters", "copies")
FILES = "stream_files"  # the store's folder of the steps' weights (work.folder), not committed
# Bump when a change alters what a stored step computes, so old records stop matching.
STREAM_VERSION = 2  # docs/protocol.md says what each version changed


# ----------------------------------------------------------------------------- settings

# the default stream: two orders of four tweet domains
ORDER = ("airline", "tweets/deflategate", "tweets/apple", "tweets/coachella")
SECOND_ORDER = ("airline", "tweets/coachella", "tweets/apple", "tweets/deflategate")


@dataclass(frozen=True)
class StreamSettings:
    """Notebook 08: what a profile's stream of tasks trains. Every order starts with the same task
    (Houlsby's stream starts from one service; it also lets the orders share their first step)."""
    orders: tuple = (ORDER, SECOND_ORDER)  # tuples of task names
    seeds: tuple = (0, 1, 2)
    backbone: str = "default"
    train_size: int = 1000  # examples per task (a seeded subset of its train split)
    max_length: int = 64
    eval_size: int | None = 500  # validation/test examples per task (seeded subset; None: all)
    bottleneck: int = 64  # Houlsby adapter size m
    adapter_lr: float = 1e-3  # the rate notebook 06 chooses on validation for Houlsby m=64
    full_lr: float = 2e-4  # sequential and copies (full fine-tuning)
    train: dict = field(default_factory=lambda: dict(epochs=3, batch_size=32))  # other TrainConfig fields
    swap_repeats: int = 50  # serving: timed adapter swaps (median)
    load_repeats: int = 10  # serving: timed model loads (median)

    @property
    def tasks(self):
        """Every task of every order, in first-seen order."""
        return tuple(dict.fromkeys(t for order in self.orders for t in order))


PROFILES = {
    "smoke": dict(seeds=(0, 1), backbone="tiny", train_size=120, max_length=32, eval_size=60, bottleneck=8,
                  adapter_lr=1e-2, full_lr=3e-3, train=dict(max_steps=8, eval_every=4, batch_size=32),
                  swap_repeats=5, load_repeats=3),
    "default": dict(train=dict(epochs=3, batch_size=32, eval_every=32)),
    "paper": dict(backbone="bert-base-uncased", train_size=None, max_length=128, eval_size=None,
                  adapter_lr=3e-4, full_lr=3e-5, train=dict(epochs=3, batch_size=32)),
}


def settings(profile):
    """The stream settings of a profile (StreamSettings)."""
    return profiles.resolve(profile).settings(NAME)


def check_settings(s):
    """Refuse settings the stream cannot run: unknown tasks, orders that do not share the first task."""
    for task in s.tasks:
        if task.startswith(task_registry.TWEET_TASK_PREFIX):
            task_registry.tweet_task(task)  # an unknown domain: the error lists the domains
        if task.partition(":")[0] not in task_registry.TASKS:
            raise ValueError(f"unknown task {task!r} in the stream's orders; choose from "
                             f"{', '.join(task_registry.TASKS)}")
    firsts = {order[0] for order in s.orders}
    if len(firsts) != 1:
        raise ValueError(f"every order must start with the same task (they start with {sorted(firsts)}); "
                         "put the same first task at the head of each order")
    if any(len(set(order)) != len(order) for order in s.orders):
        raise ValueError("a task appears twice in one order; list each task once per order")
    return s


# ----------------------------------------------------------------------------- the plan: steps

def _label(kind, key):
    what = {"sequential": lambda k: " > ".join(k["tasks"]), "adapter": lambda k: k["task"],
            "recall": lambda k: " > ".join(k["order"]), "serving": lambda k: ""}[kind](key)
    seed = f" seed {key['seed']}" if "seed" in key else ""
    return f"{kind} {what}{seed}".replace("  ", " ")


def _step(kind, key, needs=(), marker=None, kept=True):
    """A step as a unit of work (work.Work): its key is also what its worker computes it from."""
    return Work(NAME, key, {"step": kind, "key": key}, tuple(needs), marker, kept, files_in=FILES,
                label=_label(kind, key))


def _setup(s):
    """What every step of a profile shares (part of each key)."""
    return {"backbone": s.backbone, "train_size": s.train_size, "max_length": s.max_length,
            "eval_size": s.eval_size, "train": dict(s.train), "stream_version": STREAM_VERSION}


def sequential_step(s, prefix, seed):
    """Its model file is read by the next arrival only: dropped once that one is stored (kept=False)."""
    prefix = tuple(prefix)
    needs = (sequential_step(s, prefix[:-1], seed),) if len(prefix) > 1 else ()
    return _step("sequential", {"step": "sequential", "tasks": list(prefix), "seed": seed, "lr": s.full_lr,
                                **_setup(s)}, needs, marker=stream_steps.MODEL_FILE, kept=False)


def adapter_step(s, task, seed):
    return _step("adapter", {"step": "adapter", "task": task, "seed": seed, "lr": s.adapter_lr,
                             "bottleneck": s.bottleneck, **_setup(s)}, marker=ADAPTER_CONFIG)


def recall_step(s, order, seed, adapter_hashes=None):
    """adapter_hashes ({task: sha256 of its adapter file}) join the key once the adapters are stored: a
    retrained adapter (new file) then needs a new recall, never an old one's verdict."""
    needs = tuple(adapter_step(s, t, seed) for t in order)
    return _step("recall", {"step": "recall", "order": list(order), "seed": seed, "bottleneck": s.bottleneck,
                            "adapters": adapter_hashes, **_setup(s)}, needs)


def serving_step(s):
    return _step("serving", {"step": "serving", "backbone": s.backbone, "bottleneck": s.bottleneck,
                             "swap_repeats": s.swap_repeats, "load_repeats": s.load_repeats,
                             "stream_version": STREAM_VERSION})


def steps(profile, store=None):
    """Every step of a profile's stream (its units of work), in an order that runs: a step after the
    steps it needs. With a store, recall steps carry the stored adapters' file hashes (see recall_step)."""
    s = check_settings(settings(profile))
    out = []
    for seed in s.seeds:
        for task in s.tasks:
            out += [sequential_step(s, (task,), seed), adapter_step(s, task, seed)]  # copies + adapters
        for order in s.orders:
            out += [sequential_step(s, order[:k], seed) for k in range(2, len(order) + 1)]
        for order in s.orders:
            hashes = None
            if store is not None:
                records = [store.get(adapter_step(s, t, seed).key, NAME) for t in order]
                if all(records):
                    hashes = {t: r["adapter_sha256"][ADAPTER_WEIGHTS] for t, r in zip(order, records)}
            out.append(recall_step(s, order, seed, hashes))
    out.append(serving_step(s))
    return list({step.id: step for step in out}.values())  # shared steps once


def work(profile, family, store):
    """The family's units of work (Family.work): its steps, planned as far as `store` lets them be."""
    return steps(profile, store)


# ----------------------------------------------------------------------------- the steps' workers

def with_convergence(record):
    """A training step's record with its convergence verdict under the study's rule (rules.convergence)."""
    return {**record, **rules.convergence(record["curve"], record["class_entropy"])}


def _sequential(spec, needs, out):
    previous = needs[0] if needs else None  # the folder of the model after the previous arrival
    return with_convergence(stream_steps.run_sequential(spec["key"], previous, out))


def _adapter(spec, needs, out):
    return with_convergence(stream_steps.run_adapter(spec["key"], out))


def _recall(spec, needs, out):
    return stream_steps.run_recall(spec["key"], dict(zip(spec["key"]["order"], needs)))  # a task's adapter folder


def _serving(spec, needs, out):
    return stream_steps.run_serving(spec["key"])


# a unit's spec["step"] -> its worker (Family.steps), called by running.execute with the step's spec, the folders
# of the files of its needs (in the order of step.needs) and the folder for its own files
STEPS = {"sequential": _sequential, "adapter": _adapter, "recall": _recall, "serving": _serving}


# ----------------------------------------------------------------------------- names

def order_name(order):
    return " > ".join(short_name(t) for t in order)


def short_name(task):
    return task.removeprefix(task_registry.TWEET_TASK_PREFIX)


# ----------------------------------------------------------------------------- the stored steps

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
    """The exact-recall evidence in the stored steps (StepRecords), per (order, seed): one row with
      same_logits      after the last task every earlier adapter's test logits are bit-identical (sha256)
                       to those right after it arrived (same process, same batches);
      same_classes     ... and its predicted classes equal those its training step recorded;
      base_unchanged   the frozen base's hash is the same after every arrival, equals the hash before
                       and after each adapter's training, and every adapter training left it as it was;
      files_unchanged  every adapter file's sha256 at the end equals the one recorded right after saving.
    The table keeps their conjunction (its exact_recall column)."""
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
            files_unchanged = all(recall["adapter_sha256_after"][t] == recall["adapter_sha256_before"][t]
                                  == adapters[t]["adapter_sha256"][ADAPTER_WEIGHTS] for t in order)
            rows.append(dict(order=i, seed=seed, same_logits=same_logits, same_classes=same_classes,
                             base_unchanged=base_unchanged, files_unchanged=files_unchanged))
    return pd.DataFrame(rows)


def measured_bill(steps, order=0, seed=None):
    """Bytes on disk after each arrival (tasks 1..T of one order), measured from the saved files of the stored
    steps (StepRecords): adapters = the shared base (frozen weights, saved once) + every adapter file so far;
    copies = every fine-tuned model so far (body + head); sequential = its one model file (body + every head so
    far). Also each learner's bytes as a multiple of one model (Houlsby Table 1's "total parameters"). The table
    keeps them per row (stored_bytes, stored_models): storage_bill reads them back."""
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


# ----------------------------------------------------------------------------- the table

COLUMNS = ("learner", "order", "order_name", "seed", "task", "time", "metric", "value")


def stream_table(steps):
    """stream.csv from the stored steps (StepRecords): one row per test of a learner on a task after an arrival,
    tidy like every family's table:
      learner, order (index), order_name (its tasks' short names, in arrival order), seed, task, time (tasks
      seen), metric, value (test accuracy), test_correct, test_examples (its per-example bits: the reading's
      paired noise), converged (the verdict of the run that trained this model on this task);
      stored_bytes, stored_models  the learner's bytes on disk after `time` arrivals (measured_bill), also in
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
            bill = measured_bill(steps, i, seed).set_index(["learner", "tasks"])
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


def build(profile, records, root=None):
    """The family's table (Family.build) from the records of its steps, each found by what it says it ran
    (step_of); a ValueError names the fix when a step is not stored."""
    return FamilyResult(NAME, stream_table(StepRecords(settings(profile), records)))


def storage_bill(table, order=0, seed=None):
    """The storage bill of one order and seed (default: the first seed) as stream.csv keeps it: per tasks seen
    (1..T) and learner, the bytes on disk (measured_bill) and the bill in units of one fine-tuned model."""
    seed = table["seed"].min() if seed is None else seed
    rows = table[(table["order"] == order) & (table["seed"] == seed)].drop_duplicates(["learner", "time"])
    bill = rows.rename(columns={"time": "tasks", "stored_bytes": "bytes", "stored_models": "per_model"})
    return bill[["tasks", "learner", "bytes", "per_model"]].sort_values(["tasks", "learner"], kind="stable") \
        .reset_index(drop=True)


def exact_recall(table):
    """Per (order, seed): whether exact recall holds there (stream.csv's exact_recall, the conjunction of the
    checks recall_checks made on the stored steps)."""
    adapters = table[table["learner"] == "adapters"]
    return adapters.groupby(["order", "seed"])["exact_recall"].first().eq(True).reset_index()


# ----------------------------------------------------------------------------- forgetting

def forgetting_from_matrix(matrix):
    """Per task: its accuracy right after its own training (the diagonal) minus its accuracy after the
    last task (the last column). Positive = forgotten. The last task has had no time to forget: NaN."""
    m = np.asarray(matrix, dtype=float)
    drop = np.diag(m) - m[:, -1]
    drop[-1] = np.nan
    return drop


def joined_bits(bits, counts):
    """Several test splits' correct bits end to end, in train.correct_bits' format (the hex of the packed bits):
    one model's record over several tasks, which stats pairs by example like a single split's."""
    unpacked = [np.unpackbits(np.frombuffer(bytes.fromhex(b), dtype=np.uint8))[:n] for b, n in zip(bits, counts)]
    return np.packbits(np.concatenate(unpacked)).tobytes().hex()


def _joined(cells, tests, seeds):
    """(one joined hex string per seed, the examples they cover) of `tests`, (task, time) pairs, from rows
    indexed by (seed, task, time): every seed is tested on the same test examples of a task."""
    counts = [int(cells.loc[(seeds[0], task, time), "test_examples"]) for task, time in tests]
    return [joined_bits([cells.loc[(seed, task, time), "test_correct"] for task, time in tests], counts)
            for seed in seeds], sum(counts)


def _learner(table, learner, order):
    """(one learner's rows of one order, {task: the time it arrived}, in arrival order)."""
    rows = table[(table["learner"] == learner) & (table["order"] == order)]
    return rows, dict(rows.groupby("task")["time"].min().sort_values())


def stream_matrix(table, learner, order):
    """One learner's accuracy matrix on one order (an index of stream.csv's orders): tasks (rows, in arrival
    order) x tasks seen (columns 1..T), the mean over seeds, NaN before a task arrives."""
    rows, arrived = _learner(table, learner, order)
    mean = rows.groupby(["task", "time"])["value"].mean().unstack("time")
    return mean.reindex(index=list(arrived), columns=range(1, len(arrived) + 1))


def stream_forgetting(table, learner, order, time=None):
    """How much `learner` has forgotten after `time` arrivals of an order (default: all of them): the earlier
    tasks' accuracy right after their own training minus their accuracy now, over every test example of those
    tasks and every seed, with both sources of noise (stats.two_level; test sampling only for one seed).
    Identical predictions give a drop of exactly 0 without a noise estimate."""
    rows, arrived = _learner(table, learner, order)
    time = int(rows["time"].max()) if time is None else time
    earlier, seeds = [t for t, a in arrived.items() if a < time], sorted(rows["seed"].unique())
    cells = rows.set_index(["seed", "task", "time"])
    own, n = _joined(cells, [(t, arrived[t]) for t in earlier], seeds)
    now, _ = _joined(cells, [(t, time) for t in earlier], seeds)
    return stats.two_level(now, own, n)


def stream_drops(table):
    """Per learner, order, earlier task and seed: the task's accuracy right after its own training (own) and
    after the last task (final), the drop own - final paired by example (stats.by_example) with its SE, and
    whether it is beyond its noise (its 95% interval above zero)."""
    rows = []
    for (learner, order), _ in table.groupby(["learner", "order"], sort=False):
        mine, arrived = _learner(table, learner, order)
        last, cells = mine["time"].max(), mine.set_index(["seed", "task", "time"])
        for r in mine[(mine["time"] == mine["task"].map(arrived)) & (mine["time"] < last)].itertuples():
            final = cells.loc[(r.seed, r.task, last)]
            drop = stats.by_example(final["test_correct"], r.test_correct, int(r.test_examples))
            rows.append({"learner": learner, "order": order, "task": r.task, "seed": r.seed, "own": r.value,
                         "final": final["value"], "drop": drop.estimate, "se": drop.se,
                         "beyond_noise": bool(drop.known and drop.ci()[0] > 0)})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- figure

# a learner's line takes its method's colour: the adapters Houlsby's, a fine-tuned copy full fine-tuning's
LEARNER_LINES = {"sequential": "sequential", "adapters": "adapters", "copies": "full"}


def figure(df):
    """Notebook 08, per order: each learner's accuracy matrix (heatmaps on one colour scale, so that a row
    that fades reads the same in every panel); each learner's forgetting after each arrival (the earlier tasks'
    drop since their own training, as the reading measures it: stream_forgetting, its 95% interval over seeds
    and test examples); the storage bill (bytes on disk in units of one fine-tuned model)."""
    F.check_columns(df, ["learner", "order", "order_name", "seed", "task", "time", "value", "test_correct",
                         "test_examples", "stored_models"], NAME)
    seeds, styles = sorted(df["seed"].unique()), F.colors(LEARNER_LINES.values())
    over = f"mean of {len(seeds)} seeds" if len(seeds) > 1 else f"seed {seeds[0]} only"
    matrices, views = {}, {}
    for order, learner in df.groupby(["order", "learner"]).groups:
        matrices[order, learner] = (stream_matrix(df, learner, order) * labels.SCALE).to_numpy()
    cells = np.concatenate([m[np.isfinite(m)] for m in matrices.values()])
    for order, rows in df.groupby("order"):
        ticks, name = rows["order_name"].iloc[0].split(" > "), f"order {order + 1}"
        seen = list(range(1, len(ticks) + 1))
        for learner, title in labels.LEARNER_NAMES.items():
            views[f"{name}: {title}"] = F.View(
                f"{title}, {name}: test accuracy after each arrival\n{over}; a constant row: nothing forgotten",
                "tasks seen", "task, in arrival order", False,
                heatmap=F.Heatmap(matrices[order, learner].tolist(), ticks, "test accuracy (%)", False, {}, [],
                                  columns=seen, limits=(float(cells.min()), float(cells.max())),
                                  hover="%{y} after %{x} task(s): %{z:.1f} %"))
        noise = "95% CI over seeds and test examples" if len(seeds) > 1 else "95% CI over test examples (one seed)"
        forgetting = views[f"{name}: forgetting"] = F.View(
            f"Forgetting, {name}: earlier tasks' accuracy on arrival minus after k tasks\n{over}, {noise}\n"
            "no band: identical predictions, a drop of exactly 0",
            "tasks seen (k)", "forgetting (percentage points)", False, xticks=seen[1:],
            hlines=[("no forgetting", 0.0, "#808080")])
        storage = views[f"{name}: storage bill"] = F.View(
            f"Storage bill, {name}: bytes on disk after each arrival, measured from the saved files\n",
            "tasks seen", "bytes stored (× one fine-tuned model)", False, xticks=seen)
        for learner, title in labels.LEARNER_NAMES.items():
            diffs = [stream_forgetting(df, learner, order, k) for k in seen[1:]]
            err = [d.half_width() * labels.SCALE for d in diffs]
            color, marker = styles[LEARNER_LINES[learner]]
            forgetting.series.append(F.Series(title, seen[1:], [d.estimate * labels.SCALE for d in diffs],
                                              err if any(d.known for d in diffs) else None, color=color,
                                              marker=marker))
            bill = rows[rows["learner"] == learner].drop_duplicates(["seed", "time"]).groupby("time")["stored_models"]
            spread = bill.agg(F.ci95)
            storage.series.append(F.Series(title, list(bill.mean().index), list(bill.mean()),
                                           None if spread.isna().all() else list(spread), color=color, marker=marker))
        storage.title += (f"{over}, 95% CI (t, {len(seeds) - 1} df)" if any(s.err for s in storage.series) else
                          f"{over}: the same bytes for every seed, no error bars" if len(seeds) > 1 else
                          f"{over}: no error bars")
    return F.Figure("stream", views)


# its files: each learner's matrices of every order in one grid, the forgetting and the bill of every order
DRAWN = {"stream_matrices": list(labels.LEARNER_NAMES.values()), "stream_forgetting": ["forgetting"],
         "stream_storage": ["storage bill"]}


# ----------------------------------------------------------------------------- claims

PERFECT_MEMORY = ("frozen shared weights give 'perfect memory of previous tasks using a small number of task-specific "
                  "parameters' (Houlsby et al. §4, on continual learning)")
FORGETTING = ("a network re-trained on each new task forgets the earlier ones, catastrophic forgetting (Houlsby et "
              "al. §4, on continual learning)")
COMPACT = ("adapters add 3.6% of the parameters per task (Houlsby abstract), 1.3x the base model in all for nine "
           "GLUE tasks against 9x for one fine-tuned copy per task (Table 1)")
HOULSBY_GROWTH = 0.036  # a share of one model per task

CLAIMS = (
    Claim(NAME, "order {order}: adapters keep perfect memory (earlier tasks' accuracy after the last task minus "
          "right after their training)", "==", "adapters after the last task", "adapters right after their task",
          "accuracy", declared.TEST, PERFECT_MEMORY, per="order", budget=False, check=True),
    Claim(NAME, "order {order}: sequential fine-tuning forgets (earlier tasks' accuracy right after their "
          "training minus after the last task)", ">", "sequential right after its task",
          "sequential after the last task", "accuracy", declared.TEST, FORGETTING, per="order"),
    Claim(NAME, "adapters store a small part of a model per task, a copy a whole model (bytes added per task, "
          "adapters minus copies, as a share of one fine-tuned model)", "<", "adapters", "copies", "bytes on disk",
          declared.FILES, COMPACT, HOULSBY_GROWTH - 1, COST_MARGIN, unit="% of a model", budget=False,
          check=True),
)


# ----------------------------------------------------------------------------- reading

def measured(estimate, claim, how, n):
    """The check of a declared claim measured without noise (file sizes; recall that hashes prove to be exact), in
    experiments.judge.verdict's labels, decided by the number itself: the direction, the margin, then the paper's
    number as printed (to 0.1). A check is no sampled hypothesis: it is reported apart from Holm's correction."""
    diff = stats.Difference(float(estimate), math.nan, math.nan, n, how)
    if claim.hypothesis == "==":
        label = "reproduced" if abs(estimate) < claim.margin else "not reproduced"
    else:
        sign = 1 if claim.hypothesis == ">" else -1
        shown = round(sign * estimate * 100, 1)  # the claimed direction made positive, as printed
        paper = None if claim.paper_value is None else round(sign * claim.paper_value * 100, 1)
        label = ("reversed" if shown < 0 else "not reproduced" if shown < claim.margin * 100 else
                 "reproduced" if paper in (None, shown) else stats.SMALLER if paper > shown else stats.LARGER)
    return Verdict(claim.hypothesis, label, claim.paper, diff, claim.margin, claim.unit, claim.paper_value,
                   split=claim.split, check=True)


def _growth(table, learner, order):
    """What one more task adds to `learner`'s bytes on disk in one order, in units of one fine-tuned model:
    (the bill after the last task - after the first) / (tasks - 1), the mean over seeds."""
    rows, _ = _learner(table, learner, order)
    bill = rows.groupby("time")["stored_models"].mean()
    return (bill.iloc[-1] - bill.iloc[0]) / (bill.index[-1] - bill.index[0])


def _forgetting_text(diff):
    if not diff.known and diff.estimate == 0:
        return "0.0 (identical predictions on every test example)"
    return ci_text(diff) + " points"


def _converged_text(rows):
    """'; converged: 9 of 12 adapter runs, 12 of 12 fine-tuned copies' and, where some did not, what that means
    for a gap between them (empty when the runs' verdicts are not recorded)."""
    runs = {learner: g.drop_duplicates(["task", "seed"])["converged"].dropna().astype(bool)
            for learner, g in rows.groupby("learner", sort=False)}
    if not all(len(r) for r in runs.values()):
        return ""
    counts = ", ".join(f"{int(r.sum())} of {len(r)} {labels.LEARNER_NAMES[learner]}" for learner, r in runs.items())
    budget = "" if all(r.all() for r in runs.values()) else ": a gap between runs not all converged is this budget's"
    return f"; converged: {counts}{budget}"


def read(df, budget=None):
    """08's reading (stream.csv): each learner's forgetting with its noise and its bill, exact recall, the serving
    cost, the adapters' gap to the copies; verdicts on Houlsby's online setting. The stream has no budget
    controls: `budget` is read by no line."""
    lines, found = [], []
    orders, seeds = sorted(df["order"].unique()), sorted(df["seed"].unique())
    names, examples = df.groupby("order")["order_name"].first(), df.groupby("task")["test_examples"].first()
    tasks = len(names[orders[0]].split(" > "))
    lines.append(f"**A stream of tasks** (notebook 08: {tasks} tweet domains arrive one at a time, in {len(orders)} "
                 f"order(s), {len(seeds)} seed(s); test accuracy on "
                 + (f"{examples.min():,}" if examples.min() == examples.max() else
                    f"{examples.min():,} to {examples.max():,}")
                 + " tweets per task. Forgetting: the earlier tasks' accuracy right after their own training minus "
                 "after the last task, paired by example, its 95% interval over seeds and test examples):")
    drops = stream_drops(df)
    for learner, name in labels.LEARNER_NAMES.items():
        parts = []
        for order in orders:
            mine = drops[(drops["learner"] == learner) & (drops["order"] == order)]
            parts.append(f"order {order + 1}: {_forgetting_text(stream_forgetting(df, learner, order))}, "
                         f"{int(mine['beyond_noise'].sum())} of {len(mine)} task drops beyond their paired noise")
        rows, _ = _learner(df, learner, orders[0])
        stored = rows[rows["time"] == rows["time"].max()][["stored_bytes", "stored_models"]].mean()
        lines.append(f"- {name}: forgetting in " + "; ".join(parts) + f". Stored after {tasks} tasks: "
                     f"{stored['stored_bytes'] / 2**20:,.1f} MiB ({stored['stored_models']:.2f}x one fine-tuned "
                     "model).")
    recall = exact_recall(df).set_index(["order", "seed"])["exact_recall"]
    failed = [f"order {o + 1} seed {s}" for (o, s), ok in recall.items() if not ok]
    lines.append("- exact recall (after the last task every adapter's test logits are bit-identical to those on its "
                 "arrival, and the frozen base's and the adapter files' hashes are unchanged): "
                 + ("holds for every order and seed." if not failed else f"FAILS for {', '.join(failed)}."))
    switch = df.groupby("learner")["switch_seconds"].first()
    lines.append(f"- serving: switching the served task took {1000 * switch['adapters']:.1f} ms by swapping an adapter "
                 f"onto the loaded base and {1000 * switch['copies']:.1f} ms by loading a fine-tuned copy (medians), "
                 f"{switch['copies'] / switch['adapters']:.0f}x longer.")
    last = {learner: _learner(df, learner, orders[0]) for learner in ("adapters", "copies")}
    final = {learner: _joined(rows.set_index(["seed", "task", "time"]), [(t, tasks) for t in arrived], seeds)
             for learner, (rows, arrived) in last.items()}
    gap = stats.two_level(final["copies"][0], final["adapters"][0], final["copies"][1])
    lines.append(f"- adapters minus the fine-tuned copies over every task after the last arrival (order 1): "
                 f"{ci_text(gap)} points (95% CI, {gap.how})"
                 + _converged_text(pd.concat([rows for rows, _ in last.values()])) + ".")
    memory, forgets, storage = CLAIMS
    for order in orders:
        kept = stream_forgetting(df, "adapters", order)
        # perfect memory is a check where the hashes prove the very same model; without that proof it is not
        # shown (a nil drop on a sample is no proof of none)
        remembers = (measured(kept.estimate, memory, "exact: the same frozen base and adapter files (sha256), "
                              "bit-identical test logits", kept.n) if recall[order].all() else
                     Verdict(memory.hypothesis, "inconclusive", memory.paper, kept, split=memory.split,
                             check=True))
        found += [(memory.says.format(order=order + 1), remembers),
                  judge(forgets, [stream_forgetting(df, "sequential", order)], order=order + 1)]
    bill = _growth(df, "adapters", orders[0]) - _growth(df, "copies", orders[0])
    found.append((storage.says, measured(bill, storage, "exact: measured from the saved files", tasks - 1)))
    return lines + verdict_lines(found), found


FAMILY = register(Family(
    NAME, "08_stream_of_tasks", StreamSettings, PROFILES, split="test", work=work, steps=STEPS, columns=COLUMNS,
    build=build, read=read, claims=CLAIMS, figures={"stream": F.Entry(figure, "stream.csv", DRAWN, DRAWN)}))
