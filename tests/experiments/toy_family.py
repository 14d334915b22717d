"""A family defined outside the package, in one module: Houlsby adapters of a few bottleneck sizes, the bigger
claimed to score above the smaller. Importing it registers it; test_toy_family.py runs it through every engine."""
from dataclasses import dataclass

from adapterlab.experiments import planning
from adapterlab.experiments.families import Family, register
from adapterlab.experiments.profiles import Common
from adapterlab.report import figures, findings, tables
from adapterlab.report.claims import accuracy_claim

NAME = "toy_sizes"


@dataclass(frozen=True)
class ToySizes(Common):
    """The bottleneck sizes trained, one run each per seed."""
    sizes: tuple = (4, 16)
    seeds: tuple = (0,)


def plan(p, chosen):
    s = p.settings(NAME)
    return [planning.config_for(p, task=task, method="houlsby", method_args={"bottleneck": m}, seed=seed,
                                family_train=s.train)
            for task in s.tasks or p.tasks for m in s.sizes for seed in s.seeds]


def build(profile, records, root=None):
    rows = [dict(task=r["task"], bottleneck=r["config"]["method_args"]["bottleneck"], metric=r["metric"],
                 value=r["test"], **tables.run_columns(r), baseline=r.get("majority_test")) for r in records]
    return tables.FamilyResult(NAME, tables.tidy_frame(rows, FAMILY))


def figure(df):
    view = figures.View("score vs. bottleneck", "bottleneck m", "test accuracy")
    view.series.append(figures.seed_series("houlsby", df, "bottleneck", "value", figures.key_style(["houlsby"], "houlsby")))
    return figures.Figure(NAME, {"score": view})


CLAIMS = (accuracy_claim(NAME, "{task}: the bigger bottleneck above the smaller", ">", "bigger", "smaller",
                         "a toy claim"),)


def read(df, budget=None):
    found = []
    for task, d in df.groupby("task", sort=False):
        small, big = min(d["bottleneck"]), max(d["bottleneck"])
        found.append(findings.judge(CLAIMS[0], [findings.by_seed(d, big, small, "bottleneck")], task=task))
    lines = [f"**Toy sizes** ({len(df)} runs): " + ", ".join(f"m={m} {findings.pts(v)}" for m, v in
                                                           zip(df["bottleneck"], df["value"]))]
    return lines + findings.verdict_lines(found), found


def study(s, scale):
    return [("sizes", list(s.sizes), "the bottleneck sizes"), ("seeds", list(scale.seeds), "each size's seeds")]


FAMILY = register(Family(
    NAME, "09_toy_sizes", ToySizes, {"smoke": dict(sizes=(4, 8))}, split="test", plan=plan,
    control_entry=lambda c: c.method_args["bottleneck"], columns=("task", "bottleneck", "seed", "metric", "value"),
    build=build, read=read, claims=CLAIMS, filters={"task": "task"}, study=study,
    figures={"toy_sizes": figures.Entry(figure, "toy_sizes.csv", {"toy_sizes": ["score"]}, {"toy_sizes": None})}))
