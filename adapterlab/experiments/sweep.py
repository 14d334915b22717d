"""Sweeps: every planned run of a profile that the store lacks, trained in parallel.

    python -m adapterlab sweep --profile paper                      # one worker per GPU here
    python -m adapterlab sweep --profile paper --executor ray --address auto   # a Ray cluster
    python -m adapterlab sweep --profile smoke --only 05,07 --max-parallel 2
    python -m adapterlab sweep --profile paper --workers-per-gpu 3                 # three runs per GPU

The runs come from planning.plan(), the same planner the notebooks and `regenerate --dry-run`
use, so a sweep trains exactly what the notebooks would; afterwards the notebooks redraw from the
store and train nothing. Design choices, and why:

- Workers only compute. A run's record (and, for layer removal and 03's adapter swap, its adapter
  weights as bytes) comes back to the driver, and the driver alone writes the result store (atomic,
  as ever). A Ray cluster therefore needs no shared filesystem, and two workers never race on a file.
- Layer removal has a second stage (scoring every span of removed adapters on the best run): once a
  task's runs are stored, the planner adds a span unit that needs the best run, and the sweep runs it
  like any unit, its worker getting that run's adapter as bytes: evaluation only, no training.
- Learning rates chosen on validation are a second stage: the first wave trains the grids (and
  every run that needs no choice); then planning.plan_from chooses on the stored grids and the sweep
  trains what the choices add. The sweep depends on planning (and running.run_one) only.
- A run that raises is recorded in <results>/sweep_failures.json with its error and the sweep goes
  on; the exit status is 1 and the summary names every failure. A rerun retries failed runs (they
  are not in the store), and a success removes them from the file. A worker that dies (killed,
  out of memory) is retried `retries` times, then counts as failed.
- Ctrl-C stops the workers; every run finished so far is already stored, so a rerun resumes.

Executors: "local" (default, no extra dependency: LocalExecutor) runs worker processes rather than
training in the driver itself, so that a crash or Ctrl-C in training leaves the driver standing; "ray"
submits each run as a Ray task (RayExecutor). Every worker is told how many runs train side by side
(the spec's "workers"), which each record keeps: run_seconds / workers is a run's share of the sweep's
wall time. `fresh` (--fresh, or --since TIME to resume) is how `regenerate --fresh` retrains everything
and resumes after an interruption (sweep).
"""
import datetime
import json
import os
import signal
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path

from tqdm.auto import tqdm

from . import planning, running, studies, work
from . import profiles as profiles_module
from . import families as registry
from .results import fresh_since
from ..methods.writing import atomic_write

FAILURES = "sweep_failures.json"


# ----------------------------------------------------------------------------- what to run

def families(only=None):
    """The names of the families of `only` ("04,08", a family's name, a list), in notebook order; every
    registered one for None."""
    names = [f.name for f in registry.registered()]
    if not only:
        return names
    tokens = only.split(",") if isinstance(only, str) else [str(t) for t in only]
    chosen = {registry.family_of(t) for t in tokens if t.strip()}
    return [f for f in names if f in chosen]


def missing(profile, only=None, skip=(), fresh=False, root=None):
    """The units of work ready to run (work.ready: stored nowhere, their needs stored), in plan order,
    but not those listed in `skip` (a set of ids); a record that `fresh` retrains (results.fresh_since)
    counts as not stored, in the store under `root` (running.store_of). Asked again after a wave: stored
    grids add their chosen runs, a stored step the next step of its chain."""
    p = profiles_module.resolve(profile)
    store = running.store_of(p, fresh, root)
    return ready(planned(p, only, store), store, skip)


def planned(profile, only, store):
    """{family name: its units of work} (planning.work) of the families of `only`, as `store` lets them be
    planned now: one plan per family per wave, from which the wave's ready units and, after the last wave,
    the files no longer needed are both read."""
    return {family: planning.work(profile, family, store) for family in families(only)}


def ready(units_by_family, store, skip=()):
    """missing's answer from the families' plans already made (planned)."""
    units = [u for units in units_by_family.values() for u in work.ready(units, store)]
    return list({u.id: u for u in units if u.id not in skip}.values())  # a unit planned twice runs once


def _error_text(error):
    """One line naming the error, then the last lines of its traceback (the remote one if any)."""
    cause = error.__cause__  # concurrent.futures puts the worker's traceback here
    lines = [str(cause)] if cause is not None else traceback.format_exception(error)
    tail = "".join(lines).strip().splitlines()[-6:]
    return f"{type(error).__name__}: {error}".splitlines()[0] + "\n" + "\n".join(tail)


# ----------------------------------------------------------------------------- executors

