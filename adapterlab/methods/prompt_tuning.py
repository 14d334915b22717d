"""Prompt tuning: n trainable vectors prepended to the input embeddings of a frozen model.

Lester, Al-Rfou & Constant 2021, "The Power of Scale for Parameter-Efficient Prompt Tuning", as the
Compacter paper runs it (§5.5: 100 prompt tokens). The model reads [P_1 .. P_n, x_1 .. x_L]: the
sequence grows by n and the attention mask gets n ones in front. Parameters: n x d.

Initialisation (MethodConfig.prompt_init):
  "random" (Prompt Tuning-R): uniform in [-0.5, 0.5], as the authors' code (rabeehk/compacter,
      seq2seq/third_party/models/t5/modeling_t5.py, init_prefix_weights) draws it;
  "vocab" (Prompt Tuning-T): copies of vocabulary embedding rows. The authors' code copies the first
      n rows, which in T5's SentencePiece vocabulary are frequent pieces (Lester et al. sample from
      the 5,000 most common tokens). In a BERT WordPiece vocabulary the first rows are [PAD] and the
      never-trained [unused*] slots, so we draw the n row ids uniformly at random instead (torch's RNG,
      so the run's seed fixes them), as PEFT's SAMPLE_VOCAB does.

What trains: the prompt and the task head. PEFT trains the classifier of a sequence-classification
model too (modules_to_save); the authors' T5 has no head.

Where the prompt goes, per architecture, the way PEFT does it so that the two agree on copied weights:
  BERT family (also DistilBERT, ELECTRA, DeBERTa-v2): a pre-hook on the encoder model (BertModel, ...)
      turns input_ids into embeddings, prepends the prompt, gives it token type 0 and attention 1.
      Absolute positions count the prompt, so n + input length must fit in max_position_embeddings
      (check_room); DeBERTa-v2 without position_biased_input (DeBERTa-v3) has relative positions only.
      The classifier pools the first position, which is now the first prompt vector: a trained input,
      so it learns to act as the [CLS] summary. ELECTRA's prompt has its embedding_size, as its
      word embeddings do: embeddings_project maps both to the hidden size.
  Decoder-only (GPT-2, Llama): the same pre-hook on GPT2Model / LlamaModel, and a forward hook that drops
      the n prompt positions from its last_hidden_state. The prompt comes first, so causal attention lets
      every input token see all of it, and after the drop the head sees the input's L positions only:
      GPT2ForSequenceClassification and LlamaForSequenceClassification find the last non-pad token from
      input_ids (length L) and index the hidden states with it, which stays right (PEFT's inputs_embeds
      route makes them pool position -1, a pad token under right padding); a causal LM's logits line up
      with its labels as without a prompt (x_1 is not predicted, as in the base model). GPT-2's
      positions are absolute (n_positions, check_room), Llama's rotary. Step-by-step decoding with a
      filled cache would prepend the prompt again at every step: refused (run whole sequences).
  T5: the prompt goes in front of the encoder's input (relative positions: no length limit); the
      decoder's cross-attention mask is extended to match, also when the encoder ran separately
      (train.score_candidates calls model.get_encoder() first).
"""
import inspect

import torch
import torch.nn as nn

MODULE_NAME = "prompt"  # under model.base_model
BERT_FAMILY = ("bert", "roberta", "xlm-roberta", "distilbert", "electra", "deberta-v2")
T5_FAMILY = ("t5", "mt5")
DECODERS = ("gpt2", "llama")
RELATIVE_POSITIONS = T5_FAMILY + ("llama",)  # T5's position buckets, Llama's rotary embeddings
RANDOM_RANGE = 0.5  # the authors' code: prefix_shared.uniform_(-0.5, 0.5)


class PromptEmbedding(nn.Module):
    """The n x d prompt; forward(batch) gives it repeated for every sequence of the batch."""

    def __init__(self, n, d, init="random", vocabulary=None):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, d))
        with torch.no_grad():
            if init == "random":
                self.weight.uniform_(-RANDOM_RANGE, RANDOM_RANGE)
            else:
                rows = torch.randint(0, vocabulary.shape[0], (n,))
                self.weight.copy_(vocabulary[rows.to(vocabulary.device)])

    def forward(self, batch):
        return self.weight.unsqueeze(0).expand(batch, -1, -1)

    def extra_repr(self):
        return f"prompt_tokens={self.weight.shape[0]}, d={self.weight.shape[1]}"


def position_room(model):
    """How many positions inputs + prompt may use (None: relative positions, no limit)."""
    config = model.config
    if config.model_type in RELATIVE_POSITIONS:
        return None
    if config.model_type == "deberta-v2" and not config.position_biased_input:  # relative positions only
        return None
    room = config.max_position_embeddings  # GPT-2: n_positions
    if config.model_type in ("roberta", "xlm-roberta"):  # RoBERTa counts positions from padding_idx + 1
        room -= config.pad_token_id + 1
    return room


def check_room(model, max_length):
    """ValueError unless prompt + inputs of max_length tokens fit the backbone's positions."""
    prompt = getattr(model.base_model, MODULE_NAME, None)
    room = position_room(model)
    if prompt is None or room is None:
        return
    n = prompt.weight.shape[0]
    if n + max_length > room:
        raise ValueError(
            f"prompt-tuning: {n} prompt tokens + inputs of up to {max_length} tokens need {n + max_length} "
            f"positions, but this {model.config.model_type} backbone has {room}; use prompt_tokens <= "
            f"{max(room - max_length, 0)} or a max_length <= {room - n}"
        )


