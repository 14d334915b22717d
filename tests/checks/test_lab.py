"""The ipywidgets explorers work in real JupyterLab: a headless Chromium runs a notebook the way a
student does and moves the explorer's controls.

papermill and nbval (test_notebooks) run every cell but never render a widget, so they cannot see
an explorer whose sliders do nothing or whose redraw fails inside the browser. Here a Jupyter
server is started on a free localhost port (token set, no browser) over a temporary copy of the
notebooks, the kernel in the smoke profile (ADAPTERLAB_PROFILE=smoke: tiny models, trained in
seconds, offline) with ADAPTERLAB_OUT in a temporary directory, so the run writes nothing into the
checkout (data/results/, figures/) and the committed notebooks are never saved over. For notebooks
04 (layer removal) and 05 (init scale) the tests

1. open each notebook in JupyterLab and click Run > Run All Cells in the menu bar (both notebooks
   at once, one kernel each: the smoke training is single-threaded, so two cores run both in
   about the time of the slower one),
2. wait until every code cell has an execution count and the kernel is idle,
3. check that no cell shows an error (a traceback in an output) and that the explorer drew its
   figure (a PNG <img> inside the widget's Output area),
4. move a control (04: the "colour" toggle, then the "first layer removed" slider, whose span
   numbers above the heatmap must follow too; 05: the "seeds" selection) and check that the
   figure's image data (the <img> src) changed each time, with no error shown.

A failing check leaves a screenshot of the page (its path is in the message). The server and its
kernels are stopped when the module's tests end, also when one fails. Chromium
is the Debian package of test_browser's `chromium` fixture, driven by Playwright (never a browser
of its own); every request that leaves the server is blocked, so this also holds offline. The
tests are skipped only when Chromium cannot be found or installed.
"""
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from test_browser import CHROMIUM_FLAGS, chromium  # noqa: F401  (fixture shared with it)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
BROWSER_FLAGS = [f for f in CHROMIUM_FLAGS if f.startswith(("--no-", "--disable-"))]

EXPLORER_NOTEBOOKS = ("04_layer_removal.ipynb", "05_init_scale.ipynb")
SERVER_START_TIMEOUT = 120  # s; two busy cores
RUN_ALL_TIMEOUT = 300_000  # ms, both notebooks at once (imports + the smoke training)
REDRAW_TIMEOUT = 60_000  # ms, one explorer redraw
UI_TIMEOUT = 60_000  # ms, JupyterLab's own UI (the page, the menu, the kernel starting)

# JupyterLab settings for the test (a fresh settings directory, nothing from the user's own):
# every cell attached to the DOM (the default windowing leaves cells out of view unrendered),
# no news or update checks (offline), no autosave.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}

CODE_PROMPTS = ".jp-CodeCell .jp-InputArea-prompt"
ERROR_OUTPUTS = '[data-mime-type="application/vnd.jupyter.stderr"]'  # error outputs and stderr streams
EXPLORER_FIGURE = ".widget-output img"

# True once Run All has finished: no cell queued or running ("[*]:"), the kernel idle, and either
# every code cell has run ("[3]:") or a cell failed (JupyterLab then stops and leaves the rest "[ ]:")
RUN_ALL_DONE = """([prompts, errors]) => {
    const texts = [...document.querySelectorAll(prompts)].map(e => e.textContent.trim());
    if (!texts.length || texts.some(t => t.includes("*"))) return false;
    const indicator = document.querySelector(".jp-Notebook-ExecutionIndicator");
    if (indicator && indicator.dataset.status !== "idle") return false;
    const failed = [...document.querySelectorAll(errors)].some(e => e.textContent.includes("Traceback"));
    return failed || texts.every(t => /^\\[\\d+\\]:$/.test(t));
}"""

# The src of the explorer figure once it is a decoded image different from `before`, else false
NEW_FIGURE = """([cell, selector, before]) => {
    const img = cell.querySelector(selector);
    return img && img.complete && img.naturalWidth > 0 && img.src !== before ? img.src : false;
}"""


