"""`python -m adapterlab sweep`: the local and Ray executors on the smoke profile (notebook 05's
runs), with real Ray (a 2-CPU cluster started here), a worker process that really dies, a run that
really raises, and a driver really interrupted with SIGINT."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapterlab.experiments import planning, profiles, running
from adapterlab.experiments import families as registry
from adapterlab.families import layer_removal
from adapterlab.experiments import sweep as sw
from adapterlab.experiments.results import ResultStore, config_key

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")
CHECKOUT = Path(__file__).resolve().parents[2]
ONLY = "05"  # init_scale: a handful of tiny runs
FAMILIES = [f.name for f in registry.registered() if f.study]  # the figure families, 04-07
FAULTS = {}  # "dir": where the fault-injecting workers leave their marks (captured when Ray pickles them)


@pytest.fixture(scope="module")
def cluster():
    """One local Ray cluster for the module; workers get this test file by value (it is not importable there)."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture
def out(tmp_path, monkeypatch):
    """The sweeps' root: each test's store is <tmp_path>/data/results/smoke/."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # workers: one thread each, as Ray gives its tasks
    FAULTS["dir"] = str(tmp_path)
    return tmp_path


def stored(out, family="init_scale"):
    path = out / "data" / "results" / "smoke" / f"{family}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def metrics(entry):
    r = entry["record"]
    return r["validation"], r["test"], [(p["step"], p["validation"], round(p["train_loss"], 6)) for p in r["curve"]]


def planned_keys():
    return {config_key(planning.run_key(c, "smoke", "init_scale")) for c in planning.plan("smoke", "init_scale")}


# ----------------------------------------------------------------------------- workers with faults

def dies_once(spec):
    """The first attempt of the first run exits the worker process, as a kill or OOM would."""
    marker = Path(FAULTS["dir"]) / "died"
    if spec["config"]["method_args"]["init_std"] == 1.0 and not marker.exists():
        marker.write_text(spec["id"])
        os._exit(1)
    return running.execute(spec)


def raises_for_large_init(spec):
    """The runs with std 1.0 always raise; each attempt is logged, one line per attempt."""
    if spec["config"]["method_args"]["init_std"] == 1.0:
        with open(Path(FAULTS["dir"]) / "attempts", "a") as f:
            f.write(spec["id"] + "\n")
        raise RuntimeError("this run always fails")
    return running.execute(spec)


# ----------------------------------------------------------------------------- tests

def test_ray_executor_stores_what_the_local_executor_stores(out, cluster):
    assert sw.sweep("smoke", root=out, only=ONLY, executor="local", progress=False) == 0
    local = {e["key"]: e for e in stored(out)}
    for path in (out / "data").rglob("*.jsonl"):
        path.rename(path.with_suffix(".local"))
    assert sw.sweep("smoke", root=out, only=ONLY, executor="ray", progress=False) == 0
    remote = {e["key"]: e for e in stored(out)}
    assert set(local) == set(remote) == planned_keys()
    for key in local:
        assert local[key]["config"] == remote[key]["config"]
        assert metrics(local[key]) == metrics(remote[key]), key
        assert remote[key]["record"]["workers"] == 2  # the cluster's 2 CPUs: two runs at a time
    # stored means done: a second sweep trains nothing
    assert sw.sweep("smoke", root=out, only=ONLY, executor="ray", progress=False) == 0
    assert {e["key"]: e["created"] for e in stored(out)} == {k: e["created"] for k, e in remote.items()}


def test_a_killed_worker_is_retried_and_stored_once(out, cluster):
    assert sw.sweep("smoke", root=out, only=ONLY, executor="ray", worker=dies_once, progress=False) == 0
    assert (out / "died").exists()  # the fault did happen
    keys = [e["key"] for e in stored(out)]
    assert sorted(keys) == sorted(planned_keys())  # exactly one record per run
    assert not (out / "data" / "results" / "smoke" / sw.FAILURES).exists()


def test_a_run_that_always_raises_is_a_reported_failure(out, cluster, capsys):
    status = sw.sweep("smoke", root=out, only=ONLY, executor="ray", worker=raises_for_large_init, progress=False)
    report = capsys.readouterr().out
    assert status == 1
    attempts = (out / "attempts").read_text().split()
    assert len(attempts) == len(set(attempts)) == 2  # std 1.0 with seeds 0 and 1: each raised once, not retried
    failures = json.loads((out / "data" / "results" / "smoke" / sw.FAILURES).read_text())
    assert set(failures) == set(attempts)
    for run_id, failure in failures.items():
        assert "RuntimeError: this run always fails" in failure["error"]
        assert f"FAILED init_scale {run_id}" in report
    assert report.count("init_std=1.0") == 2 and "2 failed" in report
    assert len(stored(out)) == len(planned_keys()) - 2  # the others were trained
    # a rerun retries the failure; once it succeeds the failures file forgets it
    assert sw.sweep("smoke", root=out, only=ONLY, executor="ray", progress=False) == 0
    assert len(stored(out)) == len(planned_keys())
    assert json.loads((out / "data" / "results" / "smoke" / sw.FAILURES).read_text()) == {}


def test_an_interrupted_sweep_resumes_without_repeating_runs(out):
    command = [sys.executable, "-m", "adapterlab", "sweep", "--profile", "smoke", "--only", ONLY, "--out", str(out)]
    # SIG_DFL first: a shell that starts pytest in the background (`make test &`) ignores SIGINT for its
    # children, and Python would then never turn Ctrl-C into KeyboardInterrupt
    driver = subprocess.Popen(command, cwd=CHECKOUT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while not stored(out) and time.time() < deadline and driver.poll() is None:
        time.sleep(0.2)
    assert driver.poll() is None, driver.communicate()[0]  # still running: runs are left
    driver.send_signal(signal.SIGINT)
    output = driver.communicate(timeout=60)[0]
    assert driver.returncode == 130, output
    assert "rerun the same command" in output
    before = {e["key"]: e["created"] for e in stored(out)}
    assert 0 < len(before) < len(planned_keys())
    rerun = subprocess.run(command, cwd=CHECKOUT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"{len(planned_keys()) - len(before)} runs to train" in rerun.stdout
    after = {e["key"]: e["created"] for e in stored(out)}
    assert set(after) == planned_keys() and len(stored(out)) == len(after)
    assert all(after[k] == created for k, created in before.items())  # finished runs were not redone


def test_cpu_workers_share_the_cores_and_say_so(out, monkeypatch):
    from adapterlab.report import provenance

    monkeypatch.delenv("OMP_NUM_THREADS")
    assert sw.sweep("smoke", root=out, only=ONLY, max_parallel=2, progress=False) == 0
    entries = stored(out)
    assert {e["key"] for e in entries} == planned_keys()
    threads = max(1, sw.cpu_cores() // 2)
    assert all(e["record"]["workers"] == 2 and e["record"]["threads"] == threads for e in entries)
    # each run paid its own seconds beside the other worker: it counts for half of them in a from-scratch time
    seconds, what = provenance.cost([e["record"] for e in entries])
    assert seconds == pytest.approx(sum(e["record"]["run_seconds"] for e in entries) / 2)
    assert "2 at a time" in what


def test_a_fresh_sweep_retrains_older_records_once(out, capsys):
    assert sw.sweep("smoke", root=out, only=ONLY, progress=False) == 0
    before = {e["key"]: e["created"] for e in stored(out)}
    time.sleep(1.1)  # `created` has one-second resolution
    assert sw.sweep("smoke", root=out, only=ONLY, progress=False, fresh=True) == 0
    since = capsys.readouterr().out.split("retraining every run stored before ")[1].split()[0]
    after = {e["key"]: e["created"] for e in stored(out)}
    assert set(after) == set(before) and len(stored(out)) == len(before)  # replaced, one line per run
    assert all(before[k] < since <= after[k] for k in before)
    assert sw.missing("smoke", ONLY, fresh=since, root=out) == []  # a rerun with the same time (a resume) trains nothing
    assert sw.sweep("smoke", root=out, only=ONLY, progress=False, fresh=since) == 0
    assert {e["key"]: e["created"] for e in stored(out)} == after


def test_a_run_records_the_workers_its_spec_names(monkeypatch, tmp_path):
    """The driver tells each worker how many runs train side by side (spec["workers"]), and the record keeps it;
    the GLUE folder the driver was given reaches the worker the same way."""
    from adapterlab.experiments import running

    monkeypatch.setattr(running, "run_one", lambda config, eval_size, progress, save_to=None, glue_dir=None,
                        workers=1: {"seen": workers, "glue_dir": glue_dir})
    unit = planning.work("smoke", "init_scale", running.store_of("smoke", root=tmp_path))[0]
    result = running.execute(running.pack(unit, None, id=unit.id, workers=3, glue_dir="/data/glue"))
    assert result["files"] == {} and result["record"]["seen"] == result["record"]["workers"] == 3
    assert result["record"]["glue_dir"] == "/data/glue"


def test_the_command_line_takes_fresh_or_a_time_to_resume_from(capsys):
    from adapterlab.__main__ import main

    assert main(["sweep", "--profile", "smoke", "--only", ONLY, "--since", "soon"]) == 2
    assert "--since 'soon' is not an ISO 8601 time" in capsys.readouterr().err
    assert main(["sweep", "--profile", "smoke", "--only", ONLY, "--fresh", "--since", "2026-01-01T00:00:00"]) == 2
    assert "give one" in capsys.readouterr().err


def test_a_sweep_trains_03s_runs_with_the_adapters_its_swap_demo_loads(out):
    """03's teaching runs train in the sweep too (two at a time under regenerate --workers 2); the swap
    method's adapters come back from the workers as bytes and land in the store's checkpoint folders."""
    from adapterlab.methods import saving

    assert sw.sweep("smoke", root=out, only="03", max_parallel=2, progress=False) == 0
    planned = planning.plan("smoke", "teaching")
    assert {e["key"] for e in stored(out, "teaching")} == {
        config_key(planning.run_key(c, "smoke", "teaching")) for c in planned}
    swap = [c for c in planned if planning.keeps_adapter("smoke", "teaching", c)]
    assert len(swap) == 2 and {c.task for c in swap} == {"synthetic", "airline"}  # one per task of the demo
    for c in planned:
        folder = running.saved_files("smoke", "teaching", c, root=out)
        assert (folder / saving.ADAPTER_CONFIG).exists() == (c in swap), planning.describe(c)
    assert sw.missing("smoke", "03", root=out) == []


def test_a_sweep_of_04_trains_its_run_then_scores_its_spans_from_the_adapter_it_saved(out):
    """Span scoring is a unit of layer removal's plan: the sweep runs it once the run is stored, its worker
    getting the run's adapter as bytes; a second sweep finds nothing to do."""
    assert sw.sweep("smoke", root=out, only="04", progress=False) == 0
    store = ResultStore(out / "data" / "results" / "smoke")
    [config] = layer_removal.scored_runs("smoke", store).values()
    spans, held_out = store.records(layer_removal.SPANS)  # the heatmap's on validation, the claims' held out
    assert spans["key"] == config_key(layer_removal.span_key("smoke", config))
    assert held_out["key"] == config_key(layer_removal.span_key("smoke", config, "held-out"))
    run = store.get(planning.run_key(config, "smoke", "layer_removal"), "layer_removal")
    assert len(spans["record"]["spans"]) == len(held_out["record"]["spans"]) == 3  # two blocks: [0, 0], [0, 1], [1, 1]
    # no span removed: the trained model on the same validation examples, so exactly its best validation score
    assert spans["record"]["full"] == pytest.approx(run["validation"], abs=1e-9)
    assert sw.missing("smoke", "04", root=out) == []


def test_only_names_notebooks_or_families():
    assert sw.families("04,6") == ["layer_removal", "param_performance"]
    assert sw.families(["low_resource"]) == ["low_resource"]
    assert sw.families(None) == ["teaching", *FAMILIES, "stream"] and sw.families("3") == ["teaching"]
    assert sw.families("08") == ["stream"]  # notebook 08's steps
    with pytest.raises(ValueError, match="05 \\(init_scale\\)"):
        sw.families("02")  # 01 and 02 train nothing
