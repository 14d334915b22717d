"""What would decide the claims still undecided, computed from the current records each time a findings page is
written (document.report), so that no stored table can go stale: for every claim inconclusive after Holm's
correction, the smallest design of a fixed ladder whose chance of a decisive verdict after Holm is at least
TARGET, taking today's estimates and variance components as the truth, with the hours it would take; then the
one settings edit that decides the most claims per hour.

    lines, last = power.section(profile, rows, root)   # the page's list, and its closing line
    found = power.by_design(rows, power.ladder(profile, rows, root))   # {Design: {claim: % decisive}}
    power.needs(rows, found)                            # [Need]: each undecided claim and what decides it
    power.chances(rows, Design("05", 15))               # {claim: % decisive after Holm} under one design

rows are [(notebook, claim title, judge.Verdict)] as document.readings gives them.

The ladder, declared here and the same for every profile, smallest first: a notebook's claims re-measured with
each of SEEDS seeds above today's number (seeds 0..S-1: the edit `<family>.seeds = 0-<S-1>`) on each claim's own
evaluation set; then, where the data allows, on the largest evaluation set it has, with today's number of seeds
and each larger one. That set is the test split together with every train example no seed of the design trains
on: each seed trains on the first train_size examples of its own permutation (tasks.subsample), and a train
example whose text any of them holds is left out too (tasks.unused's rule). "The data allows" it when the
family's runs train on one task and on a part of its train split. No setting scores a run on more than its own
split, so that design has no edit, and its hours are those of training every run of it again. A claim no design
of the ladder decides is "undecidable within 20 seeds and N examples", N the largest set the ladder measured.

Hours: the family's units of work with the edited seeds (planning.work), each one the store holds at the seconds
its record measured (provenance.cost: run_seconds / workers, a scoring pass its eval_seconds), each missing one
at the mean the records measured for the same setting at other seeds (the family's mean where none has it): the
records' own timing on the machines that made them, no new one.

Each replicate draws every comparison the design re-measures from its own noise model (stats.simulate) and runs
Holm's correction over the whole family of tested claims, as judge.holm does (rejected: the same procedure over
all replicates at once; the claims the design leaves alone keep their p-values); a claim is decisive when any of
its conclusions is rejected. The members of a claim are drawn independently, though they share a reference arm:
the chance is a guide for choosing a design, not a verdict. A claim measured with one seed has no seed spread to
project, and is listed as such.

Deterministic on every machine: a fixed numpy Generator seed, a fresh Generator per design (so the designs share
their random numbers, and a larger design's chance differs from a smaller one's by the design, not by the
draws); elementwise arithmetic only, its few sums in a fixed order or exactly rounded (math.fsum), no BLAS; and
a design decides a claim on the whole percentage the page prints, rounded in integers from the count of
replicates, so the decision and the printed number cannot disagree.
"""
import functools
import json
import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as dist

from ..experiments import families, judge, profiles, stats

SEEDS = (3, 5, 7, 10, 15, 20)  # the ladder's numbers of seeds
TARGET = 80  # % of replicates with a decisive verdict after Holm: a design "decides" a claim at this or more
REPLICATES = 1000  # the chance's binomial SE is at most 1.6 points, 1.3 at TARGET
SEED = 0  # every design's Generator starts here


@dataclass(frozen=True)
class Design:
    """One rung of the ladder: the claims of notebook `notebook` re-measured with `seeds` seeds on `examples`
    examples each (None: each claim's own evaluation set); hours: what it takes on the machines that timed the
    records (NaN: not priced); edit: the settings change that makes it ("" where none does)."""

    notebook: str
    seeds: int
    examples: int | None = None
    hours: float = math.nan
    edit: str = ""

    def text(self):
        """'15 seeds' or '10 seeds on 7,120 examples'."""
        return f"{self.seeds} seeds" + ("" if self.examples is None else f" on {self.examples:,} examples")


