"""LoRA and prompt tuning in PEFT's folder format: PEFT loads what adapterlab saved with the same logits,
and adapterlab loads what PEFT saved with the same logits."""
import json

import pytest
import torch

import adapterlab as al

from conftest import build, inputs

peft = pytest.importorskip("peft")

# The two compute the same float32 operations (checked on copied weights in test_baselines.py); the only
# differences are the order in which another call path sums the same products: ~1e-7 relative per
# operation over 3 blocks. 1e-5 leaves room for that on any CPU, and is far below what training the
# adapter moved the logits by (asserted).
TOLERANCE = dict(rtol=1e-5, atol=1e-5)
KINDS = ["bert-cls", "gpt2-cls", "llama-cls", "distilbert-cls"]


def trained(kind, name):
    """A model adapted with `name` whose trained tensors (LoRA's B included, zero at init) are random."""
    torch.manual_seed(3)
    model = al.adapt(build(kind), name, rank=4, lora_alpha=8, prompt_tokens=5)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.normal_(0, 0.3)
    return model


def logits(model, kind):
    """The logits of a batch; unpadded for the decoders: given a prompt, PEFT calls their classifiers without
    input_ids, so they cannot find the last real token and pool the last position, a pad token when the batch
    is right-padded (adapterlab pools the last real token). On unpadded sequences the two are one function."""
    batch = inputs(kind)
    if kind.startswith(("gpt2", "llama")):
        batch = {k: v[1:] for k, v in batch.items()}  # the second sequence has no padding
        assert batch["attention_mask"].all()
    with torch.no_grad():
        return model(**batch).logits


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["lora", "prompt-tuning"])
def test_peft_loads_what_adapterlab_saved(tmp_path, kind, name):
    model = trained(kind, name)
    al.save_adapter(model, tmp_path / "a", format="peft")
    config = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    assert config["peft_type"] == {"lora": "LORA", "prompt-tuning": "PROMPT_TUNING"}[name]
    theirs = peft.PeftModel.from_pretrained(build(kind), tmp_path / "a").eval()
    ours = logits(model, kind)
    assert (ours - logits(build(kind), kind)).abs().max() > 1e-2  # the adapter changes the function
    torch.testing.assert_close(logits(theirs, kind), ours, **TOLERANCE)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["lora", "prompt-tuning"])
def test_adapterlab_loads_what_peft_saved(tmp_path, kind, name):
    targets = {"bert-cls": ["query", "value"], "gpt2-cls": ["c_attn"], "llama-cls": ["q_proj", "v_proj"],
               "distilbert-cls": ["q_lin", "v_lin"]}[kind]
    config = (peft.LoraConfig(task_type="SEQ_CLS", r=4, lora_alpha=8, target_modules=targets, lora_dropout=0.0)
              if name == "lora" else peft.PromptTuningConfig(task_type="SEQ_CLS", num_virtual_tokens=5,
                                         token_dim=build(kind).get_input_embeddings().weight.shape[1],
                                         num_attention_heads=2, num_layers=3))
    theirs = peft.get_peft_model(build(kind), config)
    torch.manual_seed(4)
    with torch.no_grad():
        for p in theirs.parameters():
            if p.requires_grad:
                p.normal_(0, 0.3)
    theirs.save_pretrained(tmp_path / "p")
    ours = al.load_adapter(build(kind), tmp_path / "p")
    assert ours.adapterlab_method.name == name
    torch.testing.assert_close(logits(ours, kind), logits(theirs.eval(), kind), **TOLERANCE)


def test_a_peft_folder_for_another_base_is_refused_and_changes_nothing(tmp_path):
    al.save_adapter(trained("bert-cls", "lora"), tmp_path / "a", format="peft")
    other = build("gpt2-cls")
    with pytest.raises(ValueError, match="does not fit this model|match no linear layer"):
        al.load_adapter(other, tmp_path / "a")
    assert not hasattr(other, "adapterlab_method")


def test_methods_without_a_peft_counterpart_and_unknown_formats_are_refused(tmp_path):
    with pytest.raises(ValueError, match="PEFT's format holds LoRA and prompt tuning"):
        al.save_adapter(al.adapt(build("bert-cls"), "houlsby", bottleneck=8), tmp_path / "h", format="peft")
    with pytest.raises(ValueError, match="unknown format 'onnx'; choose one of adapterlab, peft"):
        al.save_adapter(al.adapt(build("bert-cls"), "houlsby", bottleneck=8), tmp_path / "h", format="onnx")
    assert not (tmp_path / "h").exists()  # nothing half-written
