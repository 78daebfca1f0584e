"""PPO policy and value losses, per element (Schulman et al. 2017, arXiv:1707.06347).

Every loss returns one value per input element; the caller reduces (usually with `.mean()`).
Inputs may have any shape as long as the shapes of the paired arguments match.
Advantages, value targets and old values are constants: no gradient flows into them.
"""

from __future__ import annotations

import torch
from torch import Tensor

from shoal.ops._checks import check_floating, check_nonnegative, check_positive, check_same_shape

__all__ = [
    "approx_kl",
    "clip_fraction",
    "clipped_surrogate_loss",
    "clipped_value_loss",
    "huber_loss",
    "value_loss",
]


def clipped_surrogate_loss(log_ratio: Tensor, advantages: Tensor, epsilon: float) -> Tensor:
    """Negated clipped surrogate objective of PPO (Schulman et al. 2017, eq. 7).

    `-min(ρ A, clip(ρ, 1 - ε, 1 + ε) A)` with `ρ = exp(log_ratio)`, per element. The gradient is
    zero wherever clipping is active (`ρ > 1 + ε` with `A > 0`, `ρ < 1 - ε` with `A < 0`).

    Args:
        log_ratio: `log π(a|s) - log π_old(a|s)`, any shape.
        advantages: advantage estimates, same shape; treated as constants.
        epsilon: clip range ε >= 0.

    Returns:
        per-element loss, same shape as `log_ratio`.
    """
    check_floating("log_ratio", log_ratio)
    check_same_shape("log_ratio", log_ratio, [("advantages", advantages)])
    check_nonnegative("epsilon", epsilon)
    advantages = advantages.detach()
    ratio = torch.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + epsilon) * advantages
    return -torch.minimum(unclipped, clipped)


def clip_fraction(log_ratio: Tensor, epsilon: float) -> Tensor:
    """Fraction of elements whose ratio lies outside the clip range, `mean(|ρ - 1| > ε)`.

    A PPO diagnostic (Schulman et al. 2017); no gradient.

    Args:
        log_ratio: `log π(a|s) - log π_old(a|s)`, any non-empty shape.
        epsilon: clip range ε >= 0.

    Returns:
        scalar tensor in [0, 1], dtype of `log_ratio`.
    """
    check_floating("log_ratio", log_ratio)
    check_nonnegative("epsilon", epsilon)
    with torch.no_grad():
        return ((torch.exp(log_ratio) - 1.0).abs() > epsilon).to(log_ratio.dtype).mean()


def approx_kl(log_ratio: Tensor) -> Tensor:
    """Low-variance unbiased estimate of KL(π_old || π): `mean((ρ - 1) - log ρ)`.

    Schulman, "Approximating KL Divergence" (2020, http://joschu.net/blog/kl-approx.html), the
    `k3` estimator with samples drawn from π_old. Non-negative per element; no gradient.

    Args:
        log_ratio: `log π(a|s) - log π_old(a|s)` for actions sampled from π_old, any shape.

    Returns:
        scalar tensor.
    """
    check_floating("log_ratio", log_ratio)
    with torch.no_grad():
        return (torch.expm1(log_ratio) - log_ratio).mean()


def value_loss(v: Tensor, target: Tensor) -> Tensor:
    """Squared-error value loss `0.5 (v - target)^2`, per element; `target` is a constant.

    Args:
        v: predicted values, any shape.
        target: value targets (e.g. λ-returns), same shape.

    Returns:
        per-element loss, same shape as `v`.
    """
    check_floating("v", v)
    check_same_shape("v", v, [("target", target)])
    return 0.5 * (v - target.detach()).square()


def clipped_value_loss(v: Tensor, v_old: Tensor, target: Tensor, epsilon: float) -> Tensor:
    """PPO2 clipped value loss (OpenAI baselines `ppo2`; Schulman et al. 2017 implementation).

    `0.5 max((v - G)^2, (v_old + clip(v - v_old, -ε, ε) - G)^2)`, per element. `v_old` and the
    target `G` are constants.

    Args:
        v: predicted values, any shape.
        v_old: values predicted when the data was collected, same shape.
        target: value targets `G`, same shape.
        epsilon: clip range ε >= 0, in value units.

    Returns:
        per-element loss, same shape as `v`.
    """
    check_floating("v", v)
    check_same_shape("v", v, [("v_old", v_old), ("target", target)])
    check_nonnegative("epsilon", epsilon)
    v_old = v_old.detach()
    target = target.detach()
    v_clipped = v_old + torch.clamp(v - v_old, -epsilon, epsilon)
    return 0.5 * torch.maximum((v - target).square(), (v_clipped - target).square())


def huber_loss(x: Tensor, delta: float = 1.0) -> Tensor:
    """Huber loss of an error `x` (Huber 1964), per element.

    `0.5 x^2` where `|x| <= δ`, `δ (|x| - 0.5 δ)` elsewhere.

    Args:
        x: errors, any shape.
        delta: threshold δ > 0 between the quadratic and linear regions.

    Returns:
        per-element loss, same shape as `x`.
    """
    check_floating("x", x)
    check_positive("delta", delta)
    abs_x = x.abs()
    quadratic = torch.clamp(abs_x, max=delta)
    # Written as 0.5 q^2 + δ (|x| - q) so both regions share one smooth expression.
    return 0.5 * quadratic.square() + delta * (abs_x - quadratic)