@dataclass(frozen=True)
class Need:
    """What decides one undecided claim: `design` (the smallest of its ladder reaching TARGET) with `chance`
    (% decisive), or, without one, `why`: "undecidable" (chance: the best of its ladder, `within` what the
    largest design measured), "one seed" or "no noise estimate" (its noise cannot be projected)."""

    claim: str
    design: Design | None = None
    chance: int | None = None
    why: str = ""
    within: str = ""


# ----------------------------------------------------------------------------- Holm over replicates

def _member_ps(verdict, draws):
    """(R, k) arrays of each member's declared p-value (judge._member_p), NaN where a draw has no noise
    estimate, from draws = [(estimate, se, df)] per member."""
    est, se, df = (np.stack([d[j] for d in draws], axis=1) for j in range(3))
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero SE: NaN below, as stats.directional says
        if verdict.claim == "==":
            p = np.maximum(dist.t.sf((est + verdict.margin) / se, df), dist.t.cdf((est - verdict.margin) / se, df))
        else:
            p = dist.t.sf(est / se, df) if verdict.claim == ">" else dist.t.cdf(est / se, df)
    return np.where(se > 0, p, np.nan), est, se, df


def _drawn_ps(verdict, draws):
    """(declared p, "not reproduced" p, "reversed" p) of each replicate, arrays as judge.verdict and
    judge.opposite_ps give them for one draw: the largest member p (NaN if any is), and the opposite
    conclusions' two-sided p-values, Bonferroni over the k members."""
    member, est, se, df = _member_ps(verdict, draws)
    declared = member.max(axis=1)  # NaN propagates, as one member without a noise estimate leaves p NaN
    unknown = ~(se > 0).all(axis=1)
    k, margin, sign = est.shape[1], verdict.margin, -1 if verdict.claim == "<" else 1
    with np.errstate(divide="ignore", invalid="ignore"):
        if verdict.claim == "==":
            outside = 2 * np.minimum(dist.t.sf((est - margin) / se, df), dist.t.cdf((est + margin) / se, df))
            return declared, np.where(unknown, np.nan, np.minimum(1.0, k * outside.min(axis=1))), None
        below = 2 * dist.t.cdf((sign * est - margin) / se, df)
        other_side = 2 * dist.t.cdf(sign * est / se, df)
    return (declared, np.where(unknown, np.nan, np.minimum(1.0, k * below.min(axis=1))),
            np.where(unknown, np.nan, np.minimum(1.0, k * other_side.min(axis=1))))


