"""The baselines (prompt tuning, Intrinsic-SAID, LoRA, head-only): function, counts, errors, PEFT."""
import pytest
import torch
from transformers import T5Config, T5ForConditionalGeneration

import adapterlab as al
from adapterlab.methods import lora
from adapterlab.training.backbones import load_backbone
from adapterlab.nn.fastfood import fastfood, fastfood_factors, fastfood_matrix, hadamard_matrix, hadamard_transform
from adapterlab.methods.intrinsic import said_targets
from adapterlab.training.latency import inference_latency, serving_latency
from adapterlab.methods.prompt_tuning import check_room

from conftest import TINY_BERT, build, inputs, output

BASELINES = ["head-only", "prompt-tuning", "intrinsic-said", "lora"]
SMALL = {"intrinsic-said": {"intrinsic_dim": 300}, "prompt-tuning": {"prompt_tokens": 3}}  # fit the tiny models


def trainable_names(model):
    return {n for n, p in model.named_parameters() if p.requires_grad}


def head_size(model):
    return sum(p.numel() for n, p in model.named_parameters() if n.startswith("classifier."))


# ---------------------------------------------------------------- Fastfood

@pytest.mark.parametrize("size", [1, 2, 16, 64, 512])
def test_hadamard_transform_is_the_hadamard_matrix(size):
    x = torch.randn(3, size, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    h = hadamard_matrix(size, dtype=torch.float64)
    assert torch.equal(h @ h, size * torch.eye(size, dtype=torch.float64))  # Sylvester: H H = L I
    # float64 sums of at most 512 terms of size ~1: rounding ~1e-13, far below any real error
    torch.testing.assert_close(hadamard_transform(x), x @ h, rtol=0, atol=1e-12)


@pytest.mark.parametrize("out_features,in_features", [(20, 6), (5, 40), (64, 64), (300, 17)])
def test_fastfood_equals_the_dense_matrix_it_stands_for(out_features, in_features):
    """P x computed by Fastfood is column j of the explicit D x d matrix H G Pi H B (scaled), for x = e_j."""
    factors = fastfood_factors(out_features, in_features, torch.Generator().manual_seed(1))
    dense = fastfood_matrix(out_features, in_features, *factors)
    eye = torch.eye(in_features, dtype=torch.float64)
    columns = torch.stack([fastfood(eye[j], out_features, *factors) for j in range(in_features)], dim=1)
    # float64 throughout; both sides sum the same +-1-weighted terms in other orders: ~1e-15 relative
    torch.testing.assert_close(columns, dense, rtol=0, atol=1e-12)
    x = torch.randn(in_features, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(fastfood(x, out_features, *factors), dense @ x, rtol=0, atol=1e-12)


def test_fastfood_needs_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        hadamard_transform(torch.zeros(12))


# ---------------------------------------------------------------- Intrinsic-SAID

@pytest.mark.parametrize("kind", ["bert-cls", "t5"])
def test_intrinsic_said_at_zero_is_the_base_model_bit_for_bit(kind):
    batch = inputs(kind)
    before = output(build(kind), batch)
    model = al.adapt(build(kind), "intrinsic-said", intrinsic_dim=300)
    assert torch.equal(output(model, batch), before)  # theta = 0: P 0 = 0 exactly, theta_0 + 0 = theta_0


def test_intrinsic_said_moves_each_tensor_along_its_projection():
    targets = said_targets(build("bert-cls"))  # before adapt: the same tensors in the same order
    m = len(targets)
    model = al.adapt(build("bert-cls"), "intrinsic-said", intrinsic_dim=300)
    said = model.bert.intrinsic_said
    with torch.no_grad():
        said.theta.normal_(0, 1)
        said.scales.uniform_(0.5, 2)
    # one small tensor (the first LayerNorm weight) against its explicit dense projection, in float64
    i = next(i for i, (p, _) in enumerate(targets) if p.numel() == TINY_BERT["hidden_size"])
    path = next(n for n, p in build("bert-cls").named_parameters() if p.numel() == TINY_BERT["hidden_size"])
    module_path, name = path.rsplit(".", 1)
    module = model.get_submodule(module_path)
    original = getattr(module.parametrizations, name).original
    factors = [getattr(said, f"{k}_{i}") for k in ("signs", "perm", "gauss")] + [said.factor_scale[i]]
    dense = fastfood_matrix(original.numel(), 300 - m, *factors)
    expected = original.double() + said.scales[i].double() * (dense @ said.theta.double()).view_as(original)
    # float32 projection against a float64 reference: a few float32 ulps of entries of size ~1
    torch.testing.assert_close(getattr(module, name).double(), expected.detach(), rtol=1e-5, atol=1e-5)


def test_intrinsic_said_trains_exactly_d_prime_plus_the_head():
    model = al.adapt(build("bert-cls"), "intrinsic-said", intrinsic_dim=300)
    pc = al.count_parameters(model)
    assert pc.by_group == {"intrinsic": 300, "head": head_size(model)}  # lambda inside d'
    m = len(said_targets(build("bert-cls")))
    assert model.bert.intrinsic_said.theta.numel() == 300 - m and model.bert.intrinsic_said.scales.numel() == m
    assert pc.base_total == al.count_parameters(build("bert-cls")).base_total
    loss = model(**inputs("bert-cls")).logits.sum()
    loss.backward()
    assert model.bert.intrinsic_said.theta.grad.abs().sum() > 0  # the gradient reaches theta through P


def test_intrinsic_said_kept_values_follow_theta():
    """Without gradients each tensor's value is kept between calls; a changed theta must not be served stale."""
    model = al.adapt(build("bert-cls"), "intrinsic-said", intrinsic_dim=300)
    batch = inputs("bert-cls")
    first = output(model, batch)
    with torch.no_grad():
        model.bert.intrinsic_said.theta.add_(0.5)
    changed = output(model, batch)
    assert not torch.equal(changed, first)
    assert torch.equal(model(**batch).logits.detach(), changed)  # with gradients: computed afresh, the same


def test_intrinsic_said_bad_dimension():
    model = build("bert-cls")
    targets = said_targets(model)
    with pytest.raises(ValueError, match=rf"intrinsic_dim > {len(targets)}"):
        al.adapt(model, "intrinsic-said", intrinsic_dim=len(targets))
    total = sum(p.numel() for p, _ in targets)
    with pytest.raises(ValueError, match=f"intrinsic_dim <= {total:,}"):
        al.adapt(model, "intrinsic-said", intrinsic_dim=total + 1)
    assert not hasattr(model, "adapterlab_method")  # refused before touching the model


# ---------------------------------------------------------------- prompt tuning

def test_prompt_tuning_prepends_n_vectors_and_extends_the_mask():
    """At init the adapted encoder computes the base encoder on [prompt; embeddings] with n ones in front
    of the attention mask: the sequence grows by n, nothing else changes."""
    n, batch = 5, inputs("bert")
    base, model = build("bert"), al.adapt(build("bert"), "prompt-tuning", prompt_tokens=n)
    prompt = model.prompt.weight.detach()
    with torch.no_grad():
        got = model(**batch).last_hidden_state
        embeds = base.embeddings.word_embeddings(batch["input_ids"])
        b = embeds.shape[0]
        manual = base(inputs_embeds=torch.cat([prompt.expand(b, -1, -1), embeds], 1),
                      attention_mask=torch.cat([torch.ones(b, n, dtype=torch.long), batch["attention_mask"]], 1))
    assert got.shape[1] == batch["input_ids"].shape[1] + n
    assert torch.equal(got, manual.last_hidden_state)
    with torch.no_grad():  # given embeddings instead of ids, the prompt goes in front of them too (as in PEFT)
        from_embeds = model(inputs_embeds=embeds, attention_mask=batch["attention_mask"]).last_hidden_state
    assert torch.equal(from_embeds, got)
    # the mask really is extended: the padded row differs from the same row run without its padding mask
    with torch.no_grad():
        unmasked = model(input_ids=batch["input_ids"], attention_mask=torch.ones_like(batch["attention_mask"]))
    assert not torch.allclose(unmasked.last_hidden_state[0], got[0])
    assert torch.equal(unmasked.last_hidden_state[1], got[1])  # row 1 has no padding


def test_prompt_tuning_on_t5_extends_the_cross_attention_mask_too():
    n, batch = 4, inputs("t5")
    base, model = build("t5"), al.adapt(build("t5"), "prompt-tuning", prompt_tokens=n)
    with torch.no_grad():
        got = model(**batch).logits
        b = batch["input_ids"].shape[0]
        embeds = torch.cat([model.prompt.weight.expand(b, -1, -1), base.shared(batch["input_ids"])], 1)
        mask = torch.cat([torch.ones(b, n, dtype=torch.long), batch["attention_mask"]], 1)
        manual = base(inputs_embeds=embeds, attention_mask=mask, decoder_input_ids=batch["decoder_input_ids"]).logits
        # the encoder run on its own, then the model on its output (as train.score_candidates does)
        encoded = model.get_encoder()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        apart = model(encoder_outputs=encoded, attention_mask=batch["attention_mask"],
                      decoder_input_ids=batch["decoder_input_ids"]).logits
    assert encoded.last_hidden_state.shape[1] == batch["input_ids"].shape[1] + n
    assert torch.equal(got, manual) and torch.equal(apart, manual)


@pytest.mark.parametrize("init", ["random", "vocab"])
def test_prompt_tuning_trains_n_times_d_and_the_head(init):
    model = al.adapt(build("bert-cls"), "prompt-tuning", prompt_tokens=7, prompt_init=init)
    pc = al.count_parameters(model)
    assert pc.by_group == {"prompt": 7 * TINY_BERT["hidden_size"], "head": head_size(model)}
    prompt = model.bert.prompt.weight
    if init == "random":
        assert prompt.abs().max() <= 0.5  # U(-0.5, 0.5), the authors' code
    else:  # every prompt vector is a copy of a vocabulary row
        vocab = model.bert.embeddings.word_embeddings.weight
        assert all((vocab == row).all(1).any() for row in prompt)


def test_prompt_tuning_matches_the_compacter_paper_on_t5_base():
    """Compacter Table 1: Prompt Tuning trains 0.034% of T5-base (100 prompt tokens of 768)."""
    config = T5Config(d_model=768, d_ff=3072, d_kv=64, num_heads=12, num_layers=12, vocab_size=32128)
    with torch.device("meta"):
        model = al.adapt(T5ForConditionalGeneration(config), "prompt-tuning")
    pc = al.count_parameters(model)
    assert pc.trainable == 100 * 768 and pc.base_total == 222_903_552
    assert pc.percent == pytest.approx(0.034, abs=1e-3)  # the paper prints three decimals


def test_prompt_tuning_refuses_more_tokens_than_positions():
    room = TINY_BERT["max_position_embeddings"]
    with pytest.raises(ValueError, match=f"prompt_tokens < {room}"):
        al.adapt(build("bert-cls"), "prompt-tuning", prompt_tokens=room)
    model = al.adapt(build("bert-cls"), "prompt-tuning", prompt_tokens=room - 8)
    check_room(model, 8)  # fits exactly
    with pytest.raises(ValueError, match="use prompt_tokens <= 46 or a max_length <= 8"):
        check_room(model, 18)
    too_long = {"input_ids": torch.randint(3, 100, (1, 9))}
    with pytest.raises(ValueError, match="prompt tokens"):
        model(**too_long)


# ---------------------------------------------------------------- LoRA

@pytest.mark.parametrize("kind", ["bert-cls", "t5"])
def test_lora_with_zero_b_is_the_base_model_exactly(kind):
    batch = inputs(kind)
    model = al.adapt(build(kind), "lora", rank=4)
    assert all(torch.equal(update.B, torch.zeros_like(update.B)) for _, update in lora.lora_layers(model))
    assert torch.equal(output(model, batch), output(build(kind), batch))  # x A^T 0 = 0 exactly


def test_lora_trains_r_times_in_plus_out_per_target():
    d, r = TINY_BERT["hidden_size"], 4
    model = al.adapt(build("bert-cls"), "lora", rank=r)
    targets = 3 * 2  # query and value of 3 blocks
    assert al.count_parameters(model).by_group == {"lora": targets * r * (d + d), "head": head_size(model)}
    ffn = al.adapt(build("bert-cls"), "lora", rank=r, lora_targets=("intermediate.dense",))  # a path suffix
    assert al.count_parameters(ffn).by_group["lora"] == 3 * r * (d + TINY_BERT["intermediate_size"])
    t5 = al.adapt(build("t5"), "lora", rank=r)
    assert len(lora.lora_layers(t5)) == 2 * 2 + 2 * 4  # q, v of encoder self-, decoder self- and cross-attention


def test_merged_lora_equals_unmerged():
    batch = inputs("bert-cls")
    model = al.adapt(build("bert-cls"), "lora", rank=4, lora_alpha=16)
    with torch.no_grad():
        for _, update in lora.lora_layers(model):
            update.B.normal_(0, 0.5)
    unmerged = output(model, batch)
    assert not torch.allclose(unmerged, output(build("bert-cls"), batch), atol=1e-3)  # the update matters
    with lora.merged(model):
        merged = output(model, batch)
    # W + s B A rounds once to float32: ~1e-7 relative per weight, grown through 3 blocks to ~1e-6
    torch.testing.assert_close(merged, unmerged, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(output(model, batch), unmerged, rtol=1e-5, atol=1e-5)  # unmerged again


def test_lora_targets_that_match_nothing_list_the_names():
    with pytest.raises(ValueError, match=r"lora_targets=\('q_proj',\) match no linear layer.*'key'.*'query'"):
        al.adapt(build("bert-cls"), "lora", lora_targets=("q_proj",))


# ---------------------------------------------------------------- head-only and all four

def test_head_only_trains_the_classifier_alone():
    model = al.adapt(build("bert-cls"), "head-only")
    assert trainable_names(model) == {"classifier.weight", "classifier.bias"}
    with pytest.raises(ValueError, match="no task head"):
        al.adapt(build("t5"), "head-only")


@pytest.mark.parametrize("name", BASELINES)
def test_round_trip_into_a_fresh_base(tmp_path, name):
    model = al.adapt(build("bert-cls"), name, **SMALL.get(name, {}))
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 0.1)
    al.save_adapter(model, tmp_path)
    fresh = al.load_adapter(build("bert-cls"), tmp_path)
    batch = inputs("bert-cls")
    assert torch.equal(output(fresh, batch), output(model, batch))  # same parameters, same fixed projections
    assert fresh.adapterlab_method == model.adapterlab_method


def test_loading_into_a_merged_lora_is_refused(tmp_path):
    model = al.adapt(build("bert-cls"), "lora")
    al.save_adapter(model, tmp_path)
    lora.merge(model)
    with pytest.raises(ValueError, match="unmerge"):
        al.load_adapter(model, tmp_path)


@pytest.mark.parametrize("name", BASELINES)
def test_latency_is_a_positive_median(name):
    model = al.adapt(build("bert-cls"), name, **SMALL.get(name, {}))
    assert inference_latency(model, batch_size=2, length=8, repeats=3, warmup=1) > 0


def test_serving_latency_times_each_batch_and_lora_merged_too_leaving_it_unmerged():
    plain = serving_latency(build("bert-cls"), length=8, batches=(1, 2), repeats=1)
    assert set(plain) == {"1", "2"} and min(plain.values()) > 0
    model = al.adapt(build("bert-cls"), "lora")
    weights = {n: p.clone() for n, p in model.named_parameters()}
    timed = serving_latency(model, length=8, batches=(1, 2), repeats=1)
    assert set(timed) == {"1", "2", "merged_1", "merged_2"} and min(timed.values()) > 0
    assert all(torch.equal(p, weights[n]) for n, p in model.named_parameters())  # merged, then unmerged again


# ---------------------------------------------------------------- against PEFT, on copied weights

def twin_backbones(name):
    """Two copies of one backbone (the head too: `default` draws a fresh head on each load)."""
    ours, tokenizer = load_backbone(name)
    theirs, _ = load_backbone(name)
    theirs.load_state_dict(ours.state_dict())
    batch = tokenizer(["the flight was late again", "great crew, thanks!", "ok"], return_tensors="pt",
                      padding=True)
    return ours, theirs, batch


# Tolerance for both: the two compute the same float32 operations in the same order and agree bit for bit
# here; 1e-5 leaves room for another CPU choosing another matmul kernel for one of the two call paths
# (reordered float32 sums, ~1e-7 relative per op over 2-6 blocks), yet is 100x below what the trained
# parameters change (asserted).
TOLERANCE = dict(rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backbone", ["tiny", "default"])
def test_lora_matches_peft(backbone):
    peft = pytest.importorskip("peft")
    ours, theirs, batch = twin_backbones(backbone)
    al.adapt(ours, "lora", rank=4, lora_alpha=8)
    theirs = peft.get_peft_model(theirs, peft.LoraConfig(task_type=peft.TaskType.SEQ_CLS, r=4, lora_alpha=8,
                                                         target_modules=["query", "value"], lora_dropout=0.0))
    with torch.no_grad():
        base = ours(**batch).logits
        for _, update in lora.lora_layers(ours):
            update.B.normal_(0, 0.5, generator=torch.Generator().manual_seed(0))
    assert lora.copy_to_peft(ours, theirs) == len(lora.lora_layers(ours)) > 0
    query_only = peft.get_peft_model(twin_backbones(backbone)[1], peft.LoraConfig(
        task_type=peft.TaskType.SEQ_CLS, r=4, lora_alpha=8, target_modules=["query"], lora_dropout=0.0))
    with pytest.raises(ValueError, match=r"copied \d+ of \d+ LoRA layers.*same target modules"):
        lora.copy_to_peft(ours, query_only)  # our value layers have no counterpart there
    assert sum(p.numel() for p in theirs.parameters() if p.requires_grad) == al.count_parameters(ours).trainable
    with torch.no_grad():
        mine, reference = ours(**batch).logits, theirs(**batch).logits
    assert (mine - base).abs().max() > 1e-3
    torch.testing.assert_close(mine, reference, **TOLERANCE)


@pytest.mark.parametrize("backbone", ["tiny", "default"])
def test_prompt_tuning_matches_peft(backbone):
    peft = pytest.importorskip("peft")
    ours, theirs, batch = twin_backbones(backbone)
    with torch.no_grad():
        base = ours(**batch).logits
    al.adapt(ours, "prompt-tuning", prompt_tokens=10)
    theirs = peft.get_peft_model(theirs, peft.PromptTuningConfig(task_type=peft.TaskType.SEQ_CLS,
                                                                 num_virtual_tokens=10))
    with torch.no_grad():
        theirs.prompt_encoder["default"].embedding.weight.copy_(ours.base_model.prompt.weight)
    assert sum(p.numel() for p in theirs.parameters() if p.requires_grad) == al.count_parameters(ours).trainable
    with torch.no_grad():
        mine, reference = ours(**batch).logits, theirs(**batch).logits
    assert (mine - base).abs().max() > 1e-3
    torch.testing.assert_close(mine, reference, **TOLERANCE)
