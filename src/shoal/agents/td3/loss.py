"""TD3's losses over a batch of transitions, composed from `shoal.ops` (Fujimoto et al. 2018,
"Addressing Function Approximation Error in Actor-Critic Methods", arXiv:1802.09477):

    critics:  ½ Σ_i (Q_i(s, a) - y)²,  y = r + discount · min_i Q'_i(s', ã'),
              ã' = clip(μ'(s') + clip(ε, -c, c), -1, 1),  ε ~ N(0, σ̃²)
    actor:    -Q_1(s, μ(s))  (the deterministic policy gradient, through the first critic)

with `discount = γ` (0 after a termination). Every loss is a batch mean.
"""

from __future__ import annotations

import torch
from torch import nn

from shoal import ops
from shoal.agents.continuous import Transitions
from shoal.agents.td3.config import TD3Config
from shoal.agents.td3.networks import TD3Net


def critic_loss(
    net: TD3Net,
    target_actor: nn.Module,
    target_critic: nn.Module,
    batch: Transitions,
    config: TD3Config,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The twin critics' squared errors to the clipped double-Q target at smoothed actions."""
    with torch.no_grad():
        following = target_actor(batch.next_obs)
        noise = torch.randn_like(following) * config.target_noise
        smoothed = ops.smoothed_target_action(following, noise, config.target_noise_clip)
        q1_t, q2_t = target_critic(batch.next_obs, smoothed)
        y = ops.clipped_double_q_target(batch.reward, batch.discount, q1_t, q2_t)
    q1, q2 = net.critic(batch.obs, batch.action)
    loss = (ops.value_loss(q1, y) + ops.value_loss(q2, y)).mean()
    return loss, {"critic_loss": loss.detach(), "q_mean": q1.detach().mean()}


def actor_loss(net: TD3Net, batch: Transitions) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """`-Q_1(s, μ(s))`; the critic's parameters get no gradients from it."""
    net.critic.requires_grad_(False)
    try:
        q = net.critic.q1_only(batch.obs, net.actor(batch.obs))
    finally:
        net.critic.requires_grad_(True)
    loss = -q.mean()
    return loss, {"actor_loss": loss.detach()}
