"""The course website (`make site`, adapterlab/site.py): built from the smoke run's executed
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

from adapterlab import site
from test_browser import CHROMIUM_FLAGS, chromium  # noqa: F401  (fixture shared with it)
from test_notebooks import NOTEBOOKS, smoke_run, smoke_runner  # noqa: F401  (fixtures shared with it)

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


def test_landing_page_lists_the_notebooks_in_order_with_recorded_times(tmp_path):
    for stem, title, text in [("02_second", "02 · Second step", "It trains.\nIn this notebook we"),
                              ("01_first", "01 · First step", "What 01_first teaches.")]:
        nbformat.write(new_notebook(cells=[new_markdown_cell(f"# {title}\n\n{text}\n\nMore.")]),
                       tmp_path / f"{stem}.ipynb")
    (tmp_path / "timings.json").write_text(json.dumps({
        "01_first": {"cpu": {"seconds": 42.4, "trained": False}},
        "02_second": {"cpu": {"seconds": 600, "trained": True}, "gpu": {"seconds": 75, "trained": True}}}))
    notebooks = site.executed_notebooks([tmp_path])
    page = site.landing_page(notebooks, site.timings(notebooks), "default")
    assert list(notebooks) == ["01_first", "02_second"]
    assert page.index("1. [First step](01_first.ipynb): What 01_first teaches.") < page.index(
        "2. [Second step](02_second.ipynb): It trains.\n")  # whole sentences, not the lead into a list
    assert "| 01 | [First step](01_first.ipynb) | 42 s (cached results) | not measured |" in page
    assert "| 02 | [Second step](02_second.ipynb) | 10 min (training) | 75 s (training) |" in page
    assert "More." not in page  # only the first paragraph


def test_timings_keep_the_last_cached_run_and_the_last_run_that_trained(tmp_path):
    from adapterlab import regenerate

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
    assert site._duration(times["01_first"]["cpu"]) == "20 s (cached results), 30 min (training)"


def test_the_from_scratch_sum_replaces_the_last_run_that_trained():
    # a run that trained may have trained only the missing runs (8 min here), so where the stored runs' sum
    # is known it is the one shown
    kinds = {"cached": {"seconds": 20}, "training": {"seconds": 480}, "from_scratch": {"seconds": 3600}}
    assert site._duration(kinds) == "20 s (cached results), 60 min (from scratch)"
    assert site._duration({"training": {"seconds": 480}}) == "8 min (training)"



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

@pytest.fixture(scope="module")
def built_site(smoke_runner, smoke_run, tmp_path_factory):  # noqa: F811
    """The site built from copies of the smoke run's executed notebooks, one cell of 01 tagged
    `solution` (code and markdown) unless the notebooks already have solutions."""
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
    first = base / "executed" / NOTEBOOKS[0].stem[:2] / NOTEBOOKS[0].name
    nb = nbformat.read(first, as_version=4)
    if not any("solution" in c.metadata.get("tags", []) for c in nb.cells):
        code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()][-1]
        text = [c for c in nb.cells if c.cell_type == "markdown"][-1]
        for cell in (code, text):
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
    assert site._duration({"training": recorded}) in landing, "the landing page shows the recorded CPU time"
    assert landing.count("not measured") >= len(NOTEBOOKS), "the GPU column says the time was not measured"


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
