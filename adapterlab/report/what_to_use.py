"""What to use: a page's opening answer to its reader's question -- which method to train, what it costs against
full fine-tuning, how much labelled data it needs, and how sure each answer is -- from the table of the family that
compares methods (families.WHICH_METHOD, notebook 06) and of the one that subsamples the training data
(families.HOW_MUCH_DATA, notebook 07), with the suite's statistics only.

    advice = what_to_use.advise(methods_table, sizes_table)   # one task's Advice: a value, no text
    lines = what_to_use.render([advice], figures=["figures/default/param_performance_tradeoff.png"])
    lines = what_to_use.section(profile, root, page_folder)   # both, from the stored tables (document.py)

Which method: those within the margin (stats.MARGIN, fixed in advance) of the best. No best is picked from the
data: picked on the test split, it would be judged on the split it was chosen on; picked on validation, among
methods a tenth of a point apart, it would be a noisy reference. Instead a method is within the margin of the best
when it is shown to lie no more than the margin below every other method: whichever method is best, it is one of
them (the question of multiple comparisons with the best, asked with a margin). Each comparison is the lower half
of the equivalence test (TOST) -- above the best by more is impossible -- on the test split, paired by seed and by
example with the crossed estimator (findings.by_seed); a method's hypothesis holds only when every comparison does
(intersection-union: the largest p decides). The opposite conclusion, "below the best by more than the margin", is
shown when some other method's two-sided interval lies above it by more than the margin (Bonferroni over the
others), read as experiments.judge.opposite_ps reads a claim. Both conclusions of every method are one family
under Holm's correction (experiments.judge.conclusions_adjusted), so the chance of any false conclusion about
the methods is at most 5%; a method shown neither way is undecided.

How much data: per method of the subsampling table, each smaller training size against the largest, by the same
one-sided test (one seed draws nested subsets, so sizes pair by seed), all under a Holm family of their own; the
smallest size shown within the margin of the largest suffices. Two families, because the trade-off figure marks
the methods from notebook 06's table alone (param_performance.figure), and its marks must be the page's.
"""
import math
import os
from dataclasses import dataclass, replace

import numpy as np

from ..experiments import families, profiles, stats
from ..experiments.judge import conclusions_adjusted
from . import provenance
from .claims import TEST
from .findings import ci_text, load, p_text, pts

HEADING = "## What to use"
WITHIN, BELOW, UNDECIDED = "within the margin", "below the best by more than the margin", "undecided"
REFERENCE = "full"  # what every cost is measured against: the papers' baseline, full fine-tuning
BATCHES = (1, 32)  # the serving latencies a methods table records (latency_<batch>_ms), when it records them
# the view of the methods family's figure that the section shows (the family names its trade-off view by it):
# the test score against the share of parameters trained, the methods within the margin marked
TRADE_OFF = "% trained, memory"


# ----------------------------------------------------------------------------- the tests


@dataclass(frozen=True)
class Judged:
    """One candidate's verdict under its question's Holm family: WITHIN, BELOW or UNDECIDED; p the adjusted
    p-value of the conclusion it reads (of "within" unless shown below); rival and diff the comparison that
    decides (candidate minus rival): for "within" the one with the largest p (an intersection-union test holds
    only as far as its weakest member), for "below" the one with the smallest."""
    verdict: str
    p: float
    rival: object
    diff: stats.Difference


def _shifted(diff, margin):
    """The difference plus the margin: its one-sided tests against zero are the tests against -margin."""
    return replace(diff, estimate=diff.estimate + margin)


def p_within(diff, margin=stats.MARGIN):
    """One-sided p of H0: the difference is -margin or less (rejected: shown no more than the margin below)."""
    return stats.directional(_shifted(diff, margin), ">")


def p_below(diff, margin=stats.MARGIN):
    """p of "more than the margin below" read from the two-sided interval (twice the one-sided p, as
    experiments.judge.opposite_ps reads the opposite of a claim): below alpha exactly when the 1 - alpha interval
    lies under -margin."""
    return min(1.0, 2 * stats.directional(_shifted(diff, margin), "<"))


