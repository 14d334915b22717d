"""Run the numbered notebooks headless with papermill: figures, result tables, executed copies.

    python -m adapterlab regenerate --profile default            # redraw from the cached results
    python -m adapterlab regenerate --profile default --fresh    # retrain everything
    python -m adapterlab regenerate --profile default --fresh --workers 2   # ... two runs side by side
    python -m adapterlab regenerate --profile smoke --out /tmp/x --only 04,layer_removal --jobs 2
    python -m adapterlab regenerate --profile paper --dry-run    # what the papers' setting would train

The chosen notebooks' planned runs that the store lacks train first, in a sweep
(sweep.py: --workers runs side by side, each record saying how many), so the
notebooks only read them. Each notebook then runs in a fresh `python3` kernel with
the working directory set to notebooks/ (relative paths behave as in JupyterLab).
Papermill injects `profile` and `fresh` (False, or with --fresh/--since the time
before which records count as missing, the sweep's) after the cell tagged
`parameters`; the kernels also get ADAPTERLAB_PROFILE and, with `out`,
ADAPTERLAB_OUT (see profiles.project_root), so results go to
<root>/data/results/<profile>/ and figures to <root>/figures/<profile>/.

Executed copies go to <root>/build/notebooks/<profile>/NN_name.ipynb, each with an
HTML export beside it (NN_name.html: static images embedded, plotly.js inlined so
interactive figures show offline) and the kernel's own log (NN_name.log). A
failing notebook does not stop the others: its executed copy (with the traceback)
is kept, and the run ends with a non-zero status naming the notebook, the cell and
the error's last lines. Results already in the store are reused on a re-run
unless `fresh`.
"""
import json
import logging
import os
import re
import sys
import time
import traceback as tb
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from unittest import mock

from ..experiments import families, profiles, results

KERNEL = "python3"
CHECKOUT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = CHECKOUT / "notebooks"
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# kernels of a batch run: matplotlib draws inline (so the HTML export shows the images) and plotly
# emits its JSON (JupyterLab) plus HTML with plotly.js inlined once per notebook (the HTML export
# then works offline); a notebook can still choose its own renderer.
KERNEL_ENV = {
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "PLOTLY_RENDERER": "plotly_mimetype+notebook",
    "TOKENIZERS_PARALLELISM": "false",
}


# ---------------------------------------------------------------- choosing notebooks

def find_notebooks(notebooks_dir=None):
    """The numbered notebooks `NN_name.ipynb` in order."""
    folder = Path(notebooks_dir) if notebooks_dir else NOTEBOOKS_DIR
    return sorted(folder.glob(NOTEBOOK_GLOB))


def select(notebooks, only=None):
    """The notebooks named in `only` ("04,05", "layer_removal", "4", "04_layer_removal.ipynb", or a
    list of these), in notebook order; all of them for None. An unknown name raises ValueError
    listing the choices."""
    if not only:
        return list(notebooks)
    wanted = only.split(",") if isinstance(only, str) else [str(item) for item in only]
    chosen = set()
    for token in (t.strip() for t in wanted):
        if not token:
            continue
        matches = [nb for nb in notebooks if token in (nb.name, nb.stem, nb.stem.split("_", 1)[1], nb.stem[:2])
                   or (token.isdigit() and int(token) == int(nb.stem[:2]))]
        if not matches:
            choices = ", ".join(nb.stem for nb in notebooks) or "none found"
            raise ValueError(f"no notebook {token!r} to run; choose numbers or names among: {choices}")
        chosen.update(matches)
    return [nb for nb in notebooks if nb in chosen]


def output_root(out=None):
    """Where data/, figures/ and build/ go: `out`, else $ADAPTERLAB_OUT, else the checkout."""
    return Path(out).resolve() if out else profiles.project_root()


def build_dir(profile, out=None):
    return output_root(out) / "build" / "notebooks" / profiles.get(profile).name


def reference(profile):
    """How the kernels and the sweep are told the profile: a built-in one's name, a study file's absolute
    path (Profile.source: the kernels run in notebooks/, where a relative path names another file). A bad
    name or study file is refused here."""
    p = profiles.get(profile)
    return p.source or p.name


# ---------------------------------------------------------------- one notebook (also in worker processes)

