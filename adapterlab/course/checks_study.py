"""The checks of the study notebooks' exercises (04 layer removal, 05 init scale, 06 parameters against
performance, 07 low resource, 08 a stream of tasks): each checks a rule on several inputs, so that a
constant fitted to one table fails on the next, and returns what it showed or raises a Hint (checking.py)."""

import numpy as np
import torch

from ..nn.layers import BottleneckAdapter
from .checking import Hint, _call, _close, _count, _describe, _first_slip, _number, _tiny_bert

# ------------------------------------------------------------------ 04: layer removal

def check_block_evaluations(count_block_evaluations):
    """count_block_evaluations(L) -> (naive, cached): block forward passes per batch for every span plus no removal."""
    from ..training.removal import span_block_evaluations

    for L in (6, 12, 24):
        expected = span_block_evaluations(L)
        got = _call(count_block_evaluations, L)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise Hint("return two numbers: (naive, cached)")
        naive, cached = _count(got[0], "naive"), _count(got[1], "cached")
        spans = L * (L + 1) // 2
        if naive != expected["naive"]:
            if naive == L * spans:
                raise Hint("the naive loop also runs the model once with nothing removed (the reference score)")
            if naive in (L * L * L, L * (L * L + 1)):
                raise Hint("a span [i, j] has i <= j: there are L(L+1)/2 of them, not L²")
            raise Hint(f"for L={L} your naive count is off by {naive - expected['naive']:+,}")
        if cached != expected["cached"]:
            if cached == expected["cached"] - L:
                raise Hint("the cached version first computes the state entering every block once: L evaluations")
            raise Hint(f"for L={L} your cached count is off by {cached - expected['cached']:+,}: for a start i, "
                       "each end j costs the disabled block j plus the enabled blocks above it")
    return "matches removal.span_block_evaluations for 6, 12 and 24 blocks"


class _OneBatch(list):
    """What removal.span_logits iterates over: batches with "index", and the split's labels."""

    def __init__(self, inputs, n):
        import datasets

        super().__init__([{**inputs, "index": torch.arange(n)}])
        self.split = datasets.Dataset.from_dict({"label": [0] * n})


def check_naive_spans(removal_logits):
    """removal_logits(model, inputs) -> {(i, j): logits with the adapters of blocks i..j switched off}."""
    from ..training.removal import span_logits

    # Houlsby adapters whose weights are far from the identity init, so that removal matters
    model = _tiny_bert("houlsby", bottleneck=4).eval()
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".adapter." in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
    inputs = {"input_ids": torch.randint(0, 64, (6, 8), generator=gen), "attention_mask": torch.ones(6, 8, dtype=torch.long)}
    expected, _, L = span_logits(model, _OneBatch(inputs, 6), cached=True)
    expected = {span: torch.as_tensor(x).double() for span, x in expected.items()}
    full = expected.pop(None)
    got = _call(removal_logits, model, inputs)
    if not isinstance(got, dict):
        raise Hint("return a dict {(first_layer, last_layer): logits}")
    spans = set(expected)
    if set(got) != spans:
        raise Hint(f"expected the {len(spans)} spans (i, j) with 0 <= i <= j < {L}; got {len(got)} keys "
                   f"(e.g. missing {sorted(spans - set(got))[:2]}, extra {sorted(set(got) - spans)[:2]})")
    got = {span: torch.as_tensor(x).double() for span, x in got.items()}
    if all(torch.allclose(got[span], full, atol=1e-6) for span in spans):
        raise Hint("every span gives the logits of the full model: switch the adapters off inside "
                   "`with inject.adapters_disabled(model, layers=...)`")
    # fp32 forward passes of order-one logits; cached and naive agree far inside 1e-5
    wrong = [span for span in spans if not torch.allclose(got[span], expected[span], atol=1e-5)]
    if not wrong:
        return "every span matches the cached-prefix evaluation (removal.span_logits)"
    i, j = wrong[0]
    if j > i and torch.allclose(got[(i, j)], expected[(i, j - 1)], atol=1e-5):
        raise Hint("the span [i, j] includes block j: range(i, j + 1)")
    raise Hint(f"span {wrong[0]} differs from the cached evaluation; is the model in eval mode (no dropout)?")


