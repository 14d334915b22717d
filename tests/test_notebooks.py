"""The notebooks, run headless in the smoke profile, and the `regenerate` command that runs them.

Each notebook runs once per session, as `python -m adapterlab regenerate --profile smoke --fresh
--out TMP --only NN`, into its own empty temporary directory (in the background, two at a time:
see SmokeRunner); the tests then check what it wrote against the contract in DESIGN.md ("Result
tables"). The same directory is reused for the nbval pass (every cell must run under
`pytest --nbval-lax`) and by tests/test_browser.py for the smoke figures.
ADAPTERLAB_TEST_JOBS sets how many notebooks run at once (default: 2, or 1 on one core).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from adapterlab.regenerate import find_notebooks, regenerate

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = find_notebooks(ROOT / "notebooks")
SMOKE = "smoke"

# What each notebook must leave behind in the smoke profile. Numbers not listed here only need to
# run and write at least one non-empty figure.
RESULT_COLUMNS = {
    "layer_removal.csv": ["task", "first_layer", "last_layer", "metric", "value"],
    "init_scale.csv": ["task", "init_std", "seed", "metric", "value"],
    "param_performance.csv": ["task", "method", "size", "trainable", "percent", "metric", "value",
                              "train_seconds", "peak_memory_mb"],
    "low_resource.csv": ["task", "method", "train_size", "seed", "metric", "value"],
    "stream_accuracy.csv": ["learner", "order", "seed", "task", "time", "accuracy"],  # notebook 08: accuracy only
}
EXPECTED = {
    "01": dict(figures=True),
    "02": dict(figures=True),
    "03": dict(figures=True),
    "04": dict(figures=True, csv="layer_removal.csv", figure_name="layer_removal"),
    "05": dict(figures=True, csv="init_scale.csv"),
    "06": dict(figures=True, csv="param_performance.csv"),
    "07": dict(figures=True, csv="low_resource.csv"),
    "08": dict(figures=True, csv="stream_accuracy.csv"),
}
CORRELATIONS = ("mcc", "matthews", "pearson", "spearman", "corr")  # in [-1, 1]; everything else in [0, 1]


def metric_range(metric):
    return (-1.0, 1.0) if any(word in str(metric).lower() for word in CORRELATIONS) else (0.0, 1.0)


def ids(path):
    return Path(path).stem


# ---------------------------------------------------------------- one smoke run per notebook, shared

JOBS = max(1, int(os.environ.get("ADAPTERLAB_TEST_JOBS", min(2, os.cpu_count() or 1))))
CELL_TIMEOUT = 600
NBVAL_TEST = "test_notebook_passes_nbval"


@dataclass
class SmokeRun:
    notebook: Path
    out: Path  # what ADAPTERLAB_OUT was: data/, figures/, build/ are under it
    status: int
    output: str  # what the command printed (stdout + stderr)
    seconds: float
    figure_bytes: dict  # figure name -> bytes, read as the run finished (later passes rewrite them)

    @property
    def figures(self):
        return sorted(p for p in (self.out / "figures" / SMOKE).glob("*") if p.name != "plotly.min.js")

    @property
    def results(self):
        return self.out / "data" / "results" / SMOKE

    @property
    def executed(self):
        return self.out / "build" / "notebooks" / SMOKE / self.notebook.name


class SmokeRunner:
    """Runs each notebook once per session, in the background, JOBS at a time (the smoke
    workloads are single-threaded Python, so two at a time on two cores is nearly twice as fast):

    1. `python -m adapterlab regenerate --profile smoke --fresh --out TMP/NN --only NN`, the
       command exactly as a user types it, into its own empty directory;
    2. then `pytest --nbval-lax` on the notebook with ADAPTERLAB_PROFILE=smoke and
       ADAPTERLAB_OUT=TMP/NN (cached results of step 1 are reused; every cell must run).

    Tests ask for results with smoke(notebook) / nbval(notebook), which wait for (or run) them."""

    def __init__(self, base):
        self.base = base
        self.pool = ThreadPoolExecutor(max_workers=JOBS, thread_name_prefix="smoke")
        self.cpu = threading.Semaphore(JOBS)  # held only around a subprocess, never while waiting
        self.locks = {}
        self.memo = {}
        self.guard = threading.Lock()
        self.running = set()
        self.closed = False

    def _once(self, key, compute):
        with self.guard:
            lock = self.locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self.memo:
                self.memo[key] = compute()
            return self.memo[key]

    def _run(self, command, env, timeout):
        with self.cpu:
            if self.closed:
                return -1, "not run: the test session ended", 0.0
            start = time.monotonic()
            # own process group: stopping it also stops the kernel it started
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, start_new_session=True)
            self.running.add(process)
            try:
                output, _ = process.communicate(timeout=timeout)
                status = process.returncode
            except subprocess.TimeoutExpired:
                self._stop(process)
                output, _ = process.communicate()
                status, output = -1, f"timed out after {timeout} s: {' '.join(command)}\n{output}"
            finally:
                self.running.discard(process)
            return status, output, time.monotonic() - start

    @staticmethod
    def _stop(process):
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    def close(self):
        """At the end of the session (also after -x or Ctrl-C): drop queued runs, stop running ones."""
        self.closed = True
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in list(self.running):
            self._stop(process)

    def smoke(self, notebook):
        notebook = Path(notebook)

        def compute():
            out = self.base / notebook.stem
            out.mkdir(parents=True, exist_ok=True)
            command = [sys.executable, "-m", "adapterlab", "regenerate", "--profile", SMOKE, "--fresh", "--out", str(out),
                       "--only", notebook.stem[:2], "--timeout", str(CELL_TIMEOUT)]
            env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
            env.pop("ADAPTERLAB_OUT", None)
            status, output, seconds = self._run(command, env, timeout=1800)
            return SmokeRun(notebook, out, status, f"$ {' '.join(command)}\n{output}", seconds, figure_bytes(out))

        return self._once(("smoke", notebook), compute)

    def nbval(self, notebook):
        notebook = Path(notebook)

        def compute():
            out = self.smoke(notebook).out
            env = dict(os.environ, ADAPTERLAB_PROFILE=SMOKE, ADAPTERLAB_OUT=str(out), HF_HUB_OFFLINE="1",
                       PYTHONDONTWRITEBYTECODE="1")
            env.pop("MPLBACKEND", None)  # the kernel draws inline, as in JupyterLab
            command = [sys.executable, "-m", "pytest", "--nbval-lax", f"--nbval-cell-timeout={CELL_TIMEOUT}",
                       "-p", "no:cacheprovider", "-q", "-o", "addopts=", str(notebook)]
            return self._run(command, env, timeout=1800)

        return self._once(("nbval", notebook), compute)

    def start(self, smoke=(), nbval=()):
        """Queue the runs this session will need: every smoke run first, then the nbval passes
        (so a waiting nbval pass never blocks a smoke run that has not started)."""
        for notebook in smoke:
            self.pool.submit(self.smoke, notebook)
        for notebook in nbval:
            self.pool.submit(self.nbval, notebook)


_RUNNER = []


@pytest.fixture(scope="session")
def smoke_runner(request, tmp_path_factory):
    if not _RUNNER:
        runner = SmokeRunner(tmp_path_factory.mktemp("smoke"))
        wanted, nbval = [], []
        for item in request.session.items:  # what the selected tests will ask for, in order
            notebook = getattr(item, "callspec", None) and item.callspec.params.get("notebook")
            if notebook and "smoke_run" in item.fixturenames and notebook not in wanted:
                wanted.append(notebook)
            if notebook and item.originalname == NBVAL_TEST and notebook not in nbval:
                nbval.append(notebook)
            if item.originalname == "test_html_export_shows_figures":
                wanted += [nb for nb in NOTEBOOKS if nb not in wanted]
        runner.start(smoke=wanted, nbval=nbval)
        _RUNNER.append(runner)
        request.session.config.add_cleanup(runner.close)
    return _RUNNER[0]


@pytest.fixture(scope="session")
def smoke_run(smoke_runner):
    """smoke_run(notebook) -> SmokeRun: the notebook's smoke run (started in the background when the
    session's first test asked for one)."""
    return smoke_runner.smoke


