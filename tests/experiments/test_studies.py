"""Study files (experiments/studies.py) and `python -m adapterlab study init` (experiments/study_init.py).

A study written here loads as the Profile its settings describe, its data under the task's own name; each
bad study or bad data file is one line of error, with the records already stored left as they were; study
init on a small CSV (four classes, sentence pairs) with the tiny random model writes a study that loads and
plans; and, marked slow, init then regenerate draws the figures of notebooks 04-07 from it and writes its
findings page.
"""
import io
import json
import math
import shutil
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from adapterlab.__main__ import main
from adapterlab.experiments import estimate, planning, profiles, running, studies
from adapterlab.experiments import study_init as si
from adapterlab.experiments import families
from adapterlab.families import layer_removal
from adapterlab.experiments.pilot import Pilot
from adapterlab.experiments.timing import Timing
from adapterlab.report import document
from adapterlab.training import files
from adapterlab.training import tasks as task_registry
from adapterlab.training.backbones import default_tokenizer, load_backbone

CHECKOUT = Path(__file__).resolve().parents[2]
FAMILIES = [f.name for f in families.registered() if f.study]  # the families a study plans: 04-07
CLASSES = ("apple", "car", "red", "cat")
TOPIC = {"apple": ("fruit", "sweet"), "car": ("road", "fast"), "red": ("colour", "bright"), "cat": ("pet", "purr")}


def topic_rows(rows, classes=CLASSES, seed=0, filler=(0, 12)):
    """(label, filler) for each row: row i has class i % len(classes), and a run of filler words (a count drawn
    from `filler`) that says nothing of the label."""
    rng = np.random.default_rng(seed)
    return [(classes[i % len(classes)], " ".join(rng.choice(["so", "and", "well", "then"], size=rng.integers(*filler))))
            for i in range(rows)]


def write_pairs(path, rows=200, classes=CLASSES, seed=0):
    """A CSV of question/answer pairs whose label (topic) the words give away; row i has class i % len(classes)."""
    lines = ["question,answer,topic"] + [f"what is {TOPIC[label][0]} {i},it is {TOPIC[label][1]} {noise},{label}"
                                         for i, (label, noise) in enumerate(topic_rows(rows, classes, seed))]
    path.write_text("\n".join(lines) + "\n")
    return path


STUDY = """\
name = "qa"
backbone = "tiny"
max_length = 32
method_lr = {full = 0.0002}

[task]
data = "qa.csv"
text_columns = ["question", "answer"]
label_column = "topic"

[train]
epochs = 1
batch_size = 16

[init_scale]
stds = [1e-06, 0.01]
seeds = [0, 1]
method_args = {bottleneck = 8}
train = {max_steps = 6, eval_every = 3}
budget_control = [1e-06]

[param_performance]
methods = [["houlsby", {bottleneck = 8}, {lrs = [0.001, 0.01]}], ["full", {}]]
seeds = [0, 1]
budget_control = [["full", {}], ["houlsby", {bottleneck = 8}]]

[low_resource]
sizes = [40, 80]
methods = ["full"]
lr_grid = {full = [0.0001, 0.001]}
lr_choice_size = 40
epochs = {40 = 2, 80 = 1}
"""


@pytest.fixture
def root(tmp_path):
    """Where the tests' data/ and figures/ go."""
    return tmp_path / "out"


@pytest.fixture
def study(tmp_path):
    """A study file and its data in tmp_path/study/."""
    folder = tmp_path / "study"
    folder.mkdir()
    write_pairs(folder / "qa.csv")
    path = folder / "qa.toml"
    path.write_text(STUDY)
    return path


def edit(path, old, new):
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


# ----------------------------------------------------------------------------- loading

