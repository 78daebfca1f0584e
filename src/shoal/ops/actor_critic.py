"""The n-step advantage of synchronous and asynchronous advantage actor-critic (A2C, A3C).

Inputs are time-major `[T, B]` with the conventions of `shoal.ops.returns`: `discount_t[t] =
gamma * (1 - terminated[t])`, `v_tm1[t] = V(s_t)`, `v_t[t] = V(s_{t+1})` of the true successor
(the final observation at a truncation), `end_t[t]` nonzero where the episode ended at t.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from shoal.ops._checks import check_same_shape, check_time_batch, end_mask

__all__ = ["NStepAdvantage", "n_step_advantage"]


class NStepAdvantage(NamedTuple):
    advantages: Tensor  # [T, B] R_t - V(s_t)
    returns: Tensor  # [T, B] R_t, the value targets


def n_step_advantage(
    r_t: Tensor,
    discount_t: Tensor,
    v_tm1: Tensor,
    v_t: Tensor,
    end_t: Tensor | None = None,
) -> NStepAdvantage:
    """A3C's returns and advantages over an unroll (Mnih et al. 2016, arXiv:1602.01783,
    Algorithm S3): every step looks ahead to the end of the unroll or of its episode,

    `R_t = Σ_{k<m} (Π_{j<k} discount_{t+j}) r_{t+k} + (Π_{j<m} discount_{t+j}) v_t[t+m-1]`,
    `A_t = R_t - V(s_t)`,

    where `m = min(T - t, 1 + steps to the first episode end at or after t)`: the first step of
    an unroll of T steps uses a T-step return, the last a one-step return. A termination's zero
    discount drops the bootstrap; a truncation bootstraps from its final observation's value.
    Equals GAE with λ = 1 on the same inputs. Targets are constants: the result is detached.

    Args:
        r_t: rewards `[T, B]`.
        discount_t: discounts `[T, B]`.
        v_tm1: values of the states acted in, `V(s_t)`, `[T, B]`.
        v_t: successor-state values `V(s_{t+1})`, `[T, B]`.
        end_t: episode ends `[T, B]` (terminated or truncated), or None if none occur.

    Returns:
        advantages and returns, `[T, B]` each.
    """
    check_time_batch("r_t", r_t)
    check_same_shape("r_t", r_t, [("discount_t", discount_t), ("v_tm1", v_tm1), ("v_t", v_t)])
    with torch.no_grad():
        ends = end_mask(end_t, "r_t", r_t)
        g = v_t[-1]
        out: list[Tensor] = []
        for t in reversed(range(r_t.shape[0])):
            # At an end (or the unroll's last step) the return restarts from the step's own
            # successor value; elsewhere it continues with the next step's return.
            g = r_t[t] + discount_t[t] * (ends[t] * v_t[t] + (1.0 - ends[t]) * g)
            out.append(g)
        returns = torch.stack(out[::-1])
        return NStepAdvantage(returns - v_tm1.detach(), returns)
