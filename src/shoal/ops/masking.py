"""Action masking: logits, greedy choices, target maxima and uniform draws over legal actions.

Invalid action masking (Huang & Ontañón 2022, "A Closer Look at Invalid Action Masking in
Policy Gradient Algorithms"): the logits of illegal actions are replaced by a large negative
number before the softmax, so they get probability 0 and no gradient, while the log-probs and
the entropy stay finite (a `-inf` logit would make `p log p` a NaN). The value family's maxima
and argmaxes (the greedy action, DQN's `max_a Q(s', a)`, double Q's `argmax_a Q_online(s', a)`,
van Hasselt et al. 2016) range over the legal actions only.

`legal` is a bool (or 0/1 integer) tensor `[..., A]`, True where the action may be taken. A row
with no legal action at all (e.g. the final observation of a finished board game, which the
target never bootstraps from) is treated as all legal, so every result stays finite and the
ops never need a special case from the caller. Ties in an argmax go to the lowest index, as
`torch.argmax` breaks them.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from shoal.ops._checks import check_floating

__all__ = [
    "legal_or_all",
    "masked_argmax",
    "masked_logits",
    "masked_max",
    "uniform_legal_actions",
]


def _check(values_name: str, values: Tensor, legal: Tensor) -> Tensor:
    check_floating(values_name, values)
    if not isinstance(legal, Tensor):
        raise ValueError(f"legal must be a torch.Tensor, got {type(legal).__name__}")
    if values.ndim < 1 or tuple(legal.shape) != tuple(values.shape):
        raise ValueError(
            f"legal must have the shape of {values_name} [..., A], got {list(legal.shape)} and "
            f"{list(values.shape)}"
        )
    return legal_or_all(legal)


def legal_or_all(legal: Tensor) -> Tensor:
    """`legal [..., A]` as bool, with rows that allow no action made all True."""
    legal = legal.bool()
    return legal | ~legal.any(-1, keepdim=True)


def masked_logits(logits: Tensor, legal: Tensor) -> Tensor:
    """`logits [..., A]` with illegal entries set to the dtype's most negative finite value.

    A softmax over the result gives illegal actions probability exactly 0 (and legal ones the
    softmax of the legal logits alone); log-probs of legal actions, the entropy and KL stay
    finite, and no gradient reaches the illegal logits (Huang & Ontañón 2022, section 3).
    """
    legal = _check("logits", logits, legal)
    return torch.where(legal, logits, torch.finfo(logits.dtype).min)


def masked_argmax(q: Tensor, legal: Tensor) -> Tensor:
    """`argmax_a q[..., a]` over legal `a`, `[...]` int64 (ties: the lowest index)."""
    legal = _check("q", q, legal)
    return torch.where(legal, q, -torch.inf).argmax(-1)


def masked_max(q: Tensor, legal: Tensor) -> Tensor:
    """`max_a q[..., a]` over legal `a`, `[...]` (DQN's target maximum over s' legal actions)."""
    legal = _check("q", q, legal)
    return torch.where(legal, q, -torch.inf).amax(-1)


def uniform_legal_actions(legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row of `legal [B, A]`, uniform over its legal actions (all if none are),
    `[B]` int64: epsilon-greedy's random action (Mnih et al. 2015) among the legal ones."""
    allowed = np.asarray(legal).astype(bool)
    if allowed.ndim != 2:
        raise ValueError(f"legal must be [B, A], got shape {allowed.shape}")
    allowed = allowed | ~allowed.any(-1, keepdims=True)
    counts = allowed.sum(-1)
    pick = np.floor(rng.random(len(allowed)) * counts).astype(np.int64)
    # The pick-th legal action of each row: the first column whose running count exceeds it.
    chosen: np.ndarray = (np.cumsum(allowed, -1) > pick[:, None]).argmax(-1).astype(np.int64)
    return chosen
