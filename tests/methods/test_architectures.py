"""The architectures neither paper used (DistilBERT, ELECTRA, DeBERTa-v2, GPT-2, Llama), on tiny random
models built from configs: the adapter methods sit at the sublayer outputs the table of module paths names,
start near identity, are exactly the base when disabled, leave the base frozen, count as their formulas say
and round-trip through save/load; LoRA, prompt tuning and BitFit work where the model allows them."""
import pytest
import torch

import adapterlab as al
from adapterlab.methods.inject import adapters, arch_spec

from conftest import build, inputs, output

KINDS = ["distilbert-cls", "electra-cls", "deberta-v2-cls", "gpt2-cls", "gpt2-lm", "llama-cls", "llama-lm"]
ADAPTER_METHODS = ["houlsby", "pfeiffer", "phm", "compacter", "compacter++", "adapterdrop"]
D, M, BLOCKS = 64, 8, 3  # the tiny models' width, the adapters' size, blocks per model (tests/conftest.py)


def settings(name):
    return dict(bottleneck=M, drop_layers=1 if name == "adapterdrop" else 0)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ADAPTER_METHODS)
def test_adapters_start_near_identity_and_disabled_are_exactly_the_base(kind, name):
    batch = inputs(kind)
    base = output(build(kind), batch)
    model = al.adapt(build(kind), name, init_std=1e-6, phm_init="scaled-factors", **settings(name))
    positions = al.method(name, **settings(name)).positions
    stack = next(iter(arch_spec(model).stacks))
    expected = {(stack, i, p) for i in range(BLOCKS) for p in positions if i >= settings(name)["drop_layers"]}
    assert set(adapters(model)) == expected
    # init std 1e-6 on weights of size 64: each adapter adds O(1e-5) of what passes through it, so the output
    # moves by well under 1% of its own scale (a random classifier's logits are O(1e-2), a hidden state's O(1));
    # the next test shows that a large init moves it by far more
    assert (output(model, batch) - base).abs().max() < 1e-2 * base.abs().max()
    with al.adapters_disabled(model, stack=stack):
        assert torch.equal(output(model, batch), base)


@pytest.mark.parametrize("kind", KINDS)
def test_a_large_init_moves_the_output_so_the_adapters_are_in_the_path(kind):
    batch = inputs(kind)
    model = al.adapt(build(kind), "houlsby", bottleneck=M, init_std=1.0)
    base = output(build(kind), batch)
    assert (output(model, batch) - base).abs().max() > 0.1 * base.abs().max()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["houlsby", "compacter++", "lora", "prompt-tuning", "layernorm"])
def test_one_step_moves_only_what_the_method_trains(kind, name):
    torch.manual_seed(0)
    model = al.adapt(build(kind), name, bottleneck=M, init_std=0.1, prompt_tokens=4).train()
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    trained = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model(**inputs(kind)).logits.pow(2).mean().backward()  # any loss of the output (conftest's output: no grad)
    opt.step()
    params = dict(model.named_parameters())
    assert all(torch.equal(params[n], v) for n, v in frozen.items())  # bit-identical
    assert any(not torch.equal(params[n], v) for n, v in trained.items())
    if kind.endswith("-lm"):  # the pretrained output embedding stays frozen with the base
        assert not any(n.startswith("lm_head") for n in trained)


@pytest.mark.parametrize("kind", KINDS)
def test_houlsby_and_lora_counts_match_their_formulas(kind):
    houlsby = al.count_parameters(al.adapt(build(kind), "houlsby", bottleneck=M, train_layernorms=False))
    # per adapter: down D x M + M, up M x D + D; two per block
    assert houlsby.by_group["adapter_weights"] == BLOCKS * 2 * 2 * D * M
    assert houlsby.by_group["adapter_biases"] == BLOCKS * 2 * (M + D)
    lora = al.count_parameters(al.adapt(build(kind), "lora", rank=M))
    targets = arch_spec(build(kind)).lora_targets
    # r x (in + out) per target module: query and value (D -> D each), or GPT-2's fused c_attn (D -> 3D),
    # or Llama's grouped-query v_proj (D -> D / 2 with one key-value head of two)
    per_block = {("query", "value"): 2 * M * 2 * D, ("query_proj", "value_proj"): 2 * M * 2 * D,
                 ("q_lin", "v_lin"): 2 * M * 2 * D, ("c_attn",): M * (D + 3 * D),
                 ("q_proj", "v_proj"): M * 2 * D + M * (D + D // 2)}[targets]
    assert lora.by_group["lora"] == BLOCKS * per_block


@pytest.mark.parametrize("kind", KINDS)
def test_prompt_tuning_prepends_its_vectors(kind):
    model = al.adapt(build(kind), "prompt-tuning", prompt_tokens=4)
    # prompt vectors are input embeddings: ELECTRA's are embedding_size wide (projected to D after them)
    assert al.count_parameters(model).by_group["prompt"] == 4 * getattr(model.config, "embedding_size", D)
    out = output(model, inputs(kind))
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("kind", [k for k in KINDS if not k.startswith("llama")])
def test_bitfit_trains_the_biases_the_model_has(kind):
    model = al.adapt(build(kind), "bitfit")
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    assert names and all(n.endswith("bias") or n.split(".")[0] in ("classifier", "pre_classifier", "score",
                                                                   "pooler") for n in names)


@pytest.mark.parametrize("kind", ["llama-cls", "llama-lm"])
def test_bitfit_on_llama_is_refused_with_the_reason(kind):
    model = build(kind)
    with pytest.raises(ValueError, match="bias"):
        al.adapt(model, "bitfit")
    assert not hasattr(model, "adapterlab_method")  # nothing half-done


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["houlsby", "compacter++", "lora"])
def test_save_and_load_round_trip_into_a_fresh_base(tmp_path, kind, name):
    torch.manual_seed(1)
    model = al.adapt(build(kind), name, bottleneck=M, rank=M, init_std=0.1)
    with torch.no_grad():  # trained-looking weights, so a load that drops one would show
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn_like(p))
    al.save_adapter(model, tmp_path / "a")
    restored = al.load_adapter(build(kind), tmp_path / "a")
    batch = inputs(kind)
    assert torch.equal(output(restored, batch), output(model, batch))
