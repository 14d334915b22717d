"""What notebook 08's stream shows: forgetting with its paired noise, exact recall, the storage bill,
the serving cost, its tables, figures and readings, all read from the stored steps (experiments/stream.py).
"""
import math

import numpy as np
import pandas as pd

from ..experiments import profiles as profiles_module
from ..experiments import stats
from ..experiments.results import write_csvs
from ..experiments.results import ResultStore
from ..experiments.stream import (FAMILY, LEARNERS, adapter_step, load, order_name, sequential_step,
                                  serving_step, short_name, steps, task_split)
from ..methods.saving import ADAPTER_WEIGHTS

def forgetting_from_matrix(matrix):
    """Per task: its accuracy right after its own training (the diagonal) minus its accuracy after the
    last task (the last column). Positive = forgotten. The last task has had no time to forget: NaN."""
    m = np.asarray(matrix, dtype=float)
    drop = np.diag(m) - m[:, -1]
    drop[-1] = np.nan
    return drop


def forgetting(result, learner, order=0):
    """Per (task, seed) of one order: the drop since the task's own training, as a paired difference of
    the per-example correct bits on the same test examples (stats.by_example), and whether it exceeds
    its noise (its 95% interval lies above zero, the suite's rule). Tidy: learner, order, task, seed, own,
    final, drop, se, beyond_noise."""
    s = result.settings
    order_tasks = tuple(s.orders[order])
    last = len(order_tasks) - 1
    rows = []
    for seed in s.seeds:
        tests = result.tests(learner, order_tasks, seed)
        for i, task in enumerate(order_tasks[:-1]):
            own, final = tests[(task, i)], tests[(task, last)]
            drop = stats.by_example(final["correct"], own["correct"], own["examples"])  # own - final
            low, _ = drop.ci()
            rows.append(dict(learner=learner, order=order, task=task, seed=seed, own=own["accuracy"],
                             final=final["accuracy"], drop=drop.estimate, se=drop.se,
                             beyond_noise=bool(drop.se > 0 and low > 0)))
    return pd.DataFrame(rows)


def mean_forgetting(frame):
    """The mean drop over tasks and seeds as a stats.Difference: paired by seed (each seed's mean own score
    minus its mean final score; SE from the spread over seeds). Where the seeds give no spread (one seed, or
    identical seeds) its SE is the per-example paired SEs combined, sqrt(sum se^2) / count (normal)."""
    per_seed = frame.groupby("seed")[["own", "final"]].mean()
    diff = stats.paired(per_seed["own"].to_numpy(), per_seed["final"].to_numpy())
    if diff.known:
        return diff
    se = float(math.sqrt((frame["se"] ** 2).sum()) / len(frame))
    return stats.Difference(diff.estimate, se, math.inf, len(frame), "paired by example, combined")


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
    one_model = copies[0]
    rows = []
    for n in range(1, len(order_tasks) + 1):
        bills = {"adapters": recall["base_bytes"] + sum(adapters[:n]), "copies": sum(copies[:n]),
                 "sequential": sequential[n - 1]}
        for learner, total in bills.items():
            rows.append(dict(tasks=n, learner=learner, bytes=total, per_model=total / one_model))
    return pd.DataFrame(rows)


def serving(result):
    """The serving record: swap_median, load_median (seconds), their lists, sizes and the machine."""
    return result.record(serving_step(result.settings))


def forgetting_all(result):
    """forgetting() of every learner and order, in one table."""
    return pd.concat([forgetting(result, learner, i) for learner in LEARNERS
                      for i in range(len(result.settings.orders))], ignore_index=True)


