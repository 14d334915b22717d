"""The course website (`make site`, adapterlab/course/site.py): built from the smoke run's executed
notebooks and opened in a real browser.

The build only renders what the executed copies hold (it never starts a kernel), so it reuses the
session's smoke runs from test_notebooks. The browser is the Debian Chromium of test_browser's
`chromium` fixture, driven by Playwright (the pip package; it never downloads a browser of its
own). The site is served from 127.0.0.1 (search needs http) and every request elsewhere is
blocked and reported, so the checks also hold on a machine that is online.
"""
import functools
import http.server
import json
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urldefrag, urljoin

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from adapterlab.course import exercises, site
from browser import CHROMIUM_FLAGS, chromium  # noqa: F401  (fixture shared with it)
from smoke import NOTEBOOKS, smoke_run, smoke_runner  # noqa: F401  (fixtures shared with it)

PLOTLY_TRACES = ".trace, .hm, .heatmaplayer image, .imagelayer image"
BROWSER_FLAGS = [f for f in CHROMIUM_FLAGS if f.startswith(("--no-", "--disable-"))]


# ---------------------------------------------------------------- preparing a notebook (no browser)

def plotly_js_output():
    return new_output("display_data", data={"text/html": "<script>window.PlotlyConfig = {};</script><script>/* plotly.js */</script>"})


def figure_output():
    html = ('<div><script src="https://cdnjs.cloudflare.com/ajax/libs/mathjax/3.2.2/es5/tex-svg.min.js"></script>'
            '<div id="f" class="plotly-graph-div"></div><script>Plotly.newPlot("f", [])</script></div>')
    return new_output("display_data", data={"application/vnd.plotly.v1+json": {"data": []}, "text/html": html})


def test_prepare_collapses_solutions_and_keeps_the_page_offline():
    nb = new_notebook(cells=[
        new_code_cell("fig.show()", outputs=[plotly_js_output(), figure_output()]),
        new_code_cell("for _ in tqdm(range(3)): pass", outputs=[new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "x"}, "text/plain": "100%|###| 3/3"})]),
        new_code_cell("answer = 42", metadata={"tags": ["solution"]}),
        new_markdown_cell("Because the adapter starts near the identity.", metadata={"tags": ["solution"]}),
        new_code_cell("1 / 0", outputs=[new_output("error", ename="ZeroDivisionError", evalue="", traceback=[])]),
    ])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    assert site.failed_cells(nb) == [4]
    nb = site.prepare(nb)
    plot, bar, solution, written = nb.cells[:4]
    assert len(plot.outputs) == 1, "the output that inlines plotly.js is dropped (pages load the shared copy)"
    assert "cdnjs" not in plot.outputs[0].data["text/html"] and "Plotly.newPlot" in plot.outputs[0].data["text/html"]
    assert list(bar.outputs[0].data) == ["text/plain"] and "widgets" not in nb.metadata
    assert "hide-cell" in solution.metadata.tags and solution.metadata.mystnb["code_prompt_show"] == "Show solution"
    assert written.source.startswith('<details class="solution">') and "near the identity" in written.source


def test_prepare_folds_each_check_into_its_solution_so_a_folded_solution_hides_its_pass():
    nb = new_notebook(cells=[
        new_code_cell("def f(): return 2", metadata={"tags": ["solution"], "exercise": "05.x"}),
        new_code_cell('check("05.x", f);', outputs=[new_output("stream", name="stdout", text="[PASS] 05.x: slope 2.00\n")]),
        new_code_cell('check("05.y", g);', outputs=[new_output("stream", name="stdout", text="[NOT YET] 05.y: hint\n")]),
    ])
    cells = site.prepare(nb).cells
    assert len(cells) == 2, "the check below a solution joins it; a check below a stub stays (no answer to hide)"
    solution = cells[0]
    assert "hide-cell" in solution.metadata.tags and 'check("05.x", f)' in solution.source
    assert [o["text"] for o in solution.outputs] == ["[PASS] 05.x: slope 2.00\n"]


