"""The notebooks, run headless in the smoke profile (smoke.py), and the `regenerate` command that runs them."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from adapterlab.course.regenerate import regenerate
from smoke import (CELL_TIMEOUT, EXPECTED, NBVAL_TEST, NOTEBOOKS, RESULT_COLUMNS, ROOT, SMOKE, ids, metric_range,  # noqa: F401
                   figure_bytes, require_notebooks, smoke_run, smoke_runner)


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
    """regenerate trains 03's runs beforehand (a sweep) from planning.plan(profile, "teaching"); the
    notebook must then find exactly those runs (and their swap adapters), or it would train them again."""
    from adapterlab.methods import saving
    from adapterlab.experiments import planning
    from adapterlab.experiments.results import config_key

    run = smoke_run(next(nb for nb in NOTEBOOKS if nb.stem.startswith("03")))
    assert run.status == 0, run.output
    stored = [json.loads(line)["key"] for line in (run.results / "teaching.jsonl").read_text().splitlines()]
    planned = planning.plan(SMOKE, "teaching")
    assert sorted(stored) == sorted(config_key(planning.run_key(c, SMOKE, "teaching")) for c in planned)
    saved = {d.name for d in (run.results / "checkpoints").iterdir() if (d / saving.ADAPTER_CONFIG).exists()}
    assert saved == {config_key(planning.run_key(c, SMOKE, "teaching")) for c in planned
                     if planning.keeps_adapter(SMOKE, "teaching", c)}


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
                   "profile = 'default'\nfresh = False\nroot = None",
                   "def explode():\n    raise RuntimeError('deliberate failure in cell two')\nexplode()",
                   "print('never reached')")
    write_notebook(folder / "02_fine.ipynb",
                   "profile = 'default'\nfresh = False\nroot = None",
                   "import os, pathlib\n"
                   "folder = pathlib.Path(root) / 'data' / 'results' / profile\n"
                   "folder.mkdir(parents=True, exist_ok=True)\n"
                   "(folder / 'fine.csv').write_text(f'profile,fresh,cwd\\n{profile},{fresh},{os.getcwd()}\\n')")
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
    assert written.loc[0, "profile"] == SMOKE and re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:]{8}\+00:00", written.loc[0, "fresh"])
    assert Path(written.loc[0, "cwd"]) == tiny_notebooks  # kernels run in notebooks/
    assert re.search(r"02_fine\s+ok", printed) and re.search(r"01_boom\s+FAILED", printed), printed
    # the table credits a family's notebook with the files named after the family or its figures (regenerate.owner),
    # so a file a notebook writes on its own is not listed
    assert not re.search(r"wrote:.*fine\.csv", printed), printed


def test_each_notebook_is_credited_with_the_changed_files_of_its_family_and_nothing_is_redrawn(tmp_path):
    from adapterlab.course import regenerate as module

    results, figures = tmp_path / "data" / "results" / SMOKE, tmp_path / "figures" / SMOKE
    names = ["results/layer_removal.jsonl", "results/layer_removal_spans.jsonl", "results/layer_removal.csv",
             "results/init_scale.csv", "results/init_std_deviation.csv", "results/fine.csv",
             "figures/layer_removal_heatmap.png", "figures/learning_curves.html", "figures/kronecker_product.png"]
    paths = [(results if name.startswith("results") else figures) / name.split("/")[1] for name in names]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("old")
        os.utime(path, ns=(1, 1))
    before = module.written(tmp_path, SMOKE)
    for path in paths:
        if path.name != "init_scale.csv":  # every file but this one written again by the notebooks
            os.utime(path, ns=(2, 2))
    outcomes = [dict(notebook=f"notebooks/{stem}.ipynb", figures=[], results=[])
                for stem in ("01_bottleneck_adapter", "03_training_adapters", "04_layer_removal", "05_init_scale")]
    module.credit_files(outcomes, before, module.written(tmp_path, SMOKE))
    credited = {Path(o["notebook"]).stem[:2]: sorted(Path(p).name for p in o["results"] + o["figures"])
                for o in outcomes}
    assert credited == {"01": [], "03": ["learning_curves.html"], "05": [],
                        "04": ["layer_removal.csv", "layer_removal.jsonl", "layer_removal_heatmap.png",
                               "layer_removal_spans.jsonl"]}
    assert all(path.read_text() == "old" for path in paths)  # credited as they are: nothing rebuilt or redrawn


def test_fresh_reaches_the_kernels_as_the_time_the_sweep_retrained_from(tiny_notebooks, tmp_path, capsys):
    """--fresh trains first (a sweep) and then the notebooks must not retrain it all again: their `fresh` is
    the time before which records count as missing, the one the sweep used, not True."""
    import datetime

    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    status = regenerate(profile=SMOKE, only="fine", out=tmp_path, notebooks_dir=tiny_notebooks, fresh=True,
                        workers=2, progress=False)
    printed = capsys.readouterr().out
    assert status == 0
    written = pd.read_csv(tmp_path / "data" / "results" / SMOKE / "fine.csv")
    since = datetime.datetime.fromisoformat(written.loc[0, "fresh"])
    assert before <= since <= datetime.datetime.now(datetime.timezone.utc)
    assert f"--since {written.loc[0, 'fresh']}" in printed  # how to resume after an interruption


def test_a_malformed_since_is_refused_before_anything_runs(tiny_notebooks, tmp_path):
    with pytest.raises(ValueError, match="--since 'soon' is not an ISO 8601 time; write it like 2026-12-01"):
        regenerate(profile=SMOKE, only="fine", out=tmp_path, notebooks_dir=tiny_notebooks, since="soon")
    assert not (tmp_path / "build").exists()


def test_the_kernels_get_the_since_time_as_their_fresh_parameter_and_the_root(tiny_notebooks, tmp_path):
    from adapterlab.course import regenerate as module
    from adapterlab.experiments import profiles

    chosen = module.find_notebooks(tiny_notebooks)
    smoke = profiles.get(SMOKE)
    for since, fresh in [("2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00+00:00"), (None, False)]:
        parameters = module.notebook_parameters(smoke, since, out=tmp_path / "out")
        jobs = module.notebook_jobs(chosen, parameters, {}, tmp_path, tiny_notebooks, timeout=60)
        expected = dict(profile=SMOKE, fresh=fresh, root=str((tmp_path / "out").resolve()))
        assert [job["parameters"] for job in jobs] == [expected] * len(chosen)
    # without --out the kernels get root None (the checkout), whatever their environment would say
    assert module.notebook_parameters(smoke, None) == dict(profile=SMOKE, fresh=False, root=None)


def test_training_first_sweeps_with_its_own_workers_and_the_since_time(tiny_notebooks, tmp_path, monkeypatch):
    """The sweep that trains first gets the workers, the since time and the kernels' root as arguments; our
    own environment stays as it was (the notebooks' jobs and their threads are the kernels' business)."""
    from adapterlab.experiments import sweep

    seen = []
    before = dict(os.environ)
    monkeypatch.setattr(sweep, "sweep", lambda profile, **kw: seen.append((profile, kw, dict(os.environ))) or 130)
    write_notebook(tiny_notebooks / "05_init_scale.ipynb", "profile = 'default'\nfresh = False", "pass")
    status = regenerate(profile=SMOKE, only=["05", "fine"], out=tmp_path, notebooks_dir=tiny_notebooks,
                        since="2026-01-01T00:00:00+00:00", jobs=2, workers=3, progress=False)  # two notebooks: 2 jobs
    assert status == 130
    [(profile, kw, env)] = seen
    assert profile.name == SMOKE  # resolved once, in regenerate
    assert kw == dict(only=["init_scale"], max_parallel=3, progress=False, fresh="2026-01-01T00:00:00+00:00",
                      root=tmp_path.resolve(), glue_dir=None, workers_per_gpu=1)
    assert env == before


def test_training_first_that_stops_keeps_the_notebooks_from_training(tiny_notebooks, tmp_path, monkeypatch, capsys):
    """An interrupted (or failed) sweep must not hand its runs to the notebooks, which would train them one
    by one: regenerate stops with the sweep's status and says how to resume."""
    from adapterlab.experiments import sweep

    write_notebook(tiny_notebooks / "05_init_scale.ipynb", "profile = 'default'\nfresh = False",
                   "raise RuntimeError('this notebook must not run')")
    calls = []
    monkeypatch.setattr(sweep, "sweep", lambda profile, **kw: calls.append((profile, kw)) or 130)
    status = regenerate(profile=SMOKE, only="05", out=tmp_path, notebooks_dir=tiny_notebooks, fresh=True, workers=2,
                        progress=False)
    assert status == 130
    [(profile, kw)] = calls
    assert profile.name == SMOKE and kw["only"] == ["init_scale"] and kw["max_parallel"] == 2
    assert not (tmp_path / "build" / "notebooks" / SMOKE / "05_init_scale.ipynb").exists()
    printed = capsys.readouterr()
    assert f"rerun with --since {kw['fresh']}" in printed.err  # the time it retrains from, to resume with


