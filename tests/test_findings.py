"""The readings the notebooks and the README state: noise-aware verdicts on hand-made tables, and the
README's findings section equal to what the committed default tables give."""
import pandas as pd
import pytest

from adapterlab import findings


def test_a_difference_counts_only_beyond_twice_its_standard_error():
    assert findings.difference([0.80, 0.82, 0.81], [0.70, 0.71, 0.72])[2] == "higher"
    assert findings.difference([0.80, 0.70, 0.75], [0.76, 0.72, 0.74])[2] == "within noise"
    assert findings.difference([0.64, 0.65], 0.63)[2] == "higher"  # the majority class is exact
    assert findings.difference([0.8], [0.7])[2] == "one seed: no noise estimate"


def init_df(values):
    return pd.DataFrame([dict(task="t", init_std=std, seed=seed, value=v, baseline=0.63, converged=v > 0.7)
                         for std, vs in values.items() for seed, v in enumerate(vs)])


def test_init_scale_reading_follows_the_data():
    flat = init_df({1e-6: [0.82, 0.81, 0.83], 1e-2: [0.82, 0.80, 0.83], 1.0: [0.63, 0.63, 0.635]})
    text = "\n".join(findings.init_scale(flat))
    assert "flat within noise" in text and "degraded, as in the paper" in text
    assert "3 of 9 runs not converged" in text and "3 at 1e+00" in text
    steep = init_df({1e-6: [0.82, 0.81, 0.83], 1e-2: [0.70, 0.71, 0.69], 1.0: [0.82, 0.81, 0.83]})
    text = "\n".join(findings.init_scale(steep))
    assert "not flat" in text and "degraded" not in text


def test_unconverged_runs_are_told_apart_by_why():
    runs = pd.DataFrame([
        dict(converged=True, plateau_gain=0.004, plateau_se=0.003),
        dict(converged=False, plateau_gain=0.0, plateau_se=0.0),  # flat at the class mix: learned nothing
        dict(converged=False, plateau_gain=0.030, plateau_se=0.006),  # +3 points, SE 0.6: a real gain
        dict(converged=True, plateau_gain=0.015, plateau_se=0.010),  # +1.5 points, SE 1.0: within noise
        dict(converged=False, plateau_gain=0.020, plateau_se=float("nan")),  # no per-example record
    ])
    assert findings.unconverged(runs) == (
        "3 of 5 runs not converged: 1 with a final training loss ≥ 0.8 x the class entropy, 2 still gaining in "
        "their last third (by > 1 point(s) and > 2 paired SE; 1 without the per-example record, by > 1 point(s)); "
        "1 converged run(s) gained > 1 point(s) but within 2 paired SE (the noise of the validation set)")
    assert findings.unconverged(runs.drop(columns=["plateau_gain", "plateau_se"])) == "3 of 5 runs not converged"
    assert findings.unconverged(runs.iloc[[0]]) == "all 1 runs converged"


