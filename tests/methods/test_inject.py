"""adapt(): placement, near-identity, what trains, per-layer disabling, bad input."""
import pytest
import torch
import torch.nn.functional as F
from transformers import BertConfig, BertModel, T5Config, T5EncoderModel, T5ForConditionalGeneration

import adapterlab as al
from adapterlab.methods.inject import adapters
from adapterlab.nn.layers import PHMLinear

from conftest import TINY_BERT, TINY_T5, build, inputs, output

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


def fixed_dropout(module, mask):
    """Make an nn.Dropout drop a known mask (kept entries scaled by 1/(1-p), as nn.Dropout does).

    Replacing forward on the instance keeps the module's hooks, so an adapter hooked on it still runs.
    """
    module.forward = lambda x: x * mask / (1 - module.p)


def known_mask(shape, seed=2):
    return (torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.5).float()


def test_bert_adapter_follows_the_sublayer_dropout_as_in_adapter_bert():
    """Train mode: the attention LayerNorm must see drop(h) + f(drop(h)) + x with h = dense(.)
    (adapter-bert modeling.py calls the adapter on the dropout's output), not drop(h + f(h)) + x."""
    torch.manual_seed(0)
    model = al.adapt(BertModel(BertConfig(**{**TINY_BERT, "hidden_dropout_prob": 0.5})), "houlsby",
                     bottleneck=8, init_std=0.5).train()
    sub = model.encoder.layer[0].attention.output  # BertSelfOutput: LN(dropout(dense(h)) + x)
    batch = inputs("bert")
    mask = known_mask((*batch["input_ids"].shape, TINY_BERT["hidden_size"]))
    fixed_dropout(sub.dropout, mask)
    seen = {}

    def grab_inputs(module, args, kwargs):
        values = list(args) + list(kwargs.values())
        seen["h"], seen["x"] = values[0], values[1]

    sub.register_forward_pre_hook(grab_inputs, with_kwargs=True)
    sub.LayerNorm.register_forward_pre_hook(lambda m, args: seen.setdefault("ln_in", args[0]))
    model(**batch)
    adapter = sub.dropout.adapter
    h = F.linear(seen["h"], sub.dense.weight, sub.dense.bias)
    dropped = h * mask / 0.5
    with torch.no_grad():
        torch.testing.assert_close(seen["ln_in"], adapter(dropped) + seen["x"])
        before_dropout = adapter(h) * mask / 0.5 + seen["x"]  # the old placement, same weights
        assert not torch.allclose(seen["ln_in"], before_dropout, atol=1e-3)


def test_t5_adapter_comes_before_dropout_as_in_the_compacter_code():
    """Train mode: T5's self-attention sublayer must output x + drop(h + f(h)) with h = o(.) (Compacter's
    modeling_t5.py runs the adapter on the projection's output, then dropout and the residual)."""
    torch.manual_seed(0)
    model = al.adapt(T5EncoderModel(T5Config(**{**TINY_T5, "dropout_rate": 0.5})), "houlsby",
                     bottleneck=8, init_std=0.5).train()
    layer = model.encoder.block[0].layer[0]  # T5LayerSelfAttention: x + dropout(o(attention))
    batch = inputs("t5-encoder")
    mask = known_mask((*batch["input_ids"].shape, TINY_T5["d_model"]))
    fixed_dropout(layer.dropout, mask)
    seen = {}

    def grab_x(module, args, kwargs):
        seen["x"] = args[0] if args else kwargs["hidden_states"]

    layer.register_forward_pre_hook(grab_x, with_kwargs=True)
    layer.SelfAttention.o.register_forward_pre_hook(lambda m, args: seen.setdefault("pre_o", args[0]))
    layer.register_forward_hook(lambda m, args, out: seen.update(out=out[0] if isinstance(out, tuple) else out))
    model(**batch)
    o = layer.SelfAttention.o
    h = F.linear(seen["pre_o"], o.weight)
    with torch.no_grad():
        torch.testing.assert_close(seen["out"], seen["x"] + o.adapter(h) * mask / 0.5)


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("name", ADAPTER_METHODS)
def test_near_identity_at_init_and_exact_identity_when_disabled(kind, name):
    batch = inputs(kind)
    base = output(build(kind), batch)
    # init_std sets the scale of W under phm_init="scaled-factors" (the authors' PHM init: next test)
    model = al.adapt(build(kind), name, bottleneck=8, init_std=1e-6, drop_layers=1 if name == "adapterdrop" else 0,
                     phm_init="scaled-factors")
    assert (output(model, batch) - base).abs().max() < 1e-3
    with al.adapters_disabled(model), al.adapters_disabled(model, stack="decoder"):
        assert torch.equal(output(model, batch), base)


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("name,bound", [("phm", 1e-2), ("compacter", 1e-5), ("compacter++", 1e-5)])
def test_the_authors_phm_init_starts_near_identity(kind, name, bound):
    """Under phm_init="compacter" the rule's std sets the scale of W: PHM's own rules start at 1e-2 (largest
    change of the output over these models 3.0e-3, on T5), Compacter's shared rule at 1e-4 (1.2e-6).
    Bounds: about 3x and 8x those, so a change of scheme (rule std 1 gives O(1) changes) fails clearly."""
    batch = inputs(kind)
    model = al.adapt(build(kind), name, bottleneck=8)
    assert model.adapterlab_method.phm_init == "compacter"
    assert (output(model, batch) - output(build(kind), batch)).abs().max() < bound


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


