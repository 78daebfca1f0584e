"""Clipped double-Q targets for actor-critic agents, soft (SAC) and deterministic (TD3).

Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic Methods"
(TD3, arXiv:1802.09477): bootstrapping from the smaller of two target critics counters the
overestimation of a single critic (section 4.2), and a target action smoothed with clipped
noise keeps the critic from fitting narrow peaks (section 5.3). Haarnoja et al. 2018, "Soft
Actor-Critic Algorithms and Applications" (arXiv:1812.05905, sections 4.2 and 6), bootstrap
from the soft value `min_i Q'_i(s', a') - α log π(a' | s')` with `a' ~ π(· | s')`.

A transition's `discount_t` is `γ^m` for an m-step transition and 0 where the episode
terminated (a truncated one still bootstraps). Targets carry no gradient. Shapes are `[...]`,
usually a batch `[B]` of transitions; the paired arguments must match.
"""

from __future__ import annotations

import torch
from torch import Tensor

from shoal.ops._checks import check_floating, check_nonnegative, check_same_shape

__all__ = ["clipped_double_q_target", "smoothed_target_action", "soft_clipped_double_q_target"]


def clipped_double_q_target(r_t: Tensor, discount_t: Tensor, q1_t: Tensor, q2_t: Tensor) -> Tensor:
    """`y = r + discount · min(Q'_1(s', a'), Q'_2(s', a'))`, without gradients.

    Fujimoto et al. 2018 (TD3, arXiv:1802.09477), section 4.2.

    Args:
        r_t: rewards of the transitions `[...]`.
        discount_t: `γ^m`, 0 where the episode terminated, `[...]`.
        q1_t: first target critic at the successor and its target action, `[...]`.
        q2_t: second target critic at the same, `[...]`.

    Returns:
        targets `[...]`.
    """
    return soft_clipped_double_q_target(r_t, discount_t, q1_t, q2_t, torch.zeros_like(r_t), 0.0)


def soft_clipped_double_q_target(
    r_t: Tensor,
    discount_t: Tensor,
    q1_t: Tensor,
    q2_t: Tensor,
    log_pi_t: Tensor,
    alpha: float | Tensor,
) -> Tensor:
    """`y = r + discount · (min_i Q'_i(s', a') - α log π(a' | s'))`, without gradients.

    The soft Bellman target of SAC with clipped double Q (Haarnoja et al. 2018,
    arXiv:1812.05905, sections 4.2 and 6), `a' ~ π(· | s')` sampled fresh from the current
    policy.

    Args:
        r_t: rewards of the transitions `[...]`.
        discount_t: `γ^m`, 0 where the episode terminated, `[...]`.
        q1_t: first target critic at `(s', a')`, `[...]`.
        q2_t: second target critic at `(s', a')`, `[...]`.
        log_pi_t: `log π(a' | s')`, `[...]`.
        alpha: the temperature α >= 0 (a float or a scalar tensor, taken as a constant).

    Returns:
        targets `[...]`.
    """
    check_floating("r_t", r_t)
    others = [("discount_t", discount_t), ("q1_t", q1_t), ("q2_t", q2_t), ("log_pi_t", log_pi_t)]
    check_same_shape("r_t", r_t, others)
    if isinstance(alpha, Tensor):
        if alpha.numel() != 1:
            raise ValueError(f"alpha must be a scalar, got shape {tuple(alpha.shape)}")
        if not bool(alpha.detach() >= 0):
            raise ValueError(f"alpha must be >= 0, got {float(alpha)}")
        alpha = alpha.detach().reshape(())
    else:
        check_nonnegative("alpha", alpha)
    with torch.no_grad():
        soft_value = torch.minimum(q1_t, q2_t) - alpha * log_pi_t
        return r_t + discount_t * soft_value


def smoothed_target_action(
    a_t: Tensor,
    noise: Tensor,
    noise_clip: float,
    low: float = -1.0,
    high: float = 1.0,
) -> Tensor:
    """TD3's target policy smoothing: `clip(π'(s') + clip(ε, -c, c), low, high)`.

    Fujimoto et al. 2018 (TD3, arXiv:1802.09477), section 5.3: the target action is the target
    actor's, plus noise clipped to `[-c, c]`, kept within the action bounds. Without gradients.

    Args:
        a_t: the target actor's actions at the successors `[..., D]`.
        noise: the noise ε, e.g. `σ̃ · N(0, I)`, same shape as `a_t`.
        noise_clip: c >= 0.
        low: lower action bound (-1 for squashed actions).
        high: upper action bound, > low.

    Returns:
        smoothed target actions `[..., D]`.
    """
    check_floating("a_t", a_t)
    check_same_shape("a_t", a_t, [("noise", noise)])
    check_nonnegative("noise_clip", noise_clip)
    if not low < high:
        raise ValueError(f"low must be < high, got low={low!r}, high={high!r}")
    with torch.no_grad():
        return (a_t + noise.clamp(-noise_clip, noise_clip)).clamp(low, high)
