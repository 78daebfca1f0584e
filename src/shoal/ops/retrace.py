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
from shoal.ops.value_rescaling import DEFAULT_EPS, signed_hyperbolic, signed_parabolic


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


def transformed_greedy_retrace(
    q_target_t: Tensor,
    a_t: Tensor,
    greedy_t: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    lambda_: float,
    end_t: Tensor | None = None,
    eps: float = DEFAULT_EPS,
) -> Tensor:
    """Agent57's targets for `h(Q(x_t, a_t))`, `[T, B]`: Retrace towards a greedy policy, in
    the space of the value rescaling h (Badia et al. 2020, "Agent57", section 2 and appendix;
    Pohlen et al. 2018 for the transformed operator).

    The target policy π is greedy: π(a|x) = 1[a = greedy(x)], so `E_π Q(x, ·) = Q(x,
    greedy(x))` and the traces are `c_t = λ 1[a_t = greedy(x_t)]` (`min(1, π/μ) = 1` where the
    behaviour's action is the greedy one). Values are unscaled by h^{-1} before the Retrace
    recursion and the result is rescaled by h.

    Args:
        q_target_t: target-network Q-values in h-space of the sequence's `T + 1` entries
            `x_0 .. x_T`, `[T + 1, B, A]`.
        a_t: actions taken at `x_0 .. x_{T-1}`, `[T, B]`.
        greedy_t: the target policy's action at every entry, `[T + 1, B]` (Agent57: the argmax
            of the combined Q-values, `combine_q_values`, whichever head is learned).
        r_t: the head's reward, `[T, B]`.
        discount_t: the head's `γ` (0 where terminated), `[T, B]`.
        lambda_: the trace coefficient λ.
        end_t: episode ends `[T, B]`, or None.
    """
    check_time_batch("r_t", r_t)
    length, width = r_t.shape
    if q_target_t.dim() != 3 or tuple(q_target_t.shape[:2]) != (length + 1, width):
        raise ValueError(
            f"q_target_t must be [T + 1, B, A] = [{length + 1}, {width}, A], got "
            f"{list(q_target_t.shape)}"
        )
    check_same_shape("r_t", r_t, [("a_t", a_t), ("discount_t", discount_t)])
    if tuple(greedy_t.shape) != (length + 1, width):
        raise ValueError(f"greedy_t must be [T + 1, B], got {list(greedy_t.shape)}")
    with torch.no_grad():
        q = signed_parabolic(q_target_t.detach(), eps)
        q_taken = q[:-1].gather(-1, a_t.long().unsqueeze(-1)).squeeze(-1)
        v_next = q[1:].gather(-1, greedy_t[1:].long().unsqueeze(-1)).squeeze(-1)
        traces = lambda_ * (a_t.long() == greedy_t[:-1].long()).to(q.dtype)
        returns = retrace(q_taken, v_next, r_t.to(q.dtype), discount_t.to(q.dtype), traces, end_t)
        return signed_hyperbolic(returns, eps)
