"""adapt(): placement, near-identity, what trains, per-layer disabling, bad input."""
import pytest
import torch

import adapterlab as al
from adapterlab.inject import adapters
from adapterlab.layers import PHMLinear

from conftest import build, inputs, output

ADAPTER_METHODS = ["houlsby", "pfeiffer", "adapter-lowrank", "adapterdrop", "phm", "compacter", "compacter++"]
MODELS = ["bert-cls", "bert", "roberta-cls", "t5", "t5-encoder"]


def n_blocks(kind):
    return {"t5": {"encoder": 2, "decoder": 2}, "t5-encoder": {"encoder": 2}}.get(kind, {"encoder": 3})


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("name", ADAPTER_METHODS)
def test_adapters_go_where_the_method_says(kind, name):
    cfg = al.method(name, bottleneck=8, drop_layers=1 if name == "adapterdrop" else 0)
    model = al.adapt(build(kind), cfg)
    expected = {(stack, i, pos) for stack, n in n_blocks(kind).items() for i in range(n)
                for pos in cfg.positions if i >= cfg.drop_layers}
    assert set(adapters(model)) == expected


def test_t5_decoder_adapters_skip_cross_attention():
    model = al.adapt(build("t5"), "houlsby", bottleneck=8)
    for block in model.decoder.block:
        assert hasattr(block.layer[0].SelfAttention.o, "adapter")
        assert not hasattr(block.layer[1].EncDecAttention.o, "adapter")
        assert hasattr(block.layer[2].DenseReluDense.wo, "adapter")


def test_adapter_sits_after_the_output_projection_before_the_residual():
    """What reaches the attention LayerNorm must be adapter(dense(h)) + residual."""
    torch.manual_seed(0)
    model = al.adapt(build("bert"), "houlsby", bottleneck=8, init_std=0.5)
    sub = model.encoder.layer[0].attention.output  # BertSelfOutput: LN(dropout(dense(h)) + x)
    seen = {}

    def grab_inputs(module, args, kwargs):
        values = list(args) + list(kwargs.values())
        seen["h"], seen["x"] = values[0], values[1]

    sub.register_forward_pre_hook(grab_inputs, with_kwargs=True)
    sub.LayerNorm.register_forward_pre_hook(lambda m, args: seen.setdefault("ln_in", args[0]))
    model(**inputs("bert"))
    dense = sub.dense
    expected = dense.adapter(torch.nn.functional.linear(seen["h"], dense.weight, dense.bias)) + seen["x"]
    torch.testing.assert_close(seen["ln_in"], expected)
    plain = torch.nn.functional.linear(seen["h"], dense.weight, dense.bias) + seen["x"]
    assert not torch.allclose(seen["ln_in"], plain)  # the adapter really is in the path


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("name", ADAPTER_METHODS)
def test_near_identity_at_init_and_exact_identity_when_disabled(kind, name):
    batch = inputs(kind)
    base = output(build(kind), batch)
    model = al.adapt(build(kind), name, bottleneck=8, init_std=1e-6, drop_layers=1 if name == "adapterdrop" else 0)
    assert (output(model, batch) - base).abs().max() < 1e-3
    with al.adapters_disabled(model), al.adapters_disabled(model, stack="decoder"):
        assert torch.equal(output(model, batch), base)


def test_large_init_moves_the_output():
    batch = inputs("bert")
    base = output(build("bert"), batch)  # hidden states: O(1) after the final LayerNorm
    model = al.adapt(build("bert"), "houlsby", bottleneck=8, init_std=1.0)
    assert (output(model, batch) - base).abs().max() > 0.1


def test_adapters_disabled_restores_state_even_on_error():
    model = al.adapt(build("bert-cls"), "houlsby", bottleneck=8)
    with pytest.raises(RuntimeError):
        with al.adapters_disabled(model, layers=[0, 2]):
            states = {k: a.enabled for k, a in adapters(model).items()}
            assert states == {("encoder", 0, "attention"): False, ("encoder", 0, "ffn"): False,
                              ("encoder", 1, "attention"): True, ("encoder", 1, "ffn"): True,
                              ("encoder", 2, "attention"): False, ("encoder", 2, "ffn"): False}
            raise RuntimeError("boom")
    assert all(a.enabled for a in adapters(model).values())


def test_disabling_some_layers_differs_from_disabling_none():
    torch.manual_seed(0)
    model = al.adapt(build("bert-cls"), "houlsby", bottleneck=8, init_std=0.5)
    batch = inputs("bert-cls")
    full = output(model, batch)
    with al.adapters_disabled(model, layers=[1]):
        partial = output(model, batch)
    assert not torch.allclose(full, partial)
    torch.testing.assert_close(output(model, batch), full)


