"""save_adapter / load_adapter: round trip, swapping on one base, clear errors on mismatch."""
import json

import pytest
import torch

import adapterlab as al

from conftest import build, inputs, output


def trained(name, seed, **kw):
    """An adapted tiny model whose trainable weights are randomised (as if trained)."""
    model = al.adapt(build("bert-cls"), name, bottleneck=8, **kw)
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.3 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("name", ["houlsby", "compacter", "compacter++", "adapter-lowrank", "bitfit"])
def test_round_trip_into_a_fresh_base(tmp_path, name):
    model = trained(name, seed=1)
    al.save_adapter(model, tmp_path / "a")
    meta = json.loads((tmp_path / "a" / "adapter.json").read_text())
    assert meta["method"]["name"] == name and meta["base"]["model_type"] == "bert"
    restored = al.load_adapter(build("bert-cls"), tmp_path / "a")
    batch = inputs("bert-cls")
    assert torch.equal(output(restored, batch), output(model, batch))
    assert al.count_parameters(restored).trainable == al.count_parameters(model).trainable


def test_only_trained_parameters_are_saved(tmp_path):
    from safetensors.torch import load_file
    model = trained("compacter", seed=1)
    al.save_adapter(model, tmp_path / "a")
    saved = load_file(tmp_path / "a" / "adapter.safetensors")
    assert set(saved) == {n for n, p in model.named_parameters() if p.requires_grad}
    assert "phm_rule" in saved and not any("attention.self.query" in n for n in saved)


def test_swapping_adapters_on_one_base_leaves_the_base_untouched(tmp_path):
    a, b = trained("houlsby", seed=1), trained("houlsby", seed=2)
    al.save_adapter(a, tmp_path / "a")
    al.save_adapter(b, tmp_path / "b")
    model = build("bert-cls")
    base = {n: p.clone() for n, p in model.named_parameters()}
    batch = inputs("bert-cls")
    al.load_adapter(model, tmp_path / "a")
    out_a = output(model, batch)
    al.load_adapter(model, tmp_path / "b")
    assert torch.equal(output(model, batch), output(b, batch))
    al.load_adapter(model, tmp_path / "a")
    assert torch.equal(output(model, batch), out_a)
    params = dict(model.named_parameters())
    frozen = [n for n in base if not params[n].requires_grad]
    assert frozen and all(torch.equal(params[n], base[n]) for n in frozen)


def test_loading_into_a_different_base_is_refused(tmp_path):
    from transformers import BertConfig, BertForSequenceClassification
    al.save_adapter(trained("houlsby", seed=1), tmp_path / "a")
    other = BertForSequenceClassification(BertConfig(hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
                                                     intermediate_size=64, vocab_size=100, num_labels=3))
    with pytest.raises(ValueError, match=r"different base model: hidden_size: saved 64, this model 32"):
        al.load_adapter(other, tmp_path / "a")
    assert getattr(other, "adapterlab_method", None) is None  # nothing half-done


def test_loading_into_a_model_with_other_adapters_is_refused(tmp_path):
    al.save_adapter(trained("houlsby", seed=1), tmp_path / "a")
    with pytest.raises(ValueError, match="load it into a fresh base model"):
        al.load_adapter(al.adapt(build("bert-cls"), "pfeiffer", bottleneck=8), tmp_path / "a")


def test_head_of_another_size_is_refused(tmp_path):
    from transformers import BertConfig, BertForSequenceClassification
    from conftest import TINY_BERT
    al.save_adapter(trained("houlsby", seed=1), tmp_path / "a")
    two_labels = BertForSequenceClassification(BertConfig(num_labels=2, **TINY_BERT))
    with pytest.raises(ValueError, match=r"'classifier.bias' has shape \(3,\).*\(2,\).*number of labels"):
        al.load_adapter(two_labels, tmp_path / "a")
    assert getattr(two_labels, "adapterlab_method", None) is None  # refused before adapting


def test_missing_adapter_and_unadapted_model_errors(tmp_path):
    with pytest.raises(ValueError, match="no saved adapter at"):
        al.load_adapter(build("bert-cls"), tmp_path / "nothing")
    with pytest.raises(ValueError, match="no method applied"):
        al.save_adapter(build("bert-cls"), tmp_path / "x")


def test_bitfit_on_t5_round_trips(tmp_path):
    """The biases BitFit adds to T5 are saved under new names and re-created on load."""
    model = al.adapt(build("t5"), "bitfit")
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.3 * torch.randn_like(p))
    al.save_adapter(model, tmp_path / "a")
    restored = al.load_adapter(build("t5"), tmp_path / "a")
    batch = inputs("t5")
    assert torch.equal(output(restored, batch), output(model, batch))
    assert not torch.equal(output(restored, batch), output(build("t5"), batch))


def test_adapter_saved_in_the_old_layout_is_refused_with_a_clear_message(tmp_path):
    """In an earlier layout BERT adapters hung off `...output.dense`; now they sit after the dropout."""
    from safetensors.torch import load_file, save_file
    al.save_adapter(trained("houlsby", seed=1), tmp_path / "a")
    weights = tmp_path / "a" / "adapter.safetensors"
    old = {n.replace(".dropout.adapter.", ".dense.adapter."): t for n, t in load_file(weights).items()}
    save_file(old, weights)
    model = build("bert-cls")
    with pytest.raises(ValueError, match=r"output\.dense\.adapter.*older adapterlab.*after the dropout"):
        al.load_adapter(model, tmp_path / "a")
    assert getattr(model, "adapterlab_method", None) is None  # refused before adapting
