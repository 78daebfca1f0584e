"""DDPG's losses over a batch of transitions, composed from `shoal.ops` (Lillicrap et al. 2016,
"Continuous control with deep reinforcement learning", arXiv:1509.02971, Algorithm 1):

    critic:  ½ w (Q(s, a) - y)²,  y = R + discount · Q'(s', μ'(s'))   (the TD target)
    actor:   -Q(s, μ(s))   (the deterministic policy gradient, Silver et al. 2014)

with the target networks Q', μ'. A transition's `R` and `discount` are the data path's: one
reward and `γ` for DDPG, or Ape-X DPG's n-step return `Σ_{k<m} γ^k r_{t+k}` and `γ^m`
(Horgan et al. 2018, section 3.2), 0 after a termination either way. `w` is the replay's
importance weight (1 without prioritisation). One critic, no target policy smoothing: what TD3
adds to this is exactly what DDPG leaves out. Every loss is a batch mean.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

from shoal import ops
from shoal.agents.continuous import Transitions, transitions
from shoal.agents.ddpg.config import DDPGConfig
from shoal.agents.ddpg.networks import DDPGNet
from shoal.nets import module_device


def td_target(
    target_actor: nn.Module, target_critic: nn.Module, batch: Transitions
) -> torch.Tensor:
    """`y = R + discount · Q'(s', μ'(s'))`, `[B]`, without gradients."""
    with torch.no_grad():
        q_t = target_critic(batch.next_obs, target_actor(batch.next_obs))
        # A batch of transitions is one time step of B rows whose discounts are already γ^m.
        return ops.n_step_returns(batch.reward[None], batch.discount[None], q_t[None], 1)[0]


def critic_loss(
    net: DDPGNet,
    target_actor: nn.Module,
    target_critic: nn.Module,
    batch: Transitions,
    weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
    """The critic's squared error to the target critic at the target actor's action, weighted
    by `weights [B]` (importance weights) when given; also `|δ| [B]`, the new priorities."""
    y = td_target(target_actor, target_critic, batch)
    q = net.critic(batch.obs, batch.action)
    per_row = ops.value_loss(q, y)
    if weights is not None:
        per_row = per_row * weights
    loss = per_row.mean()
    td_abs = (q.detach() - y).abs()
    return loss, {"critic_loss": loss.detach(), "q_mean": q.detach().mean()}, td_abs


def actor_loss(net: DDPGNet, batch: Transitions) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """`-Q(s, μ(s))`; the critic's parameters get no gradients from it."""
    net.critic.requires_grad_(False)
    try:
        q = net.critic(batch.obs, net.actor(batch.obs))
    finally:
        net.critic.requires_grad_(True)
    loss = -q.mean()
    return loss, {"actor_loss": loss.detach()}


@torch.inference_mode()
def initial_priorities(
    policy: object, config: DDPGConfig, data: Mapping[str, np.ndarray]
) -> np.ndarray:
    """Ape-X's initial priorities `|δ| + ε` of an actor's new transitions, under its own copy
    of the actor and critic as their own targets (Horgan et al. 2018: the actors compute them,
    so new experience enters replay with an informed priority rather than the largest)."""
    net: DDPGNet = policy.net  # type: ignore[attr-defined]
    # Straight from the env: MuJoCo's float64 observations, which replay stores as float32.
    fields = {key: _float32(data[key]) for key in Transitions._fields}
    batch = transitions(fields, module_device(net))
    y = td_target(net.actor, net.critic, batch)
    td_abs = (net.critic(batch.obs, batch.action) - y).abs()
    return np.asarray((td_abs + config.priority_eps).cpu().numpy(), np.float32)


def _float32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32) if x.dtype == np.float64 else x
