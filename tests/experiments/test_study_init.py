"""How `study init` sizes a study (experiments/study_init.py, sizing.py, pilot.py, estimate.py).

One estimate counts the units a plan will make, and study init, the dry run and the findings page all read it:
their counts equal the units planning.work makes once every choice is made. The pilot reads its curves by the
convergence rule, and no run of the study trains fewer steps than it found; 07 sees each training size whole.
To fit --hours, init cuts 06's methods, then 07's sizes, then the budget controls, never the seeds or the steps;
below the smallest valid study it refuses in one line, with that study's hours and the cuts that would fit. Bad
input is one line each. The data are small CSVs and the tiny random model; the machine's speed and the pilot are
given as values (fixed_timing, PILOT), so what init chooses is the same on every machine.
"""
import io
import math
from dataclasses import replace
from pathlib import Path

import pytest

from adapterlab.__main__ import main
from adapterlab.experiments import costs, estimate, families, pilot, planning, profiles, running, sizing
from adapterlab.experiments import study_init as si
from adapterlab.report import document
from adapterlab.training import train as T

from test_studies import CLASSES, PILOT, TIMING, TOPIC, fixed_timing, topic_rows, write_pairs  # noqa: F401  (a fixture)

CHECKOUT = Path(__file__).resolve().parents[2]
DEFLATEGATE = str(CHECKOUT / "studies" / "deflategate" / "deflategate.toml")
STUDY = sizing.study_families()  # 04-07


def write_long(path, rows=400, seed=0):
    """Like write_pairs, one text a row and about 40-70 word pieces each: long enough that halving max_length
    cuts them (write_pairs' texts fit 24 tokens)."""
    lines = ["text,topic"] + [f"what is {TOPIC[label][0]} {i} it is {TOPIC[label][1]} {noise},{label}"
                              for i, (label, noise) in enumerate(topic_rows(rows, seed=seed, filler=(30, 60)))]
    path.write_text("\n".join(lines) + "\n")
    return path


def sizer_for(folder, data=None, max_length=None, steps=PILOT.steps):
    """The Sizer init makes for the qa pairs (or `data`, one text column) with TIMING: what prices a cut."""
    data = data or write_pairs(folder / "qa.csv", rows=400)
    columns = ["question", "answer"] if data.name == "qa.csv" else ["text"]
    spec = si.files.spec(str(data), columns, "topic")
    model, tokenizer, _ = si.load_timed("tiny", len(CLASSES))
    summary = si.read_data(spec, model, tokenizer, 32, max_length)
    table = si.task_table(str(data), columns, "topic", None, None, folder)
    return si.Sizer("qa-study", table, "tiny", summary, TIMING, steps, folder)  # TIMING: what fixed_timing gives init


def words(text):
    """A study file's header (or a text) without its spacing: a wrapped line may break at a hyphen."""
    if isinstance(text, Path):
        text = " ".join(line[2:] for line in text.read_text().splitlines() if line.startswith("#"))
    return "".join(text.split())


def fill(profile, family, store, rounds=None):
    """Store a record for every unit planning.work lists, as the runners would, until it lists nothing new
    (or for `rounds` rounds): each grid's trials first, then what their choices add. Returns the units."""
    i, n = 0, 0
    while rounds is None or n < rounds:
        units = planning.work(profile, family, store)
        new = [u for u in units if store.get(u.key, u.family) is None]
        if not new:
            break
        for u in new:
            i += 1  # validation scores that differ, so choices and best runs are made as the runners make them
            record = {"validation": 0.5 + (i % 7) / 100, "run_seconds": 60.0, "eval_seconds": 30.0,
                      "task": u.spec["config"]["task"] if "config" in u.spec else None}
            config = T.RunConfig.from_dict(u.spec["config"]).to_dict() if u.kind == "train" else None  # as a run's record
            store.put(u.key, record | ({"config": config} if u.kind == "train" else {}), u.family)
        n += 1
    return planning.work(profile, family, store)