def require_notebooks():
    if not NOTEBOOKS:
        pytest.fail(f"no notebooks named NN_name.ipynb in {ROOT / 'notebooks'}")


# ---------------------------------------------------------------- each notebook in the smoke profile

@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_notebook_runs_in_smoke_profile(notebook, smoke_run):
    run = smoke_run(notebook)
    assert run.status == 0, f"{notebook.name} failed in the smoke profile:\n{run.output}"
    assert run.executed.exists() and run.executed.with_suffix(".html").exists(), run.output

    expected = EXPECTED.get(notebook.stem[:2], dict(figures=True))
    figures = run.figures
    if expected.get("figures"):
        assert figures, f"{notebook.name} wrote no figure to figures/{SMOKE}/ (save every figure with plots.save_figure)"
    for figure in figures:
        assert figure.suffix in (".png", ".svg", ".html", ".pdf"), f"unexpected figure file {figure.name}"
        assert figure.stat().st_size > 0, f"{figure.name} is empty"
    if "figure_name" in expected:
        named = [f.name for f in figures if expected["figure_name"] in f.name]
        assert named, f"no figure with {expected['figure_name']!r} in its name among {[f.name for f in figures]}"

    if "csv" in expected:
        check_result_table(run.results / expected["csv"])


@pytest.mark.slow
def test_03s_default_runs_are_the_teaching_plan_the_sweep_trains(smoke_run):
    """regenerate --workers trains 03's runs beforehand from planning.plan(profile, "teaching"); the
    notebook must then find exactly those runs (and their swap adapters), or it would train them again."""
    from adapterlab import inject, planning
    from adapterlab.results import config_key

    run = smoke_run(next(nb for nb in NOTEBOOKS if nb.stem.startswith("03")))
    assert run.status == 0, run.output
    stored = [json.loads(line)["key"] for line in (run.results / "teaching.jsonl").read_text().splitlines()]
    planned = planning.plan(SMOKE, "teaching")
    assert sorted(stored) == sorted(config_key(planning.run_key(c, SMOKE, "teaching")) for c in planned)
    saved = {d.name for d in (run.results / "checkpoints").iterdir() if (d / inject.ADAPTER_CONFIG).exists()}
    assert saved == {config_key(planning.run_key(c, SMOKE, "teaching")) for c in planned
                     if planning.keeps_adapter(SMOKE, "teaching", c)}


