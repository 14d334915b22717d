"""Inference latency: what serving one adapted model costs per forward pass.

Houlsby's adapters and AdapterDrop were designed around serving cost, and the baselines differ in it:
prompt tuning makes every sequence n tokens longer; LoRA can be merged into the weights (lora.merged)
and then costs what the base model costs; Intrinsic-SAID, once its offsets are computed, costs the
same. Training memory is measured elsewhere (train.PeakMemory); this module times forward passes.

    with torch.no_grad(): seconds = inference_latency(model, batch_size=32, length=64)

The median of `repeats` timed passes after `warmup` untimed ones: the first passes pay for
allocation and kernel selection, and the median ignores the odd pass another process slowed.
"""
import statistics
import time

import torch


def dummy_batch(model, batch_size, length, seed=0):
    """Random token ids (no padding) of shape (batch_size, length), plus what the model needs besides."""
    generator = torch.Generator().manual_seed(seed)
    vocab = model.get_input_embeddings().weight.shape[0]
    ids = torch.randint(0, vocab, (batch_size, length), generator=generator)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if getattr(model.config, "is_encoder_decoder", False):  # one decoder step: scoring a one-token answer
        start = model.config.decoder_start_token_id or 0
        batch["decoder_input_ids"] = torch.full((batch_size, 1), start, dtype=torch.long)
    return batch


def inference_latency(model, batch_size, length=128, repeats=20, warmup=3, seed=0):
    """Median seconds of one forward pass (eval mode, no gradients) on a batch of random tokens."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got repeats={repeats}, warmup={warmup}")
    device = next(model.parameters()).device
    batch = {k: v.to(device) for k, v in dummy_batch(model, batch_size, length, seed).items()}
    was_training = model.training
    model.eval()
    times = []
    try:
        with torch.no_grad():
            for i in range(warmup + repeats):
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                start = time.perf_counter()
                model(**batch)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                if i >= warmup:
                    times.append(time.perf_counter() - start)
    finally:
        model.train(was_training)
    return statistics.median(times)


SERVING_BATCHES = (1, 32)  # one request at a time, and a batch as a busy server fills it


def serving_latency(model, length, batches=SERVING_BATCHES, repeats=10):
    """What a trained run costs to serve: {"1": s, "32": s} median seconds per forward pass at each batch
    size on `length` tokens (prompt tuning adds its prompt inside the model, so it pays for it here), and,
    for a model with LoRA updates, the same again with them merged into the weights under "merged_1",
    "merged_32" (lora.merged: the base model's cost)."""
    from ..methods.lora import lora_layers, merged  # lora: only for models that have it

    out = {str(b): inference_latency(model, b, length, repeats=repeats) for b in batches}
    if lora_layers(model):
        with merged(model):
            out |= {f"merged_{b}": inference_latency(model, b, length, repeats=repeats) for b in batches}
    return out
