"""What a larger study would decide: for each claim a design re-measures (more seeds, more examples), the chance
that its verdict after Holm's correction is decisive (anything but "inconclusive"), taking today's estimate and
variance components as the truth. The claims a design leaves alone keep the p-values they have, and Holm's
correction runs over the whole family each time, as it would in the study.

    python -m adapterlab.report.power --profile default        # the table for the candidate DESIGNS
    power.decisive(rows, DESIGNS[0])                           # {claim: chance of a decisive verdict}

Each replicate draws every re-measured comparison from its own noise model (stats.simulate: the crossed mean
squares, Welch's arm variances, or one run's examples) and judges it by the declared test (stats.verdict). The
members of a claim are drawn independently, though they share a reference arm: the chance is a guide for
choosing a design, not a verdict.
"""
import argparse
from dataclasses import dataclass, replace

import numpy as np

from ..experiments import stats
from . import claims, document
from .findings import load, span_members


@dataclass(frozen=True)
class Design:
    """A study to run: the notebooks (stems) whose claims it re-measures, with `seeds` seeds on `examples` test
    examples per comparison (None: as many as today), or only their cost claims."""

    name: str
    stems: tuple
    seeds: int
    examples: int | None = None
    costs_only: bool = False

    def covers(self, stem, verdict):
        return stem in self.stems and (verdict.log_ratio or not self.costs_only)


DESIGNS = (
    Design("05 at 7 seeds", ("05",), 7),
    Design("05 at 10 seeds", ("05",), 10),
    Design("06 cost claims (full, Prompt Tuning-R, Intrinsic-SAID) at 5 seeds", ("06",), 5, costs_only=True),
    Design("06 and 07 at 5 seeds", ("06", "07"), 5),
    Design("04 on 6,000 held-out tweets (one run)", ("04",), 1, 6000),
)


def layer_removal_truth(profile):
    """{claim title: Verdict} of 04's claims as today's validation scoring measures them: the truth a held-out
    design is planned from (never a verdict: validation chose the run's best state). The all-removed claim,
    which the span records do not pair with the majority-class predictor, takes the unpaired SE of one score
    against the exact majority rate (stats.scores), which overstates its noise."""
    df = load(profile, "layer_removal")
    out = {}
    for task, d in df.groupby("task", sort=False):
        n = int(d["eval_examples"].iloc[0])
        for c in claims.of("layer_removal"):
            if c.b == "majority class" and "majority_correct" not in d:
                removed = float(d[d["n_removed"] == d["n_layers"]]["value"].iloc[0])
                one = stats.scores(removed, float(d["baseline"].iloc[0]), n, b_exact=True)
                members, names = [replace(one, design=stats.Crossed(0.0, one.se ** 2 * n, 0.0, 1, n))], []
            else:
                members, names = span_members(d, c)
            out[c.says.format(task=task, last_lower=int(d["n_layers"].iloc[0]) // 2 - 1)] = stats.verdict(
                members, c.hypothesis, c.paper, c.margin, c.unit, c.paper_value, names=names, split=c.split)
    return out


def _redrawn(verdict, draws, r):
    """The verdict of replicate r: each member's Difference replaced by its r-th draw, judged as declared."""
    members = [replace(d, estimate=float(e[r]), se=float(s[r]), df=float(f[r])) for d, (e, s, f) in
               zip(verdict.members, draws)]
    return stats.verdict(members, verdict.claim, verdict.paper, verdict.margin, verdict.unit, verdict.paper_value,
                         names=verdict.names, log_ratio=verdict.log_ratio, split=verdict.split)


def decisive(rows, design, replicates=1000, seed=0, truth=None):
    """{claim title: chance of a decisive verdict after Holm} for the claims `design` re-measures, from
    [(notebook, claim, Verdict)] as document.readings gives them (checks are left out). truth: {claim title:
    Verdict} to plan from where the rows have no measurement yet (04's claims awaiting held-out scoring)."""
    rng = np.random.default_rng(seed)
    tested = [(stem, title, (truth or {}).get(title, v)) for stem, title, v in rows if not v.check]
    redone = [i for i, (stem, _, v) in enumerate(tested) if design.covers(stem, v) and v.members
              and all(d.known for d in v.members)]
    draws = {i: [stats.simulate(d, design.seeds, design.examples or getattr(d.design, "examples", None), replicates,
                                rng) for d in tested[i][2].members] for i in redone}
    hits = dict.fromkeys(redone, 0)
    for r in range(replicates):
        family = [_redrawn(v, draws[i], r) if i in draws else v for i, (_, _, v) in enumerate(tested)]
        after = stats.holm(family)
        for i in redone:
            hits[i] += after[i].label != "inconclusive"
    return {tested[i][1]: hits[i] / replicates for i in redone}


def chances(profile="default", designs=DESIGNS, replicates=1000):
    """(number of tested claims, [dict(design, claim, today, chance)]): per design, each claim it re-measures
    that is inconclusive after Holm today (or awaits its data), and its chance of a decisive verdict after Holm
    under the design."""
    rows = document.readings(profile)[1]
    today = {title: h for _, title, _, h in document.corrected(rows)}
    truth = layer_removal_truth(profile) if load(profile, "layer_removal") is not None else {}
    out = []
    for design in designs:
        out += [dict(design=design.name, claim=title, today=today[title].label, chance=p)
                for title, p in decisive(rows, design, replicates, truth=truth).items()
                if today[title].label == "inconclusive" or today[title].label.startswith("awaiting")]
    return len(today), out


def table(tested, found, replicates=1000):
    """Markdown lines of chances()' rows, one table per design."""
    out = [f"Chance of a decisive verdict after Holm's correction over all {tested} tested claims, taking "
           f"today's estimates and variance components as the truth ({replicates:,} replicates each):", ""]
    for design in dict.fromkeys(r["design"] for r in found):
        out += [f"**{design}**", "", "| claim | today, after Holm | chance of a decisive verdict |", "|---|---|---|"]
        out += [f"| {r['claim']} | {r['today']} | {r['chance']:.0%} |" for r in found if r["design"] == design]
        out.append("")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m adapterlab.report.power", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="default")
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--write", action="store_true",
                        help="also write data/results/<profile>/power.csv, which FINDINGS.md reads")
    args = parser.parse_args()
    tested, found = chances(args.profile, replicates=args.replicates)
    if args.write:
        import pandas as pd
        from ..experiments import profiles

        pd.DataFrame(found).to_csv(profiles.results_dir(args.profile) / "power.csv", index=False)
    print("\n".join(table(tested, found, args.replicates)))