def test_unconverged_agrees_with_the_rule_on_real_verdicts():
    """Its counts are the rule's: verdicts computed by train.convergence on curves, not hand-set flags."""
    from adapterlab import train as T

    def run(disagree, gained):  # two checkpoints on 1,000 examples: the last third gains `gained` of them
        a = [1] * 800 + [0] * 200
        b = list(a)
        for i in list(range(disagree // 2)) + list(range(800, 800 + disagree // 2 + gained)):
            b[i] = 1 - b[i]
        curve = [dict(step=s, train_loss=0.4, validation=sum(c) / 1000, correct=T.correct_bits(c), examples=1000)
                 for s, c in ((60, a), (120, a), (180, b))]
        return T.convergence(curve, 0.91)

    noisy, real = run(200, 15), run(40, 30)  # +1.5 points with SE 1.5; +3 with SE 0.8
    assert noisy["converged"] and noisy["plateau_gain"] < 2 * noisy["plateau_se"]
    assert not real["converged"] and real["plateau_gain"] > 2 * real["plateau_se"]
    text = findings.unconverged(pd.DataFrame([noisy, real]))
    assert text.startswith("1 of 2 runs not converged: 1 still gaining") and "1 converged run(s) gained" in text


def test_low_resource_verdict_on_the_smallest_set():
    rows = [dict(task="t", method=m, train_size=n, seed=s, value=v + 0.01 * s, baseline=0.6, converged=True)
            for n in (100, 1000) for s in range(3)
            for m, v in (("compacter++", 0.75 if n == 100 else 0.8), ("full", 0.70 if n == 100 else 0.8))]
    text = "\n".join(findings.low_resource(pd.DataFrame(rows)))
    assert "smallest set: reproduced" in text and "1,000 examples: compacter++ 81.0, full 81.0" in text
    assert "by method" not in text  # all converged: nothing to qualify
    rows[0]["converged"] = False  # one Compacter++ run
    text = "\n".join(findings.low_resource(pd.DataFrame(rows)))
    assert "not converged, by method: compacter++ 1 of 6, full 0 of 6" in text
    assert "learning rates" not in text  # no lr column: nothing to report
    frame = pd.DataFrame(rows).assign(lr=[1e-2 if r["method"] == "compacter++" else 1e-4 for r in rows],
                                      lr_grid=["0.003 0.01" if r["method"] == "compacter++" else None for r in rows])
    text = "\n".join(findings.low_resource(frame))
    assert "- learning rates: compacter++ 0.01 (chosen on validation from 0.003 0.01), full 0.0001." in text


def test_notebook_times_sum_the_stored_runs_and_name_the_device(monkeypatch):
    stored = {"teaching": [dict(run_seconds=60, device="cpu", machine="Xeon (AVX512)")] * 2,
              "layer_removal": [dict(run_seconds=120, device="cuda:0"), dict(run_seconds=30, device="cpu")],
              "init_scale": [dict(train_seconds=600, device="cpu")],  # an older record: training loop only
              "param_performance": [], "low_resource": [dict(run_seconds=1800, device="cpu")]}
    monkeypatch.setattr(findings, "stored_runs", lambda profile, family: stored[family])
    assert findings.notebook_seconds("default") == {
        "03_training_adapters": (120, "cpu"), "04_layer_removal": (150, "gpu"), "05_init_scale": (600, "cpu"),
        "06_params_vs_performance": (0, "cpu"), "07_low_resource": (1800, "cpu")}
    line = findings.total_time("default")
    assert "0.7 h" in line and "03 2, 04 2, 05 10, 06 0, 07 30" in line  # 2,670 s in all
    assert "param_performance not stored yet" in line
    assert "(machine not recorded 4 run(s), Xeon (AVX512) 2 run(s);" in line  # where the seconds come from


def test_readme_findings_are_what_the_committed_tables_give():
    """Regenerate the section with `python -m adapterlab.findings --profile default --write-readme`."""
    if findings.load("default", "init_scale") is None:
        pytest.skip("no committed default results")
    assert findings.readme_section() == findings.report("default")


def test_smallest_within_compares_seed_means_and_excludes_full():
    rows = [("full", 1000, [0.82, 0.83]), ("big", 200, [0.83, 0.84]), ("small", 10, [0.82, 0.81]),
            ("lucky", 1, [0.70, 0.90])]  # lucky's best seed beats full, its mean (0.80) is 2.5 points below
    df = pd.DataFrame([dict(label=label, method=label, trainable=n, seed=s, value=v)
                       for label, n, vs in rows for s, v in enumerate(vs)])
    assert findings.smallest_within(df, 1.0) == "small"  # 0.815 >= 0.825 - 0.01
    assert findings.smallest_within(df, 0.5) == "big"  # above full counts as within
    assert findings.smallest_within(df, 3.0) == "lucky"
    assert findings.smallest_within(df[df["method"] != "full"], 1.0) is None
