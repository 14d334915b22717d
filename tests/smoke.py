"""One headless smoke run per notebook, shared by the tests that read what it wrote (notebooks, site, browser).

Each notebook runs once per session, as `python -m adapterlab regenerate --profile smoke --fresh
--out TMP --only NN`, into its own empty temporary directory (in the background, two at a time:
see SmokeRunner); the tests then check what it wrote against the contract in DESIGN.md ("Result
tables"). The same directory is reused for the nbval pass (every cell must run under
`pytest --nbval-lax`) and by tests/checks/test_browser.py for the smoke figures.
ADAPTERLAB_TEST_JOBS sets how many notebooks run at once (default: 2, or 1 on one core).
"""
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from adapterlab.course.regenerate import find_notebooks

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
    "stream.csv": ["learner", "order", "seed", "task", "time", "metric", "value", "test_correct", "stored_models"],
}
EXPECTED = {
    "01": dict(figures=True),
    "02": dict(figures=True),
    "03": dict(figures=True),
    "04": dict(figures=True, csv="layer_removal.csv", figure_name="layer_removal"),
    "05": dict(figures=True, csv="init_scale.csv"),
    "06": dict(figures=True, csv="param_performance.csv"),
    "07": dict(figures=True, csv="low_resource.csv"),
    "08": dict(figures=True, csv="stream.csv", figure_name="stream_matrices"),
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


def figure_bytes(out):
    folder = out / "figures" / SMOKE
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*")) if p.suffix in (".png", ".html")}


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