def cpu_cores():
    """The cores this process may use (its affinity mask, which containers and taskset narrow)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def gpu_workers(gpus, workers_per_gpu=1, max_parallel=None):
    """The GPU (as CUDA_VISIBLE_DEVICES) of each local worker: `workers_per_gpu` on each of `gpus` GPUs,
    at most `max_parallel` in all. Round robin, worker i on GPU i % gpus, so that a cap below
    gpus x workers_per_gpu still spreads the workers over every GPU before doubling up on one."""
    if workers_per_gpu < 1:
        raise ValueError(f"--workers-per-gpu must be at least 1 (got {workers_per_gpu})")
    slots = gpus * workers_per_gpu
    slots = max(1, min(max_parallel or slots, slots))
    return [str(i % gpus) for i in range(slots)]


class LocalExecutor:
    """One worker process per visible GPU (or `workers_per_gpu` of them: a MiniLM run leaves most of a
    GPU idle), each pinned to its GPU and kept warm; several on one GPU share the cores (threads = cores
    // workers each). On CPU: one worker, or `max_parallel` of them sharing the cores. Why several: a
    MiniLM step is too small for two threads to keep two cores busy, so two single-thread runs side
    by side train ~1.4x the examples per second of one two-thread run (benchmarks/bench_workers.py)."""

    def __init__(self, worker=running.execute, max_parallel=None, retries=2, workers_per_gpu=1):
        import torch

        gpus = torch.cuda.device_count()
        if gpus:
            self.devices = gpu_workers(gpus, workers_per_gpu, max_parallel)
            threads = max(1, cpu_cores() // len(self.devices)) if workers_per_gpu > 1 else None
        else:
            slots = max(1, min(max_parallel or 1, cpu_cores()))  # one worker keeps torch's own thread count
            self.devices, threads = [None] * slots, max(1, cpu_cores() // slots) if slots > 1 else None
        self.worker, self.retries = worker, retries
        self.slots, self.threads = len(self.devices), threads
        self.pools = [self._start(d) for d in self.devices]
        self.running = {}  # future -> (slot, spec, attempt)

    def _start(self, device):
        pool = ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=_pin,
                                   initargs=(device, self.threads))
        pool.pid = pool.submit(os.getpid).result()  # start it now, and know whom to stop on Ctrl-C
        return pool

    def free(self):
        return self.slots - len(self.running)

    def submit(self, spec, attempt=0):
        busy = {slot for slot, _, _ in self.running.values()}
        slot = next(i for i in range(self.slots) if i not in busy)
        future = self.pools[slot].submit(self.worker, spec)
        self.running[future] = (slot, spec, attempt)
        return future

    def next_done(self):
        """(handle, result, error) of a finished run; a dead worker is restarted and its run retried."""
        while True:
            done, _ = wait(list(self.running), return_when=FIRST_COMPLETED)
            future = done.pop()
            slot, spec, attempt = self.running.pop(future)
            try:
                return spec, future.result(), None
            except BrokenProcessPool as error:  # the worker process died mid-run
                self.pools[slot] = self._start(self.devices[slot])
                if attempt < self.retries:
                    self.submit(spec, attempt + 1)
                    continue
                return spec, None, f"worker died {attempt + 1} times: {error}"
            except Exception as error:
                return spec, None, _error_text(error)

    def close(self):
        for pool in self.pools:
            try:
                os.kill(pool.pid, signal.SIGTERM)  # a run in progress is abandoned, not waited for
            except ProcessLookupError:
                pass
            pool.shutdown(wait=False, cancel_futures=True)


def _pin(device, threads=None):
    """Worker start-up: see only its own GPU (or use `threads` CPU threads); leave Ctrl-C to the
    driver, which stops us cleanly."""
    if device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = device
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class RayExecutor:
    """Each run a Ray task: one GPU each on a GPU cluster, else one CPU; Ray retries dead workers."""

    def __init__(self, worker=running.execute, max_parallel=None, retries=2, address=None):
        try:
            import ray
        except ImportError:
            raise ValueError("the ray executor needs Ray: pip install -e '.[ray]' (or use --executor local)") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:  # address None: a local cluster on this machine; "auto": the one `ray start` made
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        need = {"num_gpus": 1} if gpus else {"num_cpus": 1}
        # retry_exceptions=False: a run that raises fails at once; only a lost worker is retried
        self.slots = max(1, min(max_parallel or 10**6, gpus or int(resources.get("CPU", 1))))
        self.task = ray.remote(max_retries=retries, retry_exceptions=False, **need)(worker)
        self.running = {}  # ObjectRef -> spec

    def free(self):
        return self.slots - len(self.running)

    def submit(self, spec):
        ref = self.task.remote(spec)
        self.running[ref] = spec
        return ref

    def next_done(self):
        [ref], _ = self.ray.wait(list(self.running), num_returns=1)
        spec = self.running.pop(ref)
        try:
            return spec, self.ray.get(ref), None
        except self.ray.exceptions.RayTaskError as error:  # the run raised: its own error, not Ray's wrapper
            return spec, None, _error_text(error.cause) if error.cause else str(error).strip()
        except self.ray.exceptions.RayError as error:  # worker lost more than `retries` times
            return spec, None, f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"

    def close(self):
        for ref in self.running:
            self.ray.cancel(ref, force=True)
        if self.started:
            self.ray.shutdown()


# ----------------------------------------------------------------------------- the driver

class Failures:
    """<results>/sweep_failures.json: {run id: {family, run, error, when}}, rewritten atomically."""

    def __init__(self, root):
        self.path = Path(root) / FAILURES
        self.entries = json.loads(self.path.read_text()) if self.path.exists() else {}

    def set(self, run, error=None):
        if error is None and self.entries.pop(run.id, None) is None:
            return  # nothing recorded, nothing to rewrite
        if error is not None:
            when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            self.entries[run.id] = {"family": run.family, "run": str(run), "error": error, "when": when}
        atomic_write(self.path, json.dumps(self.entries, indent=1, sort_keys=True) + "\n")


def sweep(profile, only=None, executor="local", address=None, max_parallel=None, retries=2,
          worker=running.execute, progress=True, file=None, workers_per_gpu=1, fresh=False, root=None,
          glue_dir=None):
    """Train every planned run of `profile` (families of `only`) that the store under `root` lacks
    (running.store_of); return the exit status: 0 all stored, 1 some failed (named on `file`), 130
    interrupted (rerun to resume). workers_per_gpu: the local executor's workers on each GPU
    (LocalExecutor). fresh: False trains what is missing; True also retrains every run stored before the
    sweep began; an ISO 8601 time, those stored before it (results.fresh_since; how an interrupted fresh
    sweep resumes). glue_dir: the folder of GLUE's TSV files the workers read (None: the hub)."""
    file = file or sys.stdout
    p = profiles_module.resolve(profile)
    since = fresh_since(fresh)  # one time for the whole sweep: a run it retrained is not retrained again
    store = running.claimed_store(p, since, root)
    for change in studies.record_resolved(p, store.root):  # a changed study file: say what its new runs change
        print(f"sweep {p.name}: changed since the last run: {change}", file=file)
    failures = Failures(store.root)
    attempted, failed = set(), []
    resume = "rerun the same command" if since is None else f"rerun with --since {since.isoformat()}"
    if since is not None:
        print(f"sweep {p.name}: retraining every run stored before {since.isoformat()}", file=file)
    plans = planned(p, only, store)
    todo = ready(plans, store)
    if not todo:
        print(f"sweep {p.name}: every planned run is in {store.root}", file=file)
        return 0
    pool = (RayExecutor(worker, max_parallel, retries, address) if executor == "ray"
            else LocalExecutor(worker, max_parallel, retries, workers_per_gpu) if executor == "local"
            else None)
    if pool is None:
        raise ValueError(f"unknown executor {executor!r}; choose local or ray")
    threads = f" ({pool.threads} CPU thread(s) each)" if getattr(pool, "threads", None) else ""
    print(f"sweep {p.name}: {len(todo)} runs to train with the {executor} executor, {pool.slots} at a time"
          f"{threads}", file=file)
    bar = tqdm(total=len(todo), unit="run", desc=f"sweep {p.name}", disable=not progress, file=sys.stderr,
               dynamic_ncols=True)
    start = time.time()
    try:
        while todo:
            by_id, queue = {r.id: r for r in todo}, list(todo)
            while queue or pool.running:
                while queue and pool.free() > 0:
                    run = queue.pop(0)
                    attempted.add(run.id)
                    pool.submit(running.pack(run, store, id=run.id, workers=pool.slots, glue_dir=glue_dir))
                spec, result, error = pool.next_done()
                run = by_id[spec["id"]]
                if error is None:
                    running.store_result(store, run, result)
                else:
                    failed.append((run, error))
                failures.set(run, error)
                bar.update()
                bar.set_postfix(running=len(pool.running), failed=len(failed), left=len(queue), refresh=False)
            plans = planned(p, only, store)  # the stored grids' choices add runs, a stored step the next one
            todo = ready(plans, store, attempted)
            bar.total += len(todo)
            bar.refresh()
    except KeyboardInterrupt:
        done = len(attempted) - len(failed) - len(pool.running)
        print(f"\ninterrupted: {done} runs stored; {resume} to train the rest", file=file)
        return 130
    finally:
        bar.close()
        pool.close()
    for units in plans.values():  # the last plan, made after the last store: e.g. the stream's fine-tuned
        running.drop_unneeded(store, units)  # models once their next step is stored
    ok = len(attempted) - len(failed)
    print(f"sweep {p.name}: {ok} trained, {len(failed)} failed in {time.time() - start:.0f} s "
          f"(results in {store.root})", file=file)
    for run, error in failed:
        print(f"FAILED {run}\n  " + error.replace("\n", "\n  "), file=file)
    if failed:
        print(f"{len(failed)} failed runs are listed in {failures.path}; a rerun retries them", file=file)
    return 1 if failed else 0
