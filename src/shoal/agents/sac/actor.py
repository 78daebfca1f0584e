"""SAC's actor side: squashed Gaussian actions, after a warm-up of uniform random ones.

The warm-up, the rescaling to the env's bounds and loading the actor's weights alone are the
continuous family's `BoundedActionPolicy` (`shoal.agents.continuous.policy`).
"""

from __future__ import annotations

import numpy as np
import torch

from shoal import ops
from shoal.agents.base import ActMode, Layout
from shoal.agents.continuous.policy import ActorNet, BoundedActionPolicy, WarmUpSettings
from shoal.agents.sac.config import SACConfig
from shoal.agents.sac.networks import SACNet
from shoal.envs.spec import EnvSpec


class SACPolicy(BoundedActionPolicy):
    """`train` and `sample`: samples of the squashed Gaussian; `greedy`: `tanh(mean)`."""

    def __init__(
        self,
        spec: EnvSpec,
        config: SACConfig,
        net: SACNet,
        seed: int,
        layout: Layout | None = None,
    ) -> None:
        super().__init__(spec, config, net, seed, layout)
        self.generator = torch.Generator().manual_seed(seed)

    def actions(self, obs: torch.Tensor, mode: ActMode) -> np.ndarray:
        mean, log_std = self.net.actor(obs)
        mean, log_std = mean.cpu(), log_std.cpu()
        if mode == "greedy":
            return torch.tanh(mean).numpy()
        return ops.squashed_gaussian_sample(mean, log_std, self.generator).action.numpy()


__all__ = ["ActorNet", "BoundedActionPolicy", "SACPolicy", "WarmUpSettings"]