def test_a_study_loads_as_the_profile_its_settings_describe(study, root):
    p = profiles.get(str(study))
    # the same settings written in Python: the typed settings hold tuples, and sizes as numbers
    expected = profiles.Profile(
        name="qa", description="a study of qa (qa.toml)", backbone="tiny", tasks=("qa",), max_length=32,
        method_lr={"full": 0.0002}, train={"epochs": 1, "batch_size": 16},
        init_scale=dict(stds=(1e-06, 0.01), seeds=(0, 1), method_args={"bottleneck": 8},
                        train={"max_steps": 6, "eval_every": 3}, budget_control=(1e-06,)),
        param_performance=dict(methods=(("houlsby", {"bottleneck": 8}, {"lrs": (0.001, 0.01)}), ("full", {})),
                               seeds=(0, 1), budget_control=(("full", {}), ("houlsby", {"bottleneck": 8}))),
        low_resource=dict(sizes=(40, 80), methods=("full",), lr_grid={"full": (0.0001, 0.001)}, lr_choice_size=40,
                          epochs={40: 2, 80: 1}), source=str(study.resolve()),
        # the data file, named relative to the study, is the task "qa": the profile holds where its data lie
        task_sources={"qa": files.spec(str(study.parent / "qa.csv"), ["question", "answer"], "topic")})
    assert p == expected
    assert profiles.resolve(str(study)) == p
    assert profiles.results_dir(str(study), root) == root / "data" / "results" / "qa"
    task = task_registry.load_task("qa", source=p.task_sources["qa"])
    assert (task.name, task.text_fields, task.label_names) == ("qa", ("question", "answer"), sorted(CLASSES))
    assert sum(len(split) for split in task.splits.values()) == 200
    assert p.model_folders == {} and p.folder() is None  # a built-in backbone stands for no folder


def test_runs_on_a_carved_validation_split_key_on_the_carving_rule(study):
    """A study whose validation is carved from its file keys its runs on files.CARVE_VERSION, so runs stored under
    another carving rule (other rows in validation and train) stop matching; one with its own file does not."""
    p = profiles.get(str(study))
    config = planning.plan(p, "init_scale")[0]
    assert planning.run_key(config, p, "init_scale")["carve_version"] == files.CARVE_VERSION
    assert "carve_version" not in planning.run_key(planning.plan("smoke", "init_scale")[0], "smoke", "init_scale")
    assert files.carves_validation("qa.csv?test=t.csv") and not files.carves_validation("qa.csv?validation=v.csv")


def test_a_split_file_names_its_task_by_its_folder(tmp_path):
    """A file named for a split (train.csv, as exported beside validation.csv and test.csv) says nothing of
    the task: its folder's name does; any other file's stem is the name."""
    assert studies.task_name_for(tmp_path / "deflategate" / "train.csv") == "deflategate"
    assert studies.task_name_for(tmp_path / "deflategate" / "Test.tsv") == "deflategate"
    assert studies.task_name_for(tmp_path / "news" / "articles 2024.jsonl") == "articles-2024"
    assert studies.task_name_for("hf:glue:sst2") == "glue-sst2"


def test_run_keys_carry_the_task_name_not_the_path(study):
    p = profiles.get(str(study))
    for family in FAMILIES:
        for config in planning.plan(p, family):
            key = json.dumps(planning.run_key(config, p, family))
            assert config.task == "qa" and str(study.parent) not in key
    # the budget controls name the study's runs: planned at twice the steps
    controls = planning.budget_controls(p, "init_scale")
    assert [(run.train.max_steps, control.train.max_steps) for run, control in controls] == [(6, 12), (6, 12)]


def test_a_study_of_a_local_model_keys_its_runs_the_same_wherever_it_is_checked_out(study, tmp_path, monkeypatch):
    """The model folder is named by its path from the study file: run keys hold no machine's absolute path,
    so a copy of the study elsewhere finds the same records; a worker learns the folder from its unit."""
    model, tokenizer = load_backbone("tiny", num_labels=len(CLASSES))
    for part in (model, tokenizer):
        part.save_pretrained(study.parent / "models" / "tiny-bert")
    edit(study, 'backbone = "tiny"', 'backbone = "models/tiny-bert"')
    moved = shutil.copytree(study.parent, tmp_path / "elsewhere" / "study") / study.name

    def keys(path):
        p = profiles.get(str(path))
        assert p.backbone == "./models/tiny-bert"
        return [json.dumps(planning.run_key(c, p, f)) for f in FAMILIES for c in planning.plan(p, f)]

    here = keys(study)
    assert not any(str(tmp_path) in key for key in here)
    assert keys(moved) == here
    assert profiles.get(str(moved)).model_folders == {"./models/tiny-bert": str(moved.parent / "models" / "tiny-bert")}
    # what a notebook loads: the folder the study's backbone name stands for on this machine
    assert profiles.get(str(moved)).folder() == str(moved.parent / "models" / "tiny-bert")
    p = profiles.get(str(study))
    store = running.store_of(p, root=tmp_path / "out")
    spec = running.pack(planning.work(p, "init_scale", store)[0], store)
    assert spec["config"]["backbone_folder"] == str(study.parent / "models" / "tiny-bert")  # the unit says where
    record = run_in_a_fresh_process(spec, monkeypatch)
    assert record["backbone"] == "./models/tiny-bert" and record["steps"] == 6
    assert str(tmp_path) not in json.dumps(record["config"])  # the record keeps the name, not this machine's path