# ---------------------------------------------------------------- the Jupyter server

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    url: str  # http://127.0.0.1:PORT/
    token: str
    root: Path  # the server's root_dir: the notebook copies
    out: Path  # ADAPTERLAB_OUT of the kernels
    log: Path  # the server's stdout + stderr
    process: subprocess.Popen

    def api(self, method, path, timeout=10):
        request = urllib.request.Request(self.url + path, method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log_tail(self, chars=4000):
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no server log)"


def copy_notebooks(root):
    """The notebooks, outputs stripped (as committed), into the server's root directory."""
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.write(nb, root / path.name)


def lab_env(base):
    env = dict(os.environ, ADAPTERLAB_PROFILE="smoke", ADAPTERLAB_OUT=str(base / "out"), HF_HUB_OFFLINE="1",
               PYTHONDONTWRITEBYTECODE="1", TOKENIZERS_PARALLELISM="false",
               # the user's Jupyter and IPython configuration, kernels, settings and workspaces stay out
               JUPYTER_CONFIG_DIR=str(base / "jupyter-config"), JUPYTER_DATA_DIR=str(base / "jupyter-data"),
               JUPYTER_RUNTIME_DIR=str(base / "jupyter-runtime"), IPYTHONDIR=str(base / "ipython"),
               JUPYTERLAB_SETTINGS_DIR=str(base / "lab-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "lab-workspaces"))
    env.pop("MPLBACKEND", None)  # the kernel draws inline, as for a student
    env.pop("JUPYTER_PATH", None)
    for name, settings in LAB_SETTINGS.items():
        path = base / "lab-settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings))
    return env


def start_server(base, env):
    """`jupyter lab` on a free port; returns the Lab once its REST API answers."""
    root = base / "notebooks"
    root.mkdir(exist_ok=True)
    copy_notebooks(root)
    for attempt in range(3):  # the free port can be taken between choosing it and binding it
        port, token = free_port(), secrets.token_hex(16)
        log = base / f"server-{attempt}.log"
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                   "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
                   "--ServerApp.terminals_enabled=False",
                   # a server orphaned by a killed pytest stops itself after 15 idle minutes
                   "--ServerApp.shutdown_no_activity_timeout=900"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")  # CI containers run as root
        with open(log, "wb") as sink:
            process = subprocess.Popen(command, cwd=base, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        lab = Lab(f"http://127.0.0.1:{port}/", token, root, Path(env["ADAPTERLAB_OUT"]), log, process)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline and process.poll() is None:
            try:
                lab.api("GET", "api/status", timeout=5)
                return lab
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)  # polling a server that is starting: nothing to wait on but time
        if process.poll() is None:  # still starting after the timeout
            stop_server(lab)
            pytest.fail(f"jupyter lab did not answer within {SERVER_START_TIMEOUT} s:\n{lab.log_tail()}")
        if not re.search(r"already in use|no available port", lab.log_tail()):
            pytest.fail(f"jupyter lab exited {process.returncode} at start:\n{lab.log_tail()}")
    pytest.fail(f"jupyter lab found no free port in 3 tries:\n{lab.log_tail()}")


def kill_group(process, signum):
    try:
        os.killpg(process.pid, signum)  # its own session (start_new_session): only what it started
    except ProcessLookupError:
        pass


def stop_server(lab):
    """Shut the kernels down, then the server; kill whatever of it is left (by pid, only its own)."""
    try:
        import psutil

        started = psutil.Process(lab.process.pid).children(recursive=True)  # kernels run in their own session
    except Exception:
        started = []
    if lab.process.poll() is None:
        try:
            for kernel in lab.api("GET", "api/kernels"):
                lab.api("DELETE", f"api/kernels/{kernel['id']}", timeout=30)
            lab.api("POST", "api/shutdown")
        except Exception:
            pass  # stopped by signal below
        try:
            lab.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            kill_group(lab.process, signal.SIGTERM)
            try:
                lab.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                kill_group(lab.process, signal.SIGKILL)
                lab.process.wait()
    for child in started:
        try:
            if child.is_running():
                child.kill()
        except Exception:
            pass


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A running JupyterLab over a copy of the notebooks, kernels in the smoke profile; stopped at the end."""
    base = tmp_path_factory.mktemp("lab")
    server = start_server(base, lab_env(base))
    try:
        yield server
    finally:
        stop_server(server)


# ---------------------------------------------------------------- the browser

@pytest.fixture(scope="module")
def lab_browser(chromium):  # noqa: F811
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is a dependency: `make setup`")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=BROWSER_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Run:
    """A notebook opened in its own browser page, after Run All Cells."""
    name: str
    page: object  # playwright Page
    panel: object  # Locator of its notebook panel
    shots: Path  # where a failing check leaves its screenshot
    problems: list  # script errors on the page
    failure: str = ""  # why Run All did not finish (empty: it did)

    def fail(self, message):
        shot = self.shots / f"{Path(self.name).stem}.png"
        try:
            self.page.screenshot(path=str(shot), full_page=True)
            message += f"\n(screenshot: {shot})"
        except Exception:
            pass
        pytest.fail(f"{self.name}: {message}")


def open_notebook(context, lab, name, shots):
    """Open the notebook in a fresh page and workspace, wait for its kernel, click Run > Run All Cells."""
    page = context.new_page()
    run = Run(name, page, page.locator(".jp-NotebookPanel"), shots, [])
    page.on("pageerror", lambda e: run.problems.append(f"script error: {e}"))
    try:
        page.goto(f"{lab.url}lab/workspaces/{Path(name).stem}/tree/{name}?reset&token={lab.token}")
        # the kernel is up and connected: the status bar says "Python 3 (ipykernel) | Idle" (the toolbar's
        # execution indicator reads "idle" before that, and Run All then silently runs nothing)
        page.locator(".jp-StatusBar-Widget").get_by_text(re.compile(r"\(ipykernel\) \| Idle$")).wait_for()
        page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-item", has=page.locator(".lm-Menu-itemLabel",
                                                       has_text=re.compile(r"^Run All Cells$"))).click()
    except Exception as exc:  # reported by the test that needs this notebook, with a screenshot
        run.failure = f"could not open it and click Run All Cells: {exc}\nserver log:\n{lab.log_tail()}"
    return run


def wait_until_ran(run, lab):
    if run.failure:
        return
    try:
        run.page.wait_for_function(RUN_ALL_DONE, arg=[CODE_PROMPTS, ERROR_OUTPUTS], polling=500,
                                   timeout=RUN_ALL_TIMEOUT)
    except Exception as exc:
        prompts = [p.strip() for p in run.panel.locator(CODE_PROMPTS).all_inner_texts()]
        run.failure = (f"Run All Cells did not finish in {RUN_ALL_TIMEOUT // 1000} s ({type(exc).__name__}); prompts "
                       f"{prompts}; {run.problems}\nserver log:\n{lab.log_tail()}")


@pytest.fixture(scope="module")
def ran(lab, lab_browser, tmp_path_factory):
    """{notebook name: Run}: the explorer notebooks opened and Run All started in all of them at once
    (two kernels, two cores: the smoke training is single-threaded), then waited for. Requests that
    leave the server are blocked. At the end the pages close and the kernels are shut down."""
    shots = tmp_path_factory.mktemp("lab-screenshots")
    context = lab_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT)
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith((lab.url, "data:", "blob:"))
                  else route.abort())
    try:
        runs = {name: open_notebook(context, lab, name, shots) for name in EXPLORER_NOTEBOOKS}
        for run in runs.values():
            wait_until_ran(run, lab)
        yield runs
    finally:
        context.close()
        try:
            for session in lab.api("GET", "api/sessions"):
                lab.api("DELETE", f"api/sessions/{session['id']}", timeout=30)
        except Exception:
            pass  # the server's teardown stops what is left


# ---------------------------------------------------------------- checking what JupyterLab shows

def errors_shown(locator):
    """The text of every output under `locator` that shows a traceback or an explorer's 'cannot draw'."""
    problems = [t[-3000:] for t in locator.locator(ERROR_OUTPUTS).all_inner_texts() if "Traceback" in t]
    problems += [t for t in locator.locator(".jp-OutputArea-output").all_inner_texts() if "cannot draw" in t]
    return problems


def check_ran_cleanly(run):
    if run.failure:
        run.fail(run.failure)
    problems = errors_shown(run.panel)
    if problems:
        run.fail("cells show errors:\n" + "\n---\n".join(problems))
    prompts = [p.strip() for p in run.panel.locator(CODE_PROMPTS).all_inner_texts()]
    if not prompts or not all(re.fullmatch(r"\[\d+\]:", p) for p in prompts):
        run.fail(f"not every code cell ran: {prompts}")
    if run.problems:
        run.fail(f"JupyterLab reported {run.problems}")


def explorer_cell(run, label):
    """The code cell whose output holds the explorer with a control labelled `label`, once it drew."""
    cell = run.panel.locator(".jp-CodeCell").filter(has=run.page.locator(".widget-label", has_text=label))
    try:
        cell.locator(EXPLORER_FIGURE).wait_for()
    except Exception as exc:
        run.fail(f"no explorer with a {label!r} control showing a figure ({type(exc).__name__})")
    return cell


def figure_src(run, cell):
    src = cell.locator(EXPLORER_FIGURE).get_attribute("src")
    if not (src and src.startswith("data:image/png;base64,")):
        run.fail(f"the explorer's figure is not a PNG image: {str(src)[:80]}")
    return src


def wait_for_new_figure(run, cell, before, what):
    """The explorer figure's src once it differs from `before` (the redraw after `what`)."""
    try:
        handle = run.page.wait_for_function(NEW_FIGURE, arg=[cell.element_handle(), EXPLORER_FIGURE, before],
                                            timeout=REDRAW_TIMEOUT)
    except Exception as exc:
        run.fail(f"the explorer's figure did not change after {what} ({type(exc).__name__}); {errors_shown(cell)}")
    problems = errors_shown(cell)
    if problems:
        run.fail(f"after {what} the explorer shows errors: {problems}")
    return handle.json_value()


# ---------------------------------------------------------------- the tests

@pytest.mark.slow
def test_layer_removal_explorer_redraws_in_jupyterlab(ran):
    run = ran["04_layer_removal.ipynb"]
    check_ran_cleanly(run)
    cell = explorer_cell(run, "first layer removed")
    info = cell.locator(".widget-html")  # the span's numbers above the heatmap
    first_figure, first_info = figure_src(run, cell), info.inner_text()

    cell.get_by_role("button", name="change vs. no removal").click()
    toggled = wait_for_new_figure(run, cell, first_figure, "clicking the colour toggle 'change vs. no removal'")

    slider = cell.locator(".widget-slider", has=run.page.locator(".widget-label", has_text="first layer removed"))
    slider.locator(".noUi-handle").press("ArrowRight")  # one layer up: the outlined span shrinks
    wait_for_new_figure(run, cell, toggled, "moving the 'first layer removed' slider")
    if info.inner_text() == first_info:
        run.fail(f"the span's numbers did not follow the slider: still {first_info!r}")
    check_ran_cleanly(run)


@pytest.mark.slow
def test_init_scale_explorer_redraws_in_jupyterlab(ran):
    run = ran["05_init_scale.ipynb"]
    check_ran_cleanly(run)
    cell = explorer_cell(run, "seeds")
    before = figure_src(run, cell)
    seeds = cell.locator(".widget-select-multiple", has=run.page.locator(".widget-label", has_text="seeds"))
    options = seeds.locator("option").all_inner_texts()
    if len(options) < 2:
        run.fail(f"the smoke profile sweeps two seeds or more, yet the explorer offers {options}")
    seeds.locator("select").select_option(label=options[0])  # that seed alone
    wait_for_new_figure(run, cell, before, f"selecting seed {options[0]} alone")
    check_ran_cleanly(run)
