"""V-trace off-policy targets and the IMPALA policy-gradient loss.

Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with Importance Weighted
Actor-Learner Architectures", arXiv:1802.01561, Section 4.1 and Remark 1.

Inputs are time-major `[T, B]` with the conventions of `shoal.ops.returns`: `v_tm1[t] = V(x_t)`,
`v_t[t] = V(x_{t+1})` of the true successor (the final observation's value at a truncated step),
`discount_t[t] = gamma * (1 - terminated[t])`, `end_t[t]` nonzero where the episode ended at t
(terminated or truncated); no trace crosses an end.

The λ convention is the paper's Remark 1, as in rlax: λ multiplies the trace coefficients only,
`c_s = λ min(c̄, π/μ)`, never the `ρ_s` inside `δ_s V` (torchbeast has no λ: its V-trace is the
λ = 1 case).
"""

from __future__ import annotations

import math
from numbers import Real
from typing import NamedTuple

import torch
from torch import Tensor

from shoal.ops._checks import (
    check_floating,
    check_same_shape,
    check_time_batch,
    end_mask,
    lambda_per_step,
)

__all__ = ["VTraceReturns", "vtrace", "vtrace_policy_gradient_loss"]


class VTraceReturns(NamedTuple):
    """What `vtrace` computes, all `[T, B]` and detached."""

    vs: Tensor
    """V-trace targets `v_s` for the value of `x_s`."""
    pg_advantages: Tensor
    """`min(pg_rho_bar, π/μ)_s (r_s + discount_s v_{s+1} - V(x_s))`."""
    rhos: Tensor
    """Clipped importance weights `ρ_s = min(rho_bar, π/μ)` used in `δ_s V`."""


def _check_clip(name: str, value: float) -> float:
    # +inf is allowed and means "no clipping" (the plain importance weight).
    if isinstance(value, bool) or not isinstance(value, Real) or not float(value) > 0.0:
        raise ValueError(f"{name} must be a number > 0 (inf disables clipping), got {value!r}")
    return float(value)


