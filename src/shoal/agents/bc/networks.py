"""Behavioural cloning's network: a torso chosen from the observation space and a policy head
(categorical logits, or a Gaussian mean with a state-independent log-std)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from shoal.agents.bc.config import BCConfig
from shoal.envs.spec import EnvSpec
from shoal.nets import CategoricalHead, GaussianHead
from shoal.nets.torso import torso_from_setting


class BCNet(nn.Module):
    """`net(obs)` gives logits `[B, A]` or a Gaussian mean `[B, D]`; `log_std` is `[D]`."""

    def __init__(self, spec: EnvSpec, config: BCConfig) -> None:
        super().__init__()
        self.discrete = spec.discrete
        self.torso = torso_from_setting(
            spec.observation_space, config.torso, config.hidden_sizes, config.activation
        )
        width = self.torso.out_features
        self.head: nn.Module = (
            CategoricalHead(width, spec.num_actions)
            if spec.discrete
            else GaussianHead(width, int(np.prod(spec.action_shape)), config.init_log_std)
        )

    @property
    def log_std(self) -> torch.Tensor | None:
        return None if self.discrete else self.head.log_std

    def forward(self, obs: Any) -> torch.Tensor:
        return self.head(self.torso(obs))


def make_networks(spec: EnvSpec, config: BCConfig) -> BCNet:
    return BCNet(spec, config)