def figure_bytes(out):
    folder = out / "figures" / SMOKE
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*")) if p.suffix in (".png", ".html")}


REDRAW_NOTEBOOK = "05"  # reads a cached table and writes both a PNG and a plotly HTML


@pytest.mark.slow
def test_redrawing_from_the_cache_writes_the_same_bytes(smoke_run, tmp_path):
    """`make figures` on a clean checkout must leave git clean: redrawing a notebook's figures from
    the cache its fresh run made gives byte-identical files (no random plotly div id, no
    version or time stamp in the PNG, live numbers seeded)."""
    notebook = next(nb for nb in NOTEBOOKS if nb.stem.startswith(REDRAW_NOTEBOOK))
    run = smoke_run(notebook)
    assert run.status == 0, run.output
    assert {Path(n).suffix for n in run.figure_bytes} == {".png", ".html"}, sorted(run.figure_bytes)
    shutil.copytree(run.out / "data", tmp_path / "data")  # the cache only, not the figures
    command = [sys.executable, "-m", "adapterlab", "regenerate", "--profile", SMOKE, "--out", str(tmp_path),
               "--only", REDRAW_NOTEBOOK, "--timeout", str(CELL_TIMEOUT)]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("ADAPTERLAB_OUT", None)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    redrawn = figure_bytes(tmp_path)
    assert redrawn.keys() == run.figure_bytes.keys()
    changed = [name for name in redrawn if redrawn[name] != run.figure_bytes[name]]
    assert not changed, f"redrawing from the cache changed {changed}"