def vtrace(
    v_tm1: Tensor,
    v_t: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    log_rhos: Tensor,
    *,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float = 1.0,
    lambda_: float | Tensor = 1.0,
    end_t: Tensor | None = None,
) -> VTraceReturns:
    """V-trace targets and policy-gradient advantages (Espeholt et al. 2018, eq. 1, Remark 1).

    With `ρ_t = min(ρ̄, π(a_t|x_t)/μ(a_t|x_t))`, `c_i = λ min(c̄, π(a_i|x_i)/μ(a_i|x_i))` and
    `δ_t V = ρ_t (r_t + discount_t V(x_{t+1}) - V(x_t))`, the target is the n-step sum to the end
    of the unroll

        v_s = V(x_s) + Σ_{t=s}^{T-1} (Π_{i=s}^{t-1} discount_i c_i (1 - end_i)) δ_t V,

    computed by the recursion `v_s - V(x_s) = δ_s V + discount_s c_s (1 - end_s) (v_{s+1} -
    V(x_{s+1}))` with `v_T = V(x_T)`. The per-step `discount_i` replaces the paper's `γ^{t-s}`,
    so a termination cuts the sum; `end_t` also cuts the trace at a truncation, where `δ_t`
    bootstraps from `v_t[t]`, the final observation's value.

    The policy-gradient advantage (Section 4.2) is
    `min(pg_rho_bar, π/μ)_s (r_s + discount_s v_{s+1} - V(x_s))`, where `v_{s+1}` is the
    v-trace target of the successor: `v_t[s] + (v_{s+1} - v_tm1[s+1])` inside an episode (which
    is `vs[s+1]` when `v_t[s] == v_tm1[s+1]`), and `v_t[s]` itself at an episode end or at the
    last step.

    On-policy (`log_rhos = 0`) with `c̄ >= 1`, `vs` equals the λ-return and `pg_advantages` the
    one-step TD error towards it. Everything is a target: no gradient flows out of the result.

    Args:
        v_tm1: values `V(x_t)` of the states acted in, `[T, B]`.
        v_t: successor values `V(x_{t+1})`, `[T, B]`; at a truncation, the final observation's.
        r_t: rewards `[T, B]`.
        discount_t: discounts `gamma (1 - terminated)`, `[T, B]`.
        log_rhos: `log π(a_t|x_t) - log μ(a_t|x_t)`, target minus behaviour, `[T, B]`.
        rho_bar: ρ̄ > 0, clips the weight inside `δ_t V` (inf: no clipping).
        c_bar: c̄ > 0, clips the trace coefficients (inf: no clipping).
        pg_rho_bar: clips the weight of the policy-gradient advantage (inf: no clipping).
        lambda_: λ in [0, 1] multiplying every `c_i`, or a tensor broadcastable to `[T, B]`.
        end_t: episode ends `[T, B]` (terminated or truncated), or None if none occur.

    Returns:
        `VTraceReturns(vs, pg_advantages, rhos)`, each `[T, B]`, detached.
    """
    check_time_batch("v_tm1", v_tm1)
    check_same_shape(
        "v_tm1",
        v_tm1,
        [("v_t", v_t), ("r_t", r_t), ("discount_t", discount_t), ("log_rhos", log_rhos)],
    )
    for name, x in (("v_t", v_t), ("r_t", r_t), ("discount_t", discount_t), ("log_rhos", log_rhos)):
        check_floating(name, x)
    log_rho_bar = math.log(_check_clip("rho_bar", rho_bar))
    log_c_bar = math.log(_check_clip("c_bar", c_bar))
    log_pg_rho_bar = math.log(_check_clip("pg_rho_bar", pg_rho_bar))
    with torch.no_grad():
        lam = lambda_per_step(lambda_, "v_tm1", v_tm1)
        not_end = 1.0 - end_mask(end_t, "v_tm1", v_tm1)
        # Clipping in log space keeps a huge ratio from overflowing to inf before it is clipped.
        rhos = torch.exp(torch.clamp(log_rhos, max=log_rho_bar))
        cs = lam * torch.exp(torch.clamp(log_rhos, max=log_c_bar))
        deltas = rhos * (r_t + discount_t * v_t - v_tm1)
        traces = discount_t * cs * not_end
        correction = torch.zeros_like(v_tm1[0])
        corrections: list[Tensor] = []
        for t in reversed(range(v_tm1.shape[0])):
            correction = deltas[t] + traces[t] * correction
            corrections.append(correction)
        vs_minus_v = torch.stack(corrections[::-1])
        vs = v_tm1 + vs_minus_v
        # The successor's correction v_{s+1} - V(x_{s+1}); none past an end or the last step.
        next_correction = torch.cat([vs_minus_v[1:], torch.zeros_like(vs_minus_v[:1])]) * not_end
        pg_rhos = torch.exp(torch.clamp(log_rhos, max=log_pg_rho_bar))
        pg_advantages = pg_rhos * (r_t + discount_t * (v_t + next_correction) - v_tm1)
        return VTraceReturns(vs=vs, pg_advantages=pg_advantages, rhos=rhos)


def vtrace_policy_gradient_loss(log_pi_a: Tensor, pg_advantages: Tensor) -> Tensor:
    """Per-element policy-gradient loss `-log π(a_s|x_s) A_s` (Espeholt et al. 2018, Sec. 4.2).

    The advantages are constants (detached), so the gradient is `-A_s ∇ log π(a_s|x_s)`, the
    ascent direction of the paper's off-policy actor-critic update. Any shape; the caller reduces.

    Args:
        log_pi_a: log-probabilities of the taken actions under the current policy, any shape.
        pg_advantages: `VTraceReturns.pg_advantages`, same shape.

    Returns:
        per-element loss, same shape as `log_pi_a`.
    """
    check_floating("log_pi_a", log_pi_a)
    check_floating("pg_advantages", pg_advantages)
    check_same_shape("log_pi_a", log_pi_a, [("pg_advantages", pg_advantages)])
    return -log_pi_a * pg_advantages.detach()