def judge(candidates, margin=stats.MARGIN, alpha=stats.ALPHA):
    """{name: Judged} of candidates given as {name: {rival: Difference name - rival}}: within when shown no
    more than `margin` below every rival (the largest p decides), below when shown more than `margin` below
    some rival (the smallest p times the number of rivals), both conclusions of every candidate one family under
    Holm's correction at `alpha`. A comparison without a noise estimate can show nothing."""
    names = [name for name in candidates if candidates[name]]
    within, below, deciding = [], [], []
    for name in names:
        rivals = candidates[name]
        ps = {rival: p_within(d, margin) for rival, d in rivals.items()}
        nearest = max(ps, key=lambda r: math.inf if math.isnan(ps[r]) else ps[r])
        within.append(math.nan if any(math.isnan(p) for p in ps.values()) else ps[nearest])
        apart = {rival: p for rival, d in rivals.items() if not math.isnan(p := p_below(d, margin))}
        ahead = min(apart, key=apart.get) if apart else nearest
        below.append(min(1.0, len(rivals) * apart[ahead]) if apart else math.nan)
        deciding.append((nearest, ahead))
    adjusted, _ = conclusions_adjusted(within + below, {})
    out = {}
    for k, (name, (nearest, ahead)) in enumerate(zip(names, deciding)):
        shown_within, shown_below = adjusted[k], adjusted[len(names) + k]
        if shown_below < alpha:
            out[name] = Judged(BELOW, shown_below, ahead, candidates[name][ahead])
        else:
            out[name] = Judged(WITHIN if shown_within < alpha else UNDECIDED, shown_within, nearest,
                               candidates[name][nearest])
    return out


# ----------------------------------------------------------------------------- the value


@dataclass(frozen=True)
class Method:
    """One method setting of the methods table: its test score over seeds and examples (crossed), its
    difference from full fine-tuning (None without it), its verdict against the best, and its costs per run."""
    label: str
    score: stats.Difference
    vs_full: stats.Difference | None
    judged: Judged | None  # None: the only method, nothing to compare it with
    percent: float
    seconds: tuple  # seconds per epoch, one per run
    memory: tuple  # peak memory in MB, one per run
    latency: tuple | None  # median forward pass in ms at BATCHES; None when not measured
    converged: int
    learned: bool = True  # shown above the majority class by more than the margin (stats.learned)

    @property
    def runs(self):
        return len(self.seconds)


@dataclass(frozen=True)
class Size:
    """One smaller training size of one method against that method's largest: its verdict."""
    label: str
    size: int
    largest: int
    score: float  # mean test score over its seeds
    judged: Judged


@dataclass(frozen=True)
class Advice:
    """One task's answer: its methods (best test mean first) with their verdicts, the sizes of the subsampling
    table with theirs, and what they rest on."""
    task: str
    examples: int  # test examples every run is scored on
    seeds: tuple  # the distinct numbers of seeds of the methods
    baseline: float  # the majority class's test score
    methods: tuple
    sizes: tuple = ()
    margin: float = stats.MARGIN

    def where(self, verdict):
        return [m for m in self.methods if m.judged is not None and m.judged.verdict == verdict]

    @property
    def within(self):
        """The methods shown within the margin of the best that learned: two runs that both answer the majority
        class agree by construction, which says nothing of the methods."""
        return [m for m in self.where(WITHIN) if m.learned]

    @property
    def any_learned(self):
        return any(m.learned for m in self.methods)

    @property
    def full(self):
        return next((m for m in self.methods if m.label == REFERENCE), None)

    @property
    def cheapest_share(self):
        """The method of the within set that trains the smallest share of the parameters (None: the set is
        empty); a tie goes to the higher test mean."""
        return min(self.within, key=lambda m: (m.percent, -m.score.estimate), default=None)

    @property
    def fastest(self):
        """The method of the within set with the lowest mean seconds per epoch (None: the set is empty)."""
        return min(self.within, key=lambda m: np.mean(m.seconds), default=None)

    def smallest(self, label):
        """The smallest training size of `label` shown within the margin of its largest (None: none shown)."""
        return min((s.size for s in self.sizes if s.label == label and s.judged.verdict == WITHIN), default=None)

    @property
    def method_tests(self):
        compared = [m for m in self.methods if m.judged is not None]
        return 2 * len(compared)

    @property
    def size_tests(self):
        return 2 * len(self.sizes)


def _has_bits(rows):
    return "test_correct" in rows and len(rows) > 0 and all(isinstance(b, str) for b in rows["test_correct"])


def _latency(rows):
    columns = [f"latency_{b}_ms" for b in BATCHES]
    if not all(c in rows and rows[c].notna().any() for c in columns):
        return None
    return tuple(float(rows[c].mean()) for c in columns)