# ------------------------------------------------------------------ 05: init scale

def _relative_change_reference(adapter, h):
    with torch.no_grad():
        return ((adapter(h) - h).norm() / h.norm()).item()


def _adapter_at(std, d=64, m=16, seed=0):
    torch.manual_seed(seed)
    return BottleneckAdapter(d, m, init_std=std).double()


def check_relative_change(relative_change):
    """relative_change(adapter, h) -> ||adapter(h) - h|| / ||h||, one norm over every token."""
    gen = torch.Generator().manual_seed(6)
    h = torch.randn(4, 7, 64, generator=gen, dtype=torch.float64)
    for std in (1e-3, 1e-1, 1.0):
        adapter = _adapter_at(std)
        expected = _relative_change_reference(adapter, h)
        got = _call(relative_change, adapter, h)
        elements = got.numel() if isinstance(got, torch.Tensor) else np.size(got) if isinstance(got, np.ndarray) else 1
        if elements != 1:
            raise Hint(f"return one number for the whole input (a float), not {_describe(got)}: take one norm "
                       "over every token, ||adapter(h) - h|| / ||h||")
        got = _number(got, "the relative change")
        if _close(got, expected):  # float64: agreement to rounding
            continue
        with torch.no_grad():
            out = adapter(h)
        _first_slip(lambda slip: _close(got, slip.item()), [
            (out.norm() / h.norm(), "measure the change the adapter makes, adapter(h) - h, not its output"),
            ((out - h).norm(), "relative: divide by the size of the input, ||h||"),
            (((out - h).norm(dim=-1) / h.norm(dim=-1)).mean(),
             "take one norm over all tokens (as the notebook's figure does), not a mean per token"),
        ], f"at init std {std:g} your value is {got:.3g} times what it should be "
           f"({got / expected:.3g} x)" if expected else "the value is off")
    return "matches ||adapter(h) - h|| / ||h|| at stds 1e-3, 1e-1 and 1"