def test_prepare_cuts_machine_paths_from_outputs_but_leaves_urls_and_fractions():
    text = ("figures go to /tmp/pytest-of-root/smoke0/04/figures/smoke\n/work/main/figures/default/heat.png\n"
            "/work/main/.venv/lib/python3.11/site-packages/transformers/x.py:3: FutureWarning\n"
            "see https://example.org/data/x, 3/4 of it, 12.5 it/s\nadapter at /tmp/tmpywphkbnz was trained\n")
    nb = new_notebook(cells=[new_code_cell("print(path)", outputs=[
        new_output("stream", name="stdout", text=text),
        new_output("execute_result", data={"text/plain": "PosixPath('/home/me/adapterlab/figures/a.png')"})])])
    stream, result = site.prepare(nb).cells[0].outputs
    assert stream["text"] == ("figures go to figures/smoke\nfigures/default/heat.png\n"
                              "site-packages/transformers/x.py:3: FutureWarning\n"
                              "see https://example.org/data/x, 3/4 of it, 12.5 it/s\n"
                              "adapter at tmpywphkbnz was trained\n")
    assert result["data"]["text/plain"] == "PosixPath('figures/a.png')"


def test_landing_page_lists_the_notebooks_in_order_with_recorded_times(tmp_path):
    for stem, title, text in [("02_second", "02 · Second step", "It trains.\nIn this notebook we"),
                              ("01_first", "01 · First step", "What 01_first teaches.")]:
        nbformat.write(new_notebook(cells=[new_markdown_cell(f"# {title}\n\n{text}\n\nMore.")]),
                       tmp_path / f"{stem}.ipynb")
    (tmp_path / "timings.json").write_text(json.dumps({
        "01_first": {"cpu": {"seconds": 42.4, "trained": False}},
        "02_second": {"cpu": {"seconds": 600, "trained": True}, "gpu": {"seconds": 75, "trained": True}}}))
    notebooks = site.executed_notebooks([tmp_path])
    page = site.landing_page(notebooks, site.timings(notebooks), "default", stores_runs={"02_second"})
    assert list(notebooks) == ["01_first", "02_second"]
    assert page.index("1. [First step](01_first.ipynb): What 01_first teaches.") < page.index(
        "2. [Second step](02_second.ipynb): It trains.\n")  # whole sentences, not the lead into a list
    assert ("| # | Notebook | From the committed results (CPU) | Training its runs (CPU) "
            "| From the committed results (GPU) | Training its runs (GPU) |") in page
    assert "| 01 | [First step](01_first.ipynb) | 42 s | — (stores no runs) | — | — (stores no runs) |" in page
    assert ("| 02 | [Second step](02_second.ipynb) | — | 10 min (last run that trained) "
            "| — | 75 s (last run that trained) |") in page
    assert "Notebook 01 stores no runs" in page and "not measured" not in page
    assert "More." not in page  # only the first paragraph


def test_without_a_gpu_run_the_landing_page_says_why_once_instead_of_a_gpu_column(tmp_path):
    nbformat.write(new_notebook(cells=[new_markdown_cell("# 01 · First\n\nText.")]), tmp_path / "01_first.ipynb")
    nbformat.write(new_notebook(cells=[new_markdown_cell("# 05 · Init\n\nText.")]), tmp_path / "05_init.ipynb")
    notebooks = site.executed_notebooks([tmp_path])
    times = {"01_first": {"cpu": {"training": {"seconds": 36}, "cached": {"seconds": 120}}},
             "05_init": {"cpu": {"cached": {"seconds": 20}, "training": {"seconds": 480},
                                 "from_scratch": {"seconds": 3600}}}}
    page = site.landing_page(notebooks, times, "default", stores_runs={"05_init"})
    table = [line for line in page.splitlines() if line.startswith("|")]
    assert table and not any("GPU" in line for line in table)  # no GPU column
    assert page.count("no run of these notebooks on a GPU has been recorded yet") == 1
    # 01 computes everything on every run: its time is one number, not "2 min (cached), 36 s (training)"
    assert "| 01 | [First](01_first.ipynb) | 2 min | — (stores no runs) |" in page
    # where the stored runs' sum is known it is shown, not the last run that trained (maybe only the missing runs)
    assert "| 05 | [Init](05_init.ipynb) | 20 s | 60 min (sum of its stored runs) |" in page