def _correct(rows, column="label"):
    """{value of `column`: {seed: its run's correct bits on the test split, unpacked}}."""
    n = int(rows["test_examples"].iloc[0])
    return {key: {seed: stats.unpack(bits, n) for seed, bits in zip(g["seed"], g["test_correct"])}
            for key, g in rows.groupby(column, sort=False)}


def difference(a, b):
    """a - b over the seeds both have, from their {seed: unpacked bits}: the crossed estimator on the per-example
    differences (what findings.by_seed measures from a table, from bits unpacked once)."""
    seeds = sorted(set(a) & set(b))
    if not seeds:
        raise ValueError("two settings share no seed, so no paired difference; train both with the same seeds")
    return stats.crossed(np.stack([a[s] - b[s] for s in seeds]), TEST)


def _pairwise(correct):
    """{label: {other label: Difference label - other}} over every pair, each pair measured once."""
    labels = list(correct)
    out = {label: {} for label in labels}
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            d = difference(correct[a], correct[b])
            out[a][b], out[b][a] = d, replace(d, estimate=-d.estimate)
    return out


def methods_of(rows, margin=stats.MARGIN):
    """(Method, ...) of one task's methods table, best test mean first, each judged against the best."""
    correct = _correct(rows)
    pairs = _pairwise(correct)
    judged = judge(pairs, margin) if len(pairs) > 1 else {}
    time = next((c for c in ("seconds_per_epoch", "train_seconds") if c in rows), None)

    def measured(mine, column):  # a cost the table lacks reads "not measured" (NaN), never an error
        return tuple(mine[column].astype(float)) if column in mine else (math.nan,) * len(mine)

    majority, n = float(rows["baseline"].iloc[0]), int(rows["test_examples"].iloc[0])  # the test split's, as Advice.baseline
    out = []
    for label, mine in rows.groupby("label", sort=False):
        out.append(Method(
            label, stats.crossed(np.stack(list(correct[label].values())), TEST), pairs[label].get(REFERENCE),
            judged.get(label), float(mine["percent"].iloc[0]), measured(mine, time),
            measured(mine, "peak_memory_mb"), _latency(mine), int(mine["converged"].astype(bool).sum()),
            stats.learned((stats.over_majority(list(mine["test_correct"]), n, majority, TEST),), margin)))
    return tuple(sorted(out, key=lambda m: -m.score.estimate))


def sizes_of(rows, margin=stats.MARGIN):
    """(Size, ...) of one task's subsampling table: each method's smaller sizes against its largest, judged
    under one Holm family."""
    candidates, largest, means = {}, {}, {}
    for label, mine in rows.groupby("label", sort=False):
        correct, top = _correct(mine, "train_size"), int(mine["train_size"].max())
        largest[label] = top
        for size, g in mine.groupby("train_size"):
            if int(size) != top:
                candidates[label, int(size)] = {top: difference(correct[size], correct[top])}
                means[label, int(size)] = float(g["value"].mean())
    judged = judge(candidates, margin)
    return tuple(Size(label, size, largest[label], means[label, size], judged[label, size])
                 for label, size in candidates)


def advise(methods, sizes=None, margin=stats.MARGIN):
    """One task's Advice from its methods table (rows per method setting `label` and seed, with test_correct,
    test_examples, percent, seconds_per_epoch, peak_memory_mb, converged, baseline) and, when given, its
    subsampling table (rows per `label`, train_size and seed, with test_correct). The tables' rows must be one
    task's."""
    for name, table in (("methods", methods), ("sizes", sizes)):
        if table is not None and "task" in table and table["task"].nunique() > 1:
            raise ValueError(f"advise() takes one task's rows; the {name} table holds {table['task'].nunique()} "
                             "tasks: pass table[table['task'] == task] for each")
    if not _has_bits(methods):
        raise ValueError("the methods table has no per-example test record (test_correct) for every run; rebuild "
                         "it from the store (report.tables), whose records keep each run's bits")
    found = methods_of(methods, margin)
    has_sizes = sizes is not None and _has_bits(sizes)
    return Advice(str(methods["task"].iloc[0]), int(methods["test_examples"].iloc[0]),
                  tuple(sorted(set(methods.groupby("label")["seed"].nunique()))), float(methods["baseline"].iloc[0]),
                  found, sizes_of(sizes, margin) if has_sizes else (), margin)