def summary(result):
    """Per learner and order: mean forgetting over tasks and seeds with its SE (mean_forgetting), how many
    (task, seed) drops exceed their own paired noise, and the bytes stored after the last task."""
    rows = []
    frame = forgetting_all(result)
    for (learner, order), g in frame.groupby(["learner", "order"], sort=False):
        diff = mean_forgetting(g)
        low, high = diff.ci() if diff.se > 0 else (diff.estimate, diff.estimate)
        bill = storage_bill(result, order)
        stored = bill[(bill["learner"] == learner) & (bill["tasks"] == bill["tasks"].max())].iloc[0]
        rows.append(dict(learner=learner, order=order, order_name=order_name(result.settings.orders[order]),
                         mean_forgetting=diff.estimate, se=diff.se, ci_low=low, ci_high=high,
                         forgets=bool(diff.se > 0 and low > 0),
                         # an adapter's recall is exact: no example changed, a drop of exactly zero, is small
                         small=bool(stats.equivalent(diff) or (diff.se == 0 and diff.estimate == 0)),
                         beyond_noise=int(g["beyond_noise"].sum()), drops=len(g),
                         bytes=int(stored["bytes"]), per_model=float(stored["per_model"])))
    return pd.DataFrame(rows)


def write_tables(result, profile=None):
    """stream_accuracy.csv, stream_forgetting.csv, stream_storage.csv, stream_summary.csv in
    data/results/<profile>/ (tidy, for readers who want the numbers without the store)."""
    folder = profiles_module.results_dir(profiles_module.resolve(profile))
    tables = {"stream_accuracy": result.accuracy_table(), "stream_forgetting": forgetting_all(result),
              "stream_storage": pd.concat([storage_bill(result, i).assign(order=i)
                                           for i in range(len(result.settings.orders))], ignore_index=True),
              "stream_summary": summary(result)}
    return write_csvs(tables, folder)


# ----------------------------------------------------------------------------- figures

LEARNER_NAMES = {"sequential": "sequential fine-tuning", "adapters": "adapters (frozen base)",
                 "copies": "one fine-tuned copy per task"}


def figure_matrices(result):
    """Heatmaps of the accuracy matrix (mean over seeds): one row of panels per order, one column per learner."""
    import matplotlib.pyplot as plt

    s = result.settings
    fig, axes = plt.subplots(len(s.orders), len(LEARNERS), figsize=(4.2 * len(LEARNERS), 3.4 * len(s.orders)),
                             squeeze=False, constrained_layout=True)
    for i, order in enumerate(s.orders):
        for j, learner in enumerate(LEARNERS):
            m = result.matrix(learner, order)
            ax = axes[i][j]
            image = ax.imshow(m.to_numpy(), vmin=0, vmax=1, cmap="viridis")
            for (r, c), value in np.ndenumerate(m.to_numpy()):
                if not np.isnan(value):
                    ax.text(c, r, f"{100 * value:.1f}", ha="center", va="center",
                            color="white" if value < 0.6 else "black", fontsize=9)
            ax.set_xticks(range(len(order)), [f"after {k}" for k in range(1, len(order) + 1)], fontsize=8)
            ax.set_yticks(range(len(order)), [short_name(t) for t in order], fontsize=8)
            ax.set_title(f"{LEARNER_NAMES[learner]}\norder {i + 1}", fontsize=9)
    fig.colorbar(image, ax=axes, shrink=0.6, label="test accuracy (mean over seeds)")
    return fig


def figure_storage(result, order=0):
    """Bytes on disk against the number of tasks seen, per learner (measured from the saved files)."""
    import matplotlib.pyplot as plt

    bill = storage_bill(result, order)
    fig, ax = plt.subplots(figsize=(5.5, 3.6), constrained_layout=True)
    for learner, g in bill.groupby("learner", sort=False):
        ax.plot(g["tasks"], g["bytes"] / 2**20, marker="o", label=LEARNER_NAMES[learner])
    ax.set_xlabel("tasks seen")
    ax.set_ylabel("bytes on disk (MiB)")
    ax.set_xticks(sorted(bill["tasks"].unique()))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.set_title("storage bill", fontsize=10)
    return fig


