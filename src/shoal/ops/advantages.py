"""Advantage estimation: GAE and advantage normalisation.

Inputs are time-major `[T, B]` with the conventions of `shoal.ops.returns`: `v_tm1[t] = V(s_t)`,
`v_t[t] = V(s_{t+1})` of the true successor (the final observation at a truncation),
`discount_t[t] = gamma * (1 - terminated[t])`, `end_t[t]` nonzero where the episode ended at t.
"""

from __future__ import annotations

import torch
from torch import Tensor

from shoal.ops._checks import (
    check_floating,
    check_nonnegative,
    check_same_shape,
    check_time_batch,
    end_mask,
    lambda_per_step,
)

__all__ = ["generalized_advantage_estimation", "normalize_advantages"]


def generalized_advantage_estimation(
    r_t: Tensor,
    discount_t: Tensor,
    v_tm1: Tensor,
    v_t: Tensor,
    lambda_: float | Tensor,
    end_t: Tensor | None = None,
) -> Tensor:
    """Generalized advantage estimates (Schulman et al. 2016, arXiv:1506.02438, eq. 16).

    `δ_t = r_t + discount_t v_t[t] - v_tm1[t]` and
    `A_t = δ_t + discount_t λ (1 - end_t[t]) A_{t+1}` with `A_T = 0`. With consistent values
    (`v_t[t] == v_tm1[t+1]` inside an episode), `A + v_tm1` equals `lambda_returns` on the same
    inputs. The inputs are treated as constants: the result never requires grad.

    Args:
        r_t: rewards `[T, B]`.
        discount_t: discounts `[T, B]`.
        v_tm1: values of the states acted in, `V(s_t)`, `[T, B]`.
        v_t: successor-state values `V(s_{t+1})`, `[T, B]`.
        lambda_: float in [0, 1], or a tensor broadcastable to `[T, B]`.
        end_t: episode ends `[T, B]` (terminated or truncated), or None if none occur.

    Returns:
        advantages `[T, B]`, detached.
    """
    check_time_batch("r_t", r_t)
    check_same_shape("r_t", r_t, [("discount_t", discount_t), ("v_tm1", v_tm1), ("v_t", v_t)])
    with torch.no_grad():
        lam = lambda_per_step(lambda_, "r_t", r_t) * (1.0 - end_mask(end_t, "r_t", r_t))
        delta = r_t + discount_t * v_t - v_tm1
        trace = discount_t * lam
        a = torch.zeros_like(delta[0])
        out: list[Tensor] = []
        for t in reversed(range(r_t.shape[0])):
            a = delta[t] + trace[t] * a
            out.append(a)
        return torch.stack(out[::-1])


def normalize_advantages(adv: Tensor, eps: float = 1e-8) -> Tensor:
    """Standardise advantages over all elements: `(adv - mean) / (std + eps)`.

    Uses the unbiased (Bessel-corrected) standard deviation, as CleanRL and Stable-Baselines3 do,
    so at least two elements are needed. Any shape.

    Args:
        adv: advantages, any shape with at least two elements.
        eps: added to the standard deviation to avoid division by zero.

    Returns:
        normalised advantages, same shape as `adv`.
    """
    check_floating("adv", adv)
    check_nonnegative("eps", eps)
    if adv.numel() < 2:
        raise ValueError(
            f"adv needs at least 2 elements to normalise, got shape {tuple(adv.shape)}; "
            "use a larger minibatch or turn advantage normalisation off"
        )
    return (adv - adv.mean()) / (adv.std() + eps)
