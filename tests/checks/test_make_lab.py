"""`make lab` starts JupyterLab also as root (containers, course servers), where JupyterLab refuses
to start unless given --allow-root; for anyone else the flag is left out. Checked with `make -n`
(prints the command, runs nothing), the user id set through the Makefile's UID variable."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def lab_command(uid):
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    done = subprocess.run(["make", "-n", "-s", "lab", f"UID={uid}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "jupyter lab" in line]
    return line.split()


def test_make_lab_allows_root_only_as_root():
    assert "--allow-root" in lab_command(0)
    assert "--allow-root" not in lab_command(1000)
    assert lab_command(0)[-1] == lab_command(1000)[-1] == "notebooks/"