def check_result_table(path):
    assert path.exists(), f"{path.name} was not written to data/results/{SMOKE}/"
    table = pd.read_csv(path)
    columns = RESULT_COLUMNS[path.name]
    missing = [c for c in columns if c not in table.columns]
    assert not missing, f"{path.name} lacks the contract columns {missing} (has {list(table.columns)})"
    assert len(table), f"{path.name} has no rows"
    if "value" not in table:  # one metric, in a column of its own name
        table = table.assign(metric=columns[-1], value=table[columns[-1]])
    assert table["value"].notna().all(), f"{path.name} has empty values:\n{table[table['value'].isna()]}"
    for metric, rows in table.groupby("metric"):
        low, high = metric_range(metric)
        bad = rows[(rows["value"] < low - 1e-9) | (rows["value"] > high + 1e-9)]
        assert bad.empty, f"{path.name}: {metric} outside [{low}, {high}]:\n{bad}"
    if path.name == "layer_removal.csv":  # baseline rows may leave the layers empty
        spans = table.dropna(subset=["first_layer", "last_layer"])
        assert (spans["first_layer"] <= spans["last_layer"]).all(), f"first_layer after last_layer:\n{spans}"


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_notebook_passes_nbval(notebook, smoke_run, smoke_runner):
    """`pytest --nbval-lax NN_name.ipynb` with ADAPTERLAB_PROFILE=smoke: every cell runs (nothing
    stored is compared). It writes into the smoke run's directory, reusing its cached results."""
    status, output, _ = smoke_runner.nbval(notebook)
    assert status == 0, f"nbval failed on {notebook.name}:\n{output[-8000:]}"
    assert re.search(r"\d+ passed", output), output[-2000:]


@pytest.mark.slow
def test_html_export_shows_figures(smoke_run):
    """Every executed notebook has an HTML export beside it; the exports embed the images (data
    URIs) and never load plotly.js from a CDN."""
    require_notebooks()
    embedded = []
    for notebook in NOTEBOOKS:
        html_path = smoke_run(notebook).executed.with_suffix(".html")
        assert html_path.exists(), f"no HTML export of {notebook.name}"
        html = html_path.read_text(encoding="utf-8")
        assert "<html" in html.lower()
        assert not re.search(r"<script[^>]+src=[\"']https?://cdn\.plot\.ly", html), \
            f"{html_path.name} loads plotly.js from the CDN"
        if re.search(r"<img[^>]+src=\"data:image/(png|jpeg|svg\+xml)", html) or "Plotly.newPlot" in html:
            embedded.append(html_path.name)
    assert embedded, "no HTML export of the smoke run embeds a figure (inline PNG or plotly figure)"


# ---------------------------------------------------------------- regenerate itself

def write_notebook(path, *sources, parameters=True):
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cells = [nbformat.v4.new_code_cell(source) for source in sources]
    if parameters:
        cells[0].metadata["tags"] = ["parameters"]
    nb.cells = cells
    nbformat.write(nb, path)
    return path


