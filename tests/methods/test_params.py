"""Parameter accounting against the formulas and the papers' own numbers (models built from configs, no download)."""
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, T5Config, T5ForConditionalGeneration

import adapterlab as al

from conftest import build

T5_BASE = dict(d_model=768, d_ff=3072, d_kv=64, num_heads=12, num_layers=12, vocab_size=32128,
               feed_forward_proj="relu", tie_word_embeddings=True)
BERT_LARGE = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)


def on_meta(cls, config):
    """The full-size architecture without allocating its weights: counting needs shapes only."""
    with torch.device("meta"):
        return cls(config)


def adapter_params(d, m):
    return 2 * m * d + d + m


def lowrank_adapter_params(d, m):
    return 2 * (d + m) + d + m  # two rank-1 projections u v^T + both biases


T5_LAYERNORMS = (12 * 2 + 1 + 12 * 3 + 1) * 768  # every block's sublayer norms + final norms; T5 norms have no bias


# Compacter paper, Table 1 (T5-base, adapter size 24): percent of parameters trained per task.
@pytest.mark.parametrize("name,kw,adapters,paper_percent", [
    ("houlsby", {}, 48 * adapter_params(768, 24), 0.832),
    ("pfeiffer", {}, 24 * adapter_params(768, 24), 0.427),
    ("adapterdrop", {}, 28 * adapter_params(768, 24), 0.494),
    ("adapter-lowrank", {}, 48 * lowrank_adapter_params(768, 24), 0.073),
    ("phm", {"n": 12}, 48 * (2 * (768 * 24 // 12 + 12 ** 3) + 768 + 24), 0.179),
    ("compacter", {"n": 12}, 48 * lowrank_adapter_params(768, 24) + 12 ** 3, 0.073),
    ("compacter++", {"n": 12}, 24 * lowrank_adapter_params(768, 24) + 12 ** 3, 0.047),
])
def test_t5_base_matches_the_compacter_paper(name, kw, adapters, paper_percent):
    model = al.adapt(on_meta(T5ForConditionalGeneration, T5Config(**T5_BASE)), name, bottleneck=24, **kw)
    pc = al.count_parameters(model)
    assert pc.base_total == 222_903_552  # t5-base, shared embedding counted once
    assert pc.trainable == adapters + T5_LAYERNORMS
    assert pc.percent == pytest.approx(paper_percent, abs=1e-3)  # the paper prints three decimals
    assert pc.by_group["layernorm"] == T5_LAYERNORMS
    assert "head" not in pc.by_group  # text-to-text: the LM head is the (frozen, tied) embedding


def t5_base_bitfit_biases():
    """The biases the Compacter code gives T5 for BitFit: q, k, v, o of every attention (the decoder's
    cross-attention too), wi and wo, every in-block layer norm (not the final ones), and the LM head."""
    d, ff, vocab = 768, 3072, 32128
    encoder_block = 4 * d + ff + d + 2 * d  # self-attention, wi, wo, two layer norms
    decoder_block = 8 * d + ff + d + 3 * d  # self- and cross-attention, wi, wo, three layer norms
    return 12 * encoder_block + 12 * decoder_block + vocab


def test_t5_base_bitfit_matches_the_compacter_paper():
    model = al.adapt(on_meta(T5ForConditionalGeneration, T5Config(**T5_BASE)), "bitfit")
    pc = al.count_parameters(model)
    assert pc.base_total == 222_903_552  # the added biases are not part of the base model
    assert pc.trainable == t5_base_bitfit_biases() == 280_960
    assert pc.by_group["layernorm"] == (12 * 2 + 12 * 3) * 768  # the in-block layer norms' new biases
    assert round(pc.percent, 3) == 0.126  # Table 1 (with the final layer norms' biases it would be 0.127)


def test_adapters_without_layernorms_count_only_the_adapters():
    model = al.adapt(on_meta(T5ForConditionalGeneration, T5Config(**T5_BASE)), "compacter++", bottleneck=24, n=12,
                     train_layernorms=False)
    pc = al.count_parameters(model)
    assert "layernorm" not in pc.by_group
    assert pc.trainable == 24 * lowrank_adapter_params(768, 24) + 12 ** 3


def test_bert_large_houlsby_m64_matches_houlsby():
    """Houlsby et al.: 2md + d + m per adapter, two per layer. With m=64 on BERT-large that is
    6.34M parameters, the 2.1% the paper reports relative to the 24-layer encoder (302.3M); relative
    to the whole base model with embeddings (our `percent`) it is 1.9%."""
    model = al.adapt(on_meta(BertForSequenceClassification, BertConfig(**BERT_LARGE)), "houlsby", bottleneck=64)
    pc = al.count_parameters(model)
    adapters = 24 * 2 * adapter_params(1024, 64)
    assert adapters == 6_343_680
    assert pc.by_group["adapter_weights"] + pc.by_group["adapter_biases"] == adapters
    assert pc.by_group["layernorm"] == (24 * 2 + 1) * 2 * 1024
    assert pc.by_group["head"] == 1024 * 2 + 2
    encoder = sum(p.numel() for n, p in model.named_parameters() if n.startswith("bert.encoder.") and ".adapter." not in n)
    assert round(100 * adapters / encoder, 1) == 2.1
    assert pc.base_total == 335_141_888  # bert-large with pooler, classifier excluded
    assert round(pc.percent, 2) == 1.92


def test_groups_on_a_classifier():
    model = al.adapt(build("bert-cls"), "compacter", bottleneck=8, n=4)
    pc = al.count_parameters(model)
    assert set(pc.by_group) == {"adapter_weights", "adapter_biases", "shared", "layernorm", "head"}
    assert pc.by_group["shared"] == 4 ** 3
    assert pc.by_group["head"] == 64 * 3 + 3
    assert pc.by_group["adapter_biases"] == 3 * 2 * (8 + 64)
    assert pc.trainable == sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert pc.percent == pytest.approx(100 * pc.trainable / pc.base_total)


@pytest.mark.parametrize("name", ["full", "top-k", "layernorm", "bitfit", "houlsby", "compacter"])
def test_base_total_is_the_model_before_adapt_without_head(name):
    before = build("bert-cls")
    head = sum(p.numel() for p in before.classifier.parameters())
    total = sum(p.numel() for p in before.parameters())
    pc = al.count_parameters(al.adapt(build("bert-cls"), name, bottleneck=8, k=2))
    assert pc.base_total == total - head


def test_full_and_top_k_train_the_backbone():
    full = al.count_parameters(al.adapt(build("bert-cls"), "full"))
    assert full.by_group["backbone"] + full.by_group["layernorm"] == full.base_total
    top1 = al.count_parameters(al.adapt(build("bert-cls"), "top-k", k=1))
    block = sum(p.numel() for p in build("bert-cls").bert.encoder.layer[2].parameters())
    assert top1.by_group["backbone"] + top1.by_group["layernorm"] == block


def test_report_is_readable():
    pc = al.count_parameters(al.adapt(build("bert-cls"), "houlsby", bottleneck=8))
    assert "trainable of" in str(pc)
    table = pc.table()
    assert table.loc["total trainable", "parameters"] == pc.trainable


# The packaged MiniLM's shape (6 blocks, d = 384, FFN 1536, 30,522 tokens, 512 positions) with a 2-way head.
MINILM = dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536, vocab_size=30522)
MINILM_BASE = 22_713_216  # its BertModel: embeddings, 6 blocks, pooler
MINILM_HEAD = 384 * 2 + 2


@pytest.mark.parametrize("name,kw,own", [
    ("head-only", {}, 0),
    ("prompt-tuning", {}, 100 * 384),  # n x d, 100 tokens (Compacter §5.5)
    ("prompt-tuning", {"prompt_tokens": 20}, 20 * 384),
    ("lora", {}, 6 * 2 * 8 * (384 + 384)),  # r (in + out) per target: query and value of 6 blocks, r = 8
    ("lora", {"rank": 2, "lora_targets": ("query", "key", "value", "intermediate.dense")},
     6 * (3 * 2 * (384 + 384) + 2 * (384 + 1536))),
])
def test_baselines_on_the_minilm_shape(name, kw, own):
    model = al.adapt(on_meta(BertForSequenceClassification, BertConfig(num_labels=2, **MINILM)), name, **kw)
    pc = al.count_parameters(model)
    assert pc.base_total == MINILM_BASE  # what adapt adds is not base
    assert pc.trainable == own + MINILM_HEAD
    assert pc.by_group["head"] == MINILM_HEAD
