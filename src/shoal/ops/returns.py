"""Multi-step return targets: Monte-Carlo, λ-returns and n-step returns, and which steps of a
sequence have a complete Monte-Carlo return.

All inputs are time-major `[T, B]`. Conventions shared by every op here:

- `r_t[t]`: reward received after the action at step t.
- `discount_t[t]`: `gamma * (1 - terminated[t])`, zero where the episode terminated at t.
- `v_t[t]`: value of the true successor state `s_{t+1}`. At a step truncated by a time limit this
  is the value of the final observation, so truncation bootstraps; at a terminated step it is
  multiplied by a zero discount and does not enter the return.
- `end_t[t]`: nonzero where the episode ended at t (terminated or truncated). No sum or trace
  crosses an end. Bool or float.

Returns are regression targets, so by default no gradient flows into them
(`stop_target_gradients=True`); pass `False` to differentiate through `r_t`, `discount_t` and `v_t`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from shoal.ops._checks import (
    check_floating,
    check_same_shape,
    check_time_batch,
    end_mask,
    lambda_per_step,
)

__all__ = ["complete_return_mask", "discounted_returns", "lambda_returns", "n_step_returns"]


def _maybe_detach(stop: bool, *xs: Tensor) -> tuple[Tensor, ...]:
    return tuple(x.detach() for x in xs) if stop else xs


def discounted_returns(
    r_t: Tensor,
    discount_t: Tensor,
    bootstrap_value: Tensor,
    *,
    stop_target_gradients: bool = True,
) -> Tensor:
    """Discounted (Monte-Carlo) returns bootstrapped at the end of the sequence.

    `G_t = r_t + discount_t G_{t+1}` with `G_T = bootstrap_value` (Sutton & Barto 2018, eq. 3.9).
    A termination cuts the sum through its zero discount.

    Args:
        r_t: rewards `[T, B]`.
        discount_t: discounts `[T, B]`.
        bootstrap_value: value of the state after the last step `[B]`.
        stop_target_gradients: detach the result from the inputs.

    Returns:
        returns `G_t`, `[T, B]`.
    """
    _, batch = check_time_batch("r_t", r_t)
    check_same_shape("r_t", r_t, [("discount_t", discount_t)])
    check_floating("bootstrap_value", bootstrap_value)
    if bootstrap_value.shape != (batch,):
        raise ValueError(
            f"bootstrap_value must have shape [B] = ({batch},) to match r_t {tuple(r_t.shape)}, "
            f"got {tuple(bootstrap_value.shape)}"
        )
    r_t, discount_t, bootstrap_value = _maybe_detach(
        stop_target_gradients, r_t, discount_t, bootstrap_value
    )
    g = bootstrap_value
    out: list[Tensor] = []
    for t in reversed(range(r_t.shape[0])):
        g = r_t[t] + discount_t[t] * g
        out.append(g)
    return torch.stack(out[::-1])


def lambda_returns(
    r_t: Tensor,
    discount_t: Tensor,
    v_t: Tensor,
    lambda_: float | Tensor,
    end_t: Tensor | None = None,
    *,
    stop_target_gradients: bool = True,
) -> Tensor:
    """λ-returns in recursive form (Sutton & Barto 2018, eq. 12.3 / 12.18).

    `G_t = r_t + discount_t ((1 - λ_t) v_t[t] + λ_t G_{t+1})` with `λ_t = λ (1 - end_t[t])`, and
    `λ_{T-1} = 0`, so the last step bootstraps from `v_t[T-1]`. λ=1 with no episode end gives the
    Monte-Carlo return bootstrapped from `v_t[T-1]`; λ=0 gives the TD(0) target
    `r_t + discount_t v_t`.

    Args:
        r_t: rewards `[T, B]`.
        discount_t: discounts `[T, B]`.
        v_t: successor-state values `V(s_{t+1})`, `[T, B]`.
        lambda_: float in [0, 1], or a tensor broadcastable to `[T, B]`.
        end_t: episode ends `[T, B]` (terminated or truncated), or None if none occur.
        stop_target_gradients: detach the result from the inputs.

    Returns:
        λ-returns `[T, B]`.
    """
    check_time_batch("r_t", r_t)
    check_same_shape("r_t", r_t, [("discount_t", discount_t), ("v_t", v_t)])
    r_t, discount_t, v_t = _maybe_detach(stop_target_gradients, r_t, discount_t, v_t)
    lam = lambda_per_step(lambda_, "r_t", r_t)
    if stop_target_gradients:
        lam = lam.detach()
    lam = lam * (1.0 - end_mask(end_t, "r_t", r_t))
    # Seeding G_T with v_t[T-1] makes the last step bootstrap from v_t[T-1] whatever λ_{T-1} is.
    g = v_t[-1]
    out: list[Tensor] = []
    for t in reversed(range(r_t.shape[0])):
        g = r_t[t] + discount_t[t] * ((1.0 - lam[t]) * v_t[t] + lam[t] * g)
        out.append(g)
    return torch.stack(out[::-1])


def n_step_returns(
    r_t: Tensor,
    discount_t: Tensor,
    v_t: Tensor,
    n: int,
    end_t: Tensor | None = None,
    *,
    stop_target_gradients: bool = True,
) -> Tensor:
    """n-step returns truncated at episode ends (Sutton & Barto 2018, eq. 7.1).

    `G_t = Σ_{k<m} (Π_{j<k} discount_{t+j}) r_{t+k} + (Π_{j<m} discount_{t+j}) v_t[t+m-1]` where
    `m = min(n, T - t, 1 + steps to the first episode end at or after t)`: accumulation stops at an
    end and bootstraps from that step's `v_t` (zero-weighted after a termination, the
    final-observation value after a truncation). n=1 gives TD(0).

    Args:
        r_t: rewards `[T, B]`.
        discount_t: discounts `[T, B]`.
        v_t: successor-state values `V(s_{t+1})`, `[T, B]`.
        n: number of steps, >= 1.
        end_t: episode ends `[T, B]` (terminated or truncated), or None if none occur.
        stop_target_gradients: detach the result from the inputs.

    Returns:
        n-step returns `[T, B]`.
    """
    horizon, _ = check_time_batch("r_t", r_t)
    check_same_shape("r_t", r_t, [("discount_t", discount_t), ("v_t", v_t)])
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    r_t, discount_t, v_t = _maybe_detach(stop_target_gradients, r_t, discount_t, v_t)
    ends = end_mask(end_t, "r_t", r_t)
    # The step t+k is past the sequence for the last k rows: treat it as an end, so the
    # accumulation stops at t+k = T-1 and bootstraps from v_t[T-1].
    ends[-1] = 1.0

    def shifted(x: Tensor, k: int) -> Tensor:
        # Row t of the result holds x[t + k]; rows past the end are zero.
        return torch.cat([x[k:], torch.zeros_like(x[:k])]) if k else x

    result = torch.zeros_like(r_t)
    cumulative_discount = torch.ones_like(r_t)  # Π_{j<k} discount_{t+j}
    active = torch.ones_like(r_t)  # 1 while k < m
    for k in range(min(n, horizon)):
        ends_k = shifted(ends, k)
        result = result + active * cumulative_discount * shifted(r_t, k)
        cumulative_discount = cumulative_discount * shifted(discount_t, k)
        still_active = active * (1.0 - ends_k) if k + 1 < n else torch.zeros_like(active)
        # Bootstrap exactly once, at the last accumulated step k = m - 1.
        result = result + (active - still_active) * cumulative_discount * shifted(v_t, k)
        active = still_active
    return result


def complete_return_mask(end_t: Tensor) -> Tensor:
    """Where the return from step t is a whole episode's: an episode end lies at or after t.

    `complete_t[t] = max_{k >= t} end_t[k]` over the sequence `[T, B]`. REINFORCE (Williams
    1992, Machine Learning 8:229-256; Sutton & Barto 2018, Sec. 13.3) weighs `∇ log π(a_t|s_t)`
    by the return `G_t` to the end of the episode. In a sequence of fixed length the steps after
    a column's last end belong to an episode the sequence cut, whose `G_t` is not known without
    bootstrapping: those steps get `False`, every other step `True`. With λ = 1 and these ends,
    `lambda_returns` gives each `True` step its whole episode's discounted reward-to-go.

    Args:
        end_t: episode ends `[T, B]` (terminated or truncated), bool or float, nonzero at an end.

    Returns:
        bool mask `[T, B]`.
    """
    if not isinstance(end_t, Tensor):
        raise ValueError(f"end_t must be a torch.Tensor, got {type(end_t).__name__}")
    if end_t.ndim != 2 or end_t.shape[0] == 0:
        raise ValueError(f"end_t must be time-major [T, B] with T >= 1, got {tuple(end_t.shape)}")
    ends = (end_t.detach() != 0).to(torch.uint8)
    # A reversed running maximum: 1 from each column's last end back to its first step.
    return ends.flip(0).cummax(0).values.flip(0).bool()