def trainable_names(model):
    return {n for n, p in model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize("name", ["full", "top-k", "layernorm", "bitfit"] + ADAPTER_METHODS)
def test_requires_grad_is_exactly_what_the_method_trains(name):
    model = al.adapt(build("bert-cls"), name, bottleneck=8, k=1, drop_layers=1 if name == "adapterdrop" else 0)
    names = trainable_names(model)
    all_names = {n for n, _ in model.named_parameters()}
    is_ln = lambda n: "LayerNorm" in n
    is_head = lambda n: n.startswith("classifier.")
    if name == "full":
        assert names == all_names
    elif name == "top-k":
        assert names == {n for n in all_names if n.startswith("bert.encoder.layer.2.") or is_head(n)}
    elif name == "layernorm":
        assert names == {n for n in all_names if is_ln(n) or is_head(n)}
    elif name == "bitfit":
        assert names == {n for n in all_names if n.endswith("bias") or is_head(n)}
    else:
        expected = {n for n in all_names if ".adapter." in n or is_ln(n) or is_head(n) or n == "phm_rule"}
        assert names == expected
        assert any(".adapter." in n for n in names)


@pytest.mark.parametrize("name", ["houlsby", "compacter", "compacter++", "layernorm", "top-k", "bitfit"])
def test_gradients_reach_exactly_the_trained_parameters_and_frozen_weights_stay_bit_identical(name):
    torch.manual_seed(0)
    model = al.adapt(build("bert-cls"), name, bottleneck=8, k=1, init_std=0.1)
    model.train()
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    trained = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.01)
    out = model(**inputs("bert-cls"), labels=torch.tensor([0, 2]))
    out.loss.backward()
    for n, p in model.named_parameters():
        assert (p.grad is not None) == p.requires_grad, n
    opt.step()
    params = dict(model.named_parameters())
    assert all(torch.equal(params[n], v) for n, v in frozen.items())
    moved = [n for n, v in trained.items() if not torch.equal(params[n], v)]
    assert moved and set(moved) <= set(trained)


def test_compacter_shares_one_rule_across_all_layers_and_positions():
    model = al.adapt(build("t5"), "compacter", bottleneck=8, n=4)
    phm = [m for m in model.modules() if isinstance(m, PHMLinear)]
    assert len(phm) == 2 * 2 * (2 + 2)  # down+up, 2 positions, 2+2 blocks
    assert all(m.rule is model.phm_rule for m in phm)
    own = al.adapt(build("t5"), "phm", bottleneck=8, n=4)
    rules = [m.rule for m in own.modules() if isinstance(m, PHMLinear)]
    assert len({id(r) for r in rules}) == len(rules)  # PHM: every layer its own rule


def test_adapt_returns_the_same_model_modified_in_place():
    model = build("bert-cls")
    assert al.adapt(model, "houlsby", bottleneck=8) is model


@pytest.mark.parametrize("call,message", [
    (lambda m: al.adapt(m, "houlsbi"), r"unknown method 'houlsbi'; choose one of: full, top-k"),
    (lambda m: al.adapt(m, "compacter", n=5), r"bottleneck=64 is not divisible by n=5"),
    (lambda m: al.adapt(m, "phm", n=3, bottleneck=9), r"hidden size 64 is not divisible by n=3"),
    (lambda m: al.adapt(m, "houlsby", botleneck=8), r"unknown setting\(s\) \['botleneck'\]"),
    (lambda m: al.adapt(m, "top-k", k=7), r"k=7 but the model has only 3 blocks"),
    (lambda m: al.adapt(m, "adapterdrop"), r"drop_layers=5 leaves no adapters in a model with 3 blocks"),
    (lambda m: al.adapt(m, "houlsby", init_std=0), r"init_std must be > 0"),
    (lambda m: al.adapt(m, "houlsby", activation="sigmoidal"), r"unknown activation"),
])
def test_bad_settings_raise_a_clear_error_and_leave_the_model_untouched(call, message):
    model = build("bert-cls")
    before = {n: p.clone() for n, p in model.state_dict().items()}
    with pytest.raises(ValueError, match=message):
        call(model)
    assert not adapters(model) and getattr(model, "adapterlab_method", None) is None
    assert all(p.requires_grad for p in model.parameters())
    assert all(torch.equal(before[n], p) for n, p in model.state_dict().items())


def test_bitfit_on_t5_is_refused_because_t5_has_no_biases():
    with pytest.raises(ValueError, match="T5 uses no biases"):
        al.adapt(build("t5"), "bitfit")


def test_unsupported_architecture_lists_what_is_supported():
    from transformers import GPT2Config, GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50))
    with pytest.raises(ValueError, match=r"unsupported architecture 'gpt2'; adapterlab supports bert, .*t5"):
        al.adapt(model, "houlsby")


def test_adapting_twice_is_refused():
    model = al.adapt(build("bert-cls"), "houlsby", bottleneck=8)
    with pytest.raises(ValueError, match="already has the 'houlsby' method applied"):
        al.adapt(model, "pfeiffer")