@dataclass
class Outcome:
    notebook: str
    output: str
    ok: bool = False
    seconds: float = 0.0  # execution + HTML export
    end: float = 0.0  # when execution ended (time.time()): the date of its timing
    cell: int | None = None  # 1-based position in the source notebook (markdown cells counted)
    exec_count: int | None = None  # the "In [n]" the cell had
    cell_source: str = ""
    error: str = ""  # ename: evalue
    error_tail: list = field(default_factory=list)  # the traceback's last lines, without colours
    log: str | None = None
    figures: list = field(default_factory=list)
    results: list = field(default_factory=list)


POLL_SECONDS = 1.0


def _kernel_manager(log_path, extra_env):
    """A kernel manager class whose kernels get `extra_env`, write their own stdout/stderr
    (start-up warnings, C-level messages) to `log_path` instead of our terminal, and whose client
    re-polls its sockets every POLL_SECONDS.

    The re-polling works around a known hang (jupyter/nbclient#312): after a cell that displays
    ipywidgets (interactive_output, tqdm bars) the kernel's execute_reply sometimes sits unseen
    on the shell socket until the cell timeout runs out, with no error. One long poll misses it,
    a fresh poll finds it at once."""
    from queue import Empty

    from jupyter_client.asynchronous.client import AsyncKernelClient
    from jupyter_client.channels import AsyncZMQSocketChannel
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import Type

    class RepollingChannel(AsyncZMQSocketChannel):
        async def get_msg(self, timeout=None):
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                step = POLL_SECONDS if deadline is None else max(0.0, min(POLL_SECONDS, deadline - time.monotonic()))
                try:
                    return await super().get_msg(timeout=step)
                except Empty:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise

    class RepollingClient(AsyncKernelClient):
        shell_channel_class = Type(RepollingChannel)
        iopub_channel_class = Type(RepollingChannel)
        control_channel_class = Type(RepollingChannel)

    class LoggedKernelManager(AsyncKernelManager):
        client_factory = Type(RepollingClient, klass="jupyter_client.asynchronous.AsyncKernelClient")

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            env = dict(kw.get("env") or os.environ)
            env.update(extra_env)
            kw["env"] = env
            log = open(log_path, "ab")
            kw["stdout"] = kw["stderr"] = log
            try:
                return await super()._async_launch_kernel(kernel_cmd, **kw)
            finally:
                log.close()  # the kernel keeps its own copy of the descriptor

    return LoggedKernelManager


def _source_position(nb, cell_index):
    """Map a cell index of the executed notebook (with papermill's injected-parameters cell) to
    the 1-based position of that cell in the source notebook."""
    injected = [i for i, cell in enumerate(nb.cells) if "injected-parameters" in cell.metadata.get("tags", [])]
    shift = 1 if injected and injected[0] < cell_index else 0
    return cell_index + 1 - shift


def _tail(lines, count=8):
    text = ANSI.sub("", "\n".join(lines)).rstrip()
    return text.splitlines()[-count:]


