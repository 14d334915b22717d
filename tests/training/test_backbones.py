import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before any Hugging Face import: the hub is never needed here

import logging
import socket
import time

import pytest
import torch
from transformers import BertForSequenceClassification, T5ForConditionalGeneration

from adapterlab.training import backbones
from adapterlab.training.backbones import BackboneUnavailable, load_backbone


def classify(model, tokenizer, texts):
    inputs = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        return model(**inputs).logits


def test_tiny_bert_is_small_fast_and_deterministic():
    start = time.perf_counter()
    model, tokenizer = load_backbone("tiny", num_labels=3)
    assert time.perf_counter() - start < 2  # well under a second on an idle machine
    assert isinstance(model, BertForSequenceClassification)
    assert (model.config.num_hidden_layers, model.config.hidden_size, model.config.num_attention_heads) == (2, 64, 2)
    assert model.config.vocab_size == len(tokenizer)
    assert classify(model, tokenizer, ["a good flight", "bad"]).shape == (2, 3)
    again, _ = load_backbone("tiny", num_labels=3)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))


def test_tiny_bert_leaves_the_global_rng_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    load_backbone("tiny")
    assert torch.equal(torch.rand(3), expected)


def test_tiny_regression_has_one_output():
    model, _ = load_backbone("tiny", num_labels=5, task_kind="regression")
    assert model.config.num_labels == 1 and model.config.problem_type == "regression"


def test_tiny_t5_uses_the_default_tokenizer():
    model, tokenizer = load_backbone("tiny-t5")
    assert isinstance(model, T5ForConditionalGeneration)
    config = model.config
    assert (config.d_model, config.num_layers, config.num_decoder_layers, config.num_heads, config.d_kv, config.d_ff) \
        == (64, 2, 2, 2, 32, 128)
    assert config.pad_token_id == tokenizer.pad_token_id == config.decoder_start_token_id
    assert config.eos_token_id == tokenizer.sep_token_id
    inputs = tokenizer(["rte sentence1: a sentence2: b"], return_tensors="pt", return_token_type_ids=False)
    labels = torch.tensor([[tokenizer.convert_tokens_to_ids("entailment"), tokenizer.sep_token_id]])
    assert torch.isfinite(model(**inputs, labels=labels).loss)


def test_default_is_the_packaged_minilm(capfd):
    model, tokenizer = load_backbone("default", num_labels=3)
    assert isinstance(model, BertForSequenceClassification)
    assert (model.config.num_hidden_layers, model.config.hidden_size) == (6, 384)
    assert classify(model, tokenizer, ["@united thanks!"]).shape == (1, 3)
    assert "LOAD REPORT" not in capfd.readouterr().err  # the expected "new head" report is hidden
    assert not logging.getLogger("transformers.modeling_utils").filters  # and only while loading


def test_default_regression_head():
    model, _ = load_backbone("default", task_kind="regression")
    assert model.config.num_labels == 1 and model.config.problem_type == "regression"


def test_local_t5_folder_loads_as_text_to_text(tmp_path):
    model, tokenizer = load_backbone("tiny-t5")
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded, _ = load_backbone(str(tmp_path))  # classification asked, but a T5 is text-to-text
    assert isinstance(loaded, T5ForConditionalGeneration)


@pytest.mark.parametrize("name, kind, match", [
    ("default", "text-to-text", "tiny-t5"),
    ("tiny", "text-to-text", "tiny-t5"),
    ("tiny", "ranking", "classification"),
])
def test_bad_requests_say_what_to_do(name, kind, match):
    with pytest.raises(ValueError, match=match):
        load_backbone(name, task_kind=kind)


def test_hub_id_offline_fails_fast_with_the_offline_choices():
    start = time.perf_counter()
    with pytest.raises(BackboneUnavailable) as error:
        load_backbone("bert-base-uncased")
    assert time.perf_counter() - start < 5
    message = str(error.value)
    assert "offline mode" in message and "'default'" in message and "'tiny'" in message and "local path" in message
    assert isinstance(error.value, ValueError)


def test_unreachable_hub_fails_fast(monkeypatch):
    """Offline mode off, network down: a quick connect check replaces ~25 s of retries."""
    def no_network(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(backbones.huggingface_hub, "is_offline_mode", lambda: False)
    monkeypatch.setattr(backbones.urllib.request, "getproxies", lambda: {})
    monkeypatch.setattr(socket, "create_connection", no_network)
    start = time.perf_counter()
    with pytest.raises(BackboneUnavailable, match="cannot be reached.*'default'"):
        load_backbone("t5-base")
    assert time.perf_counter() - start < 5


def test_default_backbone_pooler_passes_cls_through_tanh():
    """all-MiniLM-L6-v2 never trained its BERT pooler; load_backbone makes it tanh(h_CLS)."""
    import torch
    from adapterlab.training.backbones import load_backbone
    model, _ = load_backbone("default", num_labels=3)
    dense = model.bert.pooler.dense
    assert torch.equal(dense.weight, torch.eye(384)) and torch.count_nonzero(dense.bias) == 0
    h = torch.randn(2, 5, 384)
    # exact: x * 1 + 0 * (others) adds nothing but zeros, in any summation order
    assert torch.equal(model.bert.pooler(h), torch.tanh(h[:, 0]))
