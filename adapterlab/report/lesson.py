"""What notebook 03's lesson runs show: one run per method, compared with full fine-tuning and the
majority class on the same test examples. They teach; they are not verdicts (06 and 07 carry the
claims), so each comparison says it is one run, test sampling only, and whether the run converged.

    from adapterlab.report import lesson
    results, majority, metric = lesson.teaching_table(records)
    print("\n".join(lesson.teaching(results, majority, metric, lesson.test_examples("default", "airline"))))
"""
import math

import pandas as pd

from ..experiments import rules, stats
from . import labels
from .findings import ci_text, pts

TEACHING_CLAIMS = {  # method -> what the papers report against full fine-tuning
    "houlsby": "within 0.4 points of full fine-tuning on GLUE with 3.6% of the parameters (Houlsby Table 1)",
    "pfeiffer": "on par with full fine-tuning, a slight degradation (Compacter Table 1)",
    "compacter": "on par with full fine-tuning with 0.073% of the parameters (Compacter Table 1)",
    "compacter++": "on par with full fine-tuning with 0.047% of the parameters (Compacter Table 1)",
}


def teaching(results, majority, metric, n_test):
    """03's reading: markdown lines from its results table (index method; columns 'test <metric>',
    'trainable %', 'examples/s', optionally 'test_correct' and 'converged'), the majority-class score and the
    number of test examples. 03's runs teach: one run per method, so its comparisons with full fine-tuning
    are shown with their intervals, which cover test sampling only, and judge no paper claim (06 does).
    Differences are paired by example when the table has each run's `test_correct` bits; otherwise they get
    the conservative unpaired SE of two scores (stats.scores), and the text says which."""
    test = results[f"test {metric}"]
    bits = results["test_correct"] if "test_correct" in results else pd.Series(None, index=results.index)
    lines = [f"One run per method, test {labels.metric_name(metric)} on {n_test:,} examples (one score's "
             f"sampling SE about {pts(math.sqrt(test.mean() * (1 - test.mean()) / n_test))} points); majority "
             f"class {pts(majority)}."]
    for m in test.index:
        above = stats.scores(test[m], majority, n_test, b_exact=True)
        lines.append(f"- {m}: {pts(test[m])}, {results.loc[m, 'trainable %']:.3f}% of the parameters trained; "
                     f"{ci_text(above)} points above the majority class (95% CI).")
    if "full" in test.index:
        for m in (m for m in test.index if m in TEACHING_CLAIMS):
            paired = isinstance(bits[m], str) and isinstance(bits["full"], str)
            diff = (stats.by_example(bits["full"], bits[m], n_test) if paired else
                    stats.scores(test[m], test["full"], n_test))
            lines.append(f"- {m} minus full fine-tuning: {ci_text(diff)} points (95% CI, {diff.how}; one run "
                         f"each, so test sampling only); the papers: {TEACHING_CLAIMS[m]}.")
        speed = results["examples/s"] / results.loc["full", "examples/s"]
        others = speed.drop("full")
        if len(others):
            lines.append(f"- training speed relative to full fine-tuning: {others.min():.2f}x to {others.max():.2f}x "
                         f"({others.idxmax()} fastest; measured, one run each): adapters save the optimizer state "
                         "and the weight gradients, but the backward pass still runs through every layer.")
    if "converged" in results:
        lines.append(f"- {int((~results['converged'].astype(bool)).sum())} of {len(results)} runs not converged "
                     f"(rule {rules.CONVERGENCE_RULE_VERSION}): these are the lesson's runs at its budget; notebook "
                     "06 judges the claims, with seeds.")
    return lines


def teaching_table(records):
    """(results, majority, metric) of 03's stored runs on its first task: the table notebook 03 builds."""
    first = records[0]["task"]
    rows = {r["method"]: r for r in records if r["task"] == first}
    metric = records[0]["metric"]
    results = pd.DataFrame([{"method": m, f"test {metric}": r["test"], "trainable %": r["percent"],
                             "examples/s": r["examples_per_second"], "test_correct": r.get("test_correct"),
                             "converged": bool(r.get("converged"))}
                            for m, r in rows.items()]).set_index("method")
    return results, records[0]["majority"], metric


def test_examples(profile, task):
    """How many test examples a stored score of `task` was measured on: the profile's evaluation cap for 03,
    or the whole test split when it has none (or is smaller)."""
    from ..experiments import planning  # the datasets: only when asked
    from ..training import tasks
    n = len(tasks.load_task(task).splits["test"])
    cap = planning.eval_size(profile, "teaching")
    return min(cap, n) if cap else n
