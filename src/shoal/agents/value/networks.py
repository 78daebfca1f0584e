"""DQN's network: a torso picked from the observation space and a (dueling) Q head, optionally
categorical (C51) or of quantiles (QR-DQN), and noisy (Rainbow)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from shoal.agents.common.masks import ObsPacking
from shoal.agents.value.config import DQNConfig
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.nets import DuelingQHead, q_linear
from shoal.nets.torso import torso_from_setting
from shoal.tree import map_tree


class QNet(nn.Module):
    """`obs [B, ...]` (or a dict of such) -> Q-values `[B, A]`.

    The torso is chosen like the other agents' (MLP for vectors, a CNN for images, one per key
    for Dict spaces, or `config.torso`); the head is dueling (Wang et al. 2016) or one linear
    layer, its layers noisy (Fortunato et al. 2018) with `config.noisy`. With
    `config.distributional` the head gives logits of a categorical over `atoms` (`[N]`, a
    buffer) per action (C51, Bellemare et al. 2017): `logits(obs)` is `[B, A, N]` and the
    Q-values are their expectations, so acting is the same either way. With `config.quantile`
    the head gives `num_quantiles` quantiles of the return per action (QR-DQN, Dabney et al.
    2018): `quantiles(obs)` is `[B, A, N]` and the Q-values are their means.
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
        # How replay stores a Dict observation (its action mask too): one packed vector.
        self.obs_packing = ObsPacking(spec.observation_space) if spec.dict_obs else None
        self.distributional, self.quantile = config.distributional, config.quantile
        atoms, noisy, sigma = config.atoms, config.noisy, config.noisy_sigma
        self.head: nn.Module = (
            DuelingQHead(
                width,
                self.num_actions,
                config.dueling_hidden,
                atoms=atoms,
                noisy=noisy,
                sigma_0=sigma,
            )
            if config.dueling
            else q_linear(width, self.num_actions * atoms, 1.0, noisy, sigma)
        )
        support = torch.linspace(config.v_min, config.v_max, config.num_atoms)
        # Not saved: it follows from the config, and checkpoints of nets without it still load.
        self.register_buffer(
            "atoms", support if self.distributional else torch.zeros(0), persistent=False
        )

    def logits(self, obs: Any) -> torch.Tensor:
        """`[B, A, N]` logits of the return distributions over `atoms` (distributional)."""
        if not self.distributional:
            raise ValueError("logits: this Q-network is not distributional")
        out = self.head(self.torso(obs))
        return out.view(out.shape[0], self.num_actions, -1)

    def quantiles(self, obs: Any) -> torch.Tensor:
        """`[B, A, N]` quantiles of the return at the midpoints `(2i - 1) / 2N` (quantile)."""
        if not self.quantile:
            raise ValueError("quantiles: this Q-network does not learn quantiles")
        out = self.head(self.torso(obs))
        return out.view(out.shape[0], self.num_actions, -1)

    def q_values(self, dist: torch.Tensor) -> torch.Tensor:
        """The Q-values `[B, A]` of distributions `[B, A, N]`: the expectations of the
        categoricals of logits, or the means of quantiles (quantile)."""
        if self.quantile:
            return dist.mean(-1)
        return (torch.softmax(dist, -1) * self.atoms).sum(-1)

    def forward(self, obs: Any) -> torch.Tensor:
        if self.distributional:
            return self.q_values(self.logits(obs))
        if self.quantile:
            return self.q_values(self.quantiles(obs))
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
