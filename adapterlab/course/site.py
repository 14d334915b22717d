"""Build the course website from the executed notebooks (Sphinx + myst-nb, sphinx-book-theme).

    python -m adapterlab.course.site                       # build/site/ from build/notebooks/default/
    python -m adapterlab.course.site --executed DIR ... --out DIR --profile smoke

The pages show the outputs stored in the executed copies that `regenerate` writes; nothing is
executed or retrained here (for the checkout's own build dir, notebooks whose executed copy is
missing or older than the source are first run by `regenerate`, which reuses cached results).
Sphinx and the theme are installed packages, and MathJax (django-static-mathjax) and plotly.js
(plotly) are copied into the site, so it builds and works offline.

Exercises: a cell tagged `solution` is shown collapsed behind a "Show solution" toggle (code
cells: source and output; markdown cells: their text). The check cell right below a solution
(`check("...", answer)`) goes into the same fold, since its output -- "[PASS] ... a slope of
2.00" -- would give the answer away under a folded solution. Cells tagged `hide-input`,
`hide-cell` or `remove-cell` behave as myst-nb documents.

Outputs show no path of the machine that ran them: an absolute path (the checkout's, a temporary
output folder's, a site-packages folder in a warning) loses its prefix up to the project's own
folders (figures/, data/, build/, notebooks/) or up to site-packages/; any other path under a
machine's folders (/tmp, /home, ...: a temporary folder named in an error) keeps only its name.
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from ..report import document
from ..experiments import profiles
from . import regenerate

SITE_SOURCES = regenerate.CHECKOUT / "site"
SOLUTION = "solution"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
EXTERNAL_SCRIPT = re.compile(r"<script[^>]*\bsrc=[\"']?(https?:)?//[^>]*>\s*</script>", re.I)
# the machine-specific start of an absolute path: everything before the project's own folders, or
# up to a Python installation's lib/pythonX.Y/ (a warning's source file); the lookbehind leaves URLs,
# fractions (3/4) and units (it/s) alone
MACHINE_PREFIX = re.compile(r"(?<![\w.~/:-])/(?:[^\s/'\"<>():]+/)*?"
                            r"(?:(?=(?:figures|data|build|notebooks)/)|lib/python3\.\d+/)")
# any other path under a machine's own folders (a temporary folder in an error message): its name only
MACHINE_FOLDERS = re.compile(r"(?<![\w.~/:-])/(?:tmp|var|private|home|Users|root|work|mnt|srv|opt)/"
                             r"(?:[^\s/'\"<>():]+/)*(?=[^\s/'\"<>():])")
CHECK_CALL = re.compile(r"\bcheck\(\s*[\"']\d\d\.\w+[\"']")
# what the site copies from the MathJax package: the one combined component, its fonts, the
# TeX extensions it loads on demand, and the accessibility parts its menu loads
MATHJAX_PARTS = ["tex-mml-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions", "a11y", "sre", "ui"]


# ---------------------------------------------------------------- the executed notebooks

def executed_notebooks(sources):
    """{stem: path} of the executed NN_name.ipynb files in `sources` (folders, searched
    recursively, or notebook paths), in course order; later sources win."""
    found = {}
    for source in map(Path, sources):
        paths = [source] if source.suffix == ".ipynb" else source.rglob(regenerate.NOTEBOOK_GLOB)
        for path in paths:
            if ".ipynb_checkpoints" not in path.parts:
                found[path.stem] = path
    return dict(sorted(found.items()))


def timings(notebooks, files=(), from_scratch=None):
    """{stem: {"cpu"|"gpu": {"cached": entry, "training": entry, "from_scratch": entry}}} from the
    timings.json beside the notebooks (the last run of each), from `files` (e.g. the result store's
    record of the runs that trained; later sources win) and from `from_scratch`, {stem: (seconds,
    device)} as document.notebook_seconds gives it; an entry is {"seconds", "trained", "date", ...}."""
    merged = {}
    paths = [folder / regenerate.TIMINGS for folder in sorted({p.parent for p in notebooks.values()})]
    for path in [*paths, *map(Path, files)]:
        try:
            recorded = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            continue
        for stem, per_device in recorded.items():
            if stem in notebooks:
                for device, entry in per_device.items():
                    kind = "training" if entry.get("trained", entry.get("fresh")) else "cached"
                    merged.setdefault(stem, {}).setdefault(device, {})[kind] = entry
    for stem, (seconds, device) in (from_scratch or {}).items():
        if stem in notebooks and seconds:
            merged.setdefault(stem, {}).setdefault(device, {})["from_scratch"] = {"seconds": seconds}
    return merged


def without_machine_paths(text):
    """`text` with every absolute path cut to what names it in any checkout:
    '/work/main/figures/default/x.png' -> 'figures/default/x.png'."""
    return MACHINE_FOLDERS.sub("", MACHINE_PREFIX.sub("", text))


def _fold_checks_into_solutions(nb):
    """Move each check cell that follows a solution into that solution's cell (source and outputs),
    so that "Show solution" reveals both and a folded solution hides its PASS line too."""
    cells, previous = [], None
    for cell in nb.cells:
        if (cell.cell_type == "code" and CHECK_CALL.search(cell.source) and previous is not None
                and previous.cell_type == "code" and SOLUTION in previous.metadata.get("tags", [])):
            previous.source = previous.source.rstrip("\n") + "\n\n" + cell.source
            previous.outputs = [*previous.get("outputs", []), *cell.get("outputs", [])]
            previous = None  # one check per solution
            continue
        cells.append(cell)
        previous = cell
    nb.cells = cells


def prepare(nb):
    """The notebook as the site shows it: solutions (with their checks) collapsed, no machine paths,
    no network, no inlined plotly.js.

    The kernel's one-off output that inlines plotly.js (4.8 MB) is dropped, since every page
    loads the shared copy; scripts from CDNs (plotly adds MathJax's) are dropped, as are widget
    views, which need a live kernel (their text fallback, e.g. a progress bar's, stays)."""
    nb.metadata.pop("widgets", None)
    _fold_checks_into_solutions(nb)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if SOLUTION in tags and cell.cell_type == "code":
            cell.metadata.tags = [*tags, "hide-cell"]
            cell.metadata["mystnb"] = {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}
        elif SOLUTION in tags and cell.cell_type == "markdown":
            cell.source = (f'<details class="solution">\n<summary>Show solution</summary>\n\n{cell.source}\n\n'
                           "</details>")
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data is not None:
                data.pop(WIDGET_VIEW, None)
                html = data.get("text/html")
                if isinstance(html, str):
                    if "window.PlotlyConfig" in html and "plotly-graph-div" not in html:
                        continue  # plotly.js itself
                    data["text/html"] = EXTERNAL_SCRIPT.sub("", html)
                if not data:
                    continue
            if "text" in output:
                output["text"] = without_machine_paths("".join(output["text"]))
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/") and isinstance(value, (str, list)):
                    output["data"][mime] = without_machine_paths("".join(value))
            outputs.append(output)
        if cell.cell_type == "code":
            cell.outputs = outputs
    return nb


def failed_cells(nb):
    """Cells whose stored output is a traceback (cells tagged raises-exception may show one)."""
    return [i for i, cell in enumerate(nb.cells) if "raises-exception" not in cell.metadata.get("tags", [])
            and any(o.get("output_type") == "error" for o in cell.get("outputs", []))]


# ---------------------------------------------------------------- the landing page

def _title_and_summary(nb):
    """The notebook's first heading and the paragraph after it."""
    text = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    heading = re.search(r"^#.*", text, re.M)
    paragraph = re.search(r"\S.*(?:\n.*\S.*)*", text[heading.end():] if heading else text)  # up to a blank line
    title = heading.group().lstrip("#").strip() if heading else ""
    summary = " ".join(line.strip() for line in paragraph.group().splitlines()) if paragraph else ""
    if not summary.endswith((".", "!", "?")) and "." in summary:  # it leads into a list: keep whole sentences
        summary = summary[:summary.rindex(".") + 1]
    return title, summary


def _seconds(seconds):
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def _redraw_and_training(kinds, stores_runs):
    """(redraw, train) cells of one notebook on one kind of machine: how long a run took that read the
    committed results, and how long training its runs took, each saying what it measured ("—": no
    such run recorded). A notebook that stores no runs (01, 02) computes everything on every run, so
    its one time is the first cell, and a run recorded as "trained" is a run like any other."""
    kinds = dict(kinds or {})
    redraw = kinds.get("cached") or (None if stores_runs else kinds.get("training"))
    if not stores_runs:
        train = "— (stores no runs)"
    elif "from_scratch" in kinds:  # a run that trained may have trained only what was missing
        train = f"{_seconds(kinds['from_scratch']['seconds'])} (sum of its stored runs)"
    elif "training" in kinds:
        train = f"{_seconds(kinds['training']['seconds'])} (last run that trained)"
    else:
        train = "—"
    return (_seconds(redraw["seconds"]) if redraw else "—"), train


def landing_page(notebooks, times, profile, stores_runs=None):
    """index.md: the hand-written introduction, then the notebooks in order with their summaries
    and the times recorded for them: redrawing from the committed results, and training their runs.
    `stores_runs`: the notebooks that train and store runs (default: every registered family's).
    GPU columns appear only when some GPU time is recorded; otherwise one sentence says why not."""
    if stores_runs is None:
        from ..experiments import families

        stores_runs = {f.notebook for f in families.registered()}
    intro = (SITE_SOURCES / "intro.md").read_text()
    devices = ["cpu"] + (["gpu"] if any("gpu" in per for per in times.values()) else [])
    header = ["#", "Notebook"] + [f"{what} ({device.upper()})" for device in devices
                                  for what in ("From the committed results", "Training its runs")]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    order = []
    for stem in notebooks:
        title, summary = _title_and_summary(nbformat.read(notebooks[stem], as_version=4))
        title = re.sub(r"^\d+\s*[·.:-]\s*", "", title) or stem
        order.append(f"{len(order) + 1}. [{title}]({stem}.ipynb){': ' + summary if summary else ''}")
        cells = [cell for device in devices
                 for cell in _redraw_and_training(times.get(stem, {}).get(device), stem in stores_runs)]
        rows.append(f"| {stem[:2]} | [{title}]({stem}.ipynb) | " + " | ".join(cells) + " |")
    gpu_note = ("" if "gpu" in devices else
                " All times are CPU times: no run of these notebooks on a GPU has been recorded yet, so there is "
                "no GPU column (a run with a GPU records its times beside these).")
    plain = [stem[:2] for stem in notebooks if stem not in stores_runs]
    plain_note = (f" {'Notebooks' if len(plain) > 1 else 'Notebook'} {', '.join(plain[:-1])}"
                  f"{' and ' if len(plain) > 1 else ''}{plain[-1]} {'store' if len(plain) > 1 else 'stores'} no runs: "
                  "everything shown is computed on every run, so the first column is the whole cost." if plain else "")
    toc = "\n".join(["```{toctree}", ":hidden:", ":maxdepth: 1", "", *notebooks, "```"])
    return "\n\n".join([
        intro.rstrip(), "## In order", "\n".join(order),
        f"## How long each notebook takes\n\nMeasured by `python -m adapterlab regenerate --profile {profile}`. "
        "\"From the committed results\": the last run that only read the stored results and redrew the "
        "figures (what `make figures` costs). \"Training its runs\": what training the notebook's stored runs "
        f"took, summed from their records in `data/results/{profile}/` (as the notebook's first cell and the "
        "README print it), or else the last run that trained (with `--fresh`, or because results were missing; "
        f"recorded in `data/results/{profile}/timings.json`).{plain_note} Times of the same work vary with the "
        "machine's load; \"—\": no such run was recorded." + gpu_note,
        "\n".join(rows), toc]) + "\n"


# ---------------------------------------------------------------- the build

def _copy_assets(static):
    """plotly.min.js from the plotly package and MathJax from django-static-mathjax, into _static/."""
    import mathjax
    import plotly

    static.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", static / "plotly.min.js")
    es5 = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    for part in MATHJAX_PARTS:
        source, target = es5 / part, static / "mathjax" / part
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def build(sources, out, profile="default", quiet=True, timing_files=()):
    """Build the website from the executed notebooks in `sources` into `out`/html; return the
    path of its index.html. Raises ValueError when there is no notebook or one holds a traceback,
    RuntimeError (with Sphinx's output) when Sphinx fails."""
    notebooks = executed_notebooks(sources)
    if not notebooks:
        raise ValueError(f"no executed notebooks (NN_name.ipynb) in {', '.join(map(str, sources))}; "
                         f"run `python -m adapterlab regenerate --profile {profile}` first")
    out = Path(out)
    src = out / "source"
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(SITE_SOURCES, src, ignore=shutil.ignore_patterns("intro.md", "__pycache__"))
    broken = []
    for path in notebooks.values():
        nb = nbformat.read(path, as_version=4)
        if failed := failed_cells(nb):
            broken.append(f"{path} (cells {', '.join(str(i + 1) for i in failed)})")
        nbformat.write(prepare(nb), src / path.name)
    if broken:
        raise ValueError("these executed notebooks stopped on an error; fix and re-run them first: " + "; ".join(broken))
    times = timings(notebooks, timing_files, from_scratch=document.notebook_seconds(profile))
    (src / "index.md").write_text(landing_page(notebooks, times, profile))
    _copy_assets(src / "_static")
    html = out / "html"
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-j", "auto", "-E", *(["-q"] if quiet else []),
               str(src), str(html)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"sphinx-build failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    if done.stderr.strip():
        print(done.stderr.strip(), file=sys.stderr)  # Sphinx's warnings
    return html / "index.html"


def execute_solutions(profile):
    """The teacher's version of every notebook (exercises.build_course), executed from the cached
    results into build/site-notebooks/<profile>/ (only those missing or older than their source);
    returns that folder, or None when a notebook failed."""
    from .exercises import build_course

    root = profiles.project_root()
    _, solved = build_course(root / "build" / "course")
    executed = root / "build" / "site-notebooks" / profile
    stale = [nb.stem[:2] for nb in regenerate.find_notebooks(solved)
             if not (executed / nb.name).exists() or (executed / nb.name).stat().st_mtime < nb.stat().st_mtime]
    if stale and regenerate.regenerate(profile, only=stale, notebooks_dir=solved, executed_dir=executed) != 0:
        return None
    return executed


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m adapterlab.course.site", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="default", help="whose executed notebooks to show (default: default)")
    parser.add_argument("--executed", nargs="+", help="folders or .ipynb files of executed notebooks (default: "
                        "the solution versions, executed from the cached results into build/site-notebooks/<profile>/)")
    parser.add_argument("--out", default=None, help="where the site goes (default: build/site/<profile>)")
    args = parser.parse_args(argv)
    profile = profiles.get(args.profile).name
    sources = args.executed
    if not sources:
        executed = execute_solutions(profile)
        if executed is None:
            return 1
        sources = [executed]
    out = Path(args.out) if args.out else profiles.project_root() / "build" / "site" / profile
    # how long the notebooks take: the last runs of the student versions (cached), and the runs that trained
    timing_files = [regenerate.build_dir(profile) / regenerate.TIMINGS,
                    profiles.project_root() / "data" / "results" / profile / regenerate.TIMINGS]
    try:
        index = build(sources, out, profile, timing_files=timing_files)
    except (ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"site: {index}\nserve it with: python -m http.server -d {index.parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
