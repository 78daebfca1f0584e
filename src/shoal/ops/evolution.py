"""Black-box search: fitness shaping and the update directions of ES and ARS.

Evolution strategies (Salimans et al. 2017, arXiv:1703.03864) and augmented random search
(Mania et al. 2018, arXiv:1803.07055) estimate an ascent direction of the expected return from
returns of perturbed parameters `θ ± σ ε_i` alone. Both use mirrored (antithetic) pairs: the
i-th direction `ε_i` is evaluated at `θ + σ ε_i` (return `F⁺_i`) and `θ - σ ε_i` (`F⁻_i`).
Noise is `[n, P]` (n directions of P parameters), returns are `[n]` each.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from shoal.ops._checks import check_floating, check_positive

__all__ = ["ARSDirection", "ars_direction", "centered_ranks", "es_gradient"]


def centered_ranks(fitness: Tensor) -> Tensor:
    """Centred-rank fitness shaping (Salimans et al. 2017, section 2.2; Wierstra et al. 2014).

    Each element is replaced by its rank among all elements of `fitness` (0 for the lowest,
    `N - 1` for the highest; tied elements share the mean of their ranks), scaled to
    `rank / (N - 1) - 0.5`, so the result lies in [-0.5, 0.5] and sums to zero. Invariant to
    any increasing transformation of the returns, which makes the update insensitive to
    outliers. Ties are averaged (OpenAI's code breaks them by sort order): a population in
    which every episode reaches a return cap then gives a zero update rather than noise.

    Args:
        fitness: returns, any shape with at least one element.

    Returns:
        centred ranks, same shape and dtype as `fitness` (zeros for a single element).
    """
    check_floating("fitness", fitness)
    if fitness.numel() == 0:
        raise ValueError("fitness must hold at least one return, got an empty tensor")
    flat = fitness.detach().reshape(-1)
    n = flat.numel()
    if n == 1:
        return torch.zeros_like(fitness)
    values, order = torch.sort(flat, stable=True)
    ranks = torch.arange(n, dtype=torch.float64, device=flat.device)
    # Tied runs share their mean rank: group equal sorted values and average within groups.
    _, group, counts = torch.unique_consecutive(values, return_inverse=True, return_counts=True)
    sums = torch.zeros(counts.shape[0], dtype=torch.float64, device=flat.device)
    sums.index_add_(0, group, ranks)
    mean_rank = (sums / counts.to(torch.float64))[group]
    out = torch.empty(n, dtype=torch.float64, device=flat.device)
    out[order] = mean_rank
    return (out / (n - 1) - 0.5).to(fitness.dtype).reshape(fitness.shape)


def _check_pairs(noise: Tensor, f_pos: Tensor, f_neg: Tensor) -> int:
    check_floating("noise", noise)
    check_floating("fitness_pos", f_pos)
    check_floating("fitness_neg", f_neg)
    if noise.ndim != 2 or noise.shape[0] == 0:
        raise ValueError(f"noise must be [n, P] with n >= 1, got shape {tuple(noise.shape)}")
    n = noise.shape[0]
    for name, x in (("fitness_pos", f_pos), ("fitness_neg", f_neg)):
        if x.shape != (n,):
            raise ValueError(
                f"{name} must have shape [n] = ({n},) to match noise {tuple(noise.shape)}, "
                f"got {tuple(x.shape)}"
            )
    return n


def es_gradient(noise: Tensor, fitness_pos: Tensor, fitness_neg: Tensor, sigma: float) -> Tensor:
    """The ES estimate of `∇_θ E[F(θ + σ ε)]` from mirrored pairs (Salimans et al. 2017,
    Algorithm 2, with antithetic sampling as in its section 2.2):

    `g = 1 / (2 n σ) Σ_i (F⁺_i - F⁻_i) ε_i`.

    Pass shaped fitness (`centered_ranks` of all 2n returns) as OpenAI's implementation does.
    An ascent direction: the optimiser maximises, i.e. minimises with gradient `-g`.

    Args:
        noise: the directions `ε_i`, `[n, P]`.
        fitness_pos: fitness of `θ + σ ε_i`, `[n]`.
        fitness_neg: fitness of `θ - σ ε_i`, `[n]`.
        sigma: the perturbations' standard deviation σ > 0.

    Returns:
        the gradient estimate `[P]`, in the dtype of `noise`.
    """
    n = _check_pairs(noise, fitness_pos, fitness_neg)
    check_positive("sigma", sigma)
    weights = (fitness_pos - fitness_neg).to(noise.dtype)
    return weights @ noise / (2.0 * n * sigma)


class ARSDirection(NamedTuple):
    """ARS's update direction and what went into it."""

    direction: Tensor  # [P]: θ moves by step_size * direction
    reward_std: Tensor  # [] σ_R, the std of the 2b returns used
    top: Tensor  # [b] int64: the directions used, best first


def ars_direction(
    noise: Tensor, returns_pos: Tensor, returns_neg: Tensor, top_b: int, eps: float = 1e-8
) -> ARSDirection:
    """ARS V1-t/V2-t's update direction (Mania et al. 2018, Algorithm 2, steps 6 and 7):

    order the n directions by `max(r⁺_k, r⁻_k)`, keep the b best, and
    `direction = 1 / (b σ_R) Σ_{k ≤ b} (r⁺_(k) - r⁻_(k)) δ_(k)`, where σ_R is the standard
    deviation of the 2b returns kept (population std, as the authors' code; `eps` keeps a
    population of equal returns from dividing by zero). θ then moves by `α · direction`.

    Args:
        noise: the directions `δ_k`, `[n, P]`.
        returns_pos: returns of `θ + ν δ_k` (V2: on normalised states), `[n]`.
        returns_neg: returns of `θ - ν δ_k`, `[n]`.
        top_b: b, how many directions to keep, 1 <= b <= n (b = n is ARS V1/V2 without -t).
        eps: added to σ_R.

    Returns:
        the direction `[P]`, σ_R and the indices of the kept directions.
    """
    n = _check_pairs(noise, returns_pos, returns_neg)
    if isinstance(top_b, bool) or not isinstance(top_b, int) or not 1 <= top_b <= n:
        raise ValueError(f"top_b must be an integer in [1, n] = [1, {n}], got {top_b!r}")
    best = torch.maximum(returns_pos, returns_neg)
    top = torch.argsort(best, descending=True, stable=True)[:top_b]
    pos, neg = returns_pos[top], returns_neg[top]
    reward_std = torch.cat([pos, neg]).std(unbiased=False)
    weights = ((pos - neg) / (top_b * (reward_std + eps))).to(noise.dtype)
    return ARSDirection(weights @ noise[top], reward_std, top)