def test_timings_keep_the_last_cached_run_and_the_last_run_that_trained(tmp_path):
    from adapterlab.course import regenerate

    build, results = tmp_path / "build", tmp_path / "results"
    build.mkdir()
    nbformat.write(new_notebook(cells=[new_markdown_cell("# 01 · First\n\nText.")]), build / "01_first.ipynb")

    def outcome(seconds, results_written):
        return dict(notebook="01_first.ipynb", seconds=seconds, ok=True, end=None, results=results_written)

    regenerate.record_timings(build, [outcome(1800.0, ["data/results/default/init_scale.jsonl"])], fresh=False,
                              trained_dir=results)  # it trained: new records in the store
    regenerate.record_timings(build, [outcome(20.0, ["data/results/default/init_scale.csv"])], fresh=False,
                              trained_dir=results)  # it only rewrote the tidy CSV from the cache
    assert json.loads((results / "timings.json").read_text())["01_first"]["cpu"]["seconds"] == 1800.0
    times = site.timings(site.executed_notebooks([build]), [results / "timings.json"])
    assert site._redraw_and_training(times["01_first"]["cpu"], stores_runs=True) == (
        "20 s", "30 min (last run that trained)")


def test_timings_take_the_from_scratch_sums_of_the_notebooks_shown(tmp_path):
    nbformat.write(new_notebook(cells=[new_markdown_cell("# 05 · Init\n\nText.")]), tmp_path / "05_init.ipynb")
    notebooks = site.executed_notebooks([tmp_path])
    times = site.timings(notebooks, from_scratch={"05_init": (3600.0, "gpu"), "06_other": (60.0, "cpu"),
                                                  "05_unstored": (0, "cpu")})
    assert times == {"05_init": {"gpu": {"from_scratch": {"seconds": 3600.0}}}}  # only notebooks shown, with runs


# ---------------------------------------------------------------- the browser harness

class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    """serve(folder) -> the http://127.0.0.1:PORT/ base URL of a local server for the folder."""
    servers = []

    def start(folder):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def browser(chromium):  # noqa: F811
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is a dependency: `make setup`")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=BROWSER_FLAGS)
        yield launched
        launched.close()