def run_notebook(job):
    """Execute one notebook (papermill), export it to HTML and return an Outcome as a dict. `job`: a dict
    of notebook_jobs. Picklable in and out so that worker processes can run it; never raises for a
    notebook error."""
    import nbformat
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    output = Path(job["output"])
    output.parent.mkdir(parents=True, exist_ok=True)
    log_path = output.with_suffix(".log")
    log_path.write_text("")
    outcome = Outcome(notebook=job["notebook"], output=str(output), log=str(log_path))

    # papermill's own messages (unknown parameters, ...) go to the log too, not the terminal
    pm_logger = logging.getLogger("papermill")
    handler = logging.FileHandler(log_path)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    saved = pm_logger.handlers[:], pm_logger.propagate, pm_logger.level
    pm_logger.handlers, pm_logger.propagate = [handler], False
    pm_logger.setLevel(logging.INFO)

    start = time.time()
    try:
        pm.execute_notebook(
            job["notebook"], str(output), parameters=job["parameters"], kernel_name=KERNEL, progress_bar=False,
            cwd=job["cwd"], execution_timeout=job["timeout"], start_timeout=120,
            kernel_manager_class=_kernel_manager(str(log_path), job["env"]),
        )
        outcome.ok = True
    except PapermillExecutionError as error:
        executed = nbformat.read(output, as_version=4)
        # papermill put an error banner first and an anchor before the cell; its index is from before
        executed.cells = [c for c in executed.cells if "papermill-error-cell-tag" not in c.metadata.get("tags", [])]
        outcome.cell = _source_position(executed, error.cell_index)
        outcome.exec_count = error.exec_count
        outcome.cell_source = error.source
        outcome.error = f"{error.ename}: {error.evalue}"
        outcome.error_tail = _tail(error.traceback) or [outcome.error]
    except Exception as error:  # a timeout, a dead kernel, a kernel that would not start
        outcome.error = f"{type(error).__name__}: {ANSI.sub('', str(error)).strip()}"
        outcome.error_tail = _tail(tb.format_exception_only(type(error), error))
        try:  # the cell that was running: the last one papermill saw start
            executed = nbformat.read(output, as_version=4)
            started = [i for i, c in enumerate(executed.cells)
                       if c.metadata.get("papermill", {}).get("start_time")]
            if started:
                cell = executed.cells[started[-1]]
                outcome.cell = _source_position(executed, started[-1])
                outcome.exec_count = cell.get("execution_count")
                outcome.cell_source = cell.source
        except Exception:
            pass
    finally:
        outcome.end = time.time()
        pm_logger.handlers, pm_logger.propagate, level = saved
        pm_logger.setLevel(level)
        handler.close()

    if output.exists():  # the failed copy too: it shows where it stopped
        try:
            export_html(output)
        except Exception as error:
            with open(log_path, "a") as log:
                log.write(f"HTML export failed: {type(error).__name__}: {error}\n")
    outcome.seconds = time.time() - start
    return asdict(outcome)


def export_html(executed):
    """Write NN_name.html beside an executed notebook: images embedded as data URIs, plotly
    outputs shown through the plotly.js the notebook renderer inlined."""
    import nbformat
    from nbconvert import HTMLExporter

    executed = Path(executed)
    nb = nbformat.read(executed, as_version=4)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb, resources={"metadata": {"name": executed.stem}})
    path = executed.with_suffix(".html")
    path.write_text(body, encoding="utf-8")
    return path


# ---------------------------------------------------------------- tables and figures, from the store

def _store_files(root, profile):
    """{family: mtime of its store file} (0 when absent): a notebook trained when its family's changed."""
    folder = profiles.results_dir(profile, root)
    return {family: (folder / f"{family}.jsonl").stat().st_mtime if (folder / f"{family}.jsonl").exists() else 0
            for family in families.PLANNED}


def collect_files(outcomes, profile, root, before, env):
    """Credit each notebook with the files it wrote: its family's store file when that changed since
    `before` (_store_files), then the tables of the chosen notebooks' families, rebuilt from the store and
    written (tables.write), then every registered figure redrawn from the tables (figures.redraw). Each file
    is credited to the notebook of its family, as the registry names it (families.FAMILY_NOTEBOOK,
    figures.FIGURES)."""
    from ..report import figures, tables

    after = _store_files(root, profile)
    for o in outcomes:
        family = families.NOTEBOOK_FAMILY.get(Path(o["notebook"]).stem)
        if family and after[family] != before[family]:
            o["results"].append(str(profiles.results_dir(profile, root) / f"{family}.jsonl"))
    by_family = {families.NOTEBOOK_FAMILY.get(Path(o["notebook"]).stem): o for o in outcomes if o["ok"]}
    with _writing_where_kernels_do(env):
        for family in families.FAMILIES:
            if family in by_family:
                by_family[family]["results"] += map(str, tables.write(tables.get(family, profile, progress=False),
                                                                      profile))
        drawn = figures.redraw(profile)
    stems = {stem: family for family, entry in figures.FIGURES.items() for stem in [*entry.png, *entry.html]}
    for path in drawn:
        family = next((f for stem, f in stems.items() if Path(path).stem.startswith(stem)), None)
        owner = by_family.get("teaching" if family == "learning_curves" else family)
        if owner is not None:
            owner["figures"].append(str(path))


# ---------------------------------------------------------------- the steps of the command