def check_deviation_exponent(exponent):
    """exponent: p in  relative change ∝ std^p  for small init stds (predict it, then measure it)."""
    stds = np.logspace(-5, -3, 5)
    h = torch.randn(4, 7, 64, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    change = [_relative_change_reference(_adapter_at(s), h) for s in stds]
    slope = float(np.polyfit(np.log(stds), np.log(change), 1)[0])
    if callable(exponent):
        raise Hint("no answer yet: set `exponent` to a number (a value, not a function)")
    exponent = _number(exponent, "`exponent`")
    if abs(exponent - slope) < 0.25:
        return f"a log-log fit over stds 1e-5..1e-3 gives a slope of {slope:.2f}"
    if abs(exponent - 1) < 0.25:
        raise Hint("both projections are drawn with this std: the added term multiplies two small matrices")
    raise Hint("measure it: the slope of log(change) against log(std) for small stds")


def _collapse_tables():
    """Three small sweeps of tasks whose majority class differs (0.643 as airline's, a balanced 0.5, an
    imbalanced 0.84): one rule gives the right count on all three, a constant or a fixed threshold cannot.
    No value lies near the rule's edge (stats.COLLAPSE above the baseline), so < and <= agree."""
    import pandas as pd

    tables = []
    # the balanced table first: on it every slip named in check_collapsed gives a count of its own
    for base, above, converged in (
            (0.5, [0.0, 0.003, 0.12, 0.21, -0.005, 0.08, -0.06, 0.025, -0.04], [0, 1, 1, 1, 1, 1, 0, 1, 0]),
            (0.643, [0.0, 0.177, 0.012, 0.167, 0.0, -0.002, 0.057, 0.046], [1, 1, 0, 1, 1, 1, 1, 0]),
            (0.84, [0.0, 0.016, 0.05, 0.06, -0.002, 0.04], [0, 1, 1, 1, 1, 0])):
        tables.append(pd.DataFrame({"init_std": [10.0 ** -(i % 4) for i in range(len(above))],
                                    "seed": range(len(above)), "value": [round(base + a, 4) for a in above],
                                    "baseline": base, "converged": [bool(c) for c in converged]}))
    return tables


def check_collapsed(count_collapsed):
    """count_collapsed(df) -> the number of runs that ended less than stats.COLLAPSE (3 points) above the
    majority class."""
    from ..experiments.stats import COLLAPSE

    tables = _collapse_tables()
    answers = [_count(_call(count_collapsed, df.copy()), "the count") for df in tables]
    expected = [int((df["value"] - df["baseline"] < COLLAPSE).sum()) for df in tables]
    points = f"{COLLAPSE * 100:g} points ({COLLAPSE:g})"
    if answers == expected:
        return (f"the same counts as adapterlab.families.init_scale's reading (value - majority < {points}) on "
                "three sweeps whose majority classes differ")
    if len(set(answers)) == 1:
        raise Hint(f"you answer {answers[0]} for three different tables: count the rows of `df` whose value "
                   f"ends less than {points} above its baseline")
    df, got = next((df, got) for df, got, right in zip(tables, answers, expected) if got != right)
    above = df["value"] - df["baseline"]
    fractions = f"{COLLAPSE * 100:g} points is {COLLAPSE:g} in these fractions"
    _first_slip(lambda rows: got == int(rows.sum()), [
        (df["value"] == df["baseline"],
         f"a collapsed run may end a little above or below the majority class: allow {points}"),
        (~df["converged"], "'not converged' is another verdict: collapse is about the final score"),
        (above.abs() < 0.1, fractions),
        (above < 0.1, fractions),
        (above < 0.01, f"the rule is {points} above the majority class (stats.COLLAPSE), not one point"),
        (above.abs() < COLLAPSE, "a run that ends below the majority class has collapsed too: no absolute value"),
    ], f"on a table whose majority class is {df['baseline'].iloc[0]:g} your count is {got}: compare "
       "each run's value with the `baseline` column of its own row (the majority class differs "
       "between tasks), not with a fixed number")


# ------------------------------------------------------------------ 06: parameters vs performance

def check_percent_trained(percent_trained):
    """percent_trained(model) -> 100 x trainable parameters / parameters of the base model (no head, no adapters)."""
    from ..methods.params import count_parameters

    for method in ("houlsby", "compacter", "bitfit", "layernorm"):
        model = _tiny_bert(method)
        expected = count_parameters(model).percent
        got = _number(_call(percent_trained, model), "the percentage")
        if _close(got, expected):
            continue
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        _first_slip(lambda slip: _close(got, slip), [
            (expected / 100, "a percentage: multiply the fraction by 100"),
            (100 * trainable / sum(p.numel() for p in model.parameters()), "divide by the base model's size: the "
             "adapters and the new classification head are not part of it (see al.count_parameters)"),
        ], f"for {method} your value is {got:.4f} %; count only parameters with requires_grad")
    return "matches al.count_parameters(model).percent for Houlsby, Compacter, BitFit and LayerNorm"


def _tradeoff_frame():
    import pandas as pd

    rows = [("full", 1000, [0.820, 0.830]), ("houlsby m=8", 50, [0.815, 0.805]),  # mean 0.810: 1.5 below
            ("compacter++", 5, [0.760, 0.840]),  # mean 0.800, one seed above full's mean
            ("layernorm", 2, [0.700, 0.700]), ("houlsby m=64", 200, [0.830, 0.832]),  # above full
            ("top-k k=1", 120, [0.812, 0.818])]  # mean 0.815: within 1 point
    return pd.DataFrame([dict(label=label, method=label.split()[0], trainable=n, seed=s, value=v)
                         for label, n, values in rows for s, v in enumerate(values)])


def check_smallest_within(smallest_within):
    """smallest_within(df, points) -> the label with the fewest trainable parameters whose seed mean is at
    least full fine-tuning's seed mean minus `points` (points x 0.01 in accuracy); full itself excluded."""
    from ..families.param_performance import smallest_within as reference

    df = _tradeoff_frame()
    answers = {}
    for points in (1.0, 2.0, 0.1):
        got = answers[points] = _call(smallest_within, df.copy(), points)
        if got is not None and not isinstance(got, str):
            raise Hint(f"return the label of the method (a string such as 'houlsby m=8'), or None; got {_describe(got)}")
    for points, got in answers.items():
        expected = reference(df, points)
        if got == expected:
            continue
        if got == "full":
            raise Hint("full fine-tuning is the reference, not a candidate")
        if points == 1.0 and got == "compacter++":
            raise Hint("compare seed means, not the best seed")
        if points == 1.0 and got == "houlsby m=8":
            raise Hint("one point is 0.01 here: compare means as fractions")
        if points == 2.0 and got == "houlsby m=8":
            raise Hint("among the methods close enough, pick the one with the fewest trainable parameters")
        if len(set(answers.values())) == 1:
            raise Hint(f"you answer {got!r} for every `points`: a larger allowance admits more methods, so the "
                       "choice depends on it")
        raise Hint(f"with points={points} you answered {got!r}; a method above full fine-tuning counts as within")
    far = df[df["label"].isin(["full", "layernorm"])]  # nothing within a point of full fine-tuning
    try:
        got = smallest_within(far.copy(), 1.0)
    except Exception as error:
        raise Hint(f"when no method is close enough, return None (your function raised {type(error).__name__})") from None
    if got is not None:
        raise Hint(f"when no method is close enough, return None (you answered {got!r})")
    return "the same choice as adapterlab.families.param_performance.smallest_within on a small table"


# ------------------------------------------------------------------ 07: low resource

def _indices(subset):
    return set(np.asarray(subset).ravel().tolist())


def check_nested_subsets(nested_subsets):
    """nested_subsets(n, sizes, seed) -> {size: indices}: seeded random subsets, each inside the larger ones."""
    n, sizes = 500, (10, 50, 200)
    got = _call(nested_subsets, n, sizes, 0)
    if not isinstance(got, dict) or set(got) != set(sizes):
        raise Hint(f"return a dict with one entry per size {sizes}")
    sets = {}
    for size in sizes:
        idx = np.asarray(got[size]).ravel()
        if len(idx) != size:
            raise Hint(f"the subset for size {size} has {len(idx)} indices")
        if len(set(idx.tolist())) != size:
            raise Hint(f"the subset for size {size} repeats examples: draw without replacement")
        if idx.min() < 0 or idx.max() >= n:
            raise Hint(f"indices must lie in 0..{n - 1}")
        sets[size] = _indices(idx)
    if not all(sets[a] <= sets[b] for a, b in zip(sizes, sizes[1:])):
        raise Hint("a smaller subset must lie inside every larger one: take prefixes of one permutation")
    if sets[sizes[0]] == set(range(sizes[0])):
        raise Hint("the subsets are the first rows of the split, not a random draw")
    again, other = _call(nested_subsets, n, sizes, 0), _call(nested_subsets, n, sizes, 1)
    if any(_indices(again[s]) != sets[s] for s in sizes):
        raise Hint("the same seed must give the same subsets")
    if _indices(other[sizes[-1]]) == sets[sizes[-1]]:
        raise Hint("another seed should draw other subsets")
    return "seeded, without repeats, and nested (tasks.subsample takes prefixes of one permutation)"


def _low_resource_frame():
    """Three seeds of full fine-tuning and two methods at four sizes, the rows shuffled. The per-seed
    differences are chosen so that the paired 95% interval (the rule) and the usual slips disagree:
    Welch's unpaired SE, 2 SE instead of t_{0.975, 2} = 4.30 SE, a higher mean alone, pairing by row order."""
    import pandas as pd

    full = {100: [0.66, 0.72, 0.69], 500: [0.74, 0.79, 0.76], 1000: [0.78, 0.81, 0.76], 2000: [0.80, 0.84, 0.79]}
    gains = {"compacter++": {100: [0.020, 0.025, 0.018],  # every seed gains a little: paired higher, Welch not
                             500: [0.04, 0.01, 0.10],  # ragged gains: neither
                             1000: [0.03, 0.01, 0.05],  # 2.6 paired SE: above 2 SE, below 4.30 SE
                             2000: [0.05, -0.01, 0.02]},  # a higher mean inside the noise
             "houlsby": {100: [0.07, 0.08, 0.06], 500: [-0.02, -0.03, -0.025], 1000: [0.012, 0.015, 0.011],
                         2000: [0.01, 0.0, -0.01]}}
    rows = [dict(train_size=n, method="full", seed=s, value=v) for n, vs in full.items() for s, v in enumerate(vs)]
    rows += [dict(train_size=n, method=method, seed=s, value=round(full[n][s] + gain, 4))
             for method, per_size in gains.items() for n, gs in per_size.items() for s, gain in enumerate(gs)]
    return pd.DataFrame(rows).sample(frac=1, random_state=0).reset_index(drop=True)


def _sizes_where(df, method, rule, by_seed=True):
    """Sorted sizes where rule(method's values, full's values) holds, the two aligned by seed (or by row order)."""
    sizes = []
    for size, g in df.groupby("train_size"):
        a, b = (g[g["method"] == m] for m in (method, "full"))
        if by_seed:
            a, b = a.sort_values("seed"), b.sort_values("seed")
        if rule(a["value"].to_numpy(), b["value"].to_numpy()):
            sizes.append(int(size))
    return sizes


def check_better_beyond_noise(sizes_better):
    """sizes_better(df, method) -> sorted sizes where `method` beats full fine-tuning beyond the noise: the 95%
    confidence interval of the difference paired by seed (stats.paired: mean of the per-seed differences
    ± t_{0.975, n-1} · sd / √n) lies above zero."""
    from ..experiments import stats

    df = _low_resource_frame()
    paired = lambda a, b: stats.paired(a, b).ci(0.95)[0] > 0
    for method in ("compacter++", "houlsby"):
        expected = _sizes_where(df, method, paired)
        got = _call(sizes_better, df.copy(), method)
        if got is None:
            raise Hint("your function returned None: return a list of training-set sizes ([] when there are none)")
        if isinstance(got, (str, bytes, dict)) or not hasattr(got, "__iter__"):
            raise Hint(f"return a list of training-set sizes (e.g. [100, 500], or [] for none), got {_describe(got)}")
        got = sorted(_count(size, "each size") for size in got)
        if got == expected:
            continue
        _first_slip(lambda slipped: got == slipped, [  # (what the slip gives, its hint)
            (_sizes_where(df, method, lambda a, b: a.mean() > b.mean()),
             "a higher mean is not enough: the difference must be beyond the noise of the seeds"),
            (_sizes_where(df, method, paired, by_seed=False),
             "pair the runs by their `seed` column: the rows are not in seed order"),
            (_sizes_where(df, method, lambda a, b: a.mean() - b.mean() > 2 * np.sqrt(
                a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))),
             "runs of the same seed share their training subset and data order: pair them and use the spread "
             "of the per-seed differences (stats.paired), not the two groups' separate variances"),
            (_sizes_where(df, method, lambda a, b: stats.paired(a, b).estimate > 2 * stats.paired(a, b).se),
             "with 3 seeds the 95% interval is the mean difference ± t_{0.975, 2} x SE = 4.30 SE, not 2 SE "
             "(scipy.stats.t.ppf(0.975, n - 1), or stats.paired(a, b).ci(0.95))"),
        ], f"for method {method!r} your sizes differ from the rule's: per size, take each seed's "
           "difference (method - full), then mean ± t_{0.975, n-1} x sd / √n, and keep the size when "
           "the whole interval is above zero")
    return "the same sizes as adapterlab.experiments.stats.paired (95% interval by seed) for two methods on a shuffled table"


