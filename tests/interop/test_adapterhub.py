"""Bottleneck adapters in AdapterHub's folder format (adapterlab/methods/adapterhub_format.py): AdapterHub's
`adapters` loads what adapterlab saved with the same logits, and adapterlab loads what AdapterHub saved with
the same logits; what cannot be the same function is refused.

Runs where AdapterHub's `adapters` is installed (benchmarks/.venv-adapterhub: `make test-adapterhub`); the
main test run skips it.
"""
import json

import pytest
import torch
from safetensors.torch import load_file

import adapterlab as al

from conftest import build, inputs, output

adapters = pytest.importorskip("adapters")

# Both libraries run the same float32 operations on the same tensors. Dense adapters give identical logits;
# PHM adapters differ only in the order of the sums (AdapterHub multiplies x by the built (in, out) matrix,
# adapterlab's rank-1 path never builds it): ~1e-7 relative per operation over 3 blocks. 1e-5 leaves room
# for that on any CPU and is far below how much the adapters move the logits (asserted: > 1e-2).
TOLERANCE = dict(rtol=1e-5, atol=1e-5)
METHODS = ["houlsby", "pfeiffer", "compacter", "compacter++"]
BOTTLENECK = 16  # of the tiny models' hidden size 64; a multiple of n = 4 for the PHM methods


def trained(name, kind="bert-cls", **overrides):
    """A model adapted with `name` whose trained tensors (adapters, LayerNorms, head) moved away from their init."""
    torch.manual_seed(3)
    model = al.adapt(build(kind), name, bottleneck=BOTTLENECK, **overrides)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.3 * torch.randn_like(p))
    return model


def adapterhub_loads(folder, kind="bert-cls"):
    """A fresh base model in AdapterHub, with the folder loaded (adapter and head) and its adapter active."""
    model = build(kind)
    adapters.init(model)
    name = model.load_adapter(str(folder))
    model.set_active_adapters(name)
    return model.eval(), name


def apply_layernorms(model, folder):
    """The one step AdapterHub's loader does not take: the trained base LayerNorms, into the base model."""
    result = model.load_state_dict(load_file(folder / "base_layernorms.safetensors"), strict=False)
    assert not result.unexpected_keys


def moves(model, kind="bert-cls"):
    """How far the trained tensors move the logits from the base model's: a mismatch could not hide below it."""
    return (output(model, inputs(kind)) - output(build(kind), inputs(kind))).abs().max()


@pytest.mark.parametrize("name", METHODS)
def test_adapterhub_loads_adapter_and_head_alone_when_the_layernorms_stayed_frozen(tmp_path, name):
    ours = trained(name, train_layernorms=False)
    al.save_adapter(ours, tmp_path / "a", format="adapterhub")
    assert not (tmp_path / "a" / "base_layernorms.safetensors").exists()
    theirs, loaded = adapterhub_loads(tmp_path / "a")
    assert loaded == name
    assert moves(ours) > 1e-2
    torch.testing.assert_close(output(theirs, inputs("bert-cls")), output(ours, inputs("bert-cls")), **TOLERANCE)


@pytest.mark.parametrize("name", METHODS)
def test_adapterhub_loads_the_presets_with_their_trained_layernorms_applied_to_the_base(tmp_path, name):
    """The presets train the base LayerNorms, which AdapterHub's adapter format cannot hold: with the adapter and
    head alone the logits differ; with base_layernorms.safetensors applied to the base model they are the same."""
    ours = trained(name)
    al.save_adapter(ours, tmp_path / "a", format="adapterhub")
    theirs, _ = adapterhub_loads(tmp_path / "a")
    batch = inputs("bert-cls")
    assert (output(theirs, batch) - output(ours, batch)).abs().max() > 1e-2
    apply_layernorms(theirs, tmp_path / "a")
    torch.testing.assert_close(output(theirs, batch), output(ours, batch), **TOLERANCE)


@pytest.mark.parametrize("name", METHODS)
def test_adapterlab_loads_back_what_it_saved_for_adapterhub(tmp_path, name):
    ours = trained(name)
    al.save_adapter(ours, tmp_path / "a", format="adapterhub")
    back = al.load_adapter(build("bert-cls"), tmp_path / "a")
    assert back.adapterlab_method == ours.adapterlab_method
    torch.testing.assert_close(output(back, inputs("bert-cls")), output(ours, inputs("bert-cls")), **TOLERANCE)


@pytest.mark.parametrize("kind", ["roberta-cls", "electra-cls"])
def test_other_bert_family_encoders_export_too(tmp_path, kind):
    ours = trained("compacter", kind)
    al.save_adapter(ours, tmp_path / "a", format="adapterhub")
    theirs, _ = adapterhub_loads(tmp_path / "a", kind)
    apply_layernorms(theirs, tmp_path / "a")
    assert moves(ours, kind) > 1e-2
    torch.testing.assert_close(output(theirs, inputs(kind)), output(ours, inputs(kind)), **TOLERANCE)


