"""A page's "What to use" on hand-made tables whose answer is known by construction: which methods are shown
within the margin of the best (and which clearly below it), the cheapest of them, the smallest training size that
suffices, an honest "none" when the data cannot tell, and the section heading the page."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as dist

from adapterlab.experiments import profiles, stats
from adapterlab.families import param_performance
from adapterlab.report import what_to_use as W
from adapterlab.training import train

N = 2000  # test examples of a hand-made table
SEEDS = range(5)


def bits(value, seed, n=N):
    """A run's correct bits scoring `value` on n examples: right on round(value x n) of them from a shift its seed
    fixes. Two runs of one seed differ only on the examples between their counts, so a difference of a constant
    score per seed is the same at every seed: its interval is narrow, and the verdict is the margin's."""
    right = np.zeros(n, dtype=bool)
    right[(97 * seed + np.arange(round(value * n))) % n] = True
    return train.correct_bits(right)


def methods_table(spec):
    """06's table: spec {label: (scores per seed, % trained, seconds per epoch)}."""
    return pd.DataFrame([dict(task="t", label=label, method=label.split(" ")[0], seed=seed, value=v,
                              test_correct=bits(v, seed), test_examples=N, percent=percent,
                              seconds_per_epoch=seconds * (1 + 0.01 * seed), peak_memory_mb=1000.0 + seed,
                              converged=True, baseline=0.6)
                         for label, (values, percent, seconds) in spec.items() for seed, v in zip(SEEDS, values)])


def sizes_table(spec):
    """07's table: spec {size: score at every seed}, one method."""
    return pd.DataFrame([dict(task="t", label="m", method="m", train_size=size, seed=seed, value=v,
                              test_correct=bits(v, seed), test_examples=N)
                         for size, v in spec.items() for seed in SEEDS])


SPEC = {  # full and two cheaper methods within a fraction of a point; one 5 points below; one too noisy to tell
    "full": ([0.85] * 5, 100.0, 40.0),
    "fast m=8": ([0.848] * 5, 1.0, 20.0),
    "cheap": ([0.845] * 5, 0.1, 25.0),
    "worse": ([0.80] * 5, 0.5, 10.0),
    "noisy": ([0.81, 0.84, 0.815, 0.835, 0.825], 0.2, 15.0),  # 2.5 points below full, SE about 0.6
}


def verdicts(advice):
    return {m.label: m.judged.verdict for m in advice.methods}


def test_the_one_sided_margin_tests_read_the_normal_tail_at_the_margin():
    # estimate -1.0 point, SE 0.5, normal: 1.5 - 1.0 = 0.5 = 1 SE above -margin, so p = P(Z > 1)
    d = stats.Difference(-0.010, 0.005, math.inf, 1, "by hand")
    assert W.p_within(d) == pytest.approx(dist.norm.sf(1.0))
    # -3.0 points: 3 SE below -margin, so "below" reads twice P(Z < -3) = 0.0027
    assert W.p_below(stats.Difference(-0.030, 0.005, math.inf, 1, "by hand")) == pytest.approx(2 * dist.norm.cdf(-3))
    assert W.p_below(d) == 1.0  # capped: an interval that is nowhere near below the margin


def test_the_methods_within_the_margin_of_the_best_and_the_clearly_worse_one_excluded():
    advice = W.advise(methods_table(SPEC))
    assert verdicts(advice) == {"full": W.WITHIN, "fast m=8": W.WITHIN, "cheap": W.WITHIN, "worse": W.BELOW,
                                "noisy": W.UNDECIDED}
    assert [m.label for m in advice.methods] == ["full", "fast m=8", "cheap", "noisy", "worse"]  # best mean first
    assert advice.method_tests == 10  # Holm over each method's "within" and "below"
    # the score is the mean of the bits over seeds and examples: exactly the constructed one
    assert {m.label: m.score.estimate for m in advice.methods}["cheap"] == pytest.approx(0.845)
    cheap = next(m for m in advice.methods if m.label == "cheap")
    assert cheap.vs_full.estimate == pytest.approx(-0.005)
    # the deciding comparison is the one with the largest p: against the noisy rival (2 points ahead of it, SE
    # about 0.6), not against full (0.5 points behind, SE near 0)
    assert cheap.judged.rival == "noisy" and cheap.judged.diff.estimate == pytest.approx(0.02)
    # "worse" is decided by the method farthest ahead of it, 5 points
    worse = next(m for m in advice.methods if m.label == "worse")
    assert worse.judged.diff.estimate == pytest.approx(-0.05) and worse.judged.p < stats.ALPHA


def test_the_cheapest_of_the_within_set_by_share_and_by_time():
    advice = W.advise(methods_table(SPEC))
    assert advice.cheapest_share.label == "cheap"  # 0.1% trained; "noisy" trains 0.2% but is not shown within
    assert advice.fastest.label == "fast m=8"  # 20 s per epoch; "worse" (10 s) and "noisy" (15 s) are outside
    text = "\n".join(W.cost_lines(advice))
    assert "By share of parameters trained: cheap, 0.1%" in text and "By time: fast m=8" in text
    assert "0.50x" in text  # its seconds per epoch against full fine-tuning's: 20 / 40 at every seed


