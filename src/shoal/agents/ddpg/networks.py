"""DDPG's networks: a deterministic tanh actor and one Q critic, each an MLP after a torso.

As in Stable-Baselines3's DDPG (its TD3 with one critic): the observation goes through a torso
(for vectors just a flatten, for images a CNN), the actor's MLP ends in tanh, and the critic's
MLP takes the torso's features with the action. The paper feeds the action in at the second
hidden layer and initialises the last layers in ±3e-3 (Lillicrap et al. 2016, section 7); like
SB3 this keeps torch's default initialisation and the action at the input. The torso, the MLPs
and the actor are the continuous family's.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from shoal.agents.continuous import (
    DeterministicActor,
    MLPSettings,
    action_dim,
    check_bounded_actions,
    make_torso,
    mlp,
)
from shoal.agents.continuous.networks import check_actor_and_critic_fit
from shoal.agents.ddpg.config import DDPGConfig
from shoal.envs.spec import EnvSpec


class Critic(nn.Module):
    """`(obs [B, ...], action [B, D])` -> Q-values `[B]`."""

    def __init__(self, spec: EnvSpec, config: MLPSettings) -> None:
        super().__init__()
        self.torso = make_torso(spec, config)
        width = int(self.torso.out_features) + action_dim(spec)
        self.q = mlp(width, config.hidden_sizes, 1, config.activation)

    def forward(self, obs: Any, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([self.torso(obs), action.reshape(len(action), -1)], dim=-1)
        return self.q(x).squeeze(-1)


class DDPGNet(nn.Module):
    """The actor (`actor`, what acting needs) and the critic (`critic`)."""

    def __init__(self, spec: EnvSpec, config: DDPGConfig) -> None:
        super().__init__()
        check_bounded_actions(spec, "DDPG")
        self.actor = DeterministicActor(spec, config)
        self.critic = Critic(spec, config)


def make_networks(spec: EnvSpec, config: DDPGConfig) -> DDPGNet:
    net = DDPGNet(spec, config)
    check_fits(net, spec)
    return net


def check_fits(net: nn.Module, spec: EnvSpec) -> None:
    """Reject, before training, networks whose outputs do not fit the spaces."""
    check_actor_and_critic_fit("DDPG", net, spec)