def figure_forgetting(result):
    """Forgetting per task (mean over seeds) with its 95% interval as error bars (the paired by-example SEs
    combined; normal, each on hundreds of examples), per learner and order."""
    import matplotlib.pyplot as plt

    frame = forgetting_all(result)
    orders = sorted(frame["order"].unique())
    fig, axes = plt.subplots(1, len(orders), figsize=(5.2 * len(orders), 3.4), squeeze=False, constrained_layout=True)
    width = 0.8 / len(LEARNERS)
    for ax, order in zip(axes[0], orders):
        g = frame[frame["order"] == order]
        tasks = list(dict.fromkeys(g["task"]))
        for k, learner in enumerate(LEARNERS):
            by = g[g["learner"] == learner].groupby("task", sort=False)
            means = by["drop"].mean().reindex(tasks)
            noise = (stats.Z_TWO_SIDED * np.sqrt((by["se"].apply(lambda x: (x ** 2).sum())) / by.size() ** 2)).reindex(tasks)
            ax.bar(np.arange(len(tasks)) + (k - 1) * width, 100 * means, width, yerr=100 * noise, capsize=3,
                   label=LEARNER_NAMES[learner])
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(range(len(tasks)), [short_name(t) for t in tasks], fontsize=8)
        ax.set_ylabel("forgetting (points; 95% CI, paired by example)")
        ax.set_title(f"order {order + 1}: {order_name(result.settings.orders[order])}", fontsize=9)
    axes[0][0].legend(fontsize=7)
    return fig


def save_figures(profile=None, result=None):
    """Draw the three figures from the store into figures/<profile>/ (PNG, through plots.save_figure: a
    fixed DPI and no version stamp, so a redraw leaves git clean); returns their paths. No training."""
    from .plots import save_figure

    p = profiles_module.resolve(profile)
    result = result or load(p)
    return [save_figure(draw(result), name, p) for name, draw in
            (("stream_accuracy", figure_matrices), ("stream_forgetting", figure_forgetting),
             ("stream_storage", figure_storage))]


# ----------------------------------------------------------------------------- readings

def _mib(n):
    return f"{n / 2**20:,.1f} MiB"


def timing(profile=None):
    """One line: what this notebook's steps cost from scratch, summed from the store (or that it is untrained)."""
    p = profiles_module.resolve(profile)
    store = ResultStore(profiles_module.results_dir(p))
    records = [store.get(step.key, FAMILY) for step in steps(p, store)]
    done = [r for r in records if r is not None]
    if not done:
        return f"from scratch: {len(records)} steps to run (none stored yet)"
    seconds = sum(r.get("run_seconds", 0.0) / r.get("workers", 1) for r in done)
    machines = sorted({r["machine"] for r in done if "machine" in r})
    return (f"from scratch: {len(records)} steps, {seconds / 60:.1f} min (each step's run_seconds, divided by "
            f"the steps trained side by side with it) on {', '.join(machines) or 'an unrecorded machine'}"
            + ("" if len(done) == len(records) else f"; {len(records) - len(done)} steps not stored yet"))


def adapter_gap(result):
    """(Difference, rising, trained, collapsed): the adapters' mean test accuracy over the tasks minus the
    copies', paired by seed (both learners' final scores are their scores right after their own training, so
    one order serves both); how many adapter runs had their best validation at their last evaluation; and the
    (task, seed) of adapter runs that ended less than stats.COLLAPSE above their test split's majority class."""
    s = result.settings
    order = s.orders[0]
    def mean_final(learner, seed):
        tests = result.tests(learner, order, seed)
        return float(np.mean([tests[(task, len(order) - 1)]["accuracy"] for task in order]))
    gap = stats.paired([mean_final("adapters", sd) for sd in s.seeds], [mean_final("copies", sd) for sd in s.seeds])
    runs = {(task, sd): result.record(adapter_step(s, task, sd)) for task in s.tasks for sd in s.seeds}
    rising = sum(r["curve"][-1]["validation"] >= max(p["validation"] for p in r["curve"]) for r in runs.values())
    collapsed = []
    for (task, sd), r in runs.items():
        labels = np.asarray(task_split(s, task, sd).splits["test"]["label"])
        if r["test"]["accuracy"] - np.bincount(labels).max() / len(labels) < stats.COLLAPSE:
            collapsed.append((task, sd))
    return gap, rising, len(runs), collapsed


