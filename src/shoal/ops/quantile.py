"""Quantile regression value learning (QR-DQN): the quantile Huber loss and its double-Q n-step
form.

Dabney et al. 2018, "Distributional Reinforcement Learning with Quantile Regression"
(arXiv:1710.10044). The return distribution of `(s, a)` is `N` equally weighted Diracs at
`θ_1..θ_N`, the quantile estimates at the midpoints `τ̂_i = (2i - 1) / (2N)` (Lemma 2: these
minimise the 1-Wasserstein distance to the true distribution). The target is `T θ_j = r + γ
θ'_j(s', a*)` for every target quantile `j`, with `a*` the greedy action of the mean
`Q(s', a) = (1/N) Σ_j θ_j(s', a)`. With `u_ij = T θ_j - θ_i`, the loss of a transition is
(Algorithm 1, section 4):

    Σ_i (1/N) Σ_j ρ^κ_τ̂_i(u_ij),   ρ^κ_τ(u) = |τ - 1{u < 0}| · L_κ(u) / κ,

where `L_κ` is the Huber loss with threshold `κ` (0.5 u² inside, κ(|u| - κ/2) outside; the paper
uses κ = 1). Dividing by κ makes `ρ^κ` tend to the quantile regression loss `(τ - 1{u<0}) u` as
κ -> 0. Double Q as in Rainbow: `a*` by the online network's means when given as the selector.
Shapes: a batch `[B]` of transitions, `A` actions, `N` quantiles.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from shoal.ops._checks import check_distribution_step, check_floating, check_transitions
from shoal.ops.distributional import action_rows
from shoal.ops.masking import masked_argmax

__all__ = [
    "QuantileLoss",
    "quantile_double_q_learning",
    "quantile_huber_loss",
    "quantile_midpoints",
]


def quantile_midpoints(n: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """`τ̂_i = (2i - 1) / (2N)` for `i = 1..N`, `[N]`."""
    if n < 1:
        raise ValueError(f"the number of quantiles must be >= 1, got {n}")
    return (torch.arange(n, dtype=dtype) + 0.5) / n


def quantile_huber_loss(theta: Tensor, target: Tensor, kappa: float = 1.0) -> Tensor:
    """`Σ_i (1/M) Σ_j ρ^κ_τ̂_i(target_j - theta_i)` per row, `[B]`.

    Args:
        theta: the predicted quantiles at `τ̂_1..τ̂_N`, `[B, N]`.
        target: samples of the target distribution (e.g. its quantiles), `[B, M]`; no gradient
            is taken through it by the caller's choice (detach it for TD learning).
        kappa: the Huber threshold κ > 0 (finite).
    """
    check_floating("theta", theta)
    check_floating("target", target)
    if theta.ndim != 2 or target.ndim != 2 or theta.shape[0] != target.shape[0]:
        raise ValueError(
            f"theta must be [B, N] and target [B, M] with one B, got {list(theta.shape)} and "
            f"{list(target.shape)}"
        )
    if not 0.0 < kappa < float("inf"):
        raise ValueError(f"kappa must be a finite number > 0, got {kappa}")
    tau = quantile_midpoints(theta.shape[1], theta.dtype).to(theta.device)
    u = target[:, None, :] - theta[:, :, None]  # [B, N_i, M_j]
    abs_u = u.abs()
    huber = torch.where(abs_u <= kappa, 0.5 * u.square(), kappa * (abs_u - 0.5 * kappa))
    weight = (tau[None, :, None] - (u.detach() < 0).to(u.dtype)).abs()
    return (weight * huber / kappa).mean(-1).sum(-1)


class QuantileLoss(NamedTuple):
    loss: Tensor  # [B], the quantile Huber loss: differentiable, also the priority
    target: Tensor  # [B, N], the target quantiles r + discount θ'(s', a*), without gradients


def quantile_double_q_learning(
    theta_tm1: Tensor,
    a_tm1: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    theta_t: Tensor,
    q_t_selector: Tensor,
    legal_t: Tensor | None = None,
    kappa: float = 1.0,
) -> QuantileLoss:
    """QR-DQN's n-step loss of a batch of transitions (Dabney et al. 2018, Algorithm 1).

    Args:
        theta_tm1: the online network's quantiles at `s_t`, `[B, A, N]`.
        a_tm1: the actions taken, integer `[B]`.
        r_t: the (n-step) rewards `[B]`.
        discount_t: `γ^m`, 0 where the episode terminated, `[B]`.
        theta_t: the target network's quantiles at the bootstrap state, `[B, A, N]`.
        q_t_selector: Q-values choosing the bootstrap action, `[B, A]`: the online network's
            means at the bootstrap state for double Q, the target network's own without.
        legal_t: the bootstrap state's legal actions `[B, A]` bool, or None (all legal).
        kappa: the Huber threshold κ.

    Returns:
        `QuantileLoss(loss [B], target [B, N])`.
    """
    batch = check_transitions(r_t, discount_t)
    check_distribution_step("theta_tm1", theta_tm1, "theta_t", theta_t, q_t_selector, a_tm1, batch)
    with torch.no_grad():
        best = q_t_selector.argmax(-1) if legal_t is None else masked_argmax(q_t_selector, legal_t)
        target = r_t[:, None] + discount_t[:, None] * action_rows(theta_t, best)
    taken = action_rows(theta_tm1, a_tm1)
    return QuantileLoss(quantile_huber_loss(taken, target, kappa), target)
