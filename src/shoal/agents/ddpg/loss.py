"""DDPG's losses over a batch of transitions, composed from `shoal.ops` (Lillicrap et al. 2016,
"Continuous control with deep reinforcement learning", arXiv:1509.02971, Algorithm 1):

    critic:  ½ (Q(s, a) - y)²,  y = r + discount · Q'(s', μ'(s'))   (one-step TD target)
    actor:   -Q(s, μ(s))   (the deterministic policy gradient, Silver et al. 2014)

with `discount = γ` (0 after a termination) and the target networks Q', μ'. One critic, no
target policy smoothing: what TD3 adds to this is exactly what DDPG leaves out. Every loss is a
batch mean.
"""

from __future__ import annotations

import torch
from torch import nn

from shoal import ops
from shoal.agents.continuous import Transitions
from shoal.agents.ddpg.networks import DDPGNet


def critic_loss(
    net: DDPGNet, target_actor: nn.Module, target_critic: nn.Module, batch: Transitions
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The critic's squared error to the target critic at the target actor's action."""
    with torch.no_grad():
        q_t = target_critic(batch.next_obs, target_actor(batch.next_obs))
        # A batch of one-step transitions is one time step of B rows: n = 1 is TD(0).
        y = ops.n_step_returns(batch.reward[None], batch.discount[None], q_t[None], 1)[0]
    q = net.critic(batch.obs, batch.action)
    loss = ops.value_loss(q, y).mean()
    return loss, {"critic_loss": loss.detach(), "q_mean": q.detach().mean()}


def actor_loss(net: DDPGNet, batch: Transitions) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """`-Q(s, μ(s))`; the critic's parameters get no gradients from it."""
    net.critic.requires_grad_(False)
    try:
        q = net.critic(batch.obs, net.actor(batch.obs))
    finally:
        net.critic.requires_grad_(True)
    loss = -q.mean()
    return loss, {"actor_loss": loss.detach()}