def readings(result):
    """The closing note, from the results: per learner the mean forgetting with its noise, the bytes
    after the last task, the swap time against the load time; and whether forgetting is small."""
    s = result.settings
    table = summary(result)
    serve = serving(result)
    lines = []
    for learner in LEARNERS:
        parts = []
        for _, row in table[table["learner"] == learner].iterrows():
            interval = (f"95% interval {100 * row['ci_low']:+.1f} to {100 * row['ci_high']:+.1f}"
                        if row["se"] > 0 else "no noise at all: identical predictions")
            parts.append(f"order {row['order'] + 1}: {100 * row['mean_forgetting']:+.1f} points ({interval}), "
                         f"{row['beyond_noise']} of {row['drops']} task drops beyond their paired noise")
        stored = table[table["learner"] == learner].iloc[0]
        lines.append(f"- **{LEARNER_NAMES[learner]}**: mean forgetting " + "; ".join(parts)
                     + f". Stored after {len(s.orders[0])} tasks: {_mib(stored['bytes'])} "
                       f"({stored['per_model']:.2f}× one fine-tuned model).")
    seq = table[table["learner"] == "sequential"]
    recall = recall_checks(result)
    exact = bool(recall[["same_logits", "same_classes", "base_unchanged", "files_unchanged"]].to_numpy().all())
    lines.append(f"- **Exact recall**: {'holds' if exact else 'FAILS'} for every order and seed "
                 "(identical predictions after the last task, unchanged base and adapter-file hashes).")
    lines.append(f"- **Serving**: switching task by swapping an adapter on a loaded base took "
                 f"{1000 * serve['swap_median']:.1f} ms (median of {len(serve['swap_seconds'])}), loading a "
                 f"fine-tuned model {1000 * serve['load_median']:.1f} ms (median of {len(serve['load_seconds'])}): "
                 f"{serve['load_median'] / serve['swap_median']:.0f}× longer, on {serve['machine']} "
                 f"with {serve['threads']} thread(s).")
    gap, rising, trained, collapsed = adapter_gap(result)
    low, high = gap.ci()
    interval = f"95% interval {100 * low:+.1f} to {100 * high:+.1f}" if gap.known else "no noise estimate"
    lines.append(f"- **What the adapters cost in accuracy here**: their mean test score over the {len(s.orders[0])} "
                 f"tasks minus the fine-tuned copies', {gap.how} (n={gap.n}): {100 * gap.estimate:+.1f} points "
                 f"({interval}). {rising} of {trained} adapter runs had their best validation score at their last "
                 f"evaluation, so at this budget ({s.train.get('epochs', '?')} epochs of {s.train_size:,} tweets "
                 "per task) the gap is the budget's, not a claim about adapters at convergence; the memory and "
                 "storage claims do not depend on it. "
                 + (f"{len(collapsed)} adapter run(s) collapsed (ended < {100 * stats.COLLAPSE:g} points above the "
                    "majority class: " + ", ".join(f"{short_name(t)} seed {sd}" for t, sd in collapsed)
                    + f"; Houlsby m={s.bottleneck} at lr {s.adapter_lr:g}): the paper's answer to such runs is the "
                    "best of several, the mean above keeps them."
                    if collapsed else "No adapter run collapsed to the majority class."))
    margin = f"{100 * stats.MARGIN:.1f} points"
    if seq["small"].all():
        lines.append(f"- **Forgetting between these sentiment domains is small here**: in every order the "
                     f"sequential learner's mean drop is shown to be within {margin} of zero (equivalence test, "
                     "adapterlab.experiments.stats). That is plausible because every domain has the same three labels, "
                     "and each task keeps its own head, so what the body learns for one domain mostly still "
                     "serves the others; it need not hold for tasks that differ more (GLUE's NLI against "
                     "acceptability).")
    elif seq["forgets"].any():
        orders = ", ".join(str(o + 1) for o in seq.loc[seq["forgets"], "order"])
        lines.append(f"- **Sequential fine-tuning forgets**: its mean drop is above zero beyond the noise in "
                     f"order(s) {orders}, while the adapters' scores after the last task are the very scores they "
                     "had on arrival.")
    else:
        lines.append(f"- **Sequential forgetting is inconclusive**: its mean drop is neither shown above zero "
                     f"nor shown within {margin} of it; more seeds or test examples would tell.")
    return lines
