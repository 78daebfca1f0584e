"""Categorical and diagonal-Gaussian policies as pure functions of their parameters.

These avoid building `torch.distributions` objects (and their argument validation) on every step,
which is measurable in actor loops. Batch dimensions are arbitrary (`[...]`); the last dimension of
`logits` is the action count A and of `mean` / `log_std` the action dimension D.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from shoal.ops._checks import broadcasts_to, check_broadcastable_to, check_floating

__all__ = [
    "categorical_entropy",
    "categorical_kl",
    "categorical_log_prob",
    "categorical_sample",
    "gaussian_entropy",
    "gaussian_kl",
    "gaussian_log_prob",
    "gaussian_sample",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _check_logits(logits: Tensor) -> None:
    check_floating("logits", logits)
    if logits.ndim < 1 or logits.shape[-1] == 0:
        raise ValueError(f"logits must have shape [..., A] with A >= 1, got {tuple(logits.shape)}")


def categorical_log_prob(logits: Tensor, actions: Tensor) -> Tensor:
    """Log-probability `log softmax(logits)[a]` of integer actions under a categorical policy.

    Args:
        logits: unnormalised log-probabilities `[..., A]`; `-inf` masks an action out.
        actions: integer actions in `[0, A)`, shape `[...]`.

    Returns:
        log-probabilities `[...]`.
    """
    _check_logits(logits)
    if actions.is_floating_point() or actions.is_complex() or actions.dtype == torch.bool:
        raise ValueError(f"actions must be an integer tensor, got dtype {actions.dtype}")
    if actions.shape != logits.shape[:-1]:
        raise ValueError(
            f"actions must have shape logits.shape[:-1] = {tuple(logits.shape[:-1])}, "
            f"got {tuple(actions.shape)} (logits {tuple(logits.shape)})"
        )
    log_probs = torch.log_softmax(logits, dim=-1)
    return log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)


def categorical_entropy(logits: Tensor) -> Tensor:
    """Entropy `-Σ_a p_a log p_a` of a categorical policy, with `p = softmax(logits)`.

    Masked actions (`-inf` logits) contribute zero, with finite gradients.

    Args:
        logits: unnormalised log-probabilities `[..., A]`.

    Returns:
        entropies `[...]`.
    """
    _check_logits(logits)
    log_probs = torch.log_softmax(logits, dim=-1)
    # 0 * -inf is nan; clamping the log first makes masked actions contribute exactly 0.
    log_probs = torch.clamp(log_probs, min=torch.finfo(log_probs.dtype).min)
    return -(log_probs.exp() * log_probs).sum(dim=-1)


def categorical_kl(logits_p: Tensor, logits_q: Tensor) -> Tensor:
    """`KL(p ‖ q) = Σ_a p_a (log p_a - log q_a)` of two categorical policies given as logits.

    The KL of TRPO's trust region (Schulman et al. 2015, eq. 12) with `p = π_θold`. Actions that
    `p` masks out (`-inf` logits) contribute zero.

    Args:
        logits_p: unnormalised log-probabilities of p `[..., A]`.
        logits_q: unnormalised log-probabilities of q, same shape.

    Returns:
        divergences `[...]`.
    """
    _check_logits(logits_p)
    _check_logits(logits_q)
    if logits_p.shape != logits_q.shape:
        raise ValueError(
            f"logits_p has shape {tuple(logits_p.shape)} but logits_q has shape "
            f"{tuple(logits_q.shape)}; they must match"
        )
    log_p = torch.log_softmax(logits_p, dim=-1)
    log_q = torch.log_softmax(logits_q, dim=-1)
    tiny = torch.finfo(log_p.dtype).min
    # As in `categorical_entropy`: p_a = 0 terms are exactly 0 rather than 0 * inf = nan.
    terms = log_p.exp() * (log_p.clamp(min=tiny) - log_q.clamp(min=tiny))
    return terms.sum(dim=-1)


def categorical_sample(logits: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """Sample actions from `softmax(logits)` with the Gumbel-max trick.

    `argmax(logits + g)` with i.i.d. Gumbel noise `g = -log(-log u)`, `u ~ U(0, 1)` drawn from
    `generator` (Gumbel 1954; Maddison et al. 2014, arXiv:1411.0199), so the same generator state
    gives the same actions.

    Args:
        logits: unnormalised log-probabilities `[..., A]`.
        generator: source of randomness on `logits.device`; the global one if None.

    Returns:
        int64 actions `[...]`.
    """
    _check_logits(logits)
    with torch.no_grad():
        u = torch.rand(logits.shape, generator=generator, dtype=logits.dtype, device=logits.device)
        # u = 0 is possible; clamping keeps the noise finite instead of -inf.
        u = torch.clamp(u, min=torch.finfo(logits.dtype).tiny)
        gumbel = -torch.log(-torch.log(u))
        return torch.argmax(logits + gumbel, dim=-1)


def _check_gaussian(mean: Tensor, log_std: Tensor) -> None:
    check_floating("mean", mean)
    check_floating("log_std", log_std)
    if mean.ndim < 1:
        raise ValueError(f"mean must have shape [..., D], got {tuple(mean.shape)}")
    check_broadcastable_to("log_std", log_std, "mean", mean)


def gaussian_log_prob(mean: Tensor, log_std: Tensor, actions: Tensor) -> Tensor:
    """Log-density of actions under a diagonal Gaussian, summed over the action dimension.

    `Σ_d [-0.5 ((a_d - μ_d) / σ_d)^2 - log σ_d - 0.5 log 2π]`.

    Args:
        mean: means μ `[..., D]`.
        log_std: log standard deviations, broadcastable to `mean` (e.g. `[D]` state-independent).
        actions: actions `[..., D]`, same shape as `mean`.

    Returns:
        log-densities `[...]`.
    """
    _check_gaussian(mean, log_std)
    check_floating("actions", actions)
    if actions.shape != mean.shape:
        raise ValueError(
            f"actions has shape {tuple(actions.shape)} but mean has shape {tuple(mean.shape)}; "
            "they must match"
        )
    z = (actions - mean) * torch.exp(-log_std)
    return (-0.5 * z.square() - log_std - _HALF_LOG_2PI).sum(dim=-1)


def gaussian_entropy(
    log_std: Tensor, batch_shape: torch.Size | tuple[int, ...] | None = None
) -> Tensor:
    """Entropy of a diagonal Gaussian: `Σ_d (0.5 + 0.5 log 2π + log σ_d)`.

    Args:
        log_std: log standard deviations `[..., D]`.
        batch_shape: if given, the result (shape `log_std.shape[:-1]`) is broadcast to it, e.g.
            a state-independent `[D]` log_std broadcast to `[T, B]`.

    Returns:
        entropies, `log_std.shape[:-1]` or `batch_shape`.
    """
    check_floating("log_std", log_std)
    if log_std.ndim < 1:
        raise ValueError(f"log_std must have shape [..., D], got {tuple(log_std.shape)}")
    entropy = (0.5 + _HALF_LOG_2PI + log_std).sum(dim=-1)
    if batch_shape is None:
        return entropy
    target = torch.Size(batch_shape)
    if not broadcasts_to(entropy.shape, target):
        raise ValueError(
            f"entropy of shape {tuple(entropy.shape)} (log_std {tuple(log_std.shape)}) does not "
            f"broadcast to batch_shape {tuple(target)}"
        )
    return entropy.expand(target)


def gaussian_kl(mean_p: Tensor, log_std_p: Tensor, mean_q: Tensor, log_std_q: Tensor) -> Tensor:
    """`KL(p ‖ q)` of two diagonal Gaussians, summed over the action dimension.

    `Σ_d [log σq_d - log σp_d + (σp_d² + (μp_d - μq_d)²) / (2 σq_d²) - ½]`; TRPO's trust-region
    KL (Schulman et al. 2015, eq. 12) with `p = π_θold`.

    Args:
        mean_p: means of p `[..., D]`.
        log_std_p: log standard deviations of p, broadcastable to `mean_p`.
        mean_q: means of q, the shape of `mean_p`.
        log_std_q: log standard deviations of q, broadcastable to `mean_q`.

    Returns:
        divergences `[...]`.
    """
    _check_gaussian(mean_p, log_std_p)
    _check_gaussian(mean_q, log_std_q)
    if mean_p.shape != mean_q.shape:
        raise ValueError(
            f"mean_p has shape {tuple(mean_p.shape)} but mean_q has shape "
            f"{tuple(mean_q.shape)}; they must match"
        )
    var_ratio = torch.exp(2.0 * (log_std_p - log_std_q))
    z = (mean_p - mean_q) * torch.exp(-log_std_q)
    terms = 0.5 * (var_ratio + z.square() - 1.0) - (log_std_p - log_std_q)
    return terms.expand(mean_p.shape).sum(dim=-1)


def gaussian_sample(
    mean: Tensor, log_std: Tensor, generator: torch.Generator | None = None
) -> Tensor:
    """Reparameterised sample `μ + σ ε`, `ε ~ N(0, I)` drawn from `generator`.

    Differentiable in `mean` and `log_std` (Kingma & Welling 2014, arXiv:1312.6114).

    Args:
        mean: means `[..., D]`.
        log_std: log standard deviations, broadcastable to `mean`.
        generator: source of randomness on `mean.device`; the global one if None.

    Returns:
        actions, same shape as `mean`.
    """
    _check_gaussian(mean, log_std)
    noise = torch.randn(mean.shape, generator=generator, dtype=mean.dtype, device=mean.device)
    return mean + torch.exp(log_std) * noise
