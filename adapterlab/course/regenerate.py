"""Run the numbered notebooks headless with papermill: figures, result tables, executed copies.

    python -m adapterlab regenerate --profile default            # redraw from the cached results
    python -m adapterlab regenerate --profile default --fresh    # retrain everything
    python -m adapterlab regenerate --profile default --fresh --workers 2   # ... two runs side by side
    python -m adapterlab regenerate --profile smoke --out /tmp/x --only 04,layer_removal --jobs 2
    python -m adapterlab regenerate --profile paper --dry-run    # what the papers' setting would train
    python -m adapterlab regenerate --profile paper --dry-run --workers-per-gpu 1   # ... its hours on a GPU

The chosen notebooks' planned runs that the store lacks train first, in a sweep
(sweep.py: --workers runs side by side, each record saying how many), so the
notebooks only read them. Each notebook then runs in a fresh `python3` kernel with
the working directory set to notebooks/ (relative paths behave as in JupyterLab).
Papermill injects `profile`, `fresh` (False, or with --fresh/--since the time
before which records count as missing, the sweep's) and `root` (`out`, or None:
the checkout) after the cell tagged `parameters`, so results go to
<root>/data/results/<profile>/ and figures to <root>/figures/<profile>/
(profiles.project_root). The steps that run in this process (the sweep, the
tables, the figures) get the same profile and root as arguments.

Executed copies go to <root>/build/notebooks/<profile>/NN_name.ipynb, each with an
HTML export beside it (NN_name.html: static images embedded, plotly.js inlined so
interactive figures show offline) and the kernel's own log (NN_name.log). A
failing notebook does not stop the others: its executed copy (with the traceback)
is kept, and the run ends with a non-zero status naming the notebook, the cell and
the error's last lines. Results already in the store are reused on a re-run
unless `fresh`. A run of any of notebooks 04-08 for a profile other than the
default (a study above all) ends by writing its findings page from the tables,
<root>/findings/<profile>.md (report.document); the default profile's
FINDINGS.md is committed and written apart.
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
    """The notebooks named in `only` ("04,05", a family's name, "4", a notebook's file name, or a
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


def build_dir(profile, out=None):
    """Where the executed copies go: <root>/build/notebooks/<profile>/, root as profiles.project_root(out)."""
    return profiles.project_root(out) / "build" / "notebooks" / profile


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
            kw["env"] = {**kw["env"], **extra_env}  # jupyter_client's copy of our environment, and the batch's
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


# ---------------------------------------------------------------- which notebook wrote which file

def written(root, profile):
    """{path: modification time} of the profile's result and figure files, the files notebooks write."""
    folders = (root / "data" / "results" / profile, root / "figures" / profile)
    return {path: path.stat().st_mtime_ns for folder in folders if folder.is_dir()
            for path in folder.iterdir() if path.is_file()}


def owner(path):
    """The name of the family a result or figure file belongs to, by its name: a results file starts with
    the family's name (init_scale.csv, layer_removal_spans.jsonl), a figure with a file name of one of the
    family's figures (Family.figures). None for any other file (01 and 02's teaching figures, a file a
    notebook writes on its own)."""
    from ..report import figures

    path = Path(path)
    if path.parent.parent.name == "results":
        names = [f.name for f in families.registered()]
        return next((f for f in names if path.stem == f or path.stem.startswith(f + "_")), None)
    for family, entry in figures.registered().values():
        if family and any(path.stem.startswith(stem) for stem in [*entry.png, *entry.html]):
            return family.name
    return None


def credit_files(outcomes, before, after):
    """Credit each notebook that ran with the files of its family (owner) that changed while the
    notebooks ran (`before`, `after`: written), store files among the results. Nothing is rebuilt or
    redrawn here: the notebooks wrote what they wrote."""
    by_family = {family.name: o for o in outcomes if (family := families.of_notebook(Path(o["notebook"]).stem))}
    for path in sorted(p for p, when in after.items() if before.get(p) != when):
        if (o := by_family.get(owner(path))) is not None:
            o["figures" if path.parent.parent.name == "figures" else "results"].append(str(path))


# ---------------------------------------------------------------- the steps of the command

def kernel_env(jobs=1):
    """What the kernels' environment adds to ours: KERNEL_ENV and, with `jobs` notebooks side by side, a
    share of the cores each (OMP_NUM_THREADS). The kernels' parameters come through papermill
    (notebook_parameters), not through their environment."""
    env = dict(KERNEL_ENV)
    if jobs > 1:  # share the cores instead of fighting over them
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // jobs))
    return env


def notebook_parameters(profile, since, out=None):
    """What papermill injects into every notebook: `profile` (its name; a study's file, Profile.source, as
    an absolute path: the kernels run in notebooks/), `fresh` (the since time when this
    run retrains: the kernels' stores then ignore the records the sweep ignored, and 04 scores again the
    spans stored before it; else False) and `root` (profiles.project_root(out) with `out`, else None: the
    checkout), so a kernel reads and writes the store and figures this run does, whatever its
    environment says."""
    return dict(profile=profile.source or profile.name, fresh=since or False,
                root=str(profiles.project_root(out)) if out else None)


def _trained_families(chosen):
    """The names of the families whose runs (or steps) the chosen notebooks train."""
    return [family.name for nb in chosen if (family := families.of_notebook(nb.stem))]


def _dry_run(profile, chosen, jobs, workers, out_dir, root, env, parameters, workers_per_gpu=None):
    """Print what would run, ending with the units of work the chosen notebooks' families plan (notebook 08's
    steps among them) and how many the store under `root` holds (costs.dry_run, as a table rather than run
    by run), the missing runs' hours estimated for this machine, or for a GPU when `workers_per_gpu` is given
    (costs.gpu_speed). Only those families are planned: a study plans 04-07, not 03's swap between two tasks."""
    from ..experiments import costs

    print(f"regenerate --profile {profile.name}: {len(chosen)} notebook(s) would run (kernel {KERNEL}, "
          f"{jobs} at a time), parameters " + " ".join(f"{k}={v!r}" for k, v in parameters.items()))
    for nb in chosen:
        print(f"  {nb.name:<32} -> {out_dir / nb.name}")
    trained = _trained_families(chosen)
    print(f"training first (sweep): the planned runs of {', '.join(trained)}, {workers} at a time" if trained
          else "training first: nothing (no chosen notebook trains)")
    print(f"results -> {root / 'data' / 'results' / profile.name}, figures -> {root / 'figures' / profile.name}")
    print("kernel environment: " + " ".join(f"{k}={v}" for k, v in sorted(env.items())))
    gpu = workers_per_gpu is not None
    total = costs.dry_run(profile, trained, verbose=False, root=root, gpu=gpu)["total"] if trained else 0
    print(f"planned units of work: {total:,}")
    return 0


def train_first(profile, chosen, workers, since, root, progress, glue_dir=None, workers_per_gpu=1):
    """Train the planned runs of the chosen notebooks' families into the store under `root` before any
    notebook runs: `workers` runs side by side (sweep.py, which records that count in each run; on CPU each
    run gets cores // workers threads), records made before `since` (ISO text; None: none) counting as
    missing, GLUE read from glue_dir (None: the hub), `workers_per_gpu` runs sharing each GPU (sweep.py's
    local executor). The sweep also scores 04's spans (units of its
    plan), so the notebooks train and score nothing: they read. Returns the sweep's exit status (0 when
    no chosen notebook has a plan)."""
    from ..experiments import sweep as sweep_module

    if since:
        print(f"retraining every run stored before {since}; after an interruption, resume with "
              f"`python -m adapterlab regenerate --profile {profile.name} --since {since} --workers {workers}`")
    trained = _trained_families(chosen)
    if not trained:
        return 0
    return sweep_module.sweep(profile, only=trained, max_parallel=workers, progress=progress,
                              fresh=since or False, root=root, glue_dir=glue_dir, workers_per_gpu=workers_per_gpu)


def notebook_jobs(chosen, parameters, env, out_dir, notebooks_dir, timeout):
    """One job (what run_notebook takes: a picklable dict) per chosen notebook, each given `parameters`
    (notebook_parameters) and the kernel environment `env` (kernel_env)."""
    return [dict(notebook=str(nb), output=str(out_dir / nb.name), env=env, cwd=str(notebooks_dir),
                 parameters=parameters, timeout=timeout or None) for nb in chosen]


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
    record_timings(out_dir, outcomes, since is not None, trained_dir=root / "data" / "results" / profile)
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


def write_findings(profile, chosen, root):
    """Write the profile's findings page (report.document.write: <root>/findings/<name>.md) when any chosen
    notebook's family judges claims (04-08) and the profile is not the default, whose FINDINGS.md and README claims are
    committed and rewritten only on purpose. Returns 1 with a one-line error when the page cannot be made from
    the tables (the notebooks' own status stands otherwise), else 0."""
    from ..report import document

    if profile.name == document.COMMITTED or not any((f := families.of_notebook(nb.stem)) and f.claims
                                                     for nb in chosen):
        return 0
    try:
        path = document.write(profile, root)
    except (ValueError, OSError) as error:
        print(f"error: the findings page of {profile.name!r} could not be written from its tables: {error}",
              file=sys.stderr)
        return 1
    print(f"findings: {path}")
    return 0


# ---------------------------------------------------------------- the command

def regenerate(profile="default", only=None, fresh=False, out=None, dry_run=False, jobs=1, timeout=3600,
               notebooks_dir=None, progress=True, executed_dir=None, workers=1, since=None, glue_dir=None,
               workers_per_gpu=None):
    """Run the notebooks for `profile`; return the exit status (0: all ran; 1: some failed; 2: refused).

    First the chosen notebooks' planned runs that the store lacks are trained (train_first, a sweep),
    then the notebooks run, read them and write their tables and figures (credited to them: credit_files).
    A profile other than the default (a study, smoke, paper) then gets its findings page from those tables
    (write_findings); the default profile's FINDINGS.md is written apart (python -m adapterlab.report.document).

    profile        smoke | default | paper | a study file (.toml, studies.py): a name, a path or a Profile
    only           "04,05" / a family's name / a list: just these notebooks (by number or name)
    fresh          retrain instead of reusing cached results: records made before this call count as
                   missing, for the sweep and in the kernels (results.fresh_since)
    since          an ISO time: records made before it count as missing (resumes an interrupted fresh
                   run: pass the time it printed)
    workers        runs trained side by side before the notebooks run (a sweep; on CPU the cores are
                   shared out, which trains more examples per second than one run on all of them)
    out            write data/, figures/, build/ and findings/ under this directory (the kernels get it as `root`)
    dry_run        list what would run and the planned units of work (costs.dry_run), running nothing
    workers_per_gpu  runs sharing each GPU in the sweep (None: one); given, the dry run estimates the missing
                   runs on a GPU (the committed GPU check's step) rather than on this machine
    jobs           notebooks run in parallel worker processes (capped by the cores and the notebooks)
    timeout        seconds allowed per cell (None or 0: no limit)
    notebooks_dir  where the NN_name.ipynb files are (default: the checkout's notebooks/)
    progress       show a progress bar over the notebooks (stderr)
    executed_dir   where the executed copies go (default: <root>/build/notebooks/<profile>/)
    glue_dir       the folder of GLUE's TSV files the training reads (None: the hub)
    """
    profile = profiles.resolve(profile)  # the one place a name becomes a Profile; everything below takes it
    notebooks_dir = Path(notebooks_dir).resolve() if notebooks_dir else NOTEBOOKS_DIR
    found = find_notebooks(notebooks_dir)
    if not found:
        raise FileNotFoundError(f"no notebooks named NN_name.ipynb in {notebooks_dir}")
    chosen = select(found, only)
    jobs = max(1, min(int(jobs or 1), os.cpu_count() or 1, len(chosen)))
    workers = max(1, int(workers or 1))
    if workers_per_gpu is not None and workers_per_gpu < 1:
        raise ValueError(f"--workers-per-gpu must be at least 1 (got {workers_per_gpu})")
    root = profiles.project_root(out)
    out_dir = Path(executed_dir) if executed_dir else build_dir(profile.name, out)
    env = kernel_env(jobs)
    when = results.fresh_since(since, "--since") if since is not None else results.fresh_since(bool(fresh))
    since = None if when is None else when.isoformat(timespec="seconds")
    parameters = notebook_parameters(profile, since, out)
    # A study may write into its folder only while that holds the records of its own data (studies.check:
    # its data read and checked, their sha256 compared with the folder's study.json). The dry run and the
    # run refuse here alike, in one line, before anything is listed, trained or written; the sweep then
    # claims the folder (writes study.json the first time).
    from ..experiments import studies

    studies.check(profile, profiles.results_dir(profile, root))

    if dry_run:
        return _dry_run(profile, chosen, jobs, workers, out_dir, root, env, parameters, workers_per_gpu)
    if profile.name == "paper" and not _cuda_available():
        print(f"error: the {profile.name!r} profile trains bert-base / t5-base on GLUE: it needs a CUDA GPU and "
              "access to the Hugging Face hub, and no GPU is visible here. See what it would run with "
              f"`python -m adapterlab regenerate --profile {profile.name} --dry-run`, or use --profile default "
              "(CPU, offline).", file=sys.stderr)
        return 2

    out_dir.mkdir(parents=True, exist_ok=True)
    status = train_first(profile, chosen, workers, since, root, progress, glue_dir, workers_per_gpu or 1)
    if status:  # interrupted (130) or runs failed (1, named above): the notebooks would train them one by one
        print(f"regenerate: training stopped before the notebooks ran (status {status}); rerun with --since "
              f"{since} to resume" if since else f"regenerate: training stopped (status {status}); rerun to resume",
              file=sys.stderr)
        return status
    before = written(root, profile.name)
    outcomes = run_notebooks(notebook_jobs(chosen, parameters, env, out_dir, notebooks_dir, timeout), jobs,
                             progress, desc=f"regenerate {profile.name}")
    credit_files(outcomes, before, written(root, profile.name))
    status = report(outcomes, root, out_dir, profile.name, since)
    return write_findings(profile, chosen, root) or status
