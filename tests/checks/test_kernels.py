"""The numeric checks once more with the CPU's AVX2 kernels forced.

A float32 comparison that passes with one kernel can fail with another: kernels add the terms of a
matrix product in different orders, and which elements cross a tolerance depends on that order.
The checks compare in float64 (or with tolerances derived from magnitudes and term counts); this
file proves it by rerunning them, in a subprocess, with PyTorch, MKL and oneDNN limited to AVX2, so
an AVX-512/AMX machine also tests what an AVX2-only machine computes (and vice versa, the normal
run covers the wider kernels there).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
# the tests whose assertions compare computed numbers (not counts or files)
NUMERIC_TESTS = [
    "tests/nn/test_layers.py",
    "tests/methods/test_inject.py::test_bert_adapter_follows_the_sublayer_dropout_as_in_adapter_bert",
    "tests/methods/test_inject.py::test_t5_adapter_comes_before_dropout_as_in_the_compacter_code",
    "tests/methods/test_inject.py::test_disabling_some_layers_differs_from_disabling_none",
    "tests/training/test_backbones.py::test_default_backbone_pooler_passes_cls_through_tanh",
    "tests/experiments/test_experiments.py::test_cached_and_naive_span_evaluation_agree",
]
TEACHING_NOTEBOOKS = "01,02"  # they build layers by hand and check them against the package

pytestmark = pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"),
                                reason="AVX2 kernels exist only on x86 CPUs with AVX2")


def run_forced(command, timeout=600):
    env = dict(os.environ, HF_HUB_OFFLINE="1", **AVX2)
    env.pop("ADAPTERLAB_OUT", None)
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_forcing_reaches_torch():
    done = run_forced([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"])
    assert done.stdout.strip() == "AVX2", done.stdout + done.stderr


@pytest.mark.slow
def test_numeric_unit_tests_pass_with_avx2_kernels():
    done = run_forced([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=",
                       *NUMERIC_TESTS])
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]


@pytest.mark.slow
def test_teaching_notebooks_pass_with_avx2_kernels(tmp_path):
    done = run_forced([sys.executable, "-m", "adapterlab", "regenerate", "--profile", "smoke", "--fresh",
                       "--out", str(tmp_path), "--only", TEACHING_NOTEBOOKS, "--jobs", "2"])
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