def run_in_a_fresh_process(spec, monkeypatch):
    """running.execute(spec)'s record where no study was ever read: reading a study file fails, so whatever
    the worker needs must come from the spec (its unit) alone, as in a sweep's worker process or a Ray task."""
    def no_study(*args, **kwargs):
        raise AssertionError("the worker read a study file")

    monkeypatch.setattr(studies, "load", no_study)
    monkeypatch.setattr(studies, "from_dict", no_study)
    spec = json.loads(json.dumps(spec))  # plain data, as it crosses to another process
    return running.execute(spec)["record"]


def test_a_local_model_folder_is_for_the_families_of_training_runs(study):
    """A run config carries a study's model folder to its worker; the stream's steps load their backbone by
    name, so a local folder there is refused when the study is read, in one line naming the fix."""
    (study.parent / "models" / "tiny-bert").mkdir(parents=True)
    edit(study, "[train]", '[stream]\nbackbone = "models/tiny-bert"\n\n[train]')
    with pytest.raises(ValueError, match=r"qa\.toml \[stream\] backbone 'models/tiny-bert' is a local model "
                                         r"folder, which only the families of training runs \(04-07\) take"):
        profiles.get(str(study))


def test_a_worker_process_learns_the_study_task_from_its_unit(study, root, monkeypatch):
    p = profiles.get(str(study))
    store = running.store_of(p, root=root)
    unit = planning.work(p, "init_scale", store)[0]
    spec = running.pack(unit, store)
    assert spec["config"]["task_source"] == p.task_sources["qa"]  # the unit says where the task's data lie
    assert unit.key["task"] == "qa" and "task_source" not in unit.key  # its key names the task only
    record = run_in_a_fresh_process(spec, monkeypatch)
    assert record["task"] == "qa" and record["steps"] == 6 and 0 <= record["validation"] <= 1


def test_every_table_of_the_writer_reads_back_as_written():
    parts = [(None, [("name", 'a "quoted" \\ name\t', "a comment"), ("ratio", 3.0, ""), ("tiny", 1e-07, "")]),
             ("low_resource", [("epochs", {100: 4, 200: 1}, ""), ("lr_grid", {"compacter++": [0.001, 3.0]}, ""),
                               ("methods", [["houlsby", {"bottleneck": 64}, {"lrs": [0.001, 0.003]}]] * 4, "")])]
    text = si.toml_text(["a header line"], parts)
    read = tomllib.loads(text)
    assert read == {"name": 'a "quoted" \\ name\t', "ratio": 3.0, "tiny": 1e-07,
                    "low_resource": {"epochs": {"100": 4, "200": 1}, "lr_grid": {"compacter++": [0.001, 3.0]},
                                     "methods": [["houlsby", {"bottleneck": 64}, {"lrs": [0.001, 0.003]}]] * 4}}
    assert isinstance(read["ratio"], float)
    assert studies.plain(read["low_resource"]) == {"epochs": {100: 4, 200: 1}, "lr_grid": {"compacter++": (0.001, 3.0)},
                                                   "methods": (("houlsby", {"bottleneck": 64}, {"lrs": (0.001, 0.003)}),) * 4}
    assert all(len(line) <= si.WIDTH for line in text.splitlines())


# ----------------------------------------------------------------------------- bad studies, one line each

def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def stored(study, root):
    """The study's folder with its identity and one record already in it (as a first sweep leaves it)."""
    folder = profiles.results_dir(str(study), root)
    running.claimed_store(str(study), root=root)
    assert json.loads((folder / studies.IDENTITY).read_text())["tasks"]["qa"]["label_column"] == "topic"
    (folder / "init_scale.jsonl").write_text('{"key": "an earlier run", "record": {"validation": 0.5}}\n')
    return folder