class Visit:
    """A browser page that records what went wrong while it loaded: console errors, script
    errors, failed or 4xx/5xx requests, and any request that leaves `base` (blocked)."""

    def __init__(self, browser, base):
        self.base, self.problems, self.figures = base, [], 0
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(f"console error: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"script error: {e}"))
        self.page.on("requestfailed", lambda r: r.url.startswith(base) and self.problems.append(f"request failed: {r.url}"))
        self.page.on("response", lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"))

    def _route(self, route):
        if route.request.url.startswith(self.base) or route.request.url.startswith("data:"):
            route.continue_()
        else:
            self.problems.append(f"request off the site (offline it fails): {route.request.url}")
            route.abort()

    def open(self, url):
        """Load `url`; return the problems of this page (plotly figures without their SVG included)."""
        start = len(self.problems)
        self.page.goto(url, wait_until="networkidle")
        self.page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
        for n, figure in enumerate(self.page.locator(".plotly-graph-div").all()):
            self.figures += 1
            if figure.locator(".main-svg").count() == 0:
                self.problems.append(f"plotly figure {n + 1} drew no SVG")
            elif figure.locator(PLOTLY_TRACES).count() == 0:
                self.problems.append(f"plotly figure {n + 1} has axes but no data")
        return [f"{url}: {p}" for p in self.problems[start:]]

    def links(self):
        """Every link on the page to the site itself, absolute, with its fragment."""
        hrefs = self.page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        return {h for h in hrefs if h.startswith(self.base)}


def broken_links(visit, links):
    """Links whose page does not exist, or whose #fragment names no id on it."""
    pages, problems = {}, []
    for link in sorted(links):
        url, fragment = urldefrag(link)
        if url not in pages:
            response = visit.page.request.get(url)
            pages[url] = response.text() if response.ok else None
        if pages[url] is None:
            problems.append(f"broken link: {link}")
        elif fragment and not re.search(rf"""\bid=["']?{re.escape(fragment)}["'\s>]""", pages[url]):
            problems.append(f"link to a missing anchor: {link}")
    return problems


@pytest.mark.slow
def test_harness_reports_a_broken_page(browser, serve, tmp_path):
    """The checks are not vacuous: an error, a missing file, an undrawn figure, a CDN script and a
    dead link are all reported."""
    import plotly

    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", tmp_path)
    (tmp_path / "index.html").write_text(
        '<html><head><script src="plotly.min.js"></script><script src="https://cdn.plot.ly/x.js"></script></head>'
        '<body><div class="plotly-graph-div"></div><img src="missing.png"><a href="gone.html">x</a>'
        '<a href="index.html#nowhere">y</a><script>console.error("boom")</script></body></html>')
    base = serve(tmp_path)
    visit = Visit(browser, base)
    problems = "\n".join(visit.open(base + "index.html") + broken_links(visit, visit.links()))
    for expected in ("console error: boom", "HTTP 404", "drew no SVG", "request off the site", "broken link",
                     "missing anchor"):
        assert expected in problems, f"{expected!r} not reported in:\n{problems}"


# ---------------------------------------------------------------- the site of the smoke run

def solved(nb, solutions):
    """The executed student notebook as the teacher's version shows it: each stub replaced by its
    solution (tagged `solution`), and the check below it printing what a right answer prints, a
    [PASS] line. (The smoke run executed the stubs; running the solutions too would double its cost,
    and test_exercises proves that they pass.)"""
    nb = nbformat.from_dict(exercises.with_solutions(nb, solutions))
    for cell, after in zip(nb.cells, nb.cells[1:]):
        if "solution" in cell.metadata.get("tags", []) and "check(" in after.source:
            name = cell.metadata["exercise"]
            after.outputs = [new_output("stream", name="stdout", text=f"[PASS] {name}: the answer's own numbers\n")]
    return nb


@pytest.fixture(scope="module")
def built_site(smoke_runner, smoke_run, tmp_path_factory):  # noqa: F811
    """The site built from copies of the smoke run's executed notebooks, in their solved version
    (solved()), and one markdown cell of 01 tagged `solution` (one code cell too, unless 01 has
    exercises)."""
    if not NOTEBOOKS:
        pytest.fail("no notebooks in notebooks/")
    smoke_runner.start(smoke=NOTEBOOKS)  # all at once, JOBS at a time, when this file runs alone
    runs = [smoke_run(nb) for nb in NOTEBOOKS]
    failed = [r for r in runs if r.status != 0]
    if failed:
        pytest.fail("smoke runs failed (see test_notebooks): " + ", ".join(r.notebook.name for r in failed)
                    + f"\n{failed[0].output[-3000:]}")
    base = tmp_path_factory.mktemp("site")
    for run in runs:
        shutil.copytree(run.executed.parent, base / "executed" / run.notebook.stem[:2])
        copy = base / "executed" / run.notebook.stem[:2] / run.notebook.name
        solutions_file = run.notebook.parent / "solutions" / f"{run.notebook.stem}.py"
        if solutions_file.exists():
            nbformat.write(solved(nbformat.read(copy, as_version=4), exercises.read_solutions(solutions_file)), copy)
    first = base / "executed" / NOTEBOOKS[0].stem[:2] / NOTEBOOKS[0].name
    nb = nbformat.read(first, as_version=4)
    tagged = [c.cell_type for c in nb.cells if "solution" in c.metadata.get("tags", [])]
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()][-1]
    text = [c for c in nb.cells if c.cell_type == "markdown"][-1]
    for cell in [*([code] if "code" not in tagged else []), *([text] if "markdown" not in tagged else [])]:
        cell.metadata.setdefault("tags", []).append("solution")
    nbformat.write(nb, first)
    index = site.build([base / "executed"], base / "out", profile="smoke")
    return index.parent, runs


@pytest.mark.slow
def test_site_pages_are_offline_and_show_what_the_notebooks_ran(built_site):
    html, runs = built_site
    pages = {p.stem for p in html.glob("*.html")}
    assert {nb.stem for nb in NOTEBOOKS} | {"index", "search"} <= pages
    remote = re.compile(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=[\"']?(https?:)?//", re.I)
    offenders = [p.name for p in html.rglob("*.html") if remote.search(p.read_text(encoding="utf-8"))]
    assert not offenders, f"pages that load something from the network: {offenders}"
    landing = (html / "index.html").read_text(encoding="utf-8")
    recorded = json.loads((runs[0].executed.parent / "timings.json").read_text())[runs[0].notebook.stem]["cpu"]
    assert site._seconds(recorded["seconds"]) in landing, "the landing page shows the recorded CPU time"
    assert "not measured" not in landing and landing.count("on a GPU has been recorded yet") == 1


@pytest.mark.slow
def test_site_works_in_chromium(built_site, browser, serve):
    """Every page opens without console errors or off-site requests, every plotly figure draws,
    next-links walk the course in order, every internal link resolves, search finds a notebook
    and a solution opens when clicked."""
    html, _ = built_site
    base = serve(html)
    visit = Visit(browser, base)
    problems, links, walked = [], set(), []
    url = base + "index.html"
    while url and len(walked) <= len(NOTEBOOKS):  # the landing page, then each notebook by its next-link
        problems += visit.open(url)
        walked.append(Path(urldefrag(visit.page.url)[0]).stem)
        links |= visit.links()
        following = visit.page.locator("a.right-next")
        url = urljoin(visit.page.url, following.first.get_attribute("href")) if following.count() else None
    assert walked == ["index"] + [nb.stem for nb in NOTEBOOKS], "the next-links do not walk the course in order"
    problems += visit.open(base + "genindex.html")
    links |= visit.links()
    problems += broken_links(visit, links)
    assert not problems, "\n".join(problems)
    assert visit.figures, "no plotly figure on any page: the interactive figures are missing"

    # search: a word of the last notebook's title finds its page
    last = NOTEBOOKS[-1]
    word = max(re.findall(r"[A-Za-z]{5,}", site._title_and_summary(nbformat.read(last, as_version=4))[0]), key=len)
    visit.open(f"{base}search.html?q={word}")
    visit.page.wait_for_selector("#search-results ul.search li", timeout=15000)
    found = visit.page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.href)")
    assert any(last.stem in f for f in found), f"searching {word!r} did not find {last.stem}: {found}"

    # an exercise's solution starts collapsed and opens on a click
    visit.open(f"{base}{NOTEBOOKS[0].stem}.html")
    for toggle in (visit.page.locator(".tag_solution details").first, visit.page.locator("details.solution").first):
        hidden = toggle.locator(":scope > :not(summary)").first
        assert toggle.get_attribute("open") is None and not hidden.is_visible()
        assert "Show solution" in toggle.locator("summary").inner_text()
        toggle.locator("summary").click()
        assert toggle.get_attribute("open") is not None and hidden.is_visible()
    assert not visit.problems, visit.problems


# ---------------------------------------------------------------- nothing given away, no clutter, kernel-free explorers

# the start of an absolute path of a build machine (Linux, macOS) in an output
MACHINE_PATH = re.compile(r"(?<![\w.:/-])/(?:tmp|work|root|home|usr|opt|var|srv|mnt|private|Users|builds?)/")
# what a figure shows: its traces (visibility, data, text), title, annotations and shapes
FIGURE_STATE = ("gd => JSON.stringify([gd.data.map(t => [t.visible, t.x, t.y, t.z, t.text]), gd.layout.title, "
                "gd.layout.annotations, gd.layout.shapes])")


def unresponsive_controls(page, figure):
    """(controls clicked, problems): every plotly control of `figure` (button rows, dropdowns, sliders)
    is used once (the last option; a slider's far end) and must change what the figure shows."""
    clicked, problems = 0, []

    def shown():
        return figure.evaluate(FIGURE_STATE)

    for n, menu in enumerate(figure.locator("g.updatemenu-container").all(), 1):
        before = shown()
        header = menu.locator("g.updatemenu-header")
        if header.count():  # a dropdown: open it first
            header.first.click()
            options = menu.locator("g.updatemenu-dropdown-button")
            options.first.wait_for(timeout=5000)
        else:
            options = menu.locator("g.updatemenu-button")
        if options.count() < 2:
            continue
        options.last.click()
        page.wait_for_timeout(300)  # plotly redraws synchronously; this covers its transitions
        clicked += 1
        if shown() == before:
            problems.append(f"menu {n} ({options.count()} options): choosing the last changed nothing")
    for n, slider in enumerate(figure.locator("g.slider-container").all(), 1):
        before = shown()
        rail = slider.locator("rect.slider-rail-touch-rect").first
        rail.scroll_into_view_if_needed()  # a mouse click lands only inside the viewport
        box = rail.bounding_box()
        page.mouse.click(box["x"] + 0.97 * box["width"], box["y"] + box["height"] / 2)
        page.wait_for_timeout(300)
        clicked += 1
        if shown() == before:
            problems.append(f"slider {n}: moving it to its end changed nothing")
    return clicked, problems


@pytest.mark.slow
def test_harness_sees_a_dead_control_and_a_live_one(browser, serve, tmp_path):
    """unresponsive_controls is not vacuous: buttons, a dropdown and a slider that switch traces
    respond; the same buttons with no effect are reported."""
    import plotly
    import plotly.graph_objects as go
    import plotly.io as pio

    def figure(**menus):
        fig = go.Figure([go.Scatter(y=[1, 2, 3]), go.Scatter(y=[3, 1, 2], visible=False)])
        return fig.update_layout(**menus)

    views = [dict(label=label, method="update", args=[{"visible": visible}])
             for label, visible in (("first", [True, False]), ("second", [False, True]))]
    dead = [dict(label=label, method="update", args=[{}]) for label in ("first", "second")]
    figures = [figure(updatemenus=[dict(type="buttons", buttons=views)]),
               figure(updatemenus=[dict(type="dropdown", buttons=views)]),
               figure(sliders=[dict(steps=views)]), figure(updatemenus=[dict(type="buttons", buttons=dead)])]
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", tmp_path)
    body = "".join(pio.to_html(f, include_plotlyjs=False, full_html=False) for f in figures)
    (tmp_path / "index.html").write_text(f'<html><head><script src="plotly.min.js"></script></head><body>{body}</body></html>')
    visit = Visit(browser, serve(tmp_path))
    visit.open(visit.base + "index.html")
    results = [unresponsive_controls(visit.page, f) for f in visit.page.locator(".plotly-graph-div").all()]
    assert [r[0] for r in results] == [1, 1, 1, 1]
    assert [bool(r[1]) for r in results] == [False, False, False, True], results


@pytest.mark.slow
def test_site_gives_nothing_away_shows_no_machine_paths_and_its_explorers_work(built_site, browser, serve):
    """On every notebook page: no ipywidgets text dump (VBox(/HBox(), no absolute path of the build
    machine in any output, no [PASS] line visible while its solution is folded (and each shows once
    the solutions are opened), and every plotly control (the kernel-free explorers) changes its
    figure when clicked."""
    html, _ = built_site
    base = serve(html)
    visit = Visit(browser, base)
    problems, controls, passes = [], 0, 0
    for notebook in NOTEBOOKS:
        url = f"{base}{notebook.stem}.html"
        problems += visit.open(url)
        page = visit.page
        text = page.locator("article").first.inner_text()
        problems += [f"{notebook.stem}: a widget's text dump ({dump}) instead of an explorer"
                     for dump in ("VBox(", "HBox(") if dump in text]
        outputs = page.eval_on_selector_all(".cell_output", "els => els.map(e => e.textContent)")  # folded too
        problems += [f"{notebook.stem}: an output shows a machine path: ...{m.string[max(0, m.start() - 40):m.end() + 40]!r}"
                     for m in (MACHINE_PATH.search(o) for o in outputs) if m]
        passed = page.locator(".cell_output").filter(has_text="[PASS]")
        passes += passed.count()
        problems += [f"{notebook.stem}: a [PASS] line is visible with its solution folded"
                     for i in range(passed.count()) if passed.nth(i).is_visible()]
        for toggle in page.locator(".tag_solution details > summary").all():
            toggle.click()
        problems += [f"{notebook.stem}: a [PASS] line stays hidden with every solution open"
                     for i in range(passed.count()) if not passed.nth(i).is_visible()]
        for figure in page.locator(".plotly-graph-div").all():
            clicked, dead = unresponsive_controls(page, figure)
            controls += clicked
            problems += [f"{notebook.stem}: {p}" for p in dead]
    assert not problems, "\n".join(problems)
    assert passes, "no [PASS] line on any page: the solved notebooks did not reach the site"
    assert controls, "no explorer control (plotly buttons, dropdown or slider) on any page"
