"""The V-trace family's learner inputs: an unroll as tensors, and one pass of the network over it.

`Batch.from_unroll` turns an unroll acted by `VTracePolicy` into time-major tensors;
`evaluate(net, batch)` runs the network over all `T + 1` observations once and returns the
logits and values the losses need, with the final observation's value at each truncation
(IMPALA's and APPO's losses differ only in what they build from these).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

from shoal.agents.vtrace_ac.networks import VTraceNet
from shoal.data import Unroll
from shoal.nets import LSTMState
from shoal.tree import map_tree

__all__ = ["Batch", "Evaluated", "evaluate", "masked_mean"]


class Batch(NamedTuple):
    """An unroll as tensors, time-major."""

    obs: Any  # [T + 1, B, ...] (a dict of such for Dict observations)
    first: torch.Tensor  # [T + 1, B] bool: obs[t] starts an episode
    actions: torch.Tensor  # [T, B] int64
    rewards: torch.Tensor  # [T, B] float32
    terminated: torch.Tensor  # [T, B] bool
    truncated: torch.Tensor  # [T, B] bool
    behaviour_logits: torch.Tensor  # [T, B, A]: μ's logits when acting
    initial_state: LSTMState | None  # ([B, H], [B, H]) the core started obs[0] from
    final_obs: Any  # [K, ...] last observations of episodes truncated at final_index
    final_index: torch.Tensor  # [K, 2] int64 (t, b)
    active: torch.Tensor | None = None  # [T, B] bool: the row held an agent (None: all did)

    @classmethod
    def from_unroll(cls, unroll: Unroll) -> Batch:
        """Tensors of an unroll acted by `VTracePolicy` (extras: logits; recorded by the
        runtime: first and, with an LSTM, the core state)."""
        ended = unroll.terminated | unroll.truncated
        extras = unroll.extras
        starts = extras.get("first", np.zeros_like(ended))
        recurrent = "core_h" in extras
        if recurrent and not np.array_equal(starts[1:], ended[:-1]):
            raise RuntimeError(
                "The unroll's recorded episode starts do not follow its episode ends: the loop "
                "that stepped the envs did not report when episodes ended, so the LSTM state "
                "was carried from one episode into the next. Report every step's "
                "terminated | truncated to the acting rows (Acting.observe) so each ended "
                "episode's row starts afresh (episode_ended)."
            )
        # obs[0] starts an episode where the actor said so; obs[t + 1] where step t ended one.
        first = np.concatenate([starts[:1], ended])
        return cls(
            obs=map_tree(torch.from_numpy, unroll.obs),
            first=torch.from_numpy(first),
            actions=torch.from_numpy(unroll.actions),
            rewards=torch.from_numpy(unroll.rewards),
            terminated=torch.from_numpy(unroll.terminated),
            truncated=torch.from_numpy(unroll.truncated),
            behaviour_logits=torch.from_numpy(extras["logits"]),
            initial_state=(
                (torch.from_numpy(extras["core_h"][0]), torch.from_numpy(extras["core_c"][0]))
                if recurrent
                else None
            ),
            final_obs=map_tree(torch.from_numpy, unroll.final_obs),
            final_index=torch.from_numpy(unroll.final_index),
            active=torch.from_numpy(extras["active"]) if "active" in extras else None,
        )

    def to(self, device: torch.device) -> Batch:
        """The batch on `device` (the learner's network's)."""
        if device.type == "cpu":
            return self

        def move(x: torch.Tensor) -> torch.Tensor:
            return x.to(device, non_blocking=True)

        state = self.initial_state
        return self._replace(
            obs=map_tree(move, self.obs),
            first=move(self.first),
            actions=move(self.actions),
            rewards=move(self.rewards),
            terminated=move(self.terminated),
            truncated=move(self.truncated),
            behaviour_logits=move(self.behaviour_logits),
            initial_state=None if state is None else (move(state[0]), move(state[1])),
            final_obs=map_tree(move, self.final_obs),
            final_index=move(self.final_index),
            active=None if self.active is None else move(self.active),
        )


class Evaluated(NamedTuple):
    """The network's outputs over a batch, time-major."""

    logits: torch.Tensor  # [T, B, A] at obs[0..T-1], differentiable
    v_tm1: torch.Tensor  # V(x_t) [T, B] at obs[0..T-1], differentiable
    v_t: torch.Tensor  # V(x_{t+1}) [T, B], detached: the final observation's value at a truncation


def evaluate(net: VTraceNet, batch: Batch) -> Evaluated:
    """One pass of `net` over all `T + 1` observations: rows 0..T-1 are learned from, row T
    (and the final observation of each episode truncated inside the unroll) bootstraps."""
    length = batch.rewards.shape[0]
    t_trunc, b_trunc = batch.final_index.unbind(1)
    logits, values, _, states = net.unroll_keeping_states(
        batch.obs, batch.first, batch.initial_state, t_trunc.unique().tolist()
    )
    v_t = values[1:].detach().clone()
    if len(t_trunc):
        v_t[t_trunc, b_trunc] = _final_values(net, batch, states)
    return Evaluated(logits[:length], values[:length], v_t)


def masked_mean(x: torch.Tensor, active: torch.Tensor | None) -> torch.Tensor:
    """The mean of `x` `[T, B]` over the active steps (all without a mask; 0 if none is)."""
    if active is None:
        return x.mean()
    weights = active.to(x.dtype)
    return (x * weights).sum() / weights.sum().clamp_min(1.0)


@torch.no_grad()
def _final_values(net: VTraceNet, batch: Batch, states: dict[int, LSTMState]) -> torch.Tensor:
    """`V(final_obs[k])` `[K]` for the episodes truncated at `final_index[k] = (t, b)`."""
    t_trunc, b_trunc = batch.final_index.unbind(1)
    count = len(t_trunc)
    final_obs = map_tree(lambda x: x[None], batch.final_obs)  # one step of K entries
    if not net.recurrent:
        first = torch.ones(1, count, dtype=torch.bool, device=batch.first.device)
        return net.unroll(final_obs, first, None)[1][0]
    # The final observation continues the episode: step the core once more on it from the state
    # after step t (which has seen obs[t]), as the actor would have done had the episode gone on.
    # The actor never took this step, so the value comes from the learner's weights alone.
    h = torch.stack([states[int(t)][0][b] for t, b in zip(t_trunc, b_trunc, strict=True)])
    c = torch.stack([states[int(t)][1][b] for t, b in zip(t_trunc, b_trunc, strict=True)])
    first = torch.zeros(1, count, dtype=torch.bool, device=batch.first.device)
    return net.unroll(final_obs, first, (h, c))[1][0]