def sweep_error(study, capsys):
    """The one-line error `python -m adapterlab sweep --profile STUDY` prints, after exiting with status 2."""
    assert main(["sweep", "--profile", str(study), "--only", "05", "--out", str(study.parent.parent / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


BAD_STUDIES = [  # (what is wrong, the edit that makes it so, words the error must say)
    ("not TOML", ("[train]", "[train"), ["is not a valid study file", "at line 11"]),
    ("unknown key", ("max_length = 32", "max_length = 32\nlearning_rate = 0.1"),
     ["unknown key(s) 'learning_rate'", "valid: name, description, backbone, task"]),
    ("unknown family setting", ("stds = [", "std = ["), ["[init_scale] has unknown key(s) 'std'", "valid:", "stds"]),
    ("wrong type", ("seeds = [0, 1]\nmethod_args", "seeds = 3\nmethod_args"), ["[init_scale] seeds must be a list, not 3"]),
    ("missing required key", ('label_column = "topic"\n', ""), ["[task] lacks the required key(s) 'label_column'"]),
    ("missing data file", ('data = "qa.csv"', 'data = "gone.csv"'), ["gone.csv", "does not exist"]),
    ("missing column", ('"answer"]', '"answr"]'), ["no column 'answr'", "did you mean 'answer'?"]),
    ("one-rate grid", ("lrs = [0.001, 0.01]", "lrs = [0.001]"), ["fewer than two rates", "cannot bracket"]),
    ("a built-in profile's name", ('name = "qa"', 'name = "default"'), ["'default' is a built-in profile's"]),
    ("bad method entry", ('["full", {}]]', '["full", 3]]'), ["methods[1] must be a method name or [method"]),
    ("init's speed without its step", ("[task]", "[sized_on]\ndevice = \"cpu\"\n\n[task]"),
     ["[sized_on] lacks the required key(s) 'step_seconds', 'load_seconds', 'batch_size', 'max_length'"]),
    ("init's speed as text", ("[task]", '[sized_on]\ndevice = "cpu"\nstep_seconds = "fast"\nload_seconds = 1\n'
                                        "batch_size = 32\nmax_length = 32\n\n[task]"),
     ["[sized_on] step_seconds must be a number"]),
]


@pytest.mark.parametrize("what, change, words", BAD_STUDIES, ids=[b[0] for b in BAD_STUDIES])
def test_a_bad_study_is_one_line_of_error_and_the_records_stay(study, stored, capsys, what, change, words):
    before = snapshot(stored)
    edit(study, *change)
    err = sweep_error(study, capsys)
    for word in words:
        assert word in err, err
    assert snapshot(stored) == before


def test_one_class_is_refused_and_the_records_stay(study, stored, capsys):
    before = snapshot(stored)
    write_pairs(study.parent / "qa.csv", classes=("cat",))
    err = sweep_error(study, capsys)
    assert "the label column 'topic' has one class ('cat')" in err
    assert snapshot(stored) == before


def test_a_folder_holding_another_studys_records_is_refused(study, stored, root, capsys):
    before = snapshot(stored)
    write_pairs(study.parent / "other.csv", seed=1)  # other data, under the same study name
    edit(study, 'data = "qa.csv"', 'data = "other.csv"\nname = "qa"')
    err = sweep_error(study, capsys)
    assert "holds the records of study 'qa' on other data" in err and "give this study another name" in err
    assert snapshot(stored) == before
    # the same data under another file name are the same data
    (study.parent / "copy.csv").write_bytes((study.parent / "qa.csv").read_bytes())
    edit(study, 'data = "other.csv"', 'data = "copy.csv"')
    running.claimed_store(str(study), root=root)
    assert snapshot(stored) == before


def test_the_example_study_with_a_changed_row_is_refused_by_the_dry_run_and_the_run_alike(tmp_path, monkeypatch,
                                                                                        capsys):
    """The example study copied elsewhere, with one row of its data changed under the same file name, against a
    store holding the committed records of its data: `regenerate --dry-run` refuses as the run does, in one line
    naming both data, before anything is listed, trained or written; the unchanged copy passes that check."""
    from adapterlab.experiments import sweep as sweep_module

    folder = shutil.copytree(CHECKOUT / "studies" / "deflategate", tmp_path / "deflategate")
    store = tmp_path / "out" / "data" / "results" / "deflategate"
    store.mkdir(parents=True)
    for name in (studies.IDENTITY, "param_performance.jsonl"):  # the committed data's identity, records made on them
        shutil.copy(CHECKOUT / "data" / "results" / "deflategate" / name, store / name)

    def trains(*args, **kwargs):
        raise AssertionError("the run got as far as training")

    monkeypatch.setattr(sweep_module, "sweep", trains)
    command = ["regenerate", "--profile", str(folder / "deflategate.toml"), "--only", "06", "--out",
               str(tmp_path / "out")]
    assert main([*command, "--dry-run"]) == 0  # the same data: the dry run lists what would run
    capsys.readouterr()
    rows = (folder / "train.csv").read_text().splitlines(keepends=True)
    assert rows[2].endswith(',"positive"\n')
    (folder / "train.csv").write_text("".join([*rows[:2], rows[2].replace('"positive"', '"neutral"'), *rows[3:]]))
    before = snapshot(tmp_path)
    for dry_run in (["--dry-run"], []):
        assert main([*command, *dry_run]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1, (dry_run, out, err)
        assert err.startswith(f"error: {store} holds the records of study 'deflategate' on other data (task "
                              "'deflategate': train.csv sha256 1548dbee44ca"), err
        assert snapshot(tmp_path) == before


def test_reading_a_studys_records_reads_none_of_its_data(monkeypatch):
    """Opening the example study's store and planning every family of it from the records there (what tables,
    figures and pages do) reads no data file: only the runners that write check the data (claimed_store)."""
    def no_data(*args, **kwargs):
        raise AssertionError("the study's data were read")

    p = profiles.get(str(CHECKOUT / "studies" / "deflategate" / "deflategate.toml"))
    monkeypatch.setattr(task_registry, "_load_data", no_data)
    monkeypatch.setattr(studies, "_sha256", no_data)
    store = running.store_of(p)
    assert all(store.get(u.key, u.family) is not None for f in FAMILIES for u in planning.work(p, f, store))
    with pytest.raises(AssertionError, match="data were read"):  # a runner does read them
        running.claimed_store(p)


def test_records_without_an_identity_are_not_claimed(study, root, capsys):
    folder = profiles.results_dir(str(study), root)
    folder.mkdir(parents=True)
    (folder / "init_scale.jsonl").write_text("{}\n")
    err = sweep_error(study, capsys)
    assert f"holds records but no {studies.IDENTITY}" in err
    assert not (folder / studies.IDENTITY).exists()


def test_a_studys_findings_page_goes_beside_its_data_under_its_own_header(study, root):
    path = document.write(str(study), root)
    assert path == root.resolve() / "findings" / "qa.md"
    page = path.read_text()
    assert page.startswith("# Findings of the study `qa` (qa.toml)\n\nA study of qa (qa.toml). Task `qa` (qa.csv: text "
                           "question + answer, label topic), backbone `tiny`: every reading")
    assert "`python -m adapterlab.report.document --profile qa.toml --write`" in page and "airline" not in page
    assert page.endswith("(`python -m adapterlab regenerate --profile qa.toml --fresh`): 0.0 h of stored training runs "
                         "(minutes per notebook: none stored), as timed on the machines that made them (no run "
                         "stored; a run trained beside others counts for its share: run_seconds / workers); "
                         "layer_removal, init_scale, param_performance, low_resource not stored yet, so more.\n")
    assert not (root / "data").exists()  # a page reads the store: it claims no folder


# ----------------------------------------------------------------------------- study init

TIMING = Timing("cpu", step_seconds=0.05, load_seconds=0.5, batch_size=32, max_length=32, span_seconds=0.02,
                backbone="tiny")
# what a pilot found (pilot.py), given so that no test trains one it does not test: 60 steps a run
PILOT = Pilot(60, 30.0, 360, (("full", 60), ("houlsby bottleneck=64", 30)))


@pytest.fixture
def fixed_timing(monkeypatch):
    """This machine's speed as TIMING, so the budget init chooses is the same on every machine."""
    monkeypatch.setattr(si, "time_training", lambda backbone, batch_size, max_length, load_seconds: TIMING)
    monkeypatch.setattr(si, "time_scoring",
                        lambda model, tokenizer, batch_size, max_length, method_args: TIMING.span_seconds)


def init(folder, **kwargs):
    return si.init(str(write_pairs(folder / "qa.csv", rows=400)), ["question", "answer"], "topic",
                   folder / "qa-study.toml", **{"backbone": "tiny", "pilot": PILOT, **kwargs})


def test_study_init_writes_a_study_that_loads_and_plans(tmp_path, fixed_timing):
    path = init(tmp_path, hours=10_000)  # the whole default protocol fits
    p = profiles.get(str(path))
    text = path.read_text()
    assert text.startswith("# Study 'qa-study'") and "4 classes (apple 25.0%, car 25.0%" in text
    assert all(len(line) <= si.WIDTH for line in text.splitlines() if line.startswith("#"))
    study = tomllib.loads(text)
    assert study["task"] == {"data": "qa.csv", "text_columns": ["question", "answer"], "label_column": "topic",
                             "name": "qa"}
    # max_length by the rule: the shortest length 95% of the train pairs fit, up to a multiple of 8, at least 16
    train = task_registry.load_task("qa", source=p.task_sources["qa"]).splits["train"]
    encoded = default_tokenizer()(list(train["question"]), list(train["answer"]))
    lengths = sorted(len(ids) for ids in encoded["input_ids"])
    assert p.max_length == max(16, 8 * math.ceil(lengths[math.ceil(0.95 * len(lengths)) - 1] / 8))
    # the default profile's families at the pilot's steps, low-resource sizes inside the 240 train examples (400
    # rows less the 30% validation and the 10% test carved from them)
    d = profiles.get("default")
    assert p.param_performance.methods == tuple(d.param_performance.methods)
    assert p.init_scale.train == {**d.init_scale.train, "max_steps": 60, "eval_every": 10}  # six validations
    assert p.init_scale.seeds == (0, 1, 2)
    assert p.low_resource.sizes == (30, 60, 120, 240) and p.low_resource.lr_choice_size == 120
    assert p.low_resource.budget_control == (("full", 240), ("compacter++", 240))
    assert p.train_size is None and p.eval_size is None  # 240 train examples: all of them; whole splits
    assert p.layer_removal.held_out is None  # so none is left unseen: 04's claims await held-out scoring
    assert p.sized_on == TIMING  # the speed it sized the study at, kept for its page's estimate
    for family in FAMILIES:
        assert planning.plan(p, family)


def test_study_init_states_the_validation_splits_size_and_warns_below_200(tmp_path):
    out = io.StringIO()
    path = init(tmp_path, hours=10_000, file=out)  # 400 rows: validation takes the 30% the data allow, 120
    header = " ".join(line[2:] for line in path.read_text().splitlines() if line.startswith("# "))
    assert ("Validation: 120 examples (carved from the train file: a fifth of it, or 200 examples where the data "
            "allow); it chooses every run's learning rate and best state. Fewer than 200: those choices are "
            "noisy.") in header
    warnings = [line for line in out.getvalue().splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: the validation split has 120 examples, fewer than 200: its choices of learning "
                        "rate and best state are noisy; give --validation FILE with 200 or more examples, or more "
                        "data"]
    # 1,200 rows: a fifth, 240 examples, and no warning
    summary = si.DataSummary("qa.csv", CLASSES, (300,) * 4, {"train": 840, "validation": 240, "test": 120}, 32,
                             True, 24, 32, 0.0, 0.0)
    assert si.validation_note(summary) == ("Validation: 240 examples (carved from the train file: a fifth of it, "
                                           "or 200 examples where the data allow); it chooses every run's learning "
                                           "rate and best state.", None)
    given = si.DataSummary("qa.csv?validation=dev.csv", CLASSES, (30,) * 4, {"train": 120, "validation": 60,
                                                                               "test": 60}, 32, True, 24, 32, 0.0, 0.0)
    sentence, warning = si.validation_note(given)
    assert sentence.startswith("Validation: 60 examples (its own file)") and "fewer than 200" in warning


def test_study_init_holds_out_what_the_train_size_leaves_unseen():
    """04's claims are judged on train examples the run never saw: the default's 6,000, as far as the part of
    the train split left out by its 2,000-example subset holds them."""
    held_out_size = lambda n_train: layer_removal.held_out_size(si.default(), n_train)  # noqa: E731
    assert held_out_size(20_000) == 6000 and held_out_size(7500) == 5500
    assert held_out_size(2000) == 0 and held_out_size(320) == 0
    # three seeds' subsets may cover up to 3 x 2,000 examples: what surely none of them holds
    assert layer_removal.held_out_size(si.default(), 7500, seeds=3) == 1500


def test_the_scoring_a_plan_will_add_is_what_the_complete_store_holds():
    """Before any run, span_units_to_come stands a planned run in for the one validation will pick: the
    committed default store, complete, holds span units of the same splits and sizes (validation, and the
    held-out tweets of each seed's run and of its budget control); with that store, they are its own."""
    store = running.store_of("default")
    stored = [u for u in planning.work("default", "layer_removal", store) if u.family == layer_removal.SPANS]
    before = layer_removal.span_units_to_come("default")
    seeds = len(profiles.get("default").layer_removal.seeds)
    assert sorted((u.spec["split"], u.spec["eval_size"]) for u in before) == sorted(
        (u.spec["split"], u.spec["eval_size"]) for u in stored) == [("held-out", 6000)] * 2 * seeds + [
        ("validation", None)]
    assert all(store.get(u.key, u.family) is not None for u in stored)  # the store is complete: every one scored
    assert [u.id for u in layer_removal.span_units_to_come("default", store)] == [u.id for u in stored]


def test_time_scoring_measures_a_span_pass_per_example():
    model, tokenizer = load_backbone("tiny", num_labels=3)
    seconds = si.time_scoring(model, tokenizer, 4, 16, method_args=dict(bottleneck=8))
    assert not any("adapter" in name for name, _ in model.named_modules())  # the adapter went on a copy
    assert 0 < seconds < 10  # a positive time, and per example: the tiny backbone's pass of 4 takes well under 40 s


def test_study_init_refuses_bad_input_before_loading_a_model(tmp_path, monkeypatch, capsys):
    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(si, "load_timed", no_model)
    write_pairs(tmp_path / "qa.csv")
    write_pairs(tmp_path / "one.csv", classes=("cat",))
    (tmp_path / "taken.toml").write_text("")
    base = ["study", "init", "--text-column", "question", "answer", "--label-column", "topic", "--backbone", "tiny"]
    cases = [
        (["--task", str(tmp_path / "one.csv"), "--out", str(tmp_path / "a.toml")], "has one class ('cat')"),
        (["--task", str(tmp_path / "qa.csv"), "--out", str(tmp_path / "a.toml"), "--label-column", "topc"],
         "has no column 'topc'; did you mean 'topic'?"),
        (["--task", str(tmp_path / "gone.csv"), "--out", str(tmp_path / "a.toml")], "does not exist"),
        (["--task", str(tmp_path / "qa.csv"), "--out", str(tmp_path / "taken.toml")], "taken.toml exists"),
        (["--task", str(tmp_path / "qa.csv"), "--out", str(tmp_path / "a.txt")], "must end in .toml"),
        (["--task", str(tmp_path / "qa.csv"), "--out", str(tmp_path / "default.toml")], "a built-in profile's"),
        (["--task", "airline", "--out", str(tmp_path / "a.toml")], "are for a data file"),
    ]
    for args, words in cases:
        assert main(base + args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, (args, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.csv", "qa.csv", "taken.toml"]


# ----------------------------------------------------------------------------- end to end

SMALL = {  # the written study cut to a few tiny runs per family, as a researcher may edit it
    "train": {"epochs": 1, "batch_size": 16},
    "layer_removal": {"method_args": {"bottleneck": 8}, "train": {"max_steps": 8, "eval_every": 4},
                      "budget_control": []},
    "init_scale": {"stds": [1e-06, 0.01], "seeds": [0, 1], "method_args": {"bottleneck": 8},
                   "train": {"max_steps": 8, "eval_every": 4}, "budget_control": [1e-06]},
    "param_performance": {"methods": [["full", {}], ["houlsby", {"bottleneck": 8}]], "seeds": [0, 1],
                          "train": {"max_steps": 8, "eval_every": 4}, "lr_grid": {"houlsby": [0.001, 0.01]},
                          "budget_control": [["full", {}], ["houlsby", {"bottleneck": 8}]]},
    "low_resource": {"sizes": [40, 80], "methods": ["compacter++", "full"], "seeds": [0, 1],
                     "method_args": {"compacter++": {"bottleneck": 8}}, "lr_grid": {"full": [0.0001, 0.001]},
                     "lr_choice_size": 40, "steps": 8, "evaluations": 2, "budget_control": [["full", 80]]},
}


@pytest.mark.slow
def test_study_init_then_regenerate_draws_notebooks_04_to_07(tmp_path, fixed_timing):
    path = init(tmp_path, hours=10_000)
    study = {**tomllib.loads(path.read_text()), **SMALL}
    parts = [(None, [(k, v, "") for k, v in study.items() if not isinstance(v, dict) or k == "method_lr"])]
    parts += [(k, [(key, value, "") for key, value in v.items()]) for k, v in study.items()
              if isinstance(v, dict) and k != "method_lr"]
    path.write_text(si.toml_text([], parts))
    run = subprocess.run([sys.executable, "-m", "adapterlab", "regenerate", "--profile", str(path), "--only",
                          "04,05,06,07", "--out", str(tmp_path / "out")], cwd=CHECKOUT, capture_output=True,
                         text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results, figures = tmp_path / "out" / "data" / "results" / "qa-study", tmp_path / "out" / "figures" / "qa-study"
    p = profiles.get(str(path))
    for family in FAMILIES:  # every run of the plan stored, once (as the estimate counts them); its table written
        runs = [u for u in estimate.units(p, family) if u.kind != "scoring pass"]
        assert (results / f"{family}.jsonl").read_text().count("\n") == len(runs), family
        assert (results / f"{family}.csv").exists(), family
    assert json.loads((results / studies.IDENTITY).read_text())["tasks"]["qa"]["text_columns"] == ["question", "answer"]
    drawn = {p.stem for p in figures.iterdir()}
    for stem in ("layer_removal", "init_scale", "low_resource"):
        assert any(name.startswith(stem) for name in drawn), (stem, drawn)
    # the study's findings page, beside its data: its own header, and every claim judged on its task
    page = (tmp_path / "out" / "findings" / "qa-study.md").read_text()
    assert page.startswith("# Findings of the study `qa-study` (qa-study.toml)\n")
    assert "Task `qa` (qa.csv: text question + answer, label topic), backbone `tiny`" in page
    assert "airline" not in page and "make figures-fresh" not in page
    claims = [line for line in page.splitlines() if line.startswith(("| 04 |", "| 05 |", "| 06 |", "| 07 |"))]
    assert {"05", "07"} <= {line[2:4] for line in claims}, claims  # 06's claims need settings SMALL leaves out
    assert all(line.split(" | ")[1].startswith("qa: ") for line in claims), claims
    assert all(line.rstrip(" |").split(" | ")[-1] != "" for line in claims)  # each with the paper's number


# ----------------------------------------------------------------------------- the resolved study beside its records

def test_the_example_studys_resolved_settings_are_what_its_file_resolves_to():
    """data/results/deflategate/resolved.toml: every setting its runs used, the file's and the defaults filled in;
    regenerate it by running the study (the runners write it), never by hand."""
    root = Path(__file__).resolve().parents[2]
    p = profiles.get(str(root / "studies" / "deflategate" / "deflategate.toml"))
    committed = (root / "data" / "results" / "deflategate" / studies.RESOLVED).read_text(encoding="utf-8")
    assert committed == studies.resolved_text(p)
    assert tomllib.loads(committed)["init_scale"]["stds"] == list(p.init_scale.stds)


def test_a_changed_study_file_says_what_changed(study, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    p = profiles.get(str(study))
    assert studies.record_resolved(p, folder) == []  # the first run: nothing to compare with
    assert tomllib.loads((folder / studies.RESOLVED).read_text()) == studies.resolved(p)
    edit(study, "seeds = [0, 1]\nmethod_args = {bottleneck = 8}", "seeds = [0, 1, 2]\nmethod_args = {bottleneck = 8}")
    changed = profiles.get(str(study))
    assert studies.record_resolved(changed, folder) == ["init_scale.seeds: [0, 1] -> [0, 1, 2]"]
    assert studies.record_resolved(changed, folder) == []  # written: the next run of the same file says nothing