def rejected(ps, follows, alpha=stats.ALPHA):
    """(R, H) bool: which of H hypotheses each of R replicates rejects at family-wise level alpha, by the
    procedure of judge.conclusions_adjusted (Holm's step-down, where hypothesis j starts with no share and
    follows = {j: i} hands it i's share once i is rejected), vectorised over the replicates. ps: (R, H)
    p-values, NaN for a hypothesis without a test (it counts in the family and is never rejected). A hypothesis
    is rejected when its adjusted p is below alpha: the procedure stops at the first step whose smallest
    p / share is alpha or more."""
    ps = np.asarray(ps, dtype=float)
    replicates, size = ps.shape
    rows = np.arange(replicates)
    follower = np.zeros(size, dtype=bool)
    follower[list(follows)] = True
    next_of = np.full(size, -1)
    for j, i in follows.items():
        next_of[i] = j
    tested = ~np.isnan(ps)
    out = np.zeros((replicates, size), dtype=bool)
    held = np.zeros((replicates, size))  # a follower's share, once its leader is rejected
    live = np.ones(replicates, dtype=bool)
    for _ in range(size):
        opened = ~out & ~follower
        held_total = np.zeros(replicates)
        for j in sorted(follows):  # a fixed order of additions: the same sum on every CPU
            held_total = held_total + held[:, j]
        count = opened.sum(axis=1)
        share = np.where(count > 0, (1.0 - held_total) / np.maximum(count, 1), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(opened & tested & (share[:, None] > 0), ps / share[:, None], np.inf)
            ratio = np.where(~out & tested & (held > 0), ps / held, ratio)
        pick = ratio.argmin(axis=1)
        live &= ratio[rows, pick] < alpha
        if not live.any():
            break
        now = rows[live]
        out[now, pick[now]] = True
        held[now, pick[now]] = 0.0  # a follower rejected hands its share back
        leads = next_of[pick[now]] >= 0
        held[now[leads], next_of[pick[now[leads]]]] = share[now[leads]]
    return out


def _hypotheses(verdicts):
    """(columns, follows) of Holm's family as judge.holm builds it: each claim's declared test, each claim's
    "not reproduced", each directional claim's "reversed" (following its "not reproduced"). columns[i] =
    (declared, not reproduced, reversed or None) column indices of claim i."""
    m = len(verdicts)
    directional = [i for i, v in enumerate(verdicts) if v.claim != "=="]
    reversed_at = {i: 2 * m + n for n, i in enumerate(directional)}
    columns = [(i, m + i, reversed_at.get(i)) for i in range(m)]
    return columns, {r: m + i for i, r in reversed_at.items()}


def _measured(member, design=None):
    """(seeds, examples) a member is measured with today, or under `design`: the design's where they are more
    (a design adds seeds and examples, it never drops any); examples None for unpaired runs (Welch's)."""
    seeds = member.design.seeds if isinstance(member.design, stats.Crossed) else member.n
    examples = getattr(member.design, "examples", None)
    if design is None:
        return seeds, examples
    more = examples if design.examples is None or examples is None else max(examples, design.examples)
    return max(seeds, design.seeds), more


def _drawn(verdict, design, replicates, rng):
    """[(estimate, se, df)] per member: `replicates` draws of the verdict's comparisons under `design`."""
    return [stats.simulate(d, *_measured(d, design), replicates, rng) for d in verdict.members]


def _remeasured(stem, verdict, design):
    """Whether `design` measures the claim anew: one of its notebook's, projectable, and more seeds or examples
    for some member."""
    return (stem == design.notebook and projectable(verdict)
            and any(_measured(d, design) != _measured(d) for d in verdict.members))


def projectable(verdict):
    """Whether a verdict's comparisons can be projected to more seeds: each has a noise estimate and variance
    components measured over two seeds or more (a crossed design) or two runs per arm (Welch's)."""
    return bool(verdict.members) and all(
        d.known and isinstance(d.design, (stats.Crossed, stats.Arms))
        and not (isinstance(d.design, stats.Crossed) and d.design.seeds < 2) for d in verdict.members)


def decisive(rows, design, replicates=REPLICATES, seed=SEED):
    """{claim title: (replicates,) bool, whether that replicate's verdict after Holm is decisive} for the claims
    `design` measures anew (_remeasured), from rows [(notebook, claim, Verdict)] (exact checks are left out, as
    Holm leaves them). Their draws come from one Generator seeded `seed`, claim by claim and member by member in
    the rows' order."""
    tested = [(stem, title, v) for stem, title, v in rows if v.in_family]
    verdicts = [v for *_, v in tested]
    redone = [i for i, (stem, _, v) in enumerate(tested) if _remeasured(stem, v, design)]
    if not redone:
        return {}
    columns, follows = _hypotheses(verdicts)
    ps = np.full((replicates, 2 * len(verdicts) + len(follows)), np.nan)
    for i, v in enumerate(verdicts):  # the claims left alone: their p-values as judge.holm takes them
        declared, not_reproduced, reversed_ = columns[i]
        opposite = judge.opposite_ps(v.claim, v.members, v.margin) if v.members else (math.nan, math.nan)
        ps[:, declared], ps[:, not_reproduced] = v.p, opposite[0]
        if reversed_ is not None:
            ps[:, reversed_] = opposite[1]
    rng = np.random.default_rng(seed)
    for i in redone:
        drawn = _drawn_ps(verdicts[i], _drawn(verdicts[i], design, replicates, rng))
        for column, p in zip(columns[i], drawn):
            if column is not None:
                ps[:, column] = p
    out = rejected(ps, follows)
    return {tested[i][1]: out[:, [c for c in columns[i] if c is not None]].any(axis=1) for i in redone}


def chances(rows, design, replicates=REPLICATES, seed=SEED):
    """{claim title: % of replicates whose verdict after Holm is decisive} (decisive): a whole number, rounded
    half up from the count in integers, the number the page prints and TARGET is compared with."""
    return {title: (200 * int(hits.sum()) + replicates) // (2 * replicates)
            for title, hits in decisive(rows, design, replicates, seed).items()}


# ----------------------------------------------------------------------------- what decides each claim

def undecided(rows):
    """[(notebook, title, Verdict)] of the tested claims that are inconclusive after Holm's correction over all
    of them."""
    tested = [row for row in rows if row[2].in_family]
    after = judge.holm([v for *_, v in tested])
    return [row for row, h in zip(tested, after) if h.label == "inconclusive"]


def by_design(rows, designs, replicates=REPLICATES):
    """{Design: chances(rows, design)} for the designs of the notebooks with an undecided claim."""
    open_ = {stem for stem, *_ in undecided(rows)}
    return {d: chances(rows, d, replicates) for d in designs if d.notebook in open_}


def needs(rows, found):
    """[Need] for every undecided claim (undecided), in the rows' order: the first design of its notebook in
    `found` ({Design: chances}, by_design's; the ladder, smallest first) whose chance reaches TARGET."""
    out = []
    for stem, title, v in undecided(rows):
        if not v.members or not all(d.known for d in v.members):
            out.append(Need(title, why="no noise estimate"))
            continue
        if not projectable(v):
            out.append(Need(title, why="one seed"))
            continue
        mine = [(d, c[title]) for d, c in found.items() if title in c]
        chosen = next(((d, c) for d, c in mine if c >= TARGET), None)
        if chosen:
            out.append(Need(title, *chosen))
            continue
        largest = max((d.seeds for d, _ in mine), default=0)
        examples = max((d.examples or 0 for d, _ in mine), default=0)
        within = (f"{largest} seeds" + (f" and {examples:,} examples" if examples else "")) if mine else ""
        out.append(Need(title, chance=max((c for _, c in mine), default=None), why="undecidable", within=within))
    return out


def best_edit(rows, found):
    """(Design, titles of the undecided claims it decides) of the edit that decides the most claims per hour, the
    fewer hours first among equals, from `found` ({Design: chances}); None when no priced edit decides any."""
    open_ = {title for _, title, _ in undecided(rows)}
    priced_ = [(d, [t for t, c in chances_.items() if t in open_ and c >= TARGET]) for d, chances_ in found.items()
               if d.edit and d.hours > 0 and math.isfinite(d.hours)]
    priced_ = [(d, titles) for d, titles in priced_ if titles]
    if not priced_:
        return None
    return max(priced_, key=lambda item: (len(item[1]) / item[0].hours, -item[0].hours))


# ----------------------------------------------------------------------------- the page's lines

def _hours(hours):
    return "hours not known (no stored run to time it by)" if not math.isfinite(hours) else f"about {hours:.1f} h"


def need_line(need):
    """'- claim: 15 seeds (`<family>.seeds = 0-14`), 87%, about 6.3 h', or '- claim: undecidable within ...'."""
    if need.design:
        d = need.design
        how = (f"`{d.edit}`" if d.edit else "the test split and every train example no seed trains on; no setting "
               "scores them, so every run trained again")
        return f"- {need.claim}: {d.text()} ({how}), {need.chance}%, {_hours(d.hours)}"
    best = f" (at most {need.chance}%)" if need.chance is not None else ""
    return (f"- {need.claim}: undecidable within {need.within}{best}" if need.within else
            f"- {need.claim}: undecidable here: no design of the ladder measures it anew (its family has no "
            "`seeds` setting, or more seeds than the ladder)")


UNPLANNED = {"one seed": "measured with one seed, so their seeds' spread is unknown and no design can be projected",
             "no noise estimate": "without a noise estimate to project"}


def best_line(best, listed):
    """The page's closing line: the edit that decides the most claims per hour (best_edit), from the list of
    what decides each undecided claim (needs); "" when no claim is undecided."""
    if not listed:
        return ""
    if best is not None:
        design, titles = best
        return (f"**Best edit per hour:** `{design.edit}`: decides {len(titles)} claim{'s' * (len(titles) > 1)}, "
                f"{_hours(design.hours)}.")
    if any(n.design and n.design.edit for n in listed):
        return "**Best edit per hour:** not known: no stored run times the edits that decide a claim."
    if all(n.why in UNPLANNED for n in listed):
        return (f"**Best edit per hour:** none can be planned: the claims rest on one seed; {SEEDS[0]} seeds, the "
                "ladder's first design, would measure the seeds' spread a plan needs.")
    return f"**Best edit per hour:** none: no edit of the ladder decides any of the {len(listed)} claims listed."


def lines(needs_, tested, replicates=REPLICATES):
    """Markdown lines of the list: what decides each undecided claim (need_line), under a head that says how,
    then the claims no design can be projected from, one line per reason."""
    if not needs_:
        return []
    apart = [f"- {what}: " + "; ".join(n.claim for n in needs_ if n.why == why) for why, what in UNPLANNED.items()
             if any(n.why == why for n in needs_)]
    return [f"**What would decide the claims still inconclusive**, computed from these records: for each, the "
            f"smallest design of the ladder ({', '.join(map(str, SEEDS[:-1]))} or {SEEDS[-1]} seeds on the claim's "
            f"own examples, then on the test split together with every train example no seed trains on) whose "
            f"chance of a decisive verdict after Holm's correction over all {tested} tested claims is at least "
            f"{TARGET}%, taking today's estimates and variance components as the truth ({replicates:,} replicates), "
            f"and its hours at the seconds the stored runs took on the machines that made them (docs/power.md):",
            "", *[need_line(n) for n in needs_ if n.why not in UNPLANNED], *apart, ""]


def section(profile, rows, root=None, replicates=REPLICATES):
    """(markdown lines of the list, the closing line) for a profile's page from its judged claims `rows`, the
    ladder priced from its store under `root` (ladder)."""
    found = by_design(rows, ladder(profile, rows, root), replicates)
    listed = needs(rows, found)
    tested = sum(v.in_family for *_, v in rows)
    return lines(listed, tested, replicates), best_line(best_edit(rows, found), listed)


# ----------------------------------------------------------------------------- the ladder, priced

def ladder(profile, rows, root=None):
    """[Design] of every notebook with an undecided claim whose family has a `seeds` setting, smallest first: the
    SEEDS above today's number on the claims' own examples, then, where the data allows (evaluation_size), the
    largest evaluation set with today's number of seeds and more. Each priced from the family's plan with
    seeds 0..max(SEEDS)-1 (priced): a design with S seeds needs the units of seeds below S that no record holds
    yet, and every one of them for a larger evaluation set (no stored run was scored on it)."""
    p = profiles.resolve(profile)
    open_ = {stem for stem, *_ in undecided(rows)}
    out, larger = [], []
    for family in families.registered():
        settings = p.settings(family)
        if family.number not in open_ or not hasattr(settings, "seeds"):
            continue
        today = len(settings.seeds)
        edited = replace(p, family_settings={**p.family_settings,
                                             family.name: replace(settings, seeds=tuple(range(max(SEEDS))))})
        units = priced(edited, family, root)

        def hours(seeds, everything):
            return math.fsum(s for u, stored, s in units if _seed(u) < seeds and (everything or not stored)) / 3600

        out += [Design(family.number, seeds, None, hours(seeds, False), f"{family.name}.seeds = 0-{seeds - 1}")
                for seeds in SEEDS if seeds > today]
        larger += [Design(family.number, seeds, examples, hours(seeds, True)) for seeds in SEEDS if seeds >= today
                   if (examples := evaluation_size([u for u, *_ in units], seeds))]
    return out + larger


def _seed(unit):
    """The seed a unit of work trains or scores with (-1 for one without: it counts in every design)."""
    return unit.spec.get("config", {}).get("train", {}).get("seed", -1)


def priced(profile, family, root=None):
    """[(unit, stored, seconds)] of the family's units of work under `profile` (planning.work, with the choices
    its store holds): a stored unit at the seconds its record measured (provenance.cost for a run, eval_seconds
    for a scoring pass), a missing one at the mean of the stored units of the same setting at other seeds, else
    of the family's stored units of its kind (NaN when none is stored)."""
    from ..experiments import planning, running  # torch and the models: only when asked
    from . import provenance

    store = running.store_of(profile, root=root)
    found = []
    for u in {(u.family, u.id): u for u in planning.work(profile, family, store)}.values():  # a unit once
        r = store.get(u.key, u.family)
        seconds = None if r is None else (provenance.cost([r])[0] if u.family == family.name
                                          else r.get("eval_seconds", math.nan))
        found.append((u, seconds))
    by_setting, by_kind = {}, {}
    for u, seconds in found:
        if seconds is not None:
            by_setting.setdefault(_setting(u), []).append(seconds)
            by_kind.setdefault(u.family, []).append(seconds)

    def estimate(u):
        same = by_setting.get(_setting(u)) or by_kind.get(u.family)
        return math.fsum(same) / len(same) if same else math.nan  # fsum: exactly rounded, the same everywhere

    return [(u, seconds is not None, estimate(u) if seconds is None else seconds) for u, seconds in found]


def _setting(unit):
    """A unit's setting without its seed: what makes two seeds of one arm alike in cost."""
    spec = json.loads(json.dumps(unit.spec, default=str))
    spec.get("config", {}).get("train", {}).pop("seed", None)
    return unit.family + json.dumps(spec, sort_keys=True)


def evaluation_size(units, seeds):
    """The largest evaluation set the data allows the runs of `units` with seeds 0..seeds-1:
    the test split together with every train example no seed trains on (unseen), each seed training on as many
    examples as the plan's largest subset; None when its runs train on several tasks or on a whole train
    split."""
    configs = [u.spec["config"] for u in units if "config" in u.spec and _seed(u) < seeds]
    tasks = {(c["task"], c.get("task_source")) for c in configs}  # a study's task with the data it stands for
    if len(tasks) != 1 or any(c.get("train_size") is None for c in configs):
        return None
    largest = max(c["train_size"] for c in configs)
    task, source = tasks.pop()
    return unseen(task, tuple((seed, largest) for seed in range(seeds)), source)


def unseen(task, train_sizes, source=None):
    """How many examples of `task` no run trains on, train_sizes = ((seed, examples its subset holds), ...): the
    test split, and the train examples outside every seed's subset (the first n of the seed's permutation,
    tasks.subsample) whose text none of those subsets holds (tasks.unused's rule)."""
    texts, tested = _texts(task, source)
    used = np.zeros(len(texts), dtype=bool)
    for seed, n in train_sizes:
        used[np.random.default_rng(seed).permutation(len(texts))[:n]] = True
    seen = {texts[i] for i in np.flatnonzero(used)}
    return tested + sum(1 for i in np.flatnonzero(~used) if texts[i] not in seen)


@functools.lru_cache(maxsize=8)
def _texts(task, source=None):
    """(the texts of `task`'s train split, in its order, as tuples of its text fields; its test split's size);
    `source`: the data a study's task stands for."""
    from ..training import tasks as task_registry

    whole = task_registry.load_task(task, source=source)
    columns = whole.splits["train"].select_columns(list(whole.text_fields)).to_dict()
    return list(zip(*(columns[f] for f in whole.text_fields))), len(whole.splits["test"])