def kernel_env(profile, out=None, jobs=1):
    """What the kernels' environment adds to ours: KERNEL_ENV, ADAPTERLAB_PROFILE, ADAPTERLAB_OUT (with
    `out`, or when ours sets it: see profiles.project_root) and, with `jobs` notebooks side by side, a
    share of the cores each (OMP_NUM_THREADS, unless ours sets it)."""
    env = dict(KERNEL_ENV, ADAPTERLAB_PROFILE=profile)
    if out or os.environ.get("ADAPTERLAB_OUT"):
        env["ADAPTERLAB_OUT"] = str(output_root(out))
    if jobs > 1 and "OMP_NUM_THREADS" not in os.environ:  # share the cores instead of fighting over them
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // jobs))
    return env


def _writing_where_kernels_do(env):
    """Our environment with the kernels' ADAPTERLAB_OUT, for the steps that run in this process (the
    sweep, whose workers inherit it, and the tables and figures): the result store and figures they
    use are the kernels'."""
    return mock.patch.dict(os.environ, {k: v for k, v in env.items() if k == "ADAPTERLAB_OUT"})


def _trained_families(chosen):
    """The families (and 03's teaching runs, 08's stream) whose runs the chosen notebooks train."""
    return [families.NOTEBOOK_FAMILY[nb.stem] for nb in chosen if nb.stem in families.NOTEBOOK_FAMILY]


def _dry_run(profile, chosen, jobs, workers, out_dir, root, env, since):
    """Print what would run, ending with the training runs the chosen notebooks' families imply in `profile`
    and how many the store under `root` holds (costs.dry_run, as a table rather than run by run; 08's steps
    are not counted there). Only those families are planned: a study plans 04-07 and not 03's swap."""
    from ..experiments import costs

    print(f"regenerate --profile {profile}: {len(chosen)} notebook(s) would run (kernel {KERNEL}, "
          f"{jobs} at a time), parameters profile={profile!r} fresh={since or False!r}")
    for nb in chosen:
        print(f"  {nb.name:<32} -> {out_dir / nb.name}")
    trained = _trained_families(chosen)
    print(f"training first (sweep): the planned runs of {', '.join(trained)}, {workers} at a time" if trained
          else "training first: nothing (no chosen notebook trains)")
    figures = root / "figures" / profiles.get(profile).name
    print(f"results -> {profiles.results_dir(profile, root)}, figures -> {figures}")
    print("kernel environment: " + " ".join(f"{k}={v}" for k, v in sorted(env.items())))
    planned = [family for family in trained if family in families.TRAINED]
    total = costs.dry_run(profile, planned, verbose=False, root=root)["total"] if planned else 0
    print(f"planned training runs: {total:,}")
    return 0


def train_first(profile, chosen, workers, since, env, progress):
    """Train the planned runs of the chosen notebooks' families before any notebook runs: `workers`
    runs side by side (sweep.py, which records that count in each run; on CPU each run gets cores //
    workers threads), records made before `since` (ISO text; None: none) counting as missing. The
    notebooks then train nothing: they read the runs (04 also scores its spans). Returns the sweep's
    exit status (0 when no chosen notebook has a plan)."""
    from ..experiments import sweep as sweep_module

    if since:
        print(f"retraining every run stored before {since}; after an interruption, resume with "
              f"`python -m adapterlab regenerate --profile {profile} --since {since} --workers {workers}`")
    trained = _trained_families(chosen)
    if not trained:
        return 0
    with _writing_where_kernels_do(env):
        return sweep_module.sweep(profile, only=trained, max_parallel=workers, progress=progress,
                                  fresh=since or False)


def notebook_jobs(chosen, profile, since, env, out_dir, notebooks_dir, timeout):
    """One job (what run_notebook takes: a picklable dict) per chosen notebook. Papermill injects `profile`,
    and `fresh`: the since time when this run retrains (the kernels' stores then ignore the records the sweep
    ignored, and 04 scores again the spans stored before it), else False."""
    return [dict(notebook=str(nb), output=str(out_dir / nb.name), env=env, cwd=str(notebooks_dir),
                 parameters=dict(profile=profile, fresh=since or False), timeout=timeout or None) for nb in chosen]


