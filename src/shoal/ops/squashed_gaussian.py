"""The tanh-squashed diagonal Gaussian policy of Soft Actor-Critic, as pure functions.

Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications" (arXiv:1812.05905),
appendix C: a Gaussian sample `u ~ N(μ, σ²)` is squashed into `a = tanh(u) ∈ (-1, 1)^D`, and
by the change of variables

    log π(a | s) = log N(u; μ, σ²) - Σ_d log(1 - tanh²(u_d)).

`1 - tanh²(u)` underflows to 0 in float32 once `|u|` passes about 9, so the correction is
computed from the identity `log(1 - tanh²(u)) = 2 (log 2 - u - softplus(-2u))`, finite for any
`u`. Log-probabilities are taken at the pre-squash sample `u`, never by inverting `tanh` at an
action near ±1. Batch dimensions are arbitrary (`[...]`); the last dimension is the action's D.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from shoal.ops._checks import check_floating, check_same_shape
from shoal.ops.distributions import gaussian_log_prob, gaussian_sample

__all__ = [
    "SquashedSample",
    "squashed_gaussian_log_prob",
    "squashed_gaussian_sample",
    "tanh_log_det_jacobian",
]

_LOG_2 = math.log(2.0)


class SquashedSample(NamedTuple):
    action: Tensor  # tanh(u), in [-1, 1], `[..., D]`
    log_prob: Tensor  # log π(action), `[...]`
    pre_tanh: Tensor  # u, `[..., D]`


def tanh_log_det_jacobian(pre_tanh: Tensor) -> Tensor:
    """`Σ_d log(1 - tanh²(u_d))`, the log-determinant of the Jacobian of `a = tanh(u)`.

    Haarnoja et al. 2018 (arXiv:1812.05905), appendix C, computed as
    `Σ_d 2 (log 2 - u_d - softplus(-2 u_d))`: finite, with finite gradients, at any `u`.

    Args:
        pre_tanh: pre-squash values u `[..., D]`.

    Returns:
        `[...]`, always <= 0.
    """
    check_floating("pre_tanh", pre_tanh)
    if pre_tanh.ndim < 1:
        raise ValueError(f"pre_tanh must have shape [..., D], got {tuple(pre_tanh.shape)}")
    return (2.0 * (_LOG_2 - pre_tanh - F.softplus(-2.0 * pre_tanh))).sum(dim=-1)


def squashed_gaussian_log_prob(mean: Tensor, log_std: Tensor, pre_tanh: Tensor) -> Tensor:
    """`log π(tanh(u))` of a tanh-squashed diagonal Gaussian, summed over the action dimension.

    `log N(u; μ, σ²) - Σ_d log(1 - tanh²(u_d))` (Haarnoja et al. 2018, arXiv:1812.05905,
    appendix C).

    Args:
        mean: means μ of the Gaussian before squashing `[..., D]`.
        log_std: log standard deviations, broadcastable to `mean`.
        pre_tanh: the Gaussian sample u `[..., D]`, same shape as `mean`; the action is
            `tanh(u)`.

    Returns:
        log-densities of the squashed actions `[...]`.
    """
    check_floating("mean", mean)
    check_same_shape("mean", mean, [("pre_tanh", pre_tanh)])
    return gaussian_log_prob(mean, log_std, pre_tanh) - tanh_log_det_jacobian(pre_tanh)


def squashed_gaussian_sample(
    mean: Tensor, log_std: Tensor, generator: torch.Generator | None = None
) -> SquashedSample:
    """A reparameterised squashed sample `a = tanh(μ + σ ε)`, `ε ~ N(0, I)`, and its log-density.

    Differentiable in `mean` and `log_std` through both the action and its log-probability,
    as SAC's policy loss needs (Haarnoja et al. 2018, arXiv:1812.05905, section 4.2).

    Args:
        mean: means μ `[..., D]`.
        log_std: log standard deviations, broadcastable to `mean`.
        generator: source of randomness on `mean.device`; the global one if None.

    Returns:
        `SquashedSample(action [..., D], log_prob [...], pre_tanh [..., D])`.
    """
    pre_tanh = gaussian_sample(mean, log_std, generator)
    log_prob = squashed_gaussian_log_prob(mean, log_std, pre_tanh)
    return SquashedSample(torch.tanh(pre_tanh), log_prob, pre_tanh)
