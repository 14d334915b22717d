"""Intrinsic-SAID: fine-tune the whole model inside a random d'-dimensional subspace.

Aghajanyan, Zettlemoyer & Gupta 2020, "Intrinsic Dimensionality Explains the Effectiveness of
Language Model Fine-Tuning" (Structure-Aware Intrinsic Dimension), as the Compacter paper runs
it (§5.5: d' = 1,400). Every weight tensor i of the body moves along its own fixed random projection
of one shared vector theta:

    theta_i = theta_i,0 + lambda_i * P_i theta^(d'-m)

theta_i,0 is the pretrained tensor (frozen), P_i a D_i x (d'-m) Fastfood projection (fastfood.py),
and lambda holds one scale per tensor. There are m tensors, and the lambda_i count inside d':
theta has d' - m entries, so the method trains exactly d' numbers (plus the task head, see below).

Followed from the authors' code (rabeehk/compacter, seq2seq/projections/intrinsic.py, Aghajanyan's):
  - every parameter tensor is reparameterised (weights, biases, LayerNorms, embeddings);
  - theta starts at zero, lambda at one: at theta = 0 the model is exactly the pretrained one
    (P_i 0 = 0, bit for bit);
  - the projection is recomputed from theta on every forward pass: the memory and time overhead
    the Compacter paper measures (+41.14% memory over full fine-tuning on T5-base).
Where we differ, and why:
  - a classifier's task head is not reparameterised but trains directly, as with every other
    method here (the authors ran T5, which has no head); T5 text-to-text models have no head, so
    there everything goes through theta, as in the paper;
  - their code keeps one unused lambda (it counts theta itself among the tensors, d' - m - 1 + m + 1);
    ours has exactly one lambda per reparameterised tensor, d' - m + m;
  - the projections come from a seeded generator (MethodConfig.projection_seed) so that a saved theta
    can be loaded: P is part of the method, not of the run;
  - without gradients (evaluation, serving) each tensor's value theta_i is kept until theta, lambda
    or the tensor change: serving a SAID model costs what the base model costs.
We use torch.nn.utils.parametrize, so each tensor keeps its module and is computed on access;
its frozen pretrained value lives at `<module>.parametrizations.<name>.original`.
"""
import torch
import torch.nn as nn
from torch.nn.utils import parametrize

from ..nn.fastfood import fastfood, fastfood_factors, fastfood_size

MODULE_NAME = "intrinsic_said"  # where the trained vector lives, under model.base_model


class IntrinsicSAID(nn.Module):
    """theta (d' - m), lambda (m) and the fixed Fastfood factors of each tensor's projection P_i."""

    def __init__(self, sizes, dim, seed=0, device=None):
        super().__init__()
        m = len(sizes)
        self.sizes, self.dim = list(sizes), dim
        self.theta = nn.Parameter(torch.zeros(dim - m))
        self.scales = nn.Parameter(torch.ones(m))  # lambda: one per tensor, as in the authors' code
        generator = torch.Generator().manual_seed(seed)
        self.factor_scale = []
        for i, size in enumerate(self.sizes):
            if device is not None and torch.device(device).type == "meta":  # counting shapes: draw nothing
                signs, perm, gauss, scale = (torch.empty(fastfood_size(size, dim - m), device="meta"),
                                             torch.empty(fastfood_size(size, dim - m), dtype=torch.long,
                                                         device="meta"),
                                             torch.empty(fastfood_size(size, dim - m), device="meta"), float("nan"))
            else:
                signs, perm, gauss, scale = fastfood_factors(size, dim - m, generator)
            # persistent=False: fixed by the seed, so they stay out of state_dict and saved adapters
            self.register_buffer(f"signs_{i}", signs, persistent=False)
            self.register_buffer(f"perm_{i}", perm, persistent=False)
            self.register_buffer(f"gauss_{i}", gauss, persistent=False)
            self.factor_scale.append(scale)

    def projection(self, i):
        """P_i theta: D_i numbers."""
        return fastfood(self.theta, self.sizes[i], getattr(self, f"signs_{i}"), getattr(self, f"perm_{i}"),
                        getattr(self, f"gauss_{i}"), self.factor_scale[i])

    def offset(self, i):
        """lambda_i P_i theta."""
        return self.scales[i] * self.projection(i)

    def version(self):
        """Changes whenever theta or lambda change (in-place updates bump _version; .to() moves data_ptr)."""
        return (self.theta._version, self.scales._version, self.theta.data_ptr(), self.scales.data_ptr())

    def extra_repr(self):
        return f"d'={self.dim}, tensors m={len(self.sizes)}, theta={self.dim - len(self.sizes)}"


class ShiftedBySAID(nn.Module):
    """The parametrization of tensor i: theta_i,0 + lambda_i P_i theta."""

    def __init__(self, said, index):
        super().__init__()
        # a plain attribute, not a submodule: else every tensor would re-register theta under its own name
        object.__setattr__(self, "said", said)
        self.index = index
        self._kept = (None, None)  # (version, value) of the last value computed without gradients

    def forward(self, original):
        if torch.is_grad_enabled():
            self._kept = (None, None)
            return original + self.said.offset(self.index).view_as(original).to(original.dtype)
        version = (self.said.version(), original._version, original.data_ptr())
        if self._kept[0] != version:
            self._kept = (version, original + self.said.offset(self.index).view_as(original).to(original.dtype))
        return self._kept[1]


def said_targets(model):
    """[(parameter, [(module, attribute name), ...])] for every unique parameter of the body.

    A tied parameter (T5's shared embedding and LM head) is one tensor with several owners.
    """
    owners = {}
    for module in model.base_model.modules():
        for name, p in module._parameters.items():
            if p is not None:
                owners.setdefault(id(p), (p, []))[1].append((module, name))
    return list(owners.values())


def check(model, cfg):
    """d' must leave at least one coordinate for theta and cannot exceed the parameters it moves."""
    targets = said_targets(model)
    m, total = len(targets), sum(p.numel() for p, _ in targets)
    if cfg.intrinsic_dim <= m:
        raise ValueError(
            f"intrinsic-said: intrinsic_dim={cfg.intrinsic_dim} leaves no room for theta: the model has m={m} "
            f"weight tensors and each takes one scale lambda_i out of d'; use intrinsic_dim > {m} (the paper: 1,400)"
        )
    if cfg.intrinsic_dim > total:
        raise ValueError(
            f"intrinsic-said: intrinsic_dim={cfg.intrinsic_dim} is larger than the {total:,} parameters it "
            f"reparameterises, so it would not reduce anything; use intrinsic_dim <= {total:,}"
        )


def add_intrinsic_said(model, cfg):
    """Reparameterise every body tensor through one shared theta; returns the IntrinsicSAID module."""
    targets = said_targets(model)
    like = targets[0][0]
    said = IntrinsicSAID([p.numel() for p, _ in targets], cfg.intrinsic_dim, cfg.projection_seed, like.device)
    said.to(device=like.device, dtype=like.dtype)
    for i, (_, owners) in enumerate(targets):
        for module, name in owners:
            # unsafe: skip the trial evaluation of every projection; shape and dtype hold by construction
            parametrize.register_parametrization(module, name, ShiftedBySAID(said, i), unsafe=True)
    model.base_model.add_module(MODULE_NAME, said)
    return said
