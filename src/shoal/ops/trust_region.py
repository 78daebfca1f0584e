"""Trust-region policy steps: the natural-gradient direction and the KL-constrained step of TRPO.

Schulman et al. 2015, "Trust Region Policy Optimization" (arXiv:1502.05477), Appendix C: the
search direction `s ≈ A⁻¹ g` solves `A s = g` by conjugate gradient, where `g` is the gradient
of the surrogate `L_θold(θ)` and `A` the Fisher information matrix, the Hessian of the mean KL
`D̄_KL(θold, θ)` at `θ = θold`, which is only ever touched through products `A v` (Pearlmutter
1994, "Fast exact multiplication by the Hessian"). The step `β s` with `β = sqrt(2δ / sᵀAs)`
reaches the KL bound δ under the quadratic model, and a backtracking line search shrinks it
until the surrogate improves and the KL constraint holds.

Parameters travel as one flat vector `θ` `[P]` here; the caller maps it to its modules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from shoal.ops._checks import check_floating, check_nonnegative, check_positive

__all__ = [
    "ConjugateGradient",
    "LineSearch",
    "backtracking_line_search",
    "conjugate_gradient",
    "fisher_vector_product",
]


class ConjugateGradient(NamedTuple):
    """`x` `[P]` approximately solving `(A + λI) x = b`; the iterations run; the final residual
    norm `‖b - (A + λI) x‖` as the recursion tracks it."""

    x: Tensor
    iterations: int
    residual_norm: float


def conjugate_gradient(
    matvec: Callable[[Tensor], Tensor],
    b: Tensor,
    max_iters: int = 10,
    residual_tol: float = 1e-10,
    damping: float = 0.0,
) -> ConjugateGradient:
    """Solve `(A + λI) x = b` for symmetric positive-definite `A` given only `v ↦ A v`.

    Conjugate gradient (Hestenes & Stiefel 1952; Nocedal & Wright 2006, Algorithm 5.2) from
    `x₀ = 0`, as TRPO computes its search direction (Schulman et al. 2015, Appendix C, with
    `A` the Fisher matrix and λ = `damping`, the damping of Schulman's `modular_rl`). It stops
    after `max_iters` products, or as soon as the squared residual `rᵀr` falls to
    `residual_tol` or below (checked before each product, so `b = 0` costs none).

    Args:
        matvec: `v ↦ A v`, `[P] -> [P]` (e.g. `fisher_vector_product`).
        b: right-hand side `[P]` (the surrogate's gradient `g`).
        max_iters: most products with `A` (TRPO: 10 to 20).
        residual_tol: stop once `rᵀr <= residual_tol`.
        damping: λ >= 0 added to `A`'s diagonal, which keeps the solve stable where the
            sampled Fisher is nearly singular.

    Returns:
        `ConjugateGradient(x, iterations, residual_norm)`.
    """
    check_floating("b", b)
    if b.ndim != 1:
        raise ValueError(f"b must be a flat vector [P], got shape {tuple(b.shape)}")
    if isinstance(max_iters, bool) or not isinstance(max_iters, int) or max_iters < 1:
        raise ValueError(f"max_iters must be an int >= 1, got {max_iters!r}")
    check_nonnegative("residual_tol", residual_tol)
    check_nonnegative("damping", damping)
    with torch.no_grad():
        x = torch.zeros_like(b)
        r = b.detach().clone()
        p = r.clone()
        rr = torch.dot(r, r)
        iterations = 0
        while iterations < max_iters and float(rr) > residual_tol:
            ap = matvec(p).detach()
            if ap.shape != b.shape:
                raise ValueError(
                    f"matvec returned shape {tuple(ap.shape)}, expected {tuple(b.shape)}"
                )
            if damping:
                ap = ap + damping * p
            alpha = rr / torch.dot(p, ap)
            x += alpha * p
            r -= alpha * ap
            rr_new = torch.dot(r, r)
            p = r + (rr_new / rr) * p
            rr = rr_new
            iterations += 1
    return ConjugateGradient(x, iterations, math.sqrt(max(float(rr), 0.0)))


def fisher_vector_product(mean_kl: Tensor, params: Sequence[Tensor]) -> Callable[[Tensor], Tensor]:
    """`v ↦ ∇²_θ D̄_KL · v`, the Hessian of the mean KL times a flat vector, by Pearlmutter's trick.

    At `θ = θold` the Hessian of `D̄_KL(θold, θ) = E_s[KL(π_θold(·|s) ‖ π_θ(·|s))]` is the Fisher
    information matrix `A` of TRPO (Schulman et al. 2015, Appendix C: "we compute the
    Hessian-vector product ... by differentiating the gradient of the KL"). The gradient
    `∇_θ D̄_KL` is built once, with its graph; each product is one more backward pass,
    `∇_θ (∇_θ D̄_KL · v)`, and never forms the `P x P` matrix.

    Args:
        mean_kl: the scalar mean KL, a function of `params` with its graph (`θold` detached).
        params: the policy's parameters θ, in the order of the flat vectors `v` `[P]`;
            parameters the KL does not depend on get zero rows.

    Returns:
        a function `[P] -> [P]`, detached results; callable any number of times.
    """
    check_floating("mean_kl", mean_kl)
    if mean_kl.ndim != 0:
        raise ValueError(f"mean_kl must be a scalar, got shape {tuple(mean_kl.shape)}")
    params = list(params)
    if not params:
        raise ValueError("params must hold at least one tensor")
    size = sum(p.numel() for p in params)
    grads = torch.autograd.grad(mean_kl, params, create_graph=True, allow_unused=True)
    flat_grad = torch.cat(
        [
            torch.zeros(p.numel(), dtype=p.dtype, device=p.device) if g is None else g.reshape(-1)
            for g, p in zip(grads, params, strict=True)
        ]
    )

    def product(v: Tensor) -> Tensor:
        if v.shape != (size,):
            raise ValueError(f"v must have shape ({size},) (the parameters), got {tuple(v.shape)}")
        if not flat_grad.requires_grad:  # the KL is constant in θ here: its Hessian is 0
            return torch.zeros_like(v)
        with torch.enable_grad():  # callers such as `conjugate_gradient` run under no_grad
            hv = torch.autograd.grad(
                torch.dot(flat_grad, v.detach()), params, retain_graph=True, allow_unused=True
            )
        return torch.cat(
            [
                torch.zeros(p.numel(), dtype=p.dtype, device=p.device)
                if h is None
                else h.reshape(-1).detach()
                for h, p in zip(hv, params, strict=True)
            ]
        )

    return product


class LineSearch(NamedTuple):
    """The outcome of `backtracking_line_search`.

    `theta`: the accepted parameters `[P]`, or `θold` when every step was rejected;
    `accepted`: whether a step was; `step_fraction`: the accepted step as a fraction of the
    full step `β s` (shrink^k; 0 when rejected); `backtracks`: shrinks before the accepted step
    (`max_backtracks` when none was); `surrogate`, `kl`: the objective and the mean KL at
    `theta` (at `θold`: `surrogate_old` and 0).
    """

    theta: Tensor
    accepted: bool
    step_fraction: float
    backtracks: int
    surrogate: float
    kl: float


def backtracking_line_search(
    evaluate: Callable[[Tensor], tuple[Tensor | float, Tensor | float]],
    theta_old: Tensor,
    direction: Tensor,
    curvature: Tensor | float,
    surrogate_old: Tensor | float,
    max_kl: float,
    shrink_factor: float = 0.8,
    max_backtracks: int = 10,
) -> LineSearch:
    """TRPO's KL-constrained backtracking line search (Schulman et al. 2015, Appendix C).

    The full step is `β s` with `β = sqrt(2δ / sᵀAs)`, the largest step whose quadratic KL
    model `½ (βs)ᵀ A (βs)` equals δ. It tries `θ = θold + shrink^k β s` for `k = 0, 1, ...,
    max_backtracks - 1` and accepts the first `θ` whose surrogate exceeds `L(θold)` and whose
    mean KL is at most δ; if none is, it keeps `θold` ("reject all"). A non-positive or
    non-finite curvature (no direction to step in) keeps `θold` without evaluating.

    Args:
        evaluate: `θ ↦ (L(θ), D̄_KL(θold, θ))`, the surrogate and the mean KL at flat
            parameters θ `[P]` (the caller loads θ into its modules).
        theta_old: current parameters `[P]`.
        direction: search direction `s` `[P]` (from `conjugate_gradient`).
        curvature: `sᵀAs`, a scalar.
        surrogate_old: `L(θold)`.
        max_kl: the trust region's radius δ > 0.
        shrink_factor: the factor in (0, 1) a rejected step is multiplied by.
        max_backtracks: most steps tried, >= 1.

    Returns:
        `LineSearch(theta, accepted, step_fraction, backtracks, surrogate, kl)`.
    """
    check_floating("theta_old", theta_old)
    if theta_old.ndim != 1 or direction.shape != theta_old.shape:
        raise ValueError(
            f"theta_old and direction must be flat vectors of one shape, got "
            f"{tuple(theta_old.shape)} and {tuple(direction.shape)}"
        )
    check_positive("max_kl", max_kl)
    if not 0.0 < shrink_factor < 1.0:
        raise ValueError(f"shrink_factor must lie in (0, 1), got {shrink_factor!r}")
    if (
        isinstance(max_backtracks, bool)
        or not isinstance(max_backtracks, int)
        or max_backtracks < 1
    ):
        raise ValueError(f"max_backtracks must be an int >= 1, got {max_backtracks!r}")
    old_value = float(surrogate_old)
    shs = float(curvature)
    rejected = LineSearch(theta_old, False, 0.0, max_backtracks, old_value, 0.0)
    if not shs > 0.0 or not math.isfinite(shs):
        return rejected
    full_step = math.sqrt(2.0 * max_kl / shs) * direction.detach()
    fraction = 1.0
    for k in range(max_backtracks):
        theta = theta_old + fraction * full_step
        value, kl = evaluate(theta)
        value, kl = float(value), float(kl)
        if math.isfinite(value) and value > old_value and kl <= max_kl:
            return LineSearch(theta, True, fraction, k, value, kl)
        fraction *= shrink_factor
    return rejected