def run_notebooks(todo, jobs, progress, desc):
    """Each job's Outcome (as a dict), in notebook order: one after the other, or `jobs` at a time in
    worker processes (a worker that dies becomes a failed Outcome)."""
    from tqdm.auto import tqdm

    with tqdm(total=len(todo), unit="notebook", desc=desc, disable=not progress, file=sys.stderr,
              dynamic_ncols=True) as bar:
        if jobs == 1:
            outcomes = []
            for job in todo:
                bar.set_postfix_str(Path(job["notebook"]).stem)
                outcomes.append(run_notebook(job))
                bar.update(1)
            return outcomes
        # spawn, not fork: the parent may hold torch threads and zmq sockets
        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
            futures = {pool.submit(run_notebook, job): job for job in todo}
            outcomes = []
            for future in as_completed(futures):
                try:
                    outcome = future.result()
                except Exception as error:  # the worker itself died
                    job = futures[future]
                    outcome = asdict(Outcome(notebook=job["notebook"], output=job["output"],
                                             error=f"worker process failed: {type(error).__name__}: {error}"))
                outcomes.append(outcome)
                bar.set_postfix_str(Path(outcome["notebook"]).stem)
                bar.update(1)
    return sorted(outcomes, key=lambda o: o["notebook"])


def report(outcomes, root, out_dir, profile, since):
    """Print the table of notebooks and the failures, record the timings (record_timings); return the
    exit status (0: all ran; 1: some failed)."""
    print(_table(outcomes, root))
    record_timings(out_dir, outcomes, since is not None, trained_dir=profiles.results_dir(profile, root))
    print(f"executed notebooks and their HTML: {out_dir}")
    failed = [o for o in outcomes if not o["ok"]]
    for o in failed:
        print(_failure_report(o), file=sys.stderr)
    if failed:
        print(f"{len(failed)} of {len(outcomes)} notebook(s) failed: {', '.join(Path(o['notebook']).name for o in failed)}",
              file=sys.stderr)
        return 1
    return 0


def _cuda_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _table(outcomes, root):
    """The notebooks' status as a table (names and status left-aligned, numbers right-aligned), then the
    files each wrote, relative to `root`."""
    rows = [("notebook", "status", "seconds", "figures", "results")]
    rows += [(Path(o["notebook"]).stem, "ok" if o["ok"] else "FAILED", f"{o['seconds']:.1f}",
              str(len(o["figures"])), str(len(o["results"]))) for o in outcomes]
    widths = [max(map(len, column)) for column in zip(*rows)]
    lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for o in outcomes:
        written = [str(Path(p).relative_to(root) if Path(p).is_relative_to(root) else p)
                   for p in o["figures"] + o["results"]]
        if written:
            lines.append(f"{Path(o['notebook']).stem} wrote: " + ", ".join(written))
    return "\n".join(lines)


TIMINGS = "timings.json"


def record_timings(out_dir, outcomes, fresh, trained_dir=None):
    """Merge each notebook's run time into <out_dir>/timings.json, keyed by notebook and device
    ("cpu" or "gpu"), so the course site can say how long a notebook takes from a measurement;
    a run with --only or on another device keeps the other entries. The runs that trained are also
    merged into <trained_dir>/timings.json (the result store, committed with the results: a run that
    only reads the cache never changes it)."""
    device = "gpu" if _cuda_available() else "cpu"
    entries = {}
    for o in outcomes:
        # "trained": the run added records to the result store (its .jsonl files), with --fresh or because
        # some configurations were not cached; otherwise it only read results and redrew
        trained = bool(fresh) or any(str(p).endswith(".jsonl") for p in o.get("results", []))
        entries[Path(o["notebook"]).stem] = {
            "seconds": round(o["seconds"], 1), "ok": o["ok"], "trained": trained,
            "date": time.strftime("%Y-%m-%d", time.localtime(o["end"] or time.time()))}
    targets = [(Path(out_dir), entries)]
    if trained_dir is not None:
        targets.append((Path(trained_dir), {k: e for k, e in entries.items() if e["trained"] and e["ok"]}))
    for folder, chosen in targets:
        if not chosen:
            continue
        path = folder / TIMINGS
        try:
            timings = json.loads(path.read_text())
        except (OSError, ValueError):
            timings = {}
        for stem, entry in chosen.items():
            timings.setdefault(stem, {})[device] = entry
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")
    return Path(out_dir) / TIMINGS


