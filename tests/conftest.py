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
    DebertaV2Config,
    DebertaV2ForSequenceClassification,
    DistilBertConfig,
    DistilBertForSequenceClassification,
    ElectraConfig,
    ElectraForSequenceClassification,
    GPT2Config,
    GPT2ForSequenceClassification,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    LlamaForSequenceClassification,
    RobertaConfig,
    RobertaForSequenceClassification,
    T5Config,
    T5EncoderModel,
    T5ForConditionalGeneration,
)

TINY_BERT = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=2, intermediate_size=128, vocab_size=100,
                 max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
TINY_T5 = dict(d_model=64, d_ff=128, d_kv=32, num_heads=2, num_layers=2, vocab_size=100, dropout_rate=0.0)
TINY_DISTILBERT = dict(dim=64, n_layers=3, n_heads=2, hidden_dim=128, vocab_size=100, max_position_embeddings=64,
                       dropout=0.0, attention_dropout=0.0, seq_classif_dropout=0.0)
# embedding_size < hidden_size, as in ELECTRA-small: embeddings_project exists
TINY_ELECTRA = dict(TINY_BERT, embedding_size=32)
# DeBERTa-v3's layout: relative positions only (bucketed), shared attention keys, normed relative embeddings
TINY_DEBERTA_V2 = dict(TINY_BERT, relative_attention=True, position_biased_input=False, position_buckets=16,
                       pos_att_type=["p2c", "c2p"], share_att_key=True, norm_rel_ebd="layer_norm", pooler_dropout=0.0)
PAD = 0  # the decoder-only models' pad_token_id: their classifiers find the last token that is not PAD
TINY_GPT2 = dict(n_embd=64, n_layer=3, n_head=2, n_inner=128, vocab_size=100, n_positions=64, resid_pdrop=0.0,
                 embd_pdrop=0.0, attn_pdrop=0.0, pad_token_id=PAD, bos_token_id=1, eos_token_id=2)
TINY_LLAMA = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=1,
                  intermediate_size=128, vocab_size=100, max_position_embeddings=64, pad_token_id=PAD,
                  bos_token_id=1, eos_token_id=2)  # untied lm_head (Llama's default)
DECODER_KINDS = ("gpt2-cls", "gpt2-lm", "llama-cls", "llama-lm")


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
    elif kind == "distilbert-cls":
        model = DistilBertForSequenceClassification(DistilBertConfig(num_labels=3, **TINY_DISTILBERT))
    elif kind == "electra-cls":
        model = ElectraForSequenceClassification(ElectraConfig(num_labels=3, **TINY_ELECTRA))
    elif kind == "deberta-v2-cls":
        model = DebertaV2ForSequenceClassification(DebertaV2Config(num_labels=3, **TINY_DEBERTA_V2))
    elif kind == "gpt2-cls":
        model = GPT2ForSequenceClassification(GPT2Config(num_labels=3, **TINY_GPT2))
    elif kind == "gpt2-lm":
        model = GPT2LMHeadModel(GPT2Config(**TINY_GPT2))
    elif kind == "llama-cls":
        model = LlamaForSequenceClassification(LlamaConfig(num_labels=3, **TINY_LLAMA))
    elif kind == "llama-lm":
        model = LlamaForCausalLM(LlamaConfig(**TINY_LLAMA))
    else:
        raise KeyError(kind)
    return model.eval()


def inputs(kind, batch=2, length=7, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 100, (batch, length), generator=g)
    mask = torch.ones_like(ids)
    mask[0, -2:] = 0  # some padding
    if kind in DECODER_KINDS:
        ids[mask == 0] = PAD  # right padding the decoders' classifiers can see in input_ids
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