BASELINES = ["head-only", "prompt-tuning", "intrinsic-said", "lora"]
SMALL = dict(prompt_tokens=4, intrinsic_dim=300)  # settings that fit the tiny models (64 positions)


@pytest.mark.parametrize("name", ["full", "top-k", "layernorm", "bitfit"] + ADAPTER_METHODS + BASELINES)
def test_requires_grad_is_exactly_what_the_method_trains(name):
    model = al.adapt(build("bert-cls"), name, bottleneck=8, k=1, drop_layers=1 if name == "adapterdrop" else 0,
                     **SMALL)
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
    elif name in BASELINES:  # their own parameters and the head, no LayerNorm
        own = {"head-only": set(), "prompt-tuning": {"bert.prompt.weight"},
               "intrinsic-said": {"bert.intrinsic_said.theta", "bert.intrinsic_said.scales"},
               "lora": {n for n in all_names if ".lora." in n}}[name]
        assert names == own | {n for n in all_names if is_head(n)}
        assert name == "head-only" or own
    else:
        expected = {n for n in all_names if ".adapter." in n or is_ln(n) or is_head(n) or n == "phm_rule"}
        assert names == expected
        assert any(".adapter." in n for n in names)


@pytest.mark.parametrize("name", ["houlsby", "compacter", "compacter++", "layernorm", "top-k", "bitfit"] + BASELINES)
def test_gradients_reach_exactly_the_trained_parameters_and_frozen_weights_stay_bit_identical(name):
    torch.manual_seed(0)
    model = al.adapt(build("bert-cls"), name, bottleneck=8, k=1, init_std=0.1, **SMALL)
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
    (lambda m: al.adapt(m, "adapterdrop", drop_layers=3), r"drop_layers=3 leaves no adapters in a model with 3 blocks"),
    (lambda m: al.adapt(m, "phm", phm_init="xavier"), r"phm_init='xavier' is not one of"),
    (lambda m: al.adapt(m, "bitfit", train_layernorms=False), r"apply to adapter methods only"),
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


@pytest.mark.parametrize("kind", ["t5", "t5-encoder"])
def test_bitfit_on_t5_adds_zero_biases_that_train_and_change_nothing_at_init(kind):
    """Hugging Face T5 has no biases; BitFit gets the ones the Compacter paper re-introduces."""
    batch = inputs(kind)
    base_model = build(kind)
    base_names = {n for n, _ in base_model.named_parameters()}
    model = al.adapt(build(kind), "bitfit")
    assert torch.equal(output(model, batch), output(base_model, batch))  # zero biases: the same function
    names = trainable_names(model)
    assert names and all(n.endswith(".bias") for n in names) and not names & base_names
    assert base_names <= {n for n, _ in model.named_parameters()}  # base names unchanged
    block = "encoder.block.0.layer.0."
    assert {block + "SelfAttention." + p + ".bias" for p in "qkvo"} | {block + "layer_norm.bias"} <= names
    assert "encoder.final_layer_norm.bias" not in names  # as in the authors' code (see add_missing_biases)
    assert ("lm_head.bias" in names) == (kind == "t5")
    with torch.no_grad():  # the new biases are in the computation: a layer-norm bias moves the output
        dict(model.named_parameters())[block + "layer_norm.bias"].fill_(0.5)
        dict(model.named_parameters())[block + "SelfAttention.q.bias"].fill_(0.5)
    assert not torch.allclose(output(model, batch), output(base_model, batch))


