"""The actor-critic family's network (PPO's, A2C's, A3C's): a torso chosen from the observation
space, policy and value heads."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.nets import CategoricalHead, GaussianHead, RunningNorm, ValueHead
from shoal.nets.torso import torso_from_setting
from shoal.tree import map_tree

__all__ = ["ActorCritic", "NetworkSettings", "check_fits", "make_networks"]


class NetworkSettings(Protocol):
    """The config fields the network reads (PPO's, A2C's, A3C's)."""

    @property
    def torso(self) -> str: ...
    @property
    def hidden_sizes(self) -> tuple[int, ...]: ...
    @property
    def activation(self) -> Any: ...
    @property
    def shared_torso(self) -> bool | None: ...
    @property
    def normalize_obs(self) -> bool: ...
    @property
    def normalize_reward(self) -> bool: ...
    @property
    def init_log_std(self) -> float: ...


def _torso(spec: EnvSpec, config: NetworkSettings) -> nn.Module:
    return torso_from_setting(
        spec.observation_space, config.torso, config.hidden_sizes, config.activation
    )


class ActorCritic(nn.Module):
    """`policy(obs)` gives logits `[B, A]` or a mean `[B, D]`; `value(obs)` gives `[B]`.

    The torso is picked from the observation space (MLP for vectors, a CNN for images, one per
    key for Dict spaces) or named by `config.torso`, which may be a user's
    `package.module:function(observation_space) -> nn.Module`. Policy and value share it when
    `config.shared_torso` says so; by default images and Dict observations share one torso
    (as in the Atari PPO of Schulman et al. 2017), vectors get two.
    """

    def __init__(self, spec: EnvSpec, config: NetworkSettings) -> None:
        super().__init__()
        self.discrete = spec.discrete
        image_or_dict = spec.dict_obs or len(spec.observation_space.shape) == 3
        shared = config.shared_torso if config.shared_torso is not None else image_or_dict
        if config.normalize_obs and (spec.dict_obs or spec.obs_dtype == np.uint8):
            raise ConfigError(
                "normalize_obs works on float Box observations; this environment gives "
                f"{spec.observation_space}. Images are already scaled to [0, 1] by the torso. "
                "Set --agent.normalize-obs false."
            )
        self.obs_norm = RunningNorm(spec.obs_shape) if config.normalize_obs else None
        self.reward_norm = RunningNorm(()) if config.normalize_reward else None
        self.policy_torso = _torso(spec, config)
        self.value_torso = self.policy_torso if shared else _torso(spec, config)
        width = self.policy_torso.out_features
        self.policy_head: nn.Module = (
            CategoricalHead(width, spec.num_actions)
            if spec.discrete
            else GaussianHead(width, int(np.prod(spec.action_shape)), config.init_log_std)
        )
        self.value_head = ValueHead(self.value_torso.out_features)

    @property
    def log_std(self) -> torch.Tensor | None:
        """State-independent log standard deviation `[D]` of Gaussian actions."""
        return None if self.discrete else self.policy_head.log_std

    def _inputs(self, obs):
        return self.obs_norm(obs.float()) if self.obs_norm is not None else obs

    def policy(self, obs) -> torch.Tensor:
        return self.policy_head(self.policy_torso(self._inputs(obs)))

    def value(self, obs) -> torch.Tensor:
        return self.value_head(self.value_torso(self._inputs(obs)))

    def forward(self, obs) -> tuple[torch.Tensor, torch.Tensor]:
        x = self._inputs(obs)
        h_policy = self.policy_torso(x)
        h_value = h_policy if self.value_torso is self.policy_torso else self.value_torso(x)
        return self.policy_head(h_policy), self.value_head(h_value)


def make_networks(spec: EnvSpec, config: NetworkSettings) -> ActorCritic:
    net = ActorCritic(spec, config)
    check_fits(net, spec)
    return net


@torch.no_grad()
def check_fits(net: ActorCritic, spec: EnvSpec) -> None:
    """Reject, before training, a network whose outputs do not fit the action space."""
    params, values = net(map_tree(torch.as_tensor, spec.sample_obs(2)))
    expected = (2, spec.num_actions) if spec.discrete else (2, *spec.action_shape)
    if tuple(params.shape) != expected or tuple(values.shape) != (2,):
        raise ConfigError(
            f"The network's outputs do not fit {spec.env_id}: for a batch of 2 observations the "
            f"policy gave {tuple(params.shape)} (expected {expected} for {spec.action_space}) and "
            f"the value gave {tuple(values.shape)} (expected (2,))."
        )