def check(model, cfg):
    """Refuse what cannot work, before the model is touched."""
    model_type = model.config.model_type
    if model_type not in BERT_FAMILY + T5_FAMILY + DECODERS:
        raise ValueError(
            f"prompt-tuning supports {', '.join(BERT_FAMILY + T5_FAMILY + DECODERS)} models, not {model_type!r}; "
            "use one of those backbones or another method"
        )
    room = position_room(model)
    if room is not None and cfg.prompt_tokens >= room:
        raise ValueError(
            f"prompt-tuning: prompt_tokens={cfg.prompt_tokens} leaves no room for the input: the backbone has "
            f"{room} positions; use prompt_tokens < {room} minus the task's max_length"
        )


def _bound(forward, args, kwargs):
    """All arguments of a call by name (hooks see positional and keyword arguments apart)."""
    names = list(inspect.signature(forward).parameters)
    return {**dict(zip(names, args)), **kwargs}


def _extend_mask(mask, n):
    return torch.cat([mask.new_ones(mask.shape[0], n), mask], dim=1)


def _prepend(model, prompt, call):
    """Replace input_ids (or given inputs_embeds, as PEFT does) by [prompt; embeddings]; extend the
    attention mask (and token types) to match."""
    ids = call.pop("input_ids", None)
    embeds = model.get_input_embeddings()(ids) if ids is not None else call.get("inputs_embeds")
    if embeds is None:
        return call
    n, (b, length) = prompt.weight.shape[0], embeds.shape[:2]
    call["inputs_embeds"] = torch.cat([prompt(b).to(embeds.dtype), embeds], dim=1)
    mask = call.get("attention_mask")
    if mask is not None and mask.shape[1] == length:  # not yet extended by an outer hook
        call["attention_mask"] = _extend_mask(mask, n)
    if call.get("token_type_ids") is not None:
        call["token_type_ids"] = torch.cat([call["token_type_ids"].new_zeros(b, n), call["token_type_ids"]], dim=1)
    return call


def _base_hook(module, args, kwargs):
    """Pre-hook on the base model of the BERT family and of the decoders: the prompt goes in front."""
    prompt = getattr(module, MODULE_NAME)
    call = _bound(module.forward, args, kwargs)
    if call.get("position_ids") is not None:
        raise ValueError("prompt-tuning: explicit position_ids cannot account for the prompt; leave them out")
    cache = call.get("cache", call.get("past_key_values"))
    if cache is not None and cache.get_seq_length() > 0:
        raise ValueError("prompt-tuning: decoding step by step with a filled cache would prepend the prompt at "
                         "every step; run whole sequences instead (use_cache=False, score candidates by their loss)")
    given = call.get("input_ids") if call.get("input_ids") is not None else call.get("inputs_embeds")
    room = position_room(module)
    if given is not None and room is not None and prompt.weight.shape[0] + given.shape[1] > room:
        check_room(module, given.shape[1])  # raises, naming the fix
    return (), _prepend(module, prompt, call)


def _drop_prompt_states(module, args, output):
    """Decoders: the head sees the input's positions only, so that indices from input_ids (the last non-pad
    token) and labels line up with the hidden states as without a prompt."""
    n = getattr(module, MODULE_NAME).weight.shape[0]
    output.last_hidden_state = output.last_hidden_state[:, n:]  # ModelOutput: also its [0] and ["..."]
    return output


def _t5_encoder_hook(module, args, kwargs):
    return (), _prepend(module, module.adapterlab_prompt, _bound(module.forward, args, kwargs))


def _t5_model_hook(module, args, kwargs):
    """The decoder's cross-attention reads the encoder output: its mask must count the prompt too."""
    prompt = getattr(module, MODULE_NAME)
    n = prompt.weight.shape[0]
    call = _bound(module.forward, args, kwargs)
    mask, encoded = call.get("attention_mask"), call.get("encoder_outputs")
    if mask is None:
        return None
    if encoded is None and (call.get("input_ids") is not None or call.get("inputs_embeds") is not None):
        call["attention_mask"] = _extend_mask(mask, n)
    elif encoded is not None and mask.shape[1] + n == encoded[0].shape[1]:
        call["attention_mask"] = _extend_mask(mask, n)
    return (), call


def add_prompt(model, cfg):
    """Register the prompt under model.base_model and the hooks that put it in front of the input."""
    base = model.base_model
    embeddings = model.get_input_embeddings()
    d = embeddings.weight.shape[1]
    prompt = PromptEmbedding(cfg.prompt_tokens, d, cfg.prompt_init, embeddings.weight.detach())
    prompt.to(device=embeddings.weight.device, dtype=embeddings.weight.dtype)
    base.add_module(MODULE_NAME, prompt)
    if model.config.model_type in BERT_FAMILY + DECODERS:
        base.register_forward_pre_hook(_base_hook, with_kwargs=True)
        if model.config.model_type in DECODERS:
            base.register_forward_hook(_drop_prompt_states)
    else:
        encoder = model.get_encoder()
        object.__setattr__(encoder, "adapterlab_prompt", prompt)  # not a submodule: one name for the prompt
        encoder.register_forward_pre_hook(_t5_encoder_hook, with_kwargs=True)
        if hasattr(model, "decoder"):
            model.register_forward_pre_hook(_t5_model_hook, with_kwargs=True)
    return prompt