def test_pfeiffer_keeps_the_adapter_after_self_attention_by_default():
    """The Compacter paper's Pfeiffer-Adapter (after self-attention); AdapterFusion's placement on request."""
    model = al.adapt(build("t5"), "pfeiffer", bottleneck=8)
    assert {pos for _, _, pos in adapters(model)} == {"attention"}
    ffn = al.adapt(build("t5"), "pfeiffer", bottleneck=8, positions=("ffn",))
    assert {pos for _, _, pos in adapters(ffn)} == {"ffn"}


@pytest.mark.parametrize("layers,dropped", [(1, 0), (2, 1), (3, 1), (6, 3), (12, 5), (24, 10)])
def test_adapterdrop_drops_five_twelfths_of_the_blocks_by_default(layers, dropped):
    """T5-base: 5 of 12 (the Compacter paper's AdapterDrop); other depths the same fraction, rounded half up."""
    config = T5Config(**{**TINY_T5, "num_layers": layers})
    with torch.device("meta"):
        model = al.adapt(T5ForConditionalGeneration(config), "adapterdrop", bottleneck=8)
    for stack in ("encoder", "decoder"):
        assert {i for s, i, _ in adapters(model) if s == stack} == set(range(dropped, layers))
    explicit = al.adapt(build("bert"), "adapterdrop", bottleneck=8, drop_layers=2)
    assert {i for _, i, _ in adapters(explicit)} == {2}


def test_adapterdrop_can_freeze_the_layernorms_below_its_first_adapter_so_backward_stops_there():
    model = al.adapt(build("bert-cls"), "adapterdrop", bottleneck=8, drop_layers=2, train_lower_layernorms=False)
    names = trainable_names(model)
    lns = {n for n, _ in model.named_parameters() if "LayerNorm" in n}
    lower = {n for n in lns if n.startswith(("bert.embeddings.", "bert.encoder.layer.0.", "bert.encoder.layer.1."))}
    assert lower and not names & lower and lns - lower <= names
    grads = {}  # does autograd track the activations of the lower blocks? (it must not: nothing there trains)
    for i, block in enumerate(model.bert.encoder.layer):
        hidden = lambda out: out[0] if isinstance(out, tuple) else out
        block.register_forward_hook(lambda m, a, out, i=i: grads.update({i: hidden(out).requires_grad}))
    model.train()(**inputs("bert-cls"), labels=torch.tensor([0, 2])).loss.backward()
    assert grads == {0: False, 1: False, 2: True}
    assert trainable_names(al.adapt(build("bert-cls"), "adapterdrop", drop_layers=2)) >= lns  # default: all train


def test_adapters_can_train_with_layernorms_frozen():
    model = al.adapt(build("bert-cls"), "houlsby", bottleneck=8, train_layernorms=False)
    names = trainable_names(model)
    assert not any("LayerNorm" in n for n in names)
    assert names == {n for n, _ in model.named_parameters() if ".adapter." in n or n.startswith("classifier.")}


def test_unsupported_architecture_lists_what_is_supported():
    from transformers import OPTConfig, OPTForCausalLM
    model = OPTForCausalLM(OPTConfig(num_hidden_layers=1, hidden_size=16, ffn_dim=32, num_attention_heads=2,
                                     vocab_size=50, word_embed_proj_dim=16))
    with pytest.raises(ValueError, match=r"unsupported architecture 'opt'; adapterlab supports bert, .*t5"):
        al.adapt(model, "houlsby")


def test_adapting_twice_is_refused():
    model = al.adapt(build("bert-cls"), "houlsby", bottleneck=8)
    with pytest.raises(ValueError, match="already has the 'houlsby' method applied"):
        al.adapt(model, "pfeiffer")