def adapterhub_configs():
    """AdapterHub configs that compute adapterlab's methods -> the adapterlab method each loads as. Stock
    DoubleSeqBnConfig (Houlsby, swish) and CompacterConfig already do; Pfeiffer and Compacter++ need
    original_ln_before=False (their stock configs are refused: see the refusal test)."""
    from adapters import CompacterConfig, CompacterPlusPlusConfig, DoubleSeqBnConfig, SeqBnConfig

    return {
        "houlsby": (DoubleSeqBnConfig(reduction_factor=4), "houlsby"),
        "houlsby-gelu": (DoubleSeqBnConfig(reduction_factor=4, non_linearity="gelu"), "houlsby"),
        "pfeiffer": (SeqBnConfig(reduction_factor=4, non_linearity="gelu", original_ln_before=False,
                                 mh_adapter=True, output_adapter=False), "pfeiffer"),
        "pfeiffer-ffn": (SeqBnConfig(reduction_factor=4, original_ln_before=False), "pfeiffer"),
        "compacter": (CompacterConfig(reduction_factor=4), "compacter"),
        "compacter++": (CompacterPlusPlusConfig(reduction_factor=4, original_ln_before=False), "compacter++"),
        "phm-full": (CompacterConfig(reduction_factor=4, factorized_phm_W=False, shared_phm_rule=False), "phm"),
        "adapterdrop": (DoubleSeqBnConfig(reduction_factor=4, non_linearity="gelu", leave_out=[0]), "houlsby"),
    }


def adapterhub_trained(config, kind="bert-cls", name="theirs"):
    """An AdapterHub model with the adapter added, active, and its adapter and head tensors moved from init."""
    model = build(kind)
    adapters.init(model)
    model.add_adapter(name, config=config)
    model.set_active_adapters(name)
    torch.manual_seed(4)
    with torch.no_grad():
        for key, p in model.named_parameters():
            if f".{name}." in key or key.startswith("classifier"):
                p.add_(0.3 * torch.randn_like(p))
    return model.eval()


@pytest.mark.parametrize("case", sorted(adapterhub_configs()))
@pytest.mark.parametrize("safetensors", [False, True])
def test_adapterlab_loads_what_adapterhub_saved(tmp_path, case, safetensors):
    config, expected = adapterhub_configs()[case]
    theirs = adapterhub_trained(config)
    theirs.save_adapter(str(tmp_path / "h"), "theirs", use_safetensors=safetensors)
    ours = al.load_adapter(build("bert-cls"), tmp_path / "h")
    assert ours.adapterlab_method.name == expected
    assert moves(ours) > 1e-2
    torch.testing.assert_close(output(ours, inputs("bert-cls")), output(theirs, inputs("bert-cls")), **TOLERANCE)


@pytest.mark.parametrize("name, why", [("lora", "trains 'lora'"), ("head-only", "trains 'head'"),
                                       ("adapter-lowrank", "rank-1 products")])
def test_methods_adapterhub_cannot_hold_are_refused(tmp_path, name, why):
    with pytest.raises(ValueError, match=why):
        al.save_adapter(trained(name), tmp_path / "a", format="adapterhub")
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("kind", ["distilbert-cls", "gpt2-cls"])
def test_other_architectures_are_refused(tmp_path, kind):
    with pytest.raises(ValueError, match="BERT-family"):
        al.save_adapter(trained("houlsby", kind), tmp_path / "a", format="adapterhub")


def refusals():
    from adapters import CompacterConfig, CompacterPlusPlusConfig, DoubleSeqBnConfig, ParBnConfig, SeqBnConfig

    return {  # an AdapterHub config adapterlab cannot compute -> what the refusal names
        "stock-pfeiffer": (SeqBnConfig(), "original_ln_before=True"),
        "stock-compacter++": (CompacterPlusPlusConfig(reduction_factor=4), "original_ln_before=True"),
        "gelu_new": (DoubleSeqBnConfig(non_linearity="gelu_new"), "gelu_new"),
        "adapter-layernorm": (DoubleSeqBnConfig(ln_after=True), "ln_after"),
        "scaling": (DoubleSeqBnConfig(scaling=2.0), "scaling"),
        "parallel": (ParBnConfig(), "is_parallel"),
        "shared-W": (CompacterConfig(reduction_factor=4, shared_W_phm=True), "shared_W_phm"),
        "leave-out-middle": (DoubleSeqBnConfig(leave_out=[1]), "first k blocks"),
    }


@pytest.mark.parametrize("case", sorted(refusals()))
def test_adapterhub_configs_that_compute_something_else_are_refused_and_change_nothing(tmp_path, case):
    config, why = refusals()[case]
    adapterhub_trained(config).save_adapter(str(tmp_path / "h"), "theirs")
    model = build("bert-cls")
    before = output(model, inputs("bert-cls"))
    with pytest.raises(ValueError, match=why):
        al.load_adapter(model, tmp_path / "h")
    assert getattr(model, "adapterlab_method", None) is None
    torch.testing.assert_close(output(model, inputs("bert-cls")), before, rtol=0, atol=0)


def test_a_folder_for_another_base_is_refused_and_changes_nothing(tmp_path):
    al.save_adapter(trained("houlsby"), tmp_path / "a", format="adapterhub")
    other = build("roberta-cls")
    with pytest.raises(ValueError, match="model_type: saved bert, this model roberta"):
        al.load_adapter(other, tmp_path / "a")
    assert getattr(other, "adapterlab_method", None) is None


def test_the_folder_is_adapterhubs_and_no_other_format_is_mistaken_for_it(tmp_path):
    al.save_adapter(trained("compacter"), tmp_path / "a", format="adapterhub")
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == ["adapter_config.json", "base_layernorms.safetensors", "head_config.json",
                     "pytorch_adapter.bin", "pytorch_model_head.bin"]
    meta = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    assert meta["name"] == "compacter" and meta["version"].startswith("adapters.")
    assert meta["config"]["original_ln_before"] is False and meta["config"]["phm_rank"] == 1
    al.save_adapter(trained("compacter"), tmp_path / "ours")  # adapterlab's own format still loads as its own
    assert al.load_adapter(build("bert-cls"), tmp_path / "ours").adapterlab_method.name == "compacter"