def marked(rows, margin=stats.MARGIN):
    """The labels of one task's methods shown within the margin of the best (what the trade-off figure marks);
    None when the table cannot tell: no per-example test record, or a single method."""
    if not _has_bits(rows) or rows["label"].nunique() < 2:
        return None
    return {m.label for m in methods_of(rows, margin) if m.judged.verdict == WITHIN and m.learned}


# ----------------------------------------------------------------------------- the text


def _margin(advice):
    return f"{advice.margin * 100:g} points"


def _seeds(counts):
    low, high = min(counts), max(counts)
    return f"{low} seed" if high == 1 else f"{low}–{high} seeds" if low != high else f"{low} seeds"


def rests_on(advice):
    """'5 seeds x 1,443 test examples': what the methods' comparisons average over."""
    return f"{_seeds(advice.seeds)} x {advice.examples:,} test examples"


ONE_SEED = ("With one seed, an interval here covers the sampling of the test examples only, not the spread of "
            "training from seed to seed.")


def score_text(diff):
    if not diff.known:
        return f"{pts(diff.estimate)} (no interval)"
    low, high = diff.ci()
    return f"{pts(diff.estimate)} [{pts(low)}, {pts(high)}]"


def ratio_text(a, b):
    """'0.65x [0.62, 0.68]': a's mean cost over b's, the ratio of geometric means with its 95% interval
    (stats.log_ratio: Welch on the logarithms)."""
    d = stats.log_ratio(a, b)
    if not d.known:
        return f"{math.exp(d.estimate):.2f}x (no interval: {min(len(a), len(b))} run)"
    low, high = d.ci()
    return f"{math.exp(d.estimate):.2f}x [{math.exp(low):.2f}, {math.exp(high):.2f}]"


def verdict_cell(m):
    """'within (Holm p 0.004); vs lora r=8 -0.0 [-0.5, +0.5]': the verdict, its adjusted p and the comparison
    that decides it."""
    if m.judged is None:
        return "the only method"
    word = {WITHIN: "**within**", BELOW: "below", UNDECIDED: "undecided"}[m.judged.verdict]
    return f"{word} (Holm p {p_text(m.judged.p)}); vs {m.judged.rival} {ci_text(m.judged.diff)}"


def _names(methods):
    return ", ".join(m.label for m in methods)


def method_lines(advice):
    """The answer to 'which method', with what it rests on."""
    if not advice.any_learned:
        return [f"- **Which method.** None: no method is shown above the majority class ({pts(advice.baseline)}) by "
                f"more than {_margin(advice)} on the test split ({rests_on(advice)}), so they learned nothing "
                f"here at this budget and no comparison between them says anything about the methods."]
    if not any(m.judged for m in advice.methods):
        return [f"- **Which method.** Only {advice.methods[0].label} was trained: nothing to compare it with."]
    within, undecided, below = (advice.where(v) for v in (WITHIN, UNDECIDED, BELOW))
    rest = (f"{rests_on(advice)}, each pair compared by seed and example with the crossed estimator; Holm over "
            f"{advice.method_tests} tests, each method's \"within\" and \"below\"")
    one = [f"  {ONE_SEED}"] if 1 in advice.seeds else []
    if within:
        out = [f"- **Which method.** Shown within {_margin(advice)} of the best on the test split, each shown no more "
               f"than that below every other method: {_names(within)} ({rest})."]
    else:
        nearest = sorted(undecided, key=lambda m: m.judged.p)[:3]
        out = [f"- **Which method.** None is shown within {_margin(advice)} of the best: no method is shown to be no "
               f"more than {_margin(advice)} below every other ({rest}); so this data names none. Nearest: "
               + ", ".join(f"{m.label} (Holm p {p_text(m.judged.p)})" for m in nearest)
               + ". More seeds or test examples narrow the comparisons."]
    if undecided and within:
        out.append(f"  Undecided, shown neither within nor below: {_names(undecided)}.")
    elif undecided:
        out.append(f"  Undecided: {_names(undecided)}.")
    if below:
        out.append(f"  Shown more than {_margin(advice)} below the best: {_names(below)}.")
    return out + one


def memory_words(device):
    return ("peak memory is CUDA's largest allocation while training" if device == "gpu" else
            "peak memory is the training process's resident memory on the CPU (RSS), not the GPU memory the papers "
            "report")


