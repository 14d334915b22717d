"""Chromium for the browser checks (the figures' HTML and the course site): Debian's `chromium`,
installed once per test session when missing and allowed (root with apt-get), else the tests skip."""
import os
import shutil
import subprocess

import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
                  "--run-all-compositor-stages-before-draw", "--virtual-time-budget=5000", "--window-size=1000,700"]
INSTALL = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]


def _find_chromium():
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def chromium():
    """The path of a headless-capable Chromium; installs Debian's `chromium` when missing and allowed."""
    found = _find_chromium()
    if found:
        return found
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("Chromium is not installed and cannot be installed here (needs root and apt-get); "
                    "install Debian's `chromium` package to run the browser checks")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    lock_wait = ["-o", "DPkg::Lock::Timeout=120"]
    log = []
    for command in (["apt-get", "update", "-q"] + lock_wait, INSTALL + lock_wait):
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            pytest.skip(f"installing Chromium timed out: {' '.join(command)}")
        log.append(done.stdout[-1500:] + done.stderr[-1500:])
        if done.returncode != 0:
            pytest.skip(f"could not install Chromium ({' '.join(command)} exited {done.returncode}):\n{log[-1]}")
    found = _find_chromium()
    if not found:
        pytest.skip(f"apt-get installed chromium but no chromium executable is on PATH:\n{log[-1]}")
    return found
