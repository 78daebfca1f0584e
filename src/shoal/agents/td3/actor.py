"""TD3's actor side: the deterministic actor plus Gaussian noise, after a uniform warm-up."""

from __future__ import annotations

import numpy as np
import torch

from shoal.agents.base import ActMode
from shoal.agents.continuous import BoundedActionPolicy


class TD3Policy(BoundedActionPolicy):
    """The continuous family's warm-up and rescaling (`BoundedActionPolicy`) around a
    deterministic actor.

    `train`: after the warm-up, the actor's action plus `N(0, exploration_noise²)` noise,
    clipped to [-1, 1] (Fujimoto et al. 2018, section 6.1); `sample`: the same noisy actions
    without the warm-up; `greedy`: the actor's action.
    """

    def actions(self, obs: torch.Tensor, mode: ActMode) -> np.ndarray:
        action = self.net.actor(obs).cpu().numpy()
        if mode == "greedy":
            return action
        noise = self.rng.normal(0.0, self.config.exploration_noise, action.shape)
        return np.clip(action + noise, -1.0, 1.0).astype(np.float32)
