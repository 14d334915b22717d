"""Where the stored numbers come from: which records a family's plan has stored, what they cost to
make from scratch, and on which machines their seconds were measured.

    from adapterlab.report import provenance
    print(provenance.timing(profile, "06"))   # one sentence for the top of a notebook
    seconds, runs, what = provenance.from_scratch(profile, "08")

Machines differ from session to session (AVX2-only and AVX-512 CPUs), and a sweep trains runs side by
side, so every sum says both: the machines that made the records, and how many runs shared them.
"""
from collections import Counter
from dataclasses import dataclass

from ..experiments import families, profiles


@dataclass(frozen=True)
class FamilyPlan:
    """A family's plan under a root (estimate.units: every unit it makes, each stored or not) and the store it was
    made from: made once (family_plan) and asked every question of it, which records are stored (stored_work),
    when each was made (created), what they cost (from_scratch). A page plans each family once and hands this on."""
    family: str
    store: object = None  # its results.ResultStore; None: the family has no store file there, and no plan was made
    planned: tuple = ()  # estimate.Planned, in plan order

    def found(self):
        """[(unit, its record)] of the stored units, in plan order."""
        return [(p.unit, self.store.get(p.unit.key, p.unit.family)) for p in self.planned if p.stored]

    def stored_work(self):
        """(runs, added, planned): the stored records of the family's own units and of the units its plan adds
        in store files of their own (04's span scores, 06's timing runs), and how many units it makes in all."""
        found = self.found()
        return ([r for unit, r in found if unit.family == self.family],
                [r for unit, r in found if unit.family != self.family], len(self.planned))

    def created(self):
        """When each stored record of the plan was made (its store entry's `created`), the units it adds included
        (04's span scores, which its claims read): datetimes, in plan order."""
        from ..experiments.results import config_key, parse_time
        units = [p.unit for p in self.planned if p.stored]
        made = {(e["family"], e["key"]): e.get("created") for name in {u.family for u in units}
                for e in self.store.records(name)}  # an entry's key is the hash of the unit's key (config_key)
        return [parse_time(when, "created") for u in units
                if (when := made.get((u.family, config_key(u.key)))) is not None]

    def from_scratch(self):
        """What the family's stored runs cost to make: (seconds, runs, what)."""
        records = self.stored_work()[0]
        seconds, what = cost(records)
        return seconds, len(records), what


def family_plan(profile, family, root=None):
    """The family's FamilyPlan under `root`: every unit its plan makes, as study init and the dry run count them
    (estimate.units); none, and no plan made, without the family's store file there (a study's 03 and 08, whose
    plans need packaged tasks of the study's number of classes)."""
    from ..experiments import estimate, running  # torch and the models: only when asked
    name = families.get(family).name
    store = running.store_of(profile, root=root)
    if not store.path(name).is_file():
        return FamilyPlan(name)
    return FamilyPlan(name, store, tuple(estimate.units(profile, family, store)))


def stored_work(profile, family, root=None):
    """(runs, added, planned) of a family's plan under `root` (FamilyPlan.stored_work), from one plan."""
    return family_plan(profile, family, root).stored_work()


def created(profile, family, root=None):
    """When each stored record of a family's plan was made (FamilyPlan.created), in plan order."""
    return family_plan(profile, family, root).created()


def stored_runs(profile, family, root=None):
    """The stored records of the family's current plan (the lesson's: its notebook's default runs) in
    the store under `root`; none, and no plan made, when the family has no store file there (family_plan)."""
    return stored_work(profile, family, root)[0]


def stored_scoring(profile, family, root=None):
    """The stored records of the scoring its plan adds to a family's runs (04: each scored run's
    layer-removal spans, on validation and on held-out tweets): passes over stored adapters, no training,
    yet part of what making the records from scratch costs (scoring_seconds)."""
    return stored_work(profile, family, root)[1]


def scoring_seconds(records):
    """What the units a plan adds (stored_scoring's records) took: the sum of a scoring pass's eval_seconds, or
    of a timing run's run_seconds (its whole unit)."""
    return sum(r["eval_seconds"] if "eval_seconds" in r else r["run_seconds"] for r in records)


def cost(records):
    """(seconds, what) of stored records: run_seconds (whole runs), or train_seconds (training loops
    only) when an older record lacks run_seconds. A run trained beside others (`workers` > 1, the
    sweep's CPU workers) counts for run_seconds / workers: its share of the wall time."""
    wall = all("run_seconds" in r for r in records)
    seconds = sum((r["run_seconds"] if wall else r["train_seconds"]) / r.get("workers", 1) for r in records)
    workers = sorted({r.get("workers", 1) for r in records})
    what = "whole runs" if wall else "training loops only"
    if workers != [1]:
        what += f", {' or '.join(map(str, workers))} at a time"
    return seconds, what


def machines(records):
    """Where the records' seconds were measured: 'AMD EPYC (AVX512) 46 run(s), ...', most runs first.
    Records older than the `machine` field say so instead of guessing."""
    counts = Counter(r.get("machine", "machine not recorded") for r in records)
    return ", ".join(f"{name} {n} run(s)" for name, n in counts.most_common()) or "no run stored"


def from_scratch(profile, family, root=None):
    """What the family's planned runs cost to make, from their stored records: (seconds, runs, what)."""
    return family_plan(profile, family, root).from_scratch()


def timing(profile, family, root=None):
    """One sentence for the top of a notebook: what its runs cost from scratch, from the store."""
    records = stored_runs(profile, family, root)
    if not records:
        return f"From scratch: nothing stored yet for {families.get(family).name} in profile {profile!r}."
    seconds, what = cost(records)
    return (f"From scratch this notebook trains {len(records)} run(s): {seconds / 60:.1f} min on the machines that "
            f"made the stored results ({machines(records)}; {what}, summed over "
            f"data/results/{profiles.resolve(profile).name}/{families.get(family).name}.jsonl); from the store it "
            "only redraws.")