# ----------------------------------------------------------------------------- one estimator

@pytest.mark.parametrize("name", ["smoke", "deflategate"])
def test_init_the_dry_run_and_the_page_count_the_units_the_plan_makes(name, tmp_path, monkeypatch):
    """Init's count, the dry run's and the page's come from one estimator, so they agree before anything
    trains, after stage 1, and once every choice is made; the count holds the budget controls and scoring
    passes, and the dry run's hours are init's."""
    monkeypatch.setattr(costs, "speed_here", lambda: TIMING)
    p = profiles.get(DEFLATEGATE if name == "deflategate" else name)
    store = running.claimed_store(p, root=tmp_path)  # a study's folder is claimed (study.json) before it stores

    def counts():
        init = estimate.of(p, STUDY, TIMING, store)  # what init prices (with no store, the same units: below)
        dry = costs.dry_run(p, STUDY, verbose=False, file=io.StringIO(), root=tmp_path)["total"]
        page = sum(document.stored_work(p, tmp_path)[f.notebook][2] for f in STUDY)
        return init.count(), dry, page

    before = estimate.of(p, STUDY, TIMING)
    for f in STUDY:
        fill(p, f, store, rounds=1)  # stage 1 stored: grids' trials and fixed-rate runs
    assert counts() == (before.count(),) * 3
    made = sum(len(fill(p, f, store)) for f in STUDY)  # every choice made, every unit stored
    assert counts() == (made,) * 3 == (before.count(),) * 3
    assert before.count("budget control") > 0 and before.count("scoring pass") > 0
    out = io.StringIO()
    costs.print_plan(p, STUDY, file=out, root=tmp_path / "empty", speed=TIMING)
    assert f"missing: {before.count():,} units ({before.by_kind()}), about {before.seconds / 3600:,.1f} h" \
        in out.getvalue()


def test_the_estimate_prices_every_kind_of_unit():
    """Each unit's seconds are its own: the controls at twice the steps, the scoring passes at the seconds per
    example measured (04's validation split here), the runs at the timed step; none left out of the sum."""
    p = profiles.get(DEFLATEGATE)
    found = estimate.of(p, STUDY, TIMING)
    # by family and unit: 04 and 06 each train their own Houlsby run of the same config, in their own store file
    priced = {(u.unit.family, u.unit.id): estimate.seconds(u, TIMING) for u in found.planned}
    assert len(priced) == found.count() == 21  # 04: 3 runs, a control, 5 scoring passes; 06: 12 runs
    assert found.unpriced == [] and found.seconds == pytest.approx(sum(priced.values()), rel=1e-12)  # float order
    cap = planning.eval_size(p, "layer_removal")
    controls = planning.budget_controls(p, "layer_removal")  # 04 trains at a fixed rate: known before any run
    for base, control in controls:  # twice the steps, as many validations
        more = estimate.run_seconds(control, TIMING, cap) - estimate.run_seconds(base, TIMING, cap)
        assert more == pytest.approx(base.train.max_steps * TIMING.step_seconds * estimate.scale(base, TIMING))
    assert len(controls) == 1
    passes = [u for u in found.planned if u.kind == "scoring pass"]
    # the heatmap's run on validation; each seed's run and the first seed's control on the held-out tweets
    assert [u.unit.spec["split"] for u in passes] == ["validation"] + ["held-out"] * 4
    config = passes[0].unit.spec["config"]  # the study's task with the data it stands for (RunConfig.to_spec)
    sizes = estimate.split_sizes(config["task"], config["task_source"])
    ratio = estimate.scale(T.RunConfig.from_dict(passes[0].unit.spec["config"]), TIMING)
    assert priced[(passes[0].unit.family, passes[0].unit.id)] == pytest.approx(
        sizes["validation"] * TIMING.span_seconds * ratio, rel=1e-12)


