"""Actor-critic MLP for PPO: categorical or diagonal-Gaussian policy head and a value head."""

from __future__ import annotations

import math

import torch
from torch import nn

from shoal.agents.ppo.config import PPOConfig
from shoal.envs.spec import EnvSpec
from shoal.nets import MLP, RunningNorm, orthogonal_init


class ActorCritic(nn.Module):
    """`policy(obs)` gives logits `[B, A]` or a mean `[B, D]`; `value(obs)` gives `[B]`."""

    def __init__(self, spec: EnvSpec, config: PPOConfig) -> None:
        super().__init__()
        in_features = math.prod(spec.obs_shape)
        self.discrete = spec.discrete
        self.obs_norm = RunningNorm(spec.obs_shape) if config.normalize_obs else None
        self.reward_norm = RunningNorm(()) if config.normalize_reward else None
        self.policy_torso = MLP(in_features, config.hidden_sizes, config.activation)
        self.value_torso = (
            self.policy_torso
            if config.shared_torso
            else MLP(in_features, config.hidden_sizes, config.activation)
        )
        out = spec.num_actions if spec.discrete else math.prod(spec.action_shape)
        # Small policy outputs start near-uniform; the value head starts at unit scale.
        self.policy_head = orthogonal_init(nn.Linear(self.policy_torso.out_features, out), 0.01)
        self.value_head = orthogonal_init(nn.Linear(self.value_torso.out_features, 1), 1.0)
        self.log_std = (
            None if spec.discrete else nn.Parameter(torch.full((out,), config.init_log_std))
        )

    def _inputs(self, obs: torch.Tensor) -> torch.Tensor:
        x = obs.float()
        return self.obs_norm(x) if self.obs_norm is not None else x

    def policy(self, obs: torch.Tensor) -> torch.Tensor:
        return self.policy_head(self.policy_torso(self._inputs(obs)))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.value_head(self.value_torso(self._inputs(obs))).squeeze(-1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.policy(obs), self.value(obs)


def make_networks(spec: EnvSpec, config: PPOConfig) -> ActorCritic:
    return ActorCritic(spec, config)
