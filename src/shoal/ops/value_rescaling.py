"""Invertible value rescaling and the transformed n-step double-Q targets of R2D2.

Pohlen et al. 2018 ("Observe and Look Further", Sec. 3.2 and Prop. A.2) and Kapturowski et al.
2019 (R2D2, Sec. 2): learning `h(Q)` instead of `Q` squashes large returns without clipping
rewards,

    h(x)      = sign(x) (sqrt(|x| + 1) - 1) + eps x,
    h^{-1}(x) = sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1),

and the n-step target becomes `h(Σ_{k<n} γ^k r_{t+k} + γ^n h^{-1}(Q_target(s_{t+n}, a*)))` with
`a* = argmax_a Q_online(s_{t+n}, a)` (double Q).
"""

from __future__ import annotations

import torch
from torch import Tensor

from shoal.ops._checks import check_floating, check_positive, check_same_shape, check_time_batch
from shoal.ops.masking import masked_argmax
from shoal.ops.returns import n_step_returns

DEFAULT_EPS = 1e-3


def signed_hyperbolic(x: Tensor, eps: float = DEFAULT_EPS) -> Tensor:
    """`h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x`, elementwise; h(0) = 0."""
    check_floating("x", x)
    check_positive("eps", eps)
    return torch.sign(x) * (torch.sqrt(x.abs() + 1.0) - 1.0) + eps * x


def signed_parabolic(x: Tensor, eps: float = DEFAULT_EPS) -> Tensor:
    """`h^{-1}(x)`, the inverse of `signed_hyperbolic` (Pohlen et al. 2018, Prop. A.2)."""
    check_floating("x", x)
    check_positive("eps", eps)
    root = (torch.sqrt(1.0 + 4.0 * eps * (x.abs() + 1.0 + eps)) - 1.0) / (2.0 * eps)
    return torch.sign(x) * (root.square() - 1.0)


def transformed_n_step_double_q_targets(
    r_t: Tensor,
    discount_t: Tensor,
    q_target_t: Tensor,
    q_online_t: Tensor,
    n: int,
    end_t: Tensor | None = None,
    eps: float = DEFAULT_EPS,
    legal_t: Tensor | None = None,
) -> Tensor:
    """R2D2's targets for `h(Q(s_t, a_t))` over a sequence, `[T, B]`, without gradients.

    Args:
        r_t: rewards `[T, B]` of the steps from s_t.
        discount_t: `γ` per step, 0 where the episode terminated, `[T, B]`.
        q_target_t: target-network Q-values of the successor states s_{t+1}, `[T, B, A]`, in
            the transformed space (what the network outputs).
        q_online_t: online-network Q-values of the same successors, `[T, B, A]`, to choose a*.
        n: steps summed before bootstrapping, >= 1 (fewer at episode ends and at the end of
            the sequence, where the last step bootstraps from its own successor).
        end_t: episode ends `[T, B]` inside the sequence (terminated or truncated), or None.
        eps: the rescaling's eps.
        legal_t: the successors' legal actions `[T, B, A]` bool, or None (all legal): a* is
            then the best legal action (`shoal.ops.masking`).
    """
    check_time_batch("r_t", r_t)
    check_same_shape("r_t", r_t, [("discount_t", discount_t)])
    if q_target_t.shape != q_online_t.shape or q_target_t.shape[:2] != r_t.shape:
        raise ValueError(
            f"q_target_t and q_online_t must both be [T, B, A] with [T, B] = {list(r_t.shape)}, "
            f"got {list(q_target_t.shape)} and {list(q_online_t.shape)}"
        )
    with torch.no_grad():
        if legal_t is None:
            best = q_online_t.argmax(-1, keepdim=True)
        else:
            best = masked_argmax(q_online_t, legal_t).unsqueeze(-1)
        bootstrap = signed_parabolic(q_target_t.gather(-1, best).squeeze(-1), eps)
        returns = n_step_returns(r_t, discount_t, bootstrap, n, end_t)
        return signed_hyperbolic(returns, eps)


def combine_q_values(
    q_extrinsic: Tensor, q_intrinsic: Tensor, beta: Tensor | float, eps: float = DEFAULT_EPS
) -> Tensor:
    """Agent57's combined Q-values `h(h^{-1}(Q_e) + β h^{-1}(Q_i))` (Badia et al. 2020,
    "Agent57", section 4.1): the two heads are learned in h-space and mixed in value space.

    `q_extrinsic`, `q_intrinsic`: `[..., A]` in h-space; `beta`: a float or `[...]` per row.
    """
    if q_extrinsic.shape != q_intrinsic.shape:
        raise ValueError(
            f"q_extrinsic and q_intrinsic must have one shape, got {list(q_extrinsic.shape)} "
            f"and {list(q_intrinsic.shape)}"
        )
    if isinstance(beta, Tensor):
        if tuple(beta.shape) != tuple(q_extrinsic.shape[:-1]):
            raise ValueError(
                f"beta must be [...] = {list(q_extrinsic.shape[:-1])}, got {list(beta.shape)}"
            )
        beta = beta.unsqueeze(-1).to(q_extrinsic.dtype)
    mixed = signed_parabolic(q_extrinsic, eps) + beta * signed_parabolic(q_intrinsic, eps)
    return signed_hyperbolic(mixed, eps)