@pytest.fixture
def tiny_notebooks(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    write_notebook(folder / "01_boom.ipynb",
                   "profile = 'default'\nfresh = False",
                   "def explode():\n    raise RuntimeError('deliberate failure in cell two')\nexplode()",
                   "print('never reached')")
    write_notebook(folder / "02_fine.ipynb",
                   "profile = 'default'\nfresh = False",
                   "import os, pathlib\n"
                   "folder = pathlib.Path(os.environ['ADAPTERLAB_OUT']) / 'data' / 'results' / profile\n"
                   "folder.mkdir(parents=True, exist_ok=True)\n"
                   "since = os.environ.get('ADAPTERLAB_FRESH_SINCE', '')\n"
                   "(folder / 'fine.csv').write_text(f'profile,fresh,cwd,since\\n{profile},{fresh},{os.getcwd()},{since}\\n')")
    return folder


@pytest.mark.slow
def test_regenerate_reports_a_failing_notebook_and_keeps_going(tiny_notebooks, tmp_path, capsys):
    out = tmp_path / "out"
    status = regenerate(profile=SMOKE, out=out, notebooks_dir=tiny_notebooks, fresh=True, jobs=2, progress=False)
    printed = "\n".join(capsys.readouterr())
    assert status != 0
    assert "01_boom.ipynb" in printed and re.search(r"\bcell 2\b", printed), printed
    assert "deliberate failure in cell two" in printed, printed
    # the failed copy is kept for inspection, the other notebook ran and wrote its results
    build = out / "build" / "notebooks" / SMOKE
    assert (build / "01_boom.ipynb").exists() and (build / "01_boom.html").exists()
    assert (build / "02_fine.ipynb").exists()
    written = pd.read_csv(out / "data" / "results" / SMOKE / "fine.csv")
    assert written.loc[0, "profile"] == SMOKE and bool(written.loc[0, "fresh"]) is True
    assert Path(written.loc[0, "cwd"]) == tiny_notebooks  # kernels run in notebooks/
    assert re.search(r"02_fine\s+ok", printed) and re.search(r"01_boom\s+FAILED", printed), printed
    # the table credits files by the figure registry and the families' tables (no guessing from file times),
    # so a file a notebook writes on its own is not listed
    assert not re.search(r"wrote:.*fine\.csv", printed), printed


def test_fresh_with_workers_retrains_by_time_not_by_flag(tiny_notebooks, tmp_path, capsys):
    """--fresh --workers N trains first (a sweep) and then the notebooks must not retrain it all again:
    they get fresh=False and the store's since-time, which makes older records count as missing."""
    import datetime

    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    status = regenerate(profile=SMOKE, only="fine", out=tmp_path, notebooks_dir=tiny_notebooks, fresh=True,
                        workers=2, progress=False)
    printed = capsys.readouterr().out
    assert status == 0
    written = pd.read_csv(tmp_path / "data" / "results" / SMOKE / "fine.csv")
    assert bool(written.loc[0, "fresh"]) is False
    since = datetime.datetime.fromisoformat(written.loc[0, "since"])
    assert before <= since <= datetime.datetime.now(datetime.timezone.utc)
    assert f"--since {written.loc[0, 'since']}" in printed  # how to resume after an interruption
    with pytest.raises(ValueError, match="--since 'soon' is not an ISO 8601 time"):
        regenerate(profile=SMOKE, only="fine", out=tmp_path, notebooks_dir=tiny_notebooks, since="soon")


def test_training_first_sweeps_with_its_own_workers_not_the_notebooks_jobs(tiny_notebooks, tmp_path, monkeypatch):
    """With --jobs 2 the kernels count their runs' seconds as halves (ADAPTERLAB_WORKERS=2), but the sweep
    that trains first sets its own workers: it must not inherit the notebooks' jobs or their threads."""
    from adapterlab import results, sweep

    seen = []
    monkeypatch.delenv(results.WORKERS_ENV, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(sweep, "sweep", lambda profile, **kw: seen.append(dict(os.environ)) or 130)
    write_notebook(tiny_notebooks / "05_init_scale.ipynb", "profile = 'default'\nfresh = False", "pass")
    status = regenerate(profile=SMOKE, only=["05", "fine"], out=tmp_path, notebooks_dir=tiny_notebooks,
                        since="2026-01-01T00:00:00+00:00", jobs=2, progress=False)  # two notebooks: 2 jobs
    assert status == 130
    [env] = seen
    assert env[results.FRESH_SINCE_ENV] == "2026-01-01T00:00:00+00:00"  # the kernels' store and since time
    assert results.WORKERS_ENV not in env and "OMP_NUM_THREADS" not in env


def test_training_first_that_stops_keeps_the_notebooks_from_training(tiny_notebooks, tmp_path, monkeypatch, capsys):
    """An interrupted (or failed) sweep must not hand its runs to the notebooks, which would train them one
    by one: regenerate stops with the sweep's status and says how to resume."""
    from adapterlab import sweep

    write_notebook(tiny_notebooks / "05_init_scale.ipynb", "profile = 'default'\nfresh = False",
                   "raise RuntimeError('this notebook must not run')")
    calls = []
    monkeypatch.setattr(sweep, "sweep", lambda profile, **kw: calls.append((profile, kw)) or 130)
    status = regenerate(profile=SMOKE, only="05", out=tmp_path, notebooks_dir=tiny_notebooks, fresh=True, workers=2,
                        progress=False)
    assert status == 130
    assert calls == [(SMOKE, dict(only=["init_scale"], max_parallel=2, progress=False))]
    assert not (tmp_path / "build" / "notebooks" / SMOKE / "05_init_scale.ipynb").exists()
    assert "rerun with --since" in capsys.readouterr().err


def test_regenerate_only_and_dry_run(tiny_notebooks, tmp_path, capsys):
    status = regenerate(profile=SMOKE, only="fine", out=tmp_path, notebooks_dir=tiny_notebooks, dry_run=True)
    printed = capsys.readouterr().out
    assert status == 0
    assert "02_fine.ipynb" in printed and "01_boom" not in printed
    assert "profile='smoke'" in printed and "fresh=False" in printed
    assert not (tmp_path / "build").exists(), "a dry run must not run or write anything"
    assert "ADAPTERLAB_WORKERS" not in printed, "one notebook at a time: its runs are timed alone"
    regenerate(profile=SMOKE, out=tmp_path, notebooks_dir=tiny_notebooks, dry_run=True, jobs=2)
    # two notebooks side by side: their records must count half their seconds in from-scratch times
    assert "ADAPTERLAB_WORKERS=2" in capsys.readouterr().out
    for only in ("2", "02", "02_fine", "02_fine.ipynb", ["fine"]):
        regenerate(profile=SMOKE, only=only, out=tmp_path, notebooks_dir=tiny_notebooks, dry_run=True)
        assert "02_fine.ipynb" in capsys.readouterr().out
    with pytest.raises(ValueError, match=r"no notebook '09'.*01_boom, 02_fine"):
        regenerate(profile=SMOKE, only="09", notebooks_dir=tiny_notebooks, dry_run=True)
    with pytest.raises(ValueError, match="unknown profile"):
        regenerate(profile="huge", notebooks_dir=tiny_notebooks, dry_run=True)


def test_command_line_rejects_unknown_notebook(capsys):
    from adapterlab.__main__ import main

    require_notebooks()
    assert main(["regenerate", "--profile", SMOKE, "--only", "99_nope", "--dry-run"]) == 2
    error = capsys.readouterr().err
    assert "99_nope" in error and NOTEBOOKS[0].stem in error


def test_paper_profile_needs_a_gpu_unless_dry_run(tiny_notebooks, capsys, monkeypatch):
    import adapterlab.regenerate as module

    monkeypatch.setattr(module, "_cuda_available", lambda: False)
    assert regenerate(profile="paper", notebooks_dir=tiny_notebooks) == 2
    error = capsys.readouterr().err
    assert "GPU" in error and "--dry-run" in error


def test_paper_dry_run_lists_planned_runs(capsys):
    require_notebooks()
    assert regenerate(profile="paper", dry_run=True) == 0
    printed = capsys.readouterr().out
    match = re.search(r"planned training runs: ([\d,]+)", printed)
    assert match, printed
    assert int(match.group(1).replace(",", "")) > 0
    for notebook in NOTEBOOKS:
        assert notebook.name in printed