def _stream_matrix(T, gen):
    """A random T x T accuracy matrix as a stream produces it: NaN below the diagonal (a task is not
    scored before it arrives), scores in [0.3, 0.95] elsewhere, rows that move over time."""
    m = np.full((T, T), np.nan)
    for i in range(T):
        m[i, i:] = gen.uniform(0.3, 0.95, T - i)
    return m


def check_stream_forgetting(forgetting):
    """forgetting(matrix) -> the T-1 drops diag - last column (positive = forgotten), tasks 1..T-1."""
    from ..families.stream import forgetting_from_matrix

    gen = np.random.default_rng(8)
    for T in (2, 4, 5, 7):
        m = _stream_matrix(T, gen)
        expected = forgetting_from_matrix(m)[:-1]
        got = _call(forgetting, m.copy())
        if not isinstance(got, (list, tuple, np.ndarray, torch.Tensor)):
            raise Hint(f"return the T - 1 drops as a list or array, got {_describe(got)}")
        if len(got) == T:
            raise Hint("the last task has had no time to forget: return only the first T - 1 tasks' drops")
        try:
            drops = np.asarray(got.detach().cpu() if isinstance(got, torch.Tensor) else got, dtype=float)
        except (TypeError, ValueError):
            raise Hint(f"the answer should be a list or array of numbers, got {_describe(got)}") from None
        if drops.shape != (T - 1,):
            raise Hint(f"the answer should hold {T - 1} numbers (one per task that had time to forget), got shape "
                       f"{drops.shape}")
        if np.allclose(drops, expected, atol=1e-12):
            continue
        _first_slip(lambda slip: np.allclose(drops, slip, atol=1e-12, equal_nan=True), [
            (0, "all zeros is what a learner with perfect memory shows, not this matrix: take the "
                "diagonal minus the last column"),
            (-expected, "the sign: forgetting is the score right after its own training minus the final score "
                        "(positive = forgotten)"),
            (np.nanmax(m, axis=1)[:-1] - m[:-1, -1],
             "start from the score right after the task's own training (the diagonal), not its best score"),
            ((m[:, 0] - m[:, -1])[:-1],
             "a task is first scored when it arrives (the diagonal); column 0 holds only the first task"),
        ], f"for a {T} x {T} matrix your drops differ from the diagonal minus the last column")
    return "the diagonal minus the last column, for every task but the last, on matrices of 2 to 7 tasks"


def check_storage_ratio(storage_ratio):
    """storage_ratio(model_bytes, adapter_bytes, n) -> n * model / (model + n * adapter)."""
    gen = np.random.default_rng(9)
    for _ in range(6):
        model = float(gen.integers(10**7, 10**9))
        adapter = float(model * gen.uniform(0.005, 0.08))
        n = int(gen.integers(2, 40))
        expected = n * model / (model + n * adapter)
        got = _number(_call(storage_ratio, model, adapter, n), "the ratio")
        if _close(got, expected):
            continue
        _first_slip(lambda slip: _close(got, slip), [
            (model / adapter, "count the base model too: the adapters need one base plus their own files"),
            (1 / expected, "the other way round: the copies' bytes divided by the base's plus the adapters'"),
            (n, "the adapters are not free: add n adapter files to the one base"),
        ], f"for a model of {model:.0f} bytes, adapters of {adapter:.0f} and {n} tasks your ratio is {got:.4g}")
    return "n copies against one base plus n adapters, for six random sizes and task counts"
