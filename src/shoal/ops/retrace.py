"""Retrace(λ) targets (Munos et al. 2016, "Safe and efficient off-policy reinforcement learning").

For a sequence of T steps from behaviour μ, with traces `c_s = λ min(1, π(a_s|x_s) / μ(a_s|x_s))`,

    Q_ret(x_t, a_t) = Q(x_t, a_t) + Σ_{s>=t} (Π_{k=t}^{s-1} γ_k) (Π_{i=t+1}^{s} c_i) δ_s,
    δ_s = r_s + γ_s E_π Q(x_{s+1}, ·) - Q(x_s, a_s),

computed backwards as

    G_t = r_t + γ_t (E_π Q(x_{t+1}, ·) + c_{t+1} (G_{t+1} - Q(x_{t+1}, a_{t+1}))).

The last step bootstraps from `E_π Q(x_T, ·)`; traces are cut at episode ends inside the
sequence (the step that ended bootstraps from its own successor only). Agent57 (Badia et al.
2020) learns its Q-functions with these targets.
"""

from __future__ import annotations

import torch
from torch import Tensor

from shoal.ops._checks import check_same_shape, check_time_batch, end_mask


def retrace(
    q_tm1: Tensor,
    v_t: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    c_t: Tensor,
    end_t: Tensor | None = None,
    *,
    stop_target_gradients: bool = True,
) -> Tensor:
    """Retrace targets for `Q(x_t, a_t)`, `[T, B]`.

    Args:
        q_tm1: `Q(x_t, a_t)` of the taken actions (usually the target network), `[T, B]`.
        v_t: `E_π Q(x_{t+1}, ·) = Σ_a π(a|x_{t+1}) Q(x_{t+1}, a)`, `[T, B]` (at a truncation,
            of the episode's final observation).
        r_t: rewards `[T, B]`.
        discount_t: `γ` per step, 0 where the episode terminated, `[T, B]`.
        c_t: traces `λ min(1, π(a_t|x_t) / μ(a_t|x_t))` of each step's own action, `[T, B]`;
            row 0 is unused (no trace precedes the first step).
        end_t: episode ends `[T, B]` (terminated or truncated), or None.
        stop_target_gradients: detach the result from the inputs.
    """
    check_time_batch("r_t", r_t)
    check_same_shape(
        "r_t", r_t, [("q_tm1", q_tm1), ("v_t", v_t), ("discount_t", discount_t), ("c_t", c_t)]
    )
    if stop_target_gradients:
        q_tm1, v_t, r_t, discount_t, c_t = (x.detach() for x in (q_tm1, v_t, r_t, discount_t, c_t))
    # Continue the trace from step t into t + 1 only where step t did not end an episode.
    carry = 1.0 - end_mask(end_t, "r_t", r_t)
    g = r_t[-1] + discount_t[-1] * v_t[-1]
    out = [g]
    for t in reversed(range(r_t.shape[0] - 1)):
        correction = carry[t] * c_t[t + 1] * (g - q_tm1[t + 1])
        g = r_t[t] + discount_t[t] * (v_t[t] + correction)
        out.append(g)
    return torch.stack(out[::-1])