def _failure_report(o):
    where = f"cell {o['cell']}" if o["cell"] else "before any cell ran"
    if o["exec_count"]:
        where += f" (In [{o['exec_count']}] in the executed copy)"
    first_line = next((line for line in o["cell_source"].splitlines() if line.strip()), "")
    lines = [f"FAILED {Path(o['notebook']).name}, {where}: {o['error']}"]
    if first_line:
        lines.append(f"  cell starts: {first_line[:100]}")
    lines += [f"  | {line}" for line in o["error_tail"]]
    lines.append(f"  executed copy: {o['output']}" + (f"  (kernel log: {o['log']})" if o["log"] else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------- the command

def regenerate(profile="default", only=None, fresh=False, out=None, dry_run=False, jobs=1, timeout=3600,
               notebooks_dir=None, progress=True, executed_dir=None, workers=1, since=None):
    """Run the notebooks for `profile`; return the exit status (0: all ran; 1: some failed; 2: refused).

    First the chosen notebooks' planned runs that the store lacks are trained (train_first, a sweep),
    then the notebooks run and read them, then the tables and figures are rebuilt from the store.

    profile        smoke | default | paper | a study file (.toml, studies.py)
    only           "04,05" / "layer_removal" / a list: just these notebooks (by number or name)
    fresh          retrain instead of reusing cached results: records made before this call count as
                   missing, for the sweep and in the kernels (results.fresh_since)
    since          an ISO time: records made before it count as missing (resumes an interrupted fresh
                   run: pass the time it printed)
    workers        runs trained side by side before the notebooks run (a sweep; on CPU the cores are
                   shared out, which trains more examples per second than one run on all of them)
    out            write data/, figures/ and build/ under this directory (kernels get ADAPTERLAB_OUT)
    dry_run        list what would run and the planned training runs (costs.dry_run), running nothing
    jobs           notebooks run in parallel worker processes (capped by the cores and the notebooks)
    timeout        seconds allowed per cell (None or 0: no limit)
    notebooks_dir  where the NN_name.ipynb files are (default: the checkout's notebooks/)
    progress       show a progress bar over the notebooks (stderr)
    executed_dir   where the executed copies go (default: <root>/build/notebooks/<profile>/)
    """
    profile = reference(profile)
    notebooks_dir = Path(notebooks_dir).resolve() if notebooks_dir else NOTEBOOKS_DIR
    found = find_notebooks(notebooks_dir)
    if not found:
        raise FileNotFoundError(f"no notebooks named NN_name.ipynb in {notebooks_dir}")
    chosen = select(found, only)
    jobs = max(1, min(int(jobs or 1), os.cpu_count() or 1, len(chosen)))
    workers = max(1, int(workers or 1))
    root = output_root(out)
    out_dir = Path(executed_dir) if executed_dir else build_dir(profile, out)
    env = kernel_env(profile, out, jobs)
    when = results.fresh_since(since, "--since") if since is not None else results.fresh_since(bool(fresh))
    since = None if when is None else when.isoformat(timespec="seconds")

    if dry_run:
        return _dry_run(profile, chosen, jobs, workers, out_dir, root, env, since)
    if profile == "paper" and not _cuda_available():
        print(f"error: the {profile!r} profile trains bert-base / t5-base on GLUE: it needs a CUDA GPU and "
              "access to the Hugging Face hub, and no GPU is visible here. See what it would run with "
              f"`python -m adapterlab regenerate --profile {profile} --dry-run`, or use --profile default "
              "(CPU, offline).", file=sys.stderr)
        return 2

    out_dir.mkdir(parents=True, exist_ok=True)
    status = train_first(profile, chosen, workers, since, env, progress)
    if status:  # interrupted (130) or runs failed (1, named above): the notebooks would train them one by one
        print(f"regenerate: training stopped before the notebooks ran (status {status}); rerun with --since "
              f"{since} to resume" if since else f"regenerate: training stopped (status {status}); rerun to resume",
              file=sys.stderr)
        return status
    before = _store_files(root, profile)
    outcomes = run_notebooks(notebook_jobs(chosen, profile, since, env, out_dir, notebooks_dir, timeout), jobs,
                             progress, desc=f"regenerate {profile}")
    collect_files(outcomes, profile, root, before, env)
    return report(outcomes, root, out_dir, profile, since)