def cost_lines(advice, device="cpu"):
    """The cheapest of the within set by share trained and by time, each against full fine-tuning."""
    cheap, fast, full = advice.cheapest_share, advice.fastest, advice.full
    if cheap is None:
        return ["- **The cheapest of them.** None to name, with no method shown within the margin; the table gives "
                "every method's costs."]
    if advice.within == [full]:
        return ["- **The cheapest of them.** Full fine-tuning is the only method shown within the margin, so no "
                "cheaper one is shown to match it; the table gives the others' costs."]
    against = (f", {ci_text(cheap.vs_full)} points against full fine-tuning" if cheap.vs_full is not None else "")
    out = [f"- **The cheapest of them.** By share of parameters trained: {cheap.label}, {cheap.percent:.3g}% (a "
           f"count, exact), test score {score_text(cheap.score)}{against} (95% intervals; {rests_on(advice)})."]
    if full is not None and fast is not full:
        others = sorted((m for m in advice.within if m is not fast), key=lambda m: np.mean(m.seconds))
        beside = (f"; against the next fastest of them, {others[0].label}: "
                  f"{ratio_text(fast.seconds, others[0].seconds)}" if others else "")
        out.append(f"  By time: {fast.label}, {np.mean(fast.seconds):.1f} s per epoch, "
                   f"{ratio_text(fast.seconds, full.seconds)} full fine-tuning's{beside}; its peak memory "
                   f"{ratio_text(fast.memory, full.memory)} full fine-tuning's (ratios of geometric means, 95% "
                   f"intervals from Welch on the logarithms, {fast.runs} and {full.runs} runs; "
                   f"{memory_words(device)}).")
    elif fast is not None:
        out.append(f"  By time: {fast.label}, {np.mean(fast.seconds):.1f} s per epoch (mean of {fast.runs} run(s)).")
    return out


def design_text(diff):
    """'5 seeds x 1,443 test examples' of a crossed Difference."""
    d = diff.design
    if d.seeds == 1:
        return f"1 seed x {d.examples:,} test examples: test sampling only"
    return f"{d.seeds} seeds x {d.examples:,} test examples"


def size_lines(advice):
    """The smallest training size each method of the subsampling table needs; without that table, a line saying
    the question was not asked (a study sized to fit its hours may leave that family out)."""
    if not advice.sizes:
        sizes = _answering(families.HOW_MUCH_DATA)
        return [f"- **How much labelled data**: not asked: this page has no runs of notebook {sizes.number}, which "
                f"trains each method at several training sizes."] if sizes else []
    out = [f"- **How much labelled data** (notebook 07: each training size against the method's largest on the test "
           f"split by the same one-sided test, paired by seed, the subsets being nested; Holm over "
           f"{advice.size_tests} tests, each size's \"within\" and \"below\"):"]
    within = {m.label for m in advice.within}
    for label in dict.fromkeys(s.label for s in advice.sizes):
        mine = [s for s in advice.sizes if s.label == label]
        largest, best = mine[0].largest, advice.smallest(label)
        tag = " (within the margin of the best above)" if label in within else ""
        if best is None:
            s = max(mine, key=lambda s: s.size)
            out.append(f"  - {label}{tag}: no size below {largest:,} is shown no more than {_margin(advice)} below it "
                       f"(nearest, {s.size:,}: {ci_text(s.judged.diff)} points, {s.judged.verdict}, Holm p "
                       f"{p_text(s.judged.p)}; {design_text(s.judged.diff)}); sizes above {largest:,} were not tried.")
            continue
        s = next(s for s in mine if s.size == best)
        out.append(f"  - {label}{tag}: {best:,} training examples suffice: {pts(s.score)}, "
                   f"{ci_text(s.judged.diff)} points against its largest, {largest:,}, shown no more than "
                   f"{_margin(advice)} below it (Holm p {p_text(s.judged.p)}; {design_text(s.judged.diff)}).")
    return out


def _cost_cell(values, form):
    """A cost's mean in the table, or "not measured" when its table has no such column."""
    return "not measured" if any(math.isnan(v) for v in values) else form.format(np.mean(values))


def _latency_cell(m):
    return "not measured" if m.latency is None else " / ".join(f"{v:.0f}" for v in m.latency)


