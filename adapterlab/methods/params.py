"""Parameter accounting: how much does a method train, and where?

The papers compare methods by the share of parameters trained per task. We count
unique parameters (tied embeddings once), group the trainable ones, and divide by
the size of the base model before adapt() -- the task head excluded, since every
method needs one. Biases that BitFit adds to a bias-free model (T5) are trained
parameters in the "backbone" (or "layernorm") group, but not part of the base.

"layernorm" is every model's own norm (inject.is_layernorm): BERT's LayerNorm, DistilBERT's
sa_layer_norm / output_layer_norm, GPT-2's ln_1 / ln_2 / ln_f, T5's layer_norm, Llama's RMSNorms
(input_layernorm, post_attention_layernorm, norm). "head" is the task head outside the base model
(inject.head_parameter_names): classifier, pre_classifier, DeBERTa's pooler, score. A causal LM's
lm_head is pretrained with the base: part of "backbone" and of base_total (GPT-2's, tied to wte, once).

The baselines add three groups to the DESIGN contract's six: "prompt" (prompt tuning's
n x d vectors), "intrinsic" (Intrinsic-SAID's theta and lambda, d' in all) and "lora" (LoRA's A and
B). Like adapters, they are added parameters, so they are not part of base_total. Intrinsic-SAID's
frozen pretrained tensors (now `<module>.parametrizations.<name>.original`) are still the base.
"""
from dataclasses import dataclass, field

from .inject import SHARED_RULE_NAME, head_parameter_names, is_layernorm
from .intrinsic import IntrinsicSAID
from .lora import LoRA
from .prompt_tuning import PromptEmbedding

GROUPS = ("adapter_weights", "adapter_biases", "shared", "layernorm", "head", "backbone", "prompt", "intrinsic",
          "lora")
ADDED_MODULES = {PromptEmbedding: "prompt", IntrinsicSAID: "intrinsic", LoRA: "lora"}  # the baselines' own parameters


@dataclass
class ParameterCount:
    trainable: int
    base_total: int
    by_group: dict = field(default_factory=dict)  # trainable parameters per group

    @property
    def percent(self):
        return 100.0 * self.trainable / self.base_total

    def table(self):
        """A pandas DataFrame: group, parameters, percent of the base model."""
        import pandas as pd

        rows = [(g, n, 100.0 * n / self.base_total) for g, n in self.by_group.items()]
        rows.append(("total trainable", self.trainable, self.percent))
        return pd.DataFrame(rows, columns=["group", "parameters", "percent"]).set_index("group")

    def __str__(self):
        parts = ", ".join(f"{g} {n:,}" for g, n in self.by_group.items())
        return f"{self.trainable:,} trainable of {self.base_total:,} base ({self.percent:.3f}%): {parts}"


def added_bias_names(model):
    """Biases that inject.add_missing_biases gave the model: not part of the base model."""
    return {f"{m_name}.bias".lstrip(".") for m_name, m in model.named_modules()
            if getattr(m, "adapterlab_added_bias", False)}


def parameter_groups(model):
    """{parameter name: group} for every unique parameter, trained or not."""
    head = head_parameter_names(model)
    layernorm = {f"{m_name}.{p_name}".lstrip(".") for m_name, m in model.named_modules() if is_layernorm(m)
                 for p_name, _ in m.named_parameters(recurse=False)}
    added = {f"{m_name}.{p_name}".lstrip("."): ADDED_MODULES[type(m)] for m_name, m in model.named_modules()
             if type(m) in ADDED_MODULES for p_name, _ in m.named_parameters(recurse=False)}
    groups = {}
    for name, p in model.named_parameters():  # unique parameters: a shared rule or tied weight once
        if name in added:
            group = added[name]
        elif name == SHARED_RULE_NAME:
            group = "shared"
        elif ".adapter." in name:
            group = "adapter_biases" if name.endswith("bias") else "adapter_weights"
        elif name in head:
            group = "head"
        elif name in layernorm:
            group = "layernorm"
        else:
            group = "backbone"
        groups[name] = group
    return groups


def count_parameters(model):
    """Trainable parameters by group, and the base model's size (before adapt, head excluded)."""
    groups = parameter_groups(model)
    params = dict(model.named_parameters())
    added = added_bias_names(model)
    by_group = {g: 0 for g in GROUPS}
    base_total = 0
    for name, group in groups.items():
        p = params[name]
        if group in ("backbone", "layernorm") and name not in added:
            base_total += p.numel()
        if p.requires_grad:
            by_group[group] += p.numel()
    by_group = {g: n for g, n in by_group.items() if n}
    return ParameterCount(trainable=sum(by_group.values()), base_total=base_total, by_group=by_group)