def test_a_noisy_rival_that_might_be_best_keeps_every_method_undecided():
    # two methods 10 points apart at every seed, in turn: their mean difference is 0, its interval far wider
    # than the margin, so neither is shown within the margin of the best, nor below it
    spec = {"full": ([0.80, 0.90] * 2 + [0.85], 100.0, 40.0), "other": ([0.90, 0.80] * 2 + [0.85], 1.0, 20.0)}
    advice = W.advise(methods_table(spec))
    assert set(verdicts(advice).values()) == {W.UNDECIDED} and advice.cheapest_share is None
    lines = "\n".join(W.render([advice]))
    assert "None is shown within 1.5 points of the best" in lines and "None to name" in lines
    assert "Undecided: full, other" in lines
    figure = param_performance.figure(methods_table(spec).assign(trainable=1e4, metric="accuracy"))
    assert "no method shown within 1.5 points of the best" in figure.views[W.TRADE_OFF].title


def test_the_smallest_training_size_within_the_margin_of_the_largest():
    sizes = sizes_table({100: 0.70, 500: 0.80, 1000: 0.845, 2000: 0.85})
    advice = W.advise(methods_table(SPEC), sizes)
    assert {s.size: s.judged.verdict for s in advice.sizes} == {100: W.BELOW, 500: W.BELOW, 1000: W.WITHIN}
    assert advice.smallest("m") == 1000 and advice.size_tests == 6
    assert "1,000 training examples suffice" in "\n".join(W.size_lines(advice))
    # a curve still rising by more than the margin at its end: no smaller size suffices, and it says so
    rising = W.advise(methods_table(SPEC), sizes_table({500: 0.70, 1000: 0.80, 2000: 0.85}))
    assert rising.smallest("m") is None
    assert "no size below 2,000 is shown no more than 1.5 points below it" in "\n".join(W.size_lines(rising))
    # a study without the subsampling runs says that it did not ask, rather than leaving the question out
    assert W.size_lines(W.advise(methods_table(SPEC))) == [
        "- **How much labelled data**: not asked: this page has no runs of notebook 07, which trains each method at "
        "several training sizes."]


def test_the_section_opens_with_its_heading_and_says_what_it_rests_on():
    lines = W.render([W.advise(methods_table(SPEC))], figures=["figures/p/param_performance_tradeoff.png"])
    assert lines[0] == W.HEADING == "## What to use"
    assert [line for line in lines if line.startswith("#")] == [W.HEADING]
    text = "\n".join(lines)
    assert "5 seeds x 2,000 test examples" in text and "Holm over 10 tests" in text
    assert "| majority class (always the most frequent class) | 60.0 | -25.0 |" in text
    assert "not measured |" in text  # the table records no serving latency: said, not invented
    assert "](figures/p/param_performance_tradeoff.png)" in text


def test_one_seed_says_its_intervals_cover_test_sampling_only():
    advice = W.advise(methods_table(SPEC).query("seed == 0"))
    assert advice.seeds == (1,) and W.ONE_SEED in "\n".join(W.method_lines(advice))


def test_advise_takes_one_task_and_needs_the_per_example_bits():
    two = pd.concat([methods_table(SPEC), methods_table(SPEC).assign(task="u")])
    with pytest.raises(ValueError, match="one task's rows"):
        W.advise(two)
    with pytest.raises(ValueError, match="test_correct"):
        W.advise(methods_table(SPEC).drop(columns="test_correct"))


def test_the_trade_off_figure_marks_the_within_set_and_draws_the_majority_class():
    df = methods_table(SPEC).assign(trainable=lambda d: d["percent"] * 1e4, metric="accuracy")
    figure = param_performance.figure(df)
    trade_off = figure.views[W.TRADE_OFF]
    (marks,) = [s for s in trade_off.series if s.marker == "*"]
    assert sorted(marks.hover) == ["cheap", "fast m=8", "full"]
    assert ("majority class", 60.0, "#808080") in trade_off.hlines
    # the view relative to full fine-tuning draws the majority class as its gap to full: 60 - 85 points
    relative = figure.views["vs. full fine-tuning"]
    assert [y for name, y, _ in relative.hlines if name == "majority class"] == [pytest.approx(-25.0)]


def test_the_example_studys_page_opens_with_what_to_use():
    page = profiles.project_root() / "findings" / "deflategate.md"
    if not page.is_file():
        pytest.skip("no committed page of the example study")
    assert [line for line in page.read_text().splitlines() if line.startswith("## ")][0] == W.HEADING


def test_without_a_stored_methods_table_the_section_says_what_answers_it(tmp_path):
    lines = W.section("smoke", tmp_path, tmp_path)
    assert lines[0] == W.HEADING and "No stored table compares methods yet: notebook 06's runs answer it." in lines
    assert not (tmp_path / "data").exists()  # reading the store claims no folder


def test_methods_at_the_majority_class_are_not_recommended():
    """Runs that all answer the majority class agree by construction: the section names no method and marks
    none, however close their scores."""
    n, majority = 1000, 0.6
    bits = np.zeros(n, dtype=np.uint8)
    bits[: int(majority * n)] = 1  # every run right exactly on the majority-class examples
    hexed = np.packbits(bits).tobytes().hex()
    rows = pd.DataFrame([dict(task="t", label=label, seed=s, test_correct=hexed, test_examples=n, percent=p,
                              seconds_per_epoch=10.0, peak_memory_mb=100.0, converged=False, baseline=majority,
                              value=majority)
                         for label, p in (("full", 100.0), ("houlsby m=64", 3.0)) for s in range(3)])
    advice = W.advise(rows)
    assert not advice.any_learned and advice.within == []
    assert W.marked(rows) == set()
    assert "None: no method is shown above the majority class" in "\n".join(W.method_lines(advice))