def test_regenerate_only_and_dry_run(tiny_notebooks, tmp_path, capsys):
    status = regenerate(profile=SMOKE, only="fine", out=tmp_path, notebooks_dir=tiny_notebooks, dry_run=True)
    printed = capsys.readouterr().out
    assert status == 0
    assert "02_fine.ipynb" in printed and "01_boom" not in printed
    assert "profile='smoke'" in printed and "fresh=False" in printed
    assert "training first: nothing" in printed and re.search(r"planned units of work: \d+", printed)
    assert not (tmp_path / "build").exists(), "a dry run must not run or write anything"
    write_notebook(tiny_notebooks / "05_init_scale.ipynb", "profile = 'default'\nfresh = False", "pass")
    regenerate(profile=SMOKE, only="05", out=tmp_path, notebooks_dir=tiny_notebooks, dry_run=True, workers=2,
               since="2026-01-01T00:00:00Z")
    printed = capsys.readouterr().out
    assert "training first (sweep): the planned runs of init_scale, 2 at a time" in printed
    assert "fresh='2026-01-01T00:00:00+00:00'" in printed
    assert not (tmp_path / "build").exists()
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
    import adapterlab.course.regenerate as module

    monkeypatch.setattr(module, "_cuda_available", lambda: False)
    assert regenerate(profile="paper", notebooks_dir=tiny_notebooks) == 2
    error = capsys.readouterr().err
    assert "GPU" in error and "--dry-run" in error


def test_paper_dry_run_lists_planned_runs(capsys):
    require_notebooks()
    assert regenerate(profile="paper", dry_run=True) == 0
    printed = capsys.readouterr().out
    match = re.search(r"planned units of work: ([\d,]+)", printed)
    assert match, printed
    assert int(match.group(1).replace(",", "")) > 0
    assert re.search(r"^stream: [1-9]\d* units, ", printed, re.M)  # notebook 08's steps are counted too
    for notebook in NOTEBOOKS:
        assert notebook.name in printed