def test_the_speed_init_measures_names_the_machine_it_was_measured_on():
    """[sized_on] keeps the device with its model, so a page priced at that speed says where it was timed."""
    timing = si.time_training("tiny", 8, 16, load_seconds=0.1)
    assert timing.device == f"cpu: {running.machine()}" and timing.step_seconds > 0
    assert (timing.batch_size, timing.max_length, timing.load_seconds, timing.backbone) == (8, 16, 0.1, "tiny")


# ----------------------------------------------------------------------------- the pilot

def curve(values, examples=1000, loss=0.1):
    """A curve validated every 10 steps: each point right on the first `value x examples` examples."""
    return [{"step": 10 * (i + 1), "train_loss": loss, "validation": v, "examples": examples,
             "correct": T.correct_bits([1] * round(v * examples) + [0] * (examples - round(v * examples)))}
            for i, v in enumerate(values)]


def test_the_pilot_reads_each_curve_by_the_convergence_rule():
    """The first validation at which the rule finds the curve so far converged: here step 50, the first at which
    the last third (steps 40-50) gains nothing over the best before it; a still-rising curve, or a loss above
    0.8 x the class entropy, never converges."""
    entropy = math.log(4)
    assert pilot.needed_steps(curve([0.5, 0.7, 0.8, 0.8, 0.8, 0.8]), entropy) == 50
    assert pilot.needed_steps(curve([0.5, 0.6, 0.7, 0.8, 0.9, 0.95]), entropy) is None
    assert pilot.needed_steps(curve([0.5, 0.7, 0.8, 0.8, 0.8, 0.8], loss=entropy), entropy) is None
    curves = {"full": curve([0.5, 0.7, 0.8, 0.8, 0.8, 0.8]), "houlsby": curve([0.6, 0.8, 0.8, 0.8, 0.8, 0.8])}

    def trained(config, **kwargs):
        return {"curve": curves[config.method], "class_entropy": entropy}

    runs = [T.RunConfig(method=m, train=T.TrainConfig(max_steps=60, eval_every=10)) for m in curves]
    found = pilot.run(runs, train=trained)
    assert (found.steps, found.cap, found.converged) == (50, 60, True)  # the most any arm needs: full's 50
    assert found.arms == (("full", 50), ("houlsby", 30))
    curves["houlsby"] = curve([0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
    assert pilot.run(runs, train=trained).steps == 60  # an arm that never converges: the cap


def test_the_pilot_trains_the_reference_arms_on_the_studys_data(tmp_path):
    """Full fine-tuning and Houlsby m=64 (06's reference arms), once each, on the study's task, length and train
    size, at their rates without a grid, validated `evaluations` times within the cap."""
    p = sizer_for(tmp_path).profile(sizing.CUTS[0], STUDY)
    runs = pilot.configs(p, STUDY, cap=4, evaluations=2)
    assert [(c.method, c.method_args) for c in runs] == [("full", {}), ("houlsby", {"bottleneck": 64})]
    assert {(c.task, c.max_length, c.train_size, c.backbone) for c in runs} == {("qa", p.max_length, None, "tiny")}
    assert [c.train.lr for c in runs] == [p.method_lr["full"], p.train["lr"]]
    assert {(c.train.max_steps, c.train.eval_every, c.train.seed) for c in runs} == {(4, 2, 0)}
    found = pilot.run(runs[1:], eval_size=p.eval_size)  # a real run: 4 steps of the tiny model
    assert found.cap == 4 and found.steps in (2, 4) and found.seconds > 0


def test_no_run_trains_fewer_steps_than_the_pilot_found(tmp_path, fixed_timing):
    """Every run of the written study trains at least the pilot's steps, at any cut; 07's steps see every
    training size whole (steps x batch >= size), here more than the pilot's 5 for its 240 examples (400 rows less
    the 30% validation and the 10% test carved from them)."""
    few = replace(PILOT, steps=5)
    sizer = replace(sizer_for(tmp_path), steps=few.steps)
    for cut in (sizing.CUTS[0], sizing.CUTS[-1]):
        p = sizer.profile(cut, STUDY)
        runs = [T.RunConfig.from_dict(u.unit.spec["config"]) for f in STUDY for u in estimate.units(p, f)
                if u.kind != "scoring pass"]
        assert min(c.train.max_steps for c in runs) >= few.steps
        sizes = [c for c in runs if c.train_size]
        assert sizes and all(c.train.max_steps * c.train.batch_size >= c.train_size for c in sizes)
        assert max(c.train_size for c in sizes) == (240 if cut.sizes is None else 120)
        assert p.low_resource.steps == (8 if cut.sizes is None else 6)  # 240 / 32, rounded up; 120 / 32 is under 6 validations
        assert {len(getattr(p, f.name).seeds) for f in STUDY if hasattr(getattr(p, f.name), "seeds")} == {3}


# ----------------------------------------------------------------------------- the cuts

def test_init_cuts_06s_methods_then_07s_sizes_then_the_controls(tmp_path, fixed_timing):
    """Each cut costs less than the one before; at hours that buy exactly one cut's study, init takes that cut;
    the claimed cut keeps every claim of 06 judgeable, the reference cut keeps full fine-tuning and Houlsby."""
    sizer = sizer_for(tmp_path)
    prices = [sizer.price(cut, STUDY).seconds for cut in sizing.CUTS]
    assert prices == sorted(prices, reverse=True) and len(set(prices)) == len(prices)
    for cut, seconds in zip(sizing.CUTS, prices):  # a hair over (float rounding), far under the next price up
        assert sizing.fit(lambda c: sizer.price(c, STUDY).seconds, (seconds + PILOT.seconds) * (1 + 1e-9) / 3600,
                          PILOT.seconds)[0] == cut
    claimed = sizer.profile(sizing.CUTS[1], STUDY)
    assert planning.unplanned_claims(claimed, "06") == []
    assert len(claimed.param_performance.methods) < len(profiles.get("default").param_performance.methods)
    # between the fourth and the fifth cut's prices: the fifth, the controls at the first seed only
    path = si.init(str(write_pairs(tmp_path / "qa.csv", rows=400)), ["question", "answer"], "topic",
                   tmp_path / "cut.toml", backbone="tiny", pilot=PILOT,
                   hours=(PILOT.seconds + (prices[3] + prices[4]) / 2) / 3600)
    p = profiles.get(str(path))
    assert [m for m, *_ in p.param_performance.methods] == ["houlsby", "full"]  # the reference arms, in 06's order
    assert p.low_resource.sizes == (30, 60, 120) and p.param_performance.budget_control_seeds == (0,)
    assert words("Breadth: 06's reference arms, 07's 3 smallest training sizes, budget controls at the first seed") \
        in words(path)


def test_below_the_smallest_study_init_says_its_hours_and_what_would_fit(tmp_path, fixed_timing, monkeypatch,
                                                                         capsys):
    """One line: the smallest valid study's hours (pilot included) and the cuts that fit, --only and --max-length,
    each with its hours; the pilot is trained before sizing (here given: monkeypatched)."""
    data = write_long(tmp_path / "long.csv")
    sizer = sizer_for(tmp_path, data)
    half = sizer.summary.max_length // 2  # the first --max-length init tries: half the fitted length
    smallest = sizing.CUTS[-1]
    need = PILOT.seconds + sizer.price(smallest, STUDY).seconds
    alone = {f.number: PILOT.seconds + sizer.price(smallest, [f]).seconds for f in STUDY}
    short = PILOT.seconds + sizer.price(smallest, STUDY, half).seconds
    hours = float(f"{max(*alone.values(), short) * 1.001 / 3600:.6f}")  # each family alone fits, and half the length
    assert hours < need / 3600  # all four at the fitted length do not
    monkeypatch.setattr(si.pilot_module, "run", lambda *args, **kwargs: PILOT)
    args = ["study", "init", "--task", str(data), "--text-column", "text", "--label-column", "topic",
            "--backbone", "tiny", "--hours", str(hours), "--out", str(tmp_path / "small.toml")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not (tmp_path / "small.toml").exists()
    assert err.startswith(f"error: --hours {hours:g} is less than the smallest valid study of 04,05,06,07 here "
                          f"({smallest.text()}; 3 seeds, the pilot's steps): about {sizing.hours_text(need)} with the "
                          "pilot; cuts that fit: --only ")
    assert err.rstrip().endswith(f"; --max-length {half}: {sizing.hours_text(short)}")
    # the largest sets of families that fit, none inside another, each family in one: "--only 04,06: 0.31 h"
    listed = [part[len("--only "):].split(": ") for part in err.split("cuts that fit: ")[1].split("; ")
              if part.startswith("--only")]
    sets = [set(numbers.split(",")) for numbers, _ in listed]
    assert sets and not any(a < b for a in sets for b in sets) and set().union(*sets) == set(alone)
    for numbers, text in listed:  # each with the hours that set costs
        chosen = [families.get(n) for n in numbers.split(",")]
        assert text == sizing.hours_text(PILOT.seconds + sizer.price(smallest, chosen).seconds)


def test_max_length_cuts_the_texts_and_the_header_says_what_share_and_what_it_saves(tmp_path, fixed_timing):
    data = write_long(tmp_path / "long.csv")
    path = si.init(str(data), ["text"], "topic", tmp_path / "cut.toml", backbone="tiny", pilot=PILOT, hours=10_000,
                   max_length=32)
    assert profiles.get(str(path)).max_length == 32
    sizer, short = sizer_for(tmp_path, data), sizer_for(tmp_path, data, max_length=32)
    fitted = sizer.summary.max_length
    assert short.summary.cut_share > 0.9 and sizer.summary.cut_share <= 0.05  # 95% fit the fitted length
    hours = {n: (PILOT.seconds + s.price(sizing.CUTS[0], STUDY).seconds) / 3600 for n, s in ((fitted, sizer),
                                                                                             (32, short))}
    header = words(path)
    assert words(f"max_length 32 cuts {short.summary.cut_share:.1%} of the train texts (--max-length; the fitted {fitted} "
            f"cuts {sizer.summary.cut_share:.1%}): the study takes {hours[32]:.2f} h at 32 tokens against "
            f"{hours[fitted]:.2f} h at {fitted}, so the cut saves {hours[fitted] - hours[32]:.2f} h") in header
    assert hours[fitted] > hours[32]


# ----------------------------------------------------------------------------- bad input

def test_bad_sizing_input_is_one_line_each(tmp_path, monkeypatch, capsys):
    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    write_pairs(tmp_path / "qa.csv")
    base = ["study", "init", "--task", str(tmp_path / "qa.csv"), "--text-column", "question", "answer",
            "--label-column", "topic", "--backbone", "tiny", "--out", str(tmp_path / "a.toml")]
    with monkeypatch.context() as m:
        m.setattr(si, "load_timed", no_model)  # each is refused before a model loads
        for args, words in [
            (["--only", "09"], "--only 09: no such family; a study plans 04 (layer_removal), 05 (init_scale), "
                               "06 (param_performance), 07 (low_resource)"),
            (["--only", "03"], "--only 03: a study plans 04 (layer_removal)"),
            (["--only", ","], "--only names no family"),
            (["--max-length", "8"], "--max-length 8 is below 16 tokens"),
            (["--hours", "0"], "--hours must be a positive number of hours"),
        ]:
            assert main(base + args) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and words in err, (args, err)
    assert main(base + ["--max-length", "100000"]) == 2  # beyond what the model reads: known once it is loaded
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-length 100000 is more than this backbone reads (512 tokens)" in err
    assert not (tmp_path / "a.toml").exists()
