"""Run every benchmark section, then write benchmarks/results.json and benchmarks/RESULTS.md.

    python benchmarks/run_all.py [--main-python .venv/bin/python] [--only 1,2,3,4,5] [--report-only]

Section 0 checks, before any timing, that adapterlab and AdapterHub compute the same function (same
logits on copied weights, every side-by-side method): if it fails, nothing is timed and the run exits 1.
Sections 1 and 2 need AdapterHub, so they run in benchmarks/.venv-adapterhub (transformers 4.57);
sections 3-5 are about adapterlab alone and run in the main venv. Each section is a separate
process that prints its results as one JSON line; raw section outputs are kept in
benchmarks/raw/ so the report can be rebuilt without re-running (--report-only).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RAW = HERE / "raw"
AH_PY = HERE / ".venv-adapterhub" / "bin" / "python"

# the kernels an AVX2-only CPU runs (bf16 speed depends on them; common.FORCE_AVX2 has the same three)
FORCE_AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
SECTIONS = {  # number -> (file, which python, extra arguments[, extra environment])
    "0": ("bench_training.py", "adapterhub", ["--check-only"]),  # same logits on copied weights; must pass
    "1": ("bench_training.py", "adapterhub", []),
    "2": ("bench_phm_layer.py", "adapterhub", []),
    "2-1thread": ("bench_phm_layer.py", "adapterhub", ["--threads", "1"]),
    "3": ("bench_limits.py", "main", []),
    # bf16 vs fp32 once more as an AVX2-only machine computes it (fewer rounds: it can be slow there)
    "3-avx2": ("bench_limits.py", "main", ["--only", "bf16", "--bf16-rounds", "2"], FORCE_AVX2),
    "4": ("bench_heatmap.py", "main", []),
    "5": ("bench_memory.py", "main", []),
    "6": ("bench_adapterdrop.py", "main", []),  # AdapterDrop with and without the lower LayerNorms trained
    "7": ("bench_workers.py", "main", []),  # the sweep's CPU workers: one run per core vs one run on all cores
    "8": ("bench_lora.py", "main", []),  # LoRA vs PEFT on equal function; merged/unmerged serving latency
    "9": ("bench_predict.py", "main", []),  # `predict` from raw text vs the suite's own evaluation loop
}
TARGETS = {"houlsby_vs_adapterhub": 1.1, "compacter_vs_adapterhub": 1.2, "lphm_layer_vs_materialized": 1.3,
           "train_vs_inference": 0.45, "heatmap_vs_naive": 1.7}


def run_section(name, python):
    script, _, extra, *forced = SECTIONS[name]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONWARNINGS="ignore",
               **(forced[0] if forced else {}))
    start = time.perf_counter()
    print(f"== section {name}: {script} {' '.join(extra)} ({python})", flush=True)
    proc = subprocess.run([str(python), str(HERE / script), *extra], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    for line in proc.stderr.splitlines():
        if not any(noise in line for noise in ("Warning", "warn(", "activated for the forward")):
            print("   ", line[:300], flush=True)
    if proc.returncode != 0:
        result = {"error": f"exit {proc.returncode}", "stderr_tail": proc.stderr[-3000:]}
    else:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    RAW.mkdir(exist_ok=True)
    (RAW / f"section-{name}.json").write_text(json.dumps(result, indent=1))
    print(f"   done in {wall:.0f} s", flush=True)
    return result


def load_raw():
    return {p.stem.removeprefix("section-"): json.loads(p.read_text()) for p in sorted(RAW.glob("section-*.json"))}


def headline(sections):
    """The five results.json keys: a ratio plus the raw medians it comes from (or a skip/failure note)."""
    out = {}
    s1 = sections.get("1", {}).get("methods", {})
    for key, method in (("houlsby_vs_adapterhub", "houlsby"), ("compacter_vs_adapterhub", "compacter")):
        r = s1.get(method)
        out[key] = None if r is None else {
            "ratio": r["ratio"], "iqr": r["ratio_iqr"], "examples_per_s": r["examples_per_s"],
            "median_step_s": r["median_step_s"], "target": TARGETS[key]}
    for key, method in (("compacterpp_vs_adapterhub", "compacter++"), ("pfeiffer_vs_adapterhub", "pfeiffer")):
        if method in s1:
            r = s1[method]
            out[key] = {"ratio": r["ratio"], "iqr": r["ratio_iqr"],
                        "examples_per_s": r["examples_per_s"], "median_step_s": r["median_step_s"]}
    # The layer calls take milliseconds: with 2 threads on a busy shared 2-core machine they measure
    # the scheduler (a parked thread stalls every op's barrier), so the headline uses the 1-thread
    # run when there is one and keeps the 2-thread ratio beside it.
    two = sections.get("2", {}).get("lphm_layer_vs_materialized")
    one = sections.get("2-1thread", {}).get("lphm_layer_vs_materialized")
    s2 = one or two
    out["lphm_layer_vs_materialized"] = None if s2 is None else {
        **s2, "threads": 1 if one else sections["2"]["threads"],
        "ratio_2_threads": None if two is None else two["ratio"], "target": TARGETS["lphm_layer_vs_materialized"]}
    s3 = sections.get("3", {})
    core = s3.get("core", {}).get("per_side", {})
    if s3.get("train_vs_inference"):
        out["train_vs_inference"] = {
            "ratio": s3["train_vs_inference"]["fraction"], "iqr": s3["train_vs_inference"]["iqr"],
            "inference_examples_per_s": core["inference"]["examples_per_s"],
            "houlsby_train_examples_per_s": core["houlsby"]["examples_per_s"],
            "median_s": {"inference": core["inference"]["median_s"], "houlsby_train": core["houlsby"]["median_s"]},
            "target": TARGETS["train_vs_inference"]}
    else:
        out["train_vs_inference"] = None
    s4 = sections.get("4", {})
    if "heatmap_vs_naive" in s4:
        out["heatmap_vs_naive"] = {**s4["heatmap_vs_naive"], "median_s": s4["median_s"], "examples": s4["examples"],
                                   "target": TARGETS["heatmap_vs_naive"]}
    else:
        out["heatmap_vs_naive"] = {"skipped": s4["skipped"]} if "skipped" in s4 else None
    for key, value in out.items():
        if isinstance(value, dict) and "ratio" in value and key in TARGETS:
            value["met"] = value["ratio"] >= TARGETS[key]
    return out


def fmt(x, digits=2):
    return "–" if x is None else f"{x:.{digits}f}"


def report(results):
    """RESULTS.md: the numbers, and what they mean. The prose that explains them lives in explain.md."""
    s, h = results["sections"], results["headline"]
    lines = ["# Benchmark results", "",
             f"Generated by `make bench` on {results['date']} in {results['wall_s'] / 60:.1f} min. "
             "Not tests: nothing here has a threshold in the test suite.", "",
             "## Machine", "",
             f"- CPU: {results['machine']['cpu']}, {results['machine']['cores']} cores (see the load averages below: "
             "above the core count, other jobs shared them)",
             f"- torch threads: {results['threads']} (set explicitly in every section: `torch.set_num_threads`)",
             f"- torch CPU capability: {results['machine'].get('torch_cpu_capability')}; CPU flags: "
             + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in results['machine'].get('cpu_flags', {}).items()),
             f"- GPU: {results['machine']['cuda'] or 'none on this machine (GPU columns left empty)'}",
             f"- sections 1-2 (AdapterHub venv): {json.dumps(s.get('1', {}).get('versions', {}))}",
             f"- sections 3-5 (main venv): {json.dumps(s.get('3', {}).get('versions', {}))}",
             "- load average (1 min) at start/end of each section: " + ", ".join(
                 f"§{k} {fmt(v.get('loadavg_start'), 1)}/{fmt(v.get('loadavg_end'), 1)}"
                 for k, v in s.items() if "loadavg_start" in v),
             "", "Method: each comparison warms up, then alternates the sides (A B A B ...) and reports the median "
             "over rounds of the per-round ratio (so slow drift in the machine's load cancels), with the "
             "interquartile range (IQR) as the spread.", "",
             "## Headline (results.json keys)", "",
             "| key | ratio (median) | IQR | target | met | raw medians |", "|---|---|---|---|---|---|"]
    for key in ("houlsby_vs_adapterhub", "pfeiffer_vs_adapterhub", "compacter_vs_adapterhub", "compacterpp_vs_adapterhub",
                "lphm_layer_vs_materialized", "train_vs_inference", "heatmap_vs_naive"):
        v = h.get(key)
        if not v or "ratio" not in v:
            lines.append(f"| `{key}` | – | – | {TARGETS.get(key, '–')} | – | {(v or {}).get('skipped', 'not run')} |")
            continue
        if "examples_per_s" in v:
            raw = ", ".join(f"{k} {x:.1f} ex/s ({v['median_step_s'][k]:.2f} s/step)" for k, x in v["examples_per_s"].items())
        elif "median_s_per_call" in v:
            raw = f"at {v['at']}, {v['threads']} thread(s) (2 threads: {fmt(v.get('ratio_2_threads'), 2)}): " + ", ".join(f"{k} {x * 1e3:.2f} ms" for k, x in v["median_s_per_call"].items())
        elif key == "heatmap_vs_naive":
            raw = (f"all spans on {v['examples']} tweets: cached {v['median_s']['cached']:.1f} s, "
                   f"naive {v['median_s']['naive']:.1f} s")
        else:
            raw = (f"inference {v['inference_examples_per_s']:.1f} ex/s, Houlsby training "
                   f"{v['houlsby_train_examples_per_s']:.1f} ex/s")
        met = {True: "yes", False: "**no**"}.get(v.get("met"), "–")
        lines.append(f"| `{key}` | {fmt(v['ratio'], 3)} | {fmt(v.get('iqr'), 3)} | {TARGETS.get(key, '–')} | {met} | {raw} |")

    if "checks" in s.get("0", {}):
        lines += ["", "## 0. Same function before timing: logits on copied weights (eval, fp32)", "",
                  f"Every trainable tensor of adapterlab's model gets noise of std {s['0']['perturb_std']} (so the "
                  "adapters matter), all parameters are copied into the AdapterHub model by name, and both "
                  f"run the same padded batch. Tolerance: {s['0']['rtol']:.0e} × max(1, largest logit) (fp32 "
                  "rounding is ~1e-6; a mismatched config, e.g. the stock Compacter++ config, differs by ~0.5).", "",
                  "| method | placement | AdapterHub config | max abs logit diff | tolerance | adapters move logits by | passed |",
                  "|---|---|---|---|---|---|---|"]
        for m, r in s["0"]["checks"].items():
            if "error" in r:
                lines.append(f"| {m} | | | | | | **no**: {r['error'][:200]} |")
                continue
            lines.append(f"| {m} | {' + '.join(r['placement'])} | {r['adapterhub_config']} | {r['max_abs_diff']:.1e} | "
                         f"{r['tolerance']:.0e} | {r['adapter_effect']:.2f} | {'yes' if r['passed'] else '**no**'} |")
    if "1" in s and "methods" in s["1"]:
        lines += ["", "## 1. Training step, adapterlab vs AdapterHub (batch 32, sequence 128, fp32, CPU)", "",
                  "| method | adapterlab ex/s | AdapterHub ex/s | ratio | IQR | trainable (ours / theirs) | same outputs |",
                  "|---|---|---|---|---|---|---|"]
        for m, r in s["1"]["methods"].items():
            c = r["check"]
            lines.append(f"| {m} | {r['examples_per_s']['adapterlab']:.1f} | {r['examples_per_s']['adapterhub']:.1f} | "
                         f"{r['ratio']:.3f} | {r['ratio_iqr']:.3f} | {c['trainable_adapterlab']:,} / {c['trainable_adapterhub']:,} "
                         f"({'equal' if c['trainable_equal'] else 'DIFFERENT'}) | {'yes' if c['same_output_kind'] else 'no'} |")
        lines += ["", "AdapterHub configs used: " + "; ".join(
            f"{m}: `{r['config']['adapterhub']}`" for m, r in s["1"]["methods"].items())]
    if "2" in s and "rows" in s["2"]:
        for label, sec in (("2 threads", s["2"]), ("1 thread", s.get("2-1thread"))):
            if not sec or "rows" not in sec:
                continue
            lines += ["", f"## 2. PHM layer forward+backward, {sec['tokens']} tokens, rank 1 ({label})", "",
                      "ms per forward+backward (median); speed ratios > 1 mean the first-named side is faster.", "",
                      "| in→out | n | dense | factored | materialized | AdapterHub | factored vs AH | factored vs materialized | dense vs factored |",
                      "|---|---|---|---|---|---|---|---|---|"]
            for r in sec["rows"]:
                t = r["median_s_per_call"]
                lines.append(f"| {r['in']}→{r['out']} | {r['n']} | {t['dense'] * 1e3:.2f} | {t['factored'] * 1e3:.2f} | "
                             f"{t['materialized'] * 1e3:.2f} | {t['adapterhub'] * 1e3:.2f} | {r['factored_vs_adapterhub']:.2f} | "
                             f"{r['factored_vs_materialized']:.2f} | {r['dense_vs_factored']:.2f} |")
    s3 = s.get("3", {})
    if "core" in s3 and "per_side" in s3["core"]:
        c = s3["core"]
        lines += ["", "## 3. Against the limit (adapterlab, main venv, batch 32, sequence 128)", "",
                  "| side | median s/step | IQR | ex/s | fraction of inference speed | speed vs full FT |",
                  "|---|---|---|---|---|---|"]
        for side, v in c["per_side"].items():
            frac = c["fraction_of_inference"].get(side, {}).get("fraction")
            vs_full = c["speedup_vs_full"].get(side, {}).get("ratio")
            lines.append(f"| {side} | {v['median_s']:.2f} | {v['iqr_s']:.2f} | {v['examples_per_s']:.1f} | "
                         f"{fmt(frac, 3) if side != 'inference' else '1'} | {fmt(vs_full, 2) if side not in ('inference', 'full') else ''} |")
        lines += ["", "What lowers the cost (speed ratio > 1 = the change helps):", "",
                  "| change | ratio | IQR | raw medians (s per call) | notes |", "|---|---|---|---|---|"]
        for part, key, note in (
                ("bf16", "bf16_speedup", "Houlsby, batch 32 × 64 (all rows in the bf16 table below)"),
                ("compile", "compile_speedup", "every adapter `torch.compile`d"),
                ("attn_dropout", "speedup_without_attention_dropout", "changes regularisation"),
                ("bucketing", "bucketing_speedup", "tweet-like lengths")):
            v = s3.get(part, {})
            if "error" in v:
                lines.append(f"| {part} | – | – | – | failed: {v['error'][:120]} |")
                continue
            if key not in v:
                continue
            raw = ", ".join(f"{k} {x['median_s']:.2f}" for k, x in v["per_side"].items())
            extra = f"; first compiled step {v['first_step_with_compile_s']:.0f} s" if part == "compile" else ""
            if part == "bucketing":
                extra = f"; lengths mean {v['lengths']['mean']:.0f}, max {v['lengths']['max']}"
            lines.append(f"| {part} | {v[key]['ratio']:.3f} | {v[key]['iqr']:.3f} | {raw} | {note}{extra} |")
    lines += bf16_table(s)
    s4 = s.get("4", {})
    lines += ["", "## 4. Layer-removal heatmap: cached prefix vs naive", ""]
    if "heatmap_vs_naive" in s4:
        r, ev = s4["heatmap_vs_naive"], s4["block_evaluations_per_batch"]
        lines += [f"All {s4['spans']} spans of {s4['layers']} blocks plus the unablated model, {s4['examples']} "
                  f"validation tweets in batches of {s4['batch_size']}: cached {s4['median_s']['cached']:.2f} s, "
                  f"naive {s4['median_s']['naive']:.2f} s, speed-up {r['ratio']:.2f} (IQR {r['iqr']:.2f}) against "
                  f"{ev['naive'] / ev['cached']:.2f} expected from the block count ({ev['cached']} vs {ev['naive']} "
                  f"block evaluations per batch). Largest logit difference between the two: "
                  f"{s4['max_abs_logit_diff_cached_vs_naive']:.1e} (removing every adapter moves the logits by up "
                  f"to {s4['max_abs_logit_change_all_removed']:.3f})."]
    else:
        lines.append(s4.get("skipped", json.dumps({k: v for k, v in s4.items() if k != "wall_s"})))
    s5 = s.get("5", {})
    if "methods" in s5:
        core = s3.get("core", {})
        lines += ["", "## 5. Memory (CPU, batch 32, sequence 128, peak RSS during 3 training steps)", "",
                  "| method | trainable | peak RSS MB | training peak MB (over the loaded model) | saving vs full | step time vs full |",
                  "|---|---|---|---|---|---|"]
        for m, r in s5["methods"].items():
            saving = s5["saving_vs_full"].get(m)
            speed = core.get("speedup_vs_full", {}).get(m, {}).get("ratio")
            tsave = "" if speed is None else f"{100 * (1 - 1 / speed):.0f}% less time"
            lines.append(f"| {m} | {r['trainable']:,} | {r['peak_rss_mb']:.0f} | {r['training_peak_mb']:.0f} | "
                         f"{'' if saving is None else f'{100 * saving:.0f}%'} | {tsave} |")
        lines += ["", f"GPU: {s5.get('gpu')}"]
    s6 = s.get("6", {})
    if "speedup_lower_frozen" in s6:
        r, c = s6["speedup_lower_frozen"], s6["check"]
        lines += ["", f"## 6. AdapterDrop: lower LayerNorms frozen vs trained (batch {s6['batch']}, sequence {s6['seq']})",
                  "", f"Adapters in the top {c['blocks'] - c['dropped_blocks']} of {c['blocks']} blocks; the same "
                  f"logits on both sides (checked: {c['same_logits']}); trainable "
                  + ", ".join(f"{k} {v:,}" for k, v in c["trainable"].items())
                  + f". Step-time speed-up from `train_lower_layernorms=False` (backward stops at the first adapted "
                  f"block): {r['ratio']:.2f} (IQR {r['iqr']:.2f})."]
    s7 = s.get("7", {})
    if "per_core_vs_all_threads" in s7:
        lines += ["", f"## 7. Training throughput: {s7['cores']} runs of 1 thread side by side vs 1 run of "
                  f"{s7['cores']} threads (default profile's step)",
                  "", "Houlsby m=64 on MiniLM-L6, batch 32 airline tweets; the same first loss on both sides (checked). "
                  "Examples per second of the whole machine, B/A per round: "
                  + ", ".join(f"{x:.2f}" for x in s7["ratios"]) + f"; median {s7['per_core_vs_all_threads']:.2f} "
                  f"(timed windows overlapping at least {100 * s7['min_overlap']:.0f}%). This is why "
                  "`regenerate --workers` / `sweep --max-parallel` share the cores out on CPU."
                  + (f" ({s7['note']}.)" if s7.get("note") else "")]
    s8 = s.get("8", {})
    if "ratio" in s8:
        c = s8["check"]
        lines += ["", f"## 8. LoRA, adapterlab vs PEFT {s8['versions'].get('peft', '')} (r = 8, alpha = 8, query + value; "
                  f"batch {s8['batch']}, sequence {s8['seq']})", "",
                  f"Same function first: max |logit diff| {c['max_abs_diff']:.1e} on copied weights (tolerance "
                  f"{c['tolerance']:.0e}); trainable {c['trainable_adapterlab']:,} vs {c['trainable_peft']:,}. "
                  f"Training step: adapterlab {s8['examples_per_s']['adapterlab']:.1f} ex/s, PEFT "
                  f"{s8['examples_per_s']['peft']:.1f} ex/s, ratio {s8['ratio']:.3f} (IQR {s8['ratio_iqr']:.3f}).", "",
                  "| batch | unmerged ms | merged ms |", "|---|---|---|"]
        lines += [f"| {b} | {r['unmerged'] * 1e3:.1f} | {r['merged'] * 1e3:.1f} |" for b, r in s8["latency_s"].items()]
        lines += ["", f"Median forward pass over {s8['latency_repeats']} repeats at sequence {s8['latency_seq']}; "
                  f"merging moves the logits by {c['max_abs_diff_merged_vs_unmerged']:.1e} (one float32 rounding)."]
    elif s8:
        lines += ["", "## 8. LoRA, adapterlab vs PEFT", "", f"failed: {s8.get('error')} {s8.get('stderr_tail', '')[-300:]}"]
    s9 = s.get("9", {})
    if "predict_vs_evaluate" in s9:
        r, eps = s9["predict_vs_evaluate"], s9["examples_per_second"]
        lines += ["", f"## 9. Serving: `predict` vs the evaluation loop ({s9['examples']:,} test tweets, batch {s9['batch']})",
                  "", f"Same function first: predicted classes equal the evaluation's argmax on every tweet, "
                  f"probabilities its softmax ({'passed' if s9['check']['passed'] else 'FAILED'}). `predict` from "
                  f"raw text (tokenising timed) {eps['predict']:.1f} ex/s, the evaluation loop on pre-encoded "
                  f"batches {eps['evaluate']:.1f} ex/s: ratio {r['ratio']:.3f} (IQR {r['iqr']:.3f}), target "
                  f"{s9['target']}: {'met' if s9['met'] else '**not met**'}. Measured on {s9['machine']['cpu']} "
                  f"({s9['machine']['torch_cpu_capability']}), {s9['threads']} threads, load average {s9['loadavg']}."]
    elif s9:
        lines += ["", "## 9. Serving: `predict` vs the evaluation loop", "",
                  f"failed: {s9.get('error')} {s9.get('stderr_tail', '')[-300:]}"]
    explain = HERE / "explain.md"
    if explain.exists():
        lines += ["", explain.read_text().strip()]
    return "\n".join(lines) + "\n"


def bf16_rows(section):
    return (section or {}).get("bf16", {}).get("rows", [])


def bf16_table(s):
    """bf16 autocast vs fp32 training, as measured with this machine's kernels and with AVX2 forced."""
    runs = [(s.get("3", {}), "this machine's kernels"), (s.get("3-avx2", {}), "AVX2 kernels forced")]
    if not any(bf16_rows(sec) for sec, _ in runs):
        return []
    lines = ["", "### bf16 autocast vs fp32 training (batch 32)", "",
             "Separate identical models, alternating steps; before timing, bf16's logits are checked against "
             "fp32's on the same weights (bound: 10% of the largest logit + 0.001, from bf16's 8-bit mantissa).",
             "", "| kernels | CPU capability | method | sequence | fp32 ex/s | bf16 ex/s | bf16 speed-up | IQR | "
             "max logit diff |", "|---|---|---|---|---|---|---|---|---|"]
    for sec, label in runs:
        capability = sec.get("machine", {}).get("torch_cpu_capability", "?")
        for r in bf16_rows(sec):
            p = r["per_side"]
            lines.append(f"| {label} | {capability} | {r['method']} | {r['seq']} | {p['fp32']['examples_per_s']:.1f} | "
                         f"{p['bf16_autocast']['examples_per_s']:.1f} | {r['bf16_speedup']['ratio']:.2f} | "
                         f"{r['bf16_speedup']['iqr']:.2f} | {r['max_abs_logit_diff']:.1e} |")
        if "error" in sec.get("bf16", {}):
            lines.append(f"| {label} | {capability} | failed: {sec['bf16']['error'][:120]} | | | | | | |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--main-python", default=sys.executable)
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--report-only", action="store_true", help="rebuild results.json/RESULTS.md from benchmarks/raw/")
    args = ap.parse_args()
    start = time.perf_counter()
    if not args.report_only:
        pythons = {"adapterhub": AH_PY, "main": Path(args.main_python).absolute() if os.sep in args.main_python
                   else args.main_python}
        for name in args.only.split(","):
            result = run_section(name, pythons[SECTIONS[name][1]])
            if name == "0" and not result.get("passed"):
                sys.exit("benchmarks: adapterlab and AdapterHub give different logits on the same weights "
                         f"(see {RAW / 'section-0.json'}); the side-by-side timings would compare different "
                         "functions, so nothing is timed")
    sections = load_raw()
    sys.path.insert(0, str(HERE))
    import common  # noqa: E402  (import after the runs: only for machine facts)

    wall = time.perf_counter() - start
    date = time.strftime("%Y-%m-%d %H:%M")
    if args.report_only and (RAW / "wall_s").exists():  # the date and length of the run that made the sections
        wall = float((RAW / "wall_s").read_text())
        date = json.loads((HERE / "results.json").read_text()).get("date", date) if (HERE / "results.json").exists() else date
    else:
        (RAW / "wall_s").write_text(str(wall))
    results = {"date": date, "wall_s": wall, "machine": common.machine(),
               "threads": int(os.environ.get("BENCH_THREADS", "2")), "targets": TARGETS}
    results["headline"] = headline(sections)
    # bf16 autocast / fp32 training throughput per (method, sequence), with this machine's kernels and AVX2's
    results["bf16_vs_fp32"] = {
        label: {f"{r['method']}@{r['seq']}": r["bf16_speedup"]["ratio"] for r in bf16_rows(sections.get(name))}
        | {"torch_cpu_capability": sections.get(name, {}).get("machine", {}).get("torch_cpu_capability")}
        for name, label in (("3", "native"), ("3-avx2", "avx2_forced")) if bf16_rows(sections.get(name))}
    results.update({k: v for k, v in results["headline"].items()})
    results["sections"] = sections
    (HERE / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (HERE / "RESULTS.md").write_text(report(results))
    print(f"wrote {HERE / 'results.json'} and {HERE / 'RESULTS.md'} ({wall / 60:.1f} min)")


if __name__ == "__main__":
    main()
