"""The interactive (plotly) HTML figures work offline and actually draw in a real browser.

Static checks (always run): no CDN, one shared local plotly.min.js beside the figures, plotly.js
not inlined into each file. Rendering: headless Chromium loads each figure from file:// and the
test asserts plotly built its SVG layers with data traces, and that a screenshot is not blank.

Chromium comes from Debian's `chromium` package. When it is missing and this runs as root with
apt-get (CI, developer machines), the session fixture installs it once
(`apt-get install --no-install-recommends chromium`, well under a minute); otherwise the
rendering tests are skipped with the reason.
"""
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from browser import CHROMIUM_FLAGS, chromium  # noqa: F401  (a fixture)
from smoke import NOTEBOOKS, ROOT, smoke_run, smoke_runner  # noqa: F401  (fixtures shared with it)

CDN = re.compile(r"cdn\.plot\.ly|<script[^>]+src=[\"']?(https?:)?//", re.I)
LOCAL_PLOTLY = re.compile(r"<script[^>]+src=[\"']?plotly\.min\.js", re.I)
TRACE = re.compile(r"class=\"(trace\b[^\"]*|hm|[^\"]*\b(heatmaplayer|imagelayer)\b[^\"]*)\"")
# plotly cuts a legend taller than its plot and scrolls it: the scroll bar gets a height only then
LEGEND_SCROLLBAR = re.compile(r"<rect class=\"scrollbar\"[^>]*\bheight=\"([0-9.]+)\"")
MAX_FIGURE_BYTES = 2_000_000  # plotly.min.js alone is ~4.8 MB: a file this big has it inlined


def committed_figures():
    return sorted(p for p in (ROOT / "figures").rglob("*.html")) if (ROOT / "figures").is_dir() else []


def render(chromium, html_path, screenshot):
    """Load the page headless; return its DOM after the scripts ran. Writes a screenshot PNG."""
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--screenshot={screenshot}",
                   "--dump-dom", Path(html_path).resolve().as_uri()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"chromium exited {done.returncode} on {html_path}:\n{done.stderr[-2000:]}"
    return done.stdout


def distinct_colours(png_path):
    from PIL import Image

    with Image.open(png_path) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    return 1 << 16 if colours is None else len(colours)


def drawing_problems(chromium, html_path, shots):
    """What is wrong with how `html_path` renders (empty list: it drew)."""
    shot = Path(shots) / (Path(html_path).stem + ".png")
    dom = render(chromium, html_path, shot)
    problems = []
    if 'class="main-svg"' not in dom:
        problems.append("plotly drew no SVG (no class=\"main-svg\" in the DOM)")
    elif not TRACE.search(dom):
        problems.append("the plot has axes but no data traces (no trace/heatmap layer in the DOM)")
    if any(float(h) > 0 for h in LEGEND_SCROLLBAR.findall(dom)):
        problems.append("a legend is taller than its plot (plotly scrolls it); make the figure taller")
    if not shot.exists():
        problems.append("no screenshot was written")
    elif distinct_colours(shot) < 8:
        problems.append(f"the screenshot {shot} is blank")
    return [f"{Path(html_path).name}: {p}" for p in problems]


def check_renders(chromium, html_paths, shots):
    with ThreadPoolExecutor(max_workers=2) as pool:  # two browsers at a time: CI has two cores
        problems = [p for found in pool.map(lambda p: drawing_problems(chromium, p, shots), html_paths) for p in found]
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- offline: no CDN, one shared plotly.js

def offline_problems(html_paths):
    problems = []
    for path in html_paths:
        html = path.read_text(encoding="utf-8", errors="replace")
        if CDN.search(html):
            problems.append(f"{path}: loads a script from the network (plotly CDN); write it with "
                            f"plots.save_figure / fig.write_html(path, include_plotlyjs='directory')")
        if path.stat().st_size > MAX_FIGURE_BYTES:
            problems.append(f"{path}: {path.stat().st_size:,} bytes, plotly.js inlined? use include_plotlyjs='directory'")
        elif not LOCAL_PLOTLY.search(html):
            problems.append(f"{path}: does not load the shared plotly.min.js beside it")
        elif not (path.parent / "plotly.min.js").is_file():
            problems.append(f"{path}: plotly.min.js is missing beside it (figures must work offline)")
    for folder in sorted({p.parent for p in html_paths}):
        copies = [p.name for p in folder.glob("*.js") if "plotly" in p.name.lower()]
        if len(copies) > 1:
            problems.append(f"{folder}: several plotly.js copies {copies}; keep the one plotly.min.js")
    return problems


# ---------------------------------------------------------------- the harness itself

def write_plotly(folder, name, kind):
    import plotly.express as px
    import plotly.io as pio

    if kind == "lines":  # forty legend entries on a 300 px figure: more than its plot can hold
        fig = px.line(x=[1, 2] * 40, y=list(range(80)), color=[f"line {k // 2}" for k in range(80)], height=300)
    else:
        fig = px.imshow([[1, 2], [3, 4]]) if kind == "heatmap" else px.line(x=[1, 2, 3], y=[3, 1, 2], markers=True)
    path = Path(folder) / f"{name}.html"
    pio.write_html(fig, path, include_plotlyjs="directory")
    return path


@pytest.mark.slow
def test_harness_sees_a_drawn_plot_and_a_blank_page(chromium, tmp_path):
    """The checks below are not vacuous: a plotly figure written the project's way draws, an
    empty page with the same plotly.js does not."""
    figures = [write_plotly(tmp_path, "line", "line"), write_plotly(tmp_path, "heatmap", "heatmap")]
    assert not offline_problems(figures)
    check_renders(chromium, figures, tmp_path)
    blank = tmp_path / "blank.html"
    blank.write_text('<html><body><script src="plotly.min.js"></script><div id="plot"></div></body></html>')
    problems = drawing_problems(chromium, blank, tmp_path)
    assert any("no SVG" in p for p in problems) and any("blank" in p for p in problems), problems
    long = write_plotly(tmp_path, "long_legend", "lines")
    assert [p for p in drawing_problems(chromium, long, tmp_path) if "legend" in p], "a scrolled legend went unseen"


# ---------------------------------------------------------------- the committed figures (default profile)

COMMITTED = committed_figures()
COMMITTED_DIRS = sorted({p.parent for p in COMMITTED})


def dir_id(folder):
    return str(folder.relative_to(ROOT))


def test_committed_html_figures_work_offline():
    if not COMMITTED:
        pytest.skip("no plotly HTML figures committed under figures/ yet")
    problems = offline_problems(COMMITTED)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("folder", COMMITTED_DIRS or [pytest.param(None, marks=pytest.mark.skip(
    reason="no plotly HTML figures committed under figures/ yet"))], ids=dir_id if COMMITTED_DIRS else None)
def test_committed_html_figures_draw_in_chromium(folder, chromium, tmp_path):
    check_renders(chromium, sorted(folder.glob("*.html")), tmp_path)


# ---------------------------------------------------------------- the smoke run's figures

@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_smoke_html_figures_work_offline_and_draw(notebook, smoke_run, chromium, tmp_path):
    run = smoke_run(notebook)
    if run.status != 0:
        pytest.fail(f"{notebook.name} failed in the smoke run (see test_notebooks):\n{run.output[-3000:]}")
    figures = [p for p in run.figures if p.suffix == ".html"]
    if not figures:
        pytest.skip(f"{notebook.name} writes no interactive (HTML) figure")
    problems = offline_problems(figures)
    assert not problems, "\n".join(problems)
    check_renders(chromium, figures, tmp_path)
