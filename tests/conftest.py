"""Shared test setup: never wait on the Hugging Face hub; tiny models built from configs."""
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # hub calls fail in seconds instead of timing out
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest
import torch
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    BertModel,
    RobertaConfig,
    RobertaForSequenceClassification,
    T5Config,
    T5EncoderModel,
    T5ForConditionalGeneration,
)

TINY_BERT = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=2, intermediate_size=128, vocab_size=100,
                 max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
TINY_T5 = dict(d_model=64, d_ff=128, d_kv=32, num_heads=2, num_layers=2, vocab_size=100, dropout_rate=0.0)


def build(kind, seed=0):
    """A tiny random model of the given kind, the same for the same seed."""
    torch.manual_seed(seed)
    if kind == "bert-cls":
        model = BertForSequenceClassification(BertConfig(num_labels=3, **TINY_BERT))
    elif kind == "bert":
        model = BertModel(BertConfig(**TINY_BERT))
    elif kind == "roberta-cls":
        model = RobertaForSequenceClassification(RobertaConfig(num_labels=2, pad_token_id=1, **TINY_BERT))
    elif kind == "t5":
        model = T5ForConditionalGeneration(T5Config(**TINY_T5))
    elif kind == "t5-encoder":
        model = T5EncoderModel(T5Config(**TINY_T5))
    else:
        raise KeyError(kind)
    return model.eval()


def inputs(kind, batch=2, length=7, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 100, (batch, length), generator=g)
    mask = torch.ones_like(ids)
    mask[0, -2:] = 0  # some padding
    out = {"input_ids": ids, "attention_mask": mask}
    if kind == "t5":
        out["decoder_input_ids"] = torch.randint(3, 100, (batch, 4), generator=g)
    return out


@torch.no_grad()  # also makes outputs independent of requires_grad (T5 picks other kernels otherwise)
def output(model, batch):
    out = model(**batch)
    return out.logits if hasattr(out, "logits") and out.logits is not None else out.last_hidden_state


@pytest.fixture
def tiny():
    return build
