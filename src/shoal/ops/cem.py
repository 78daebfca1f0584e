"""The cross-entropy method (CEM) as a maximiser of a Q-function over a box of actions.

Kalashnikov et al. 2018, "QT-Opt: Scalable Deep Reinforcement Learning for Vision-Based Robotic
Manipulation" (arXiv:1806.10293), section 4.2: QT-Opt has no actor; `max_a Q(s, a)` is found
by CEM, "a simple derivative-free optimization algorithm, which samples a batch of N values at
each iteration, fits a Gaussian distribution to the best M < N of these samples, and then
samples the next batch of N from that Gaussian" (N = 64, M = 6, two iterations in the paper).
The Gaussian is diagonal; samples are clipped to the box `[low, high]`, so every action valued
is one the env accepts. What is returned is the best action valued over all iterations (not the
last Gaussian's mean, which was never valued): its value is a lower bound of the maximum, never
an overestimate of what CEM found.

The randomness comes in as `noise` (standard normal draws), so the op is a pure function and a
test can replay it. Shapes: a batch `[B]` of states, `D` action entries, `I` iterations, `N`
samples per iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor

from shoal.ops._checks import check_floating

__all__ = ["CEMResult", "cem_maximize"]

# (actions [B, N, D]) -> values [B, N], for the batch's states (the caller closes over them).
QFunction = Callable[[Tensor], Tensor]


class CEMResult(NamedTuple):
    """`action [B, D]`: the best action valued; `value [B]`: its value; `mean`, `std` `[B, D]`:
    the last Gaussian fitted to the elites."""

    action: Tensor
    value: Tensor
    mean: Tensor
    std: Tensor


@torch.no_grad()
def cem_maximize(
    q_fn: QFunction,
    noise: Tensor,
    *,
    num_elites: int,
    low: float | Tensor = -1.0,
    high: float | Tensor = 1.0,
    mean: Tensor | None = None,
    std: Tensor | None = None,
) -> CEMResult:
    """`argmax_a q_fn(a)` over the box `[low, high]^D` by CEM, for a batch of states.

    Kalashnikov et al. 2018 (QT-Opt, arXiv:1806.10293), section 4.2. Iteration `i` samples
    `a = clip(μ + σ · noise[i], low, high)`, values the `N` samples, and fits `μ, σ` (per
    entry, over the elites) to the `num_elites` best.

    Args:
        q_fn: actions `[B, N, D]` -> values `[B, N]` (the states are the caller's).
        noise: standard normal draws `[I, B, N, D]`; `I` iterations of `N` samples.
        num_elites: M, the samples each Gaussian is fitted to, `1 <= M <= N`.
        low: the box's lower bounds (a float or a `[D]` tensor), `low < high`.
        high: the box's upper bounds (a float or a `[D]` tensor).
        mean: the first Gaussian's mean `[B, D]`; default the box's centre.
        std: the first Gaussian's std `[B, D]`; default half the box's width.

    Returns:
        `CEMResult`: the best action valued `[B, D]` and its value `[B]`, and the last
        Gaussian fitted.
    """
    check_floating("noise", noise)
    if noise.dim() != 4:
        raise ValueError(f"noise must be [I, B, N, D], got shape {tuple(noise.shape)}")
    iterations, batch, samples, dim = noise.shape
    if iterations < 1 or samples < 1:
        raise ValueError(f"noise needs at least one iteration and one sample, got {noise.shape}")
    if not 1 <= num_elites <= samples:
        raise ValueError(f"num_elites must be in [1, N={samples}], got {num_elites}")
    lo = torch.as_tensor(low, dtype=noise.dtype, device=noise.device).expand(dim)
    hi = torch.as_tensor(high, dtype=noise.dtype, device=noise.device).expand(dim)
    if not bool((lo < hi).all()):
        raise ValueError(f"the box needs low < high, got low={low}, high={high}")
    mu = ((lo + hi) / 2).expand(batch, dim).clone() if mean is None else mean.to(noise.dtype)
    sigma = ((hi - lo) / 2).expand(batch, dim).clone() if std is None else std.to(noise.dtype)
    for name, x in (("mean", mu), ("std", sigma)):
        if x.shape != (batch, dim):
            raise ValueError(f"{name} must be [B, D] = {(batch, dim)}, got {tuple(x.shape)}")
    best_action = mu.clamp(lo, hi)
    best_value = torch.full((batch,), -torch.inf, dtype=noise.dtype, device=noise.device)
    rows = torch.arange(batch, device=noise.device)
    for i in range(iterations):
        actions = torch.clamp(mu[:, None] + sigma[:, None] * noise[i], lo, hi)  # [B, N, D]
        values = q_fn(actions)
        if values.shape != (batch, samples):
            raise ValueError(
                f"q_fn must map actions [B, N, D] to values [B, N] = {(batch, samples)}, got "
                f"{tuple(values.shape)}"
            )
        values = values.to(noise.dtype)
        top, elite = values.topk(num_elites, dim=1)  # [B, M], best first
        elites = actions[rows[:, None], elite]  # [B, M, D]
        better = top[:, 0] > best_value
        best_value = torch.where(better, top[:, 0], best_value)
        best_action = torch.where(better[:, None], elites[:, 0], best_action)
        mu = elites.mean(dim=1)
        sigma = elites.std(dim=1, unbiased=False)
    return CEMResult(best_action, best_value, mu, sigma)