def table_lines(advice, device="cpu"):
    """Every method: test score and its difference from full fine-tuning with their 95% intervals, the verdict
    against the best, share trained, seconds per epoch, peak memory, serving latency; the majority class last."""
    memory = "peak memory, MB (CUDA)" if device == "gpu" else "peak memory, MB (CPU process RSS)"
    out = [f"| method | test score [95% CI] | minus full [95% CI] | against the best (the deciding comparison) | "
           f"% trained | s / epoch | {memory} | latency, ms at batch {' / '.join(map(str, BATCHES))} |",
           "|---|---|---|---|---|---|---|---|"]
    for m in advice.methods:
        name = m.label + (f" ({m.converged} of {m.runs} runs converged)" if m.converged < m.runs else "") \
            + ("; not shown to have learned (the majority class within the margin)" if not m.learned else "")
        vs = "—" if m.vs_full is None else ci_text(m.vs_full)
        out.append(f"| {name} | {score_text(m.score)} | {vs} | {verdict_cell(m)} | {m.percent:.3g} | "
                   f"{_cost_cell(m.seconds, '{:.1f}')} | {_cost_cell(m.memory, '{:,.0f}')} | {_latency_cell(m)} |")
    full = advice.full
    gap = "—" if full is None else pts(advice.baseline - full.score.estimate, True)
    out.append(f"| majority class (always the most frequent class) | {pts(advice.baseline)} | {gap} | — | 0 | — "
               f"| — | — |")
    return out


def render(advices, figures=(), device="cpu"):
    """The section's markdown lines: its heading, then per task the answers, the table and the trade-off figure
    (`figures`: one link per task, relative to the page; none: no figure)."""
    if not advices:
        return [HEADING, ""]
    out = [HEADING, "",
           f"Which method to train, what it costs against full fine-tuning and how much labelled data it needs, "
           f"from this page's runs. A method is within the margin of the best when it is shown to be at most "
           f"{_margin(advices[0])} (the margin fixed in advance: adapterlab.experiments.stats.MARGIN) below every "
           f"other method; every verdict is read under Holm's correction over its question's tests, so the chance "
           f"of any false one is at most 5% per question. Verdicts, scores and costs are of these runs at their "
           f"training budget.", ""]
    for advice, figure in zip(advices, [*figures, *[None] * len(advices)]):
        if len(advices) > 1:
            out += [f"**{advice.task}**", ""]
        out += method_lines(advice) + cost_lines(advice, device) + size_lines(advice) + [""]
        out += table_lines(advice, device) + [""]
        if figure:
            out += [f"![{advice.task}: test score against the share of parameters trained, ★ the methods within the "
                    f"margin of the best, dotted: the majority class]({figure})", ""]
    return out + ["---", ""]  # the readings and the papers' claims follow


# ----------------------------------------------------------------------------- from the store


def _answering(question):
    return next((f for f in families.registered() if f.answers == question), None)


def figure_files(profile, family, tasks):
    """The trade-off figure's PNG of each task (paths under the project root): the family's PNG of the view
    its figure names the trade-off (TRADE_OFF)."""
    stems = [stem for entry in family.figures.values() for stem, views in entry.png.items() if TRADE_OFF in views]
    if not stems:
        return []
    return [os.path.join("figures", profile.name, stems[0] + ("" if len(tasks) == 1 else "_" + t.replace("/", "-"))
                         + ".png") for t in tasks]


def section(profile, root=None, page=None, plans=None):
    """The section from the tables stored under `root`: the methods family's table (families.WHICH_METHOD) and
    the subsampling family's (families.HOW_MUCH_DATA), each task's advice, figure links relative to the folder
    `page` (the page's own; None: no figure). Without a methods table, a line saying what is missing. `plans`:
    {family name: provenance.FamilyPlan}, the page's, when the caller has them."""
    p = profiles.resolve(profile)
    methods, sizes = _answering(families.WHICH_METHOD), _answering(families.HOW_MUCH_DATA)
    if methods is None:
        return []
    table = load(p, methods.name, root)
    if table is None or table.empty:
        return [HEADING, "", f"No stored table compares methods yet: notebook {methods.number}'s runs answer it.", ""]
    size_table = load(p, sizes.name, root) if sizes else None
    tasks = list(dict.fromkeys(table["task"].astype(str)))
    advices = [advise(table[table["task"].astype(str) == t],
                      None if size_table is None else size_table[size_table["task"].astype(str) == t])
               for t in tasks]
    links = [] if page is None else [
        os.path.relpath(profiles.project_root(root) / f, page) for f in figure_files(p, methods, tasks)]
    plan = plans[methods.name] if plans is not None else provenance.family_plan(p, methods, root)
    cuda = any(str(r.get("device", "cpu")).startswith("cuda") for r in plan.stored_work()[0])
    return render(advices, links, "gpu" if cuda else "cpu")

