"""What a larger study would decide: for each claim a design re-measures (more seeds, more examples), the chance
that its verdict after Holm's correction is decisive (anything but "inconclusive"), taking today's estimate and
variance components as the truth. The claims a design leaves alone keep the p-values they have, and Holm's
correction runs over the whole family each time, as it would in the study.

    python -m adapterlab.report.power --profile default --design "05 at 15 seeds:05:15"
    power.decisive(rows, Design("05 at 15 seeds", ("05",), 15))   # {claim: chance of a decisive verdict}

The designs are arguments: which were considered, and which chosen, is the protocol's to say (docs/protocol.md),
not this module's.

Each replicate draws every re-measured comparison from its own noise model (stats.simulate: the crossed mean
squares, Welch's arm variances, or one run's examples) and judges it by the declared test (stats.verdict). The
members of a claim are drawn independently, though they share a reference arm: the chance is a guide for
choosing a design, not a verdict.
"""
import argparse
from dataclasses import dataclass, replace

import numpy as np

from ..experiments import stats
from . import document


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


def _redrawn(verdict, draws, r):
    """The verdict of replicate r: each member's Difference replaced by its r-th draw (as a t-based Difference:
    stats.normal_theory), judged as declared."""
    members = [replace(stats.normal_theory(d), estimate=float(e[r]), se=float(s[r]), df=float(f[r]))
               for d, (e, s, f) in zip(verdict.members, draws)]
    return stats.verdict(members, verdict.claim, verdict.paper, verdict.margin, verdict.unit, verdict.paper_value,
                         names=verdict.names, log_ratio=verdict.log_ratio, split=verdict.split)


def parse_design(text):
    """A Design from the command line's "NAME:NOTEBOOKS:SEEDS[:EXAMPLES]" (NOTEBOOKS comma-separated numbers)."""
    parts = text.split(":")
    if len(parts) not in (3, 4) or not parts[2].isdigit() or (len(parts) == 4 and not parts[3].isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r}: write a design as NAME:NOTEBOOKS:SEEDS[:EXAMPLES], "
                                         "e.g. \"05 at 15 seeds:05:15\"")
    examples = int(parts[3]) if len(parts) == 4 else None
    return Design(parts[0], tuple(parts[1].split(",")), int(parts[2]), examples)


def decisive(rows, design, replicates=1000, seed=0, truth=None):
    """{claim title: chance of a decisive verdict after Holm} for the claims `design` re-measures, from
    [(notebook, claim, Verdict)] as document.readings gives them (checks are left out). truth: {claim title:
    Verdict} to plan from where the rows have no measurement yet."""
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


def chances(profile, designs, replicates=1000):
    """(number of tested claims, [dict(design, claim, today, chance)]): per design, each claim it re-measures
    that is inconclusive after Holm today (or awaits its data), and its chance of a decisive verdict after Holm
    under the design."""
    rows = document.readings(profile)[1]
    today = {title: h for _, title, _, h in document.corrected(rows)}
    out = []
    for design in designs:
        out += [dict(design=design.name, claim=title, today=today[title].label, chance=p)
                for title, p in decisive(rows, design, replicates).items()
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
    parser.add_argument("--design", action="append", required=True, type=parse_design,
                        help='a design: "NAME:NOTEBOOKS:SEEDS[:EXAMPLES]", e.g. "05 at 15 seeds:05:15" or '
                             '"04 at 3 seeds:04:3:5000"; repeat for several')
    parser.add_argument("--write", action="store_true",
                        help="also write data/results/<profile>/power.csv, which FINDINGS.md reads")
    args = parser.parse_args()
    tested, found = chances(args.profile, args.design, replicates=args.replicates)
    if args.write:
        import pandas as pd
        from ..experiments import profiles

        pd.DataFrame(found).to_csv(profiles.results_dir(args.profile) / "power.csv", index=False)
    print("\n".join(table(tested, found, args.replicates)))
