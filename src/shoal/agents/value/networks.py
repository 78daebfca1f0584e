"""DQN's network: a torso picked from the observation space and a (dueling) Q head."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from shoal.agents.value.config import DQNConfig
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.nets import DuelingQHead, orthogonal_init
from shoal.nets.torso import torso_from_setting
from shoal.tree import map_tree


class QNet(nn.Module):
    """`obs [B, ...]` (or a dict of such) -> Q-values `[B, A]`.

    The torso is chosen like the other agents' (MLP for vectors, a CNN for images, one per key
    for Dict spaces, or `config.torso`); the head is dueling (Wang et al. 2016) or one linear
    layer.
    """

    def __init__(self, spec: EnvSpec, config: DQNConfig) -> None:
        super().__init__()
        if not spec.discrete:
            raise ConfigError(
                f"DQN needs discrete actions; {spec.env_id} has {spec.action_space}. Use PPO "
                "(`shoal train ppo`) for continuous control."
            )
        self.torso = torso_from_setting(
            spec.observation_space, config.torso, config.hidden_sizes, config.activation
        )
        width = int(self.torso.out_features)
        self.num_actions = spec.num_actions
        self.head: nn.Module = (
            DuelingQHead(width, self.num_actions, config.dueling_hidden)
            if config.dueling
            else orthogonal_init(nn.Linear(width, self.num_actions), 1.0)
        )

    def forward(self, obs: Any) -> torch.Tensor:
        return self.head(self.torso(obs))


def make_networks(spec: EnvSpec, config: DQNConfig) -> QNet:
    net = QNet(spec, config)
    check_fits(net, spec)
    return net


@torch.no_grad()
def check_fits(net: QNet, spec: EnvSpec) -> None:
    """Reject, before training, a network whose outputs do not fit the action space."""
    batch = map_tree(torch.as_tensor, spec.sample_obs(2))
    try:
        q = net(batch)
    except (RuntimeError, ValueError) as err:
        raise ConfigError(
            f"The network does not fit {spec.env_id}: a batch of 2 observations failed with "
            f"{type(err).__name__}: {err}"
        ) from err
    if tuple(q.shape) != (2, spec.num_actions):
        raise ConfigError(
            f"The network's Q-values do not fit {spec.env_id}: a batch of 2 observations gave "
            f"{tuple(q.shape)}, expected (2, {spec.num_actions}) for {spec.action_space}."
        )
