"""DDPG's actor side: the deterministic actor plus exploration noise, after a uniform warm-up.

Gaussian noise needs no state. Ornstein-Uhlenbeck noise is a process per env row and action
entry (Lillicrap et al. 2016, section 3): the policy declares it as the rows' state
(`initial_state`: zeros at an episode's start) and returns its next value with each step; the
runtime keeps it per row (`shoal.runtime.rows`), for every actor, the central inference server
and the evaluator alike.
"""

from __future__ import annotations

import numpy as np
import torch

from shoal import ops
from shoal.agents.base import ActMode, State
from shoal.agents.continuous import BoundedActionPolicy
from shoal.agents.ddpg.config import DDPGConfig
from shoal.nets import module_device

OU_STATE = "ou_noise"


class DDPGPolicy(BoundedActionPolicy):
    """The continuous family's warm-up and rescaling (`BoundedActionPolicy`) around a
    deterministic actor.

    `train`: after the warm-up, the actor's action plus noise, clipped to [-1, 1]: Gaussian
    `N(0, exploration_noise²)` per step, or the rows' Ornstein-Uhlenbeck processes (sigma
    `exploration_noise`, `ou_theta`, `ou_dt`); `sample`: the same noisy actions without the
    warm-up; `greedy`: the actor's action (the process is left as it is).
    """

    config: DDPGConfig

    def initial_state(self, slots: np.ndarray) -> State:
        if self.config.noise_type != "ornstein_uhlenbeck":
            return {}
        shape = (len(slots), int(np.prod(self.shape)))
        return {OU_STATE: torch.zeros(shape, device=module_device(self.net))}

    def actions(self, obs: torch.Tensor, mode: ActMode) -> np.ndarray:
        action = self.net.actor(obs).cpu().numpy()
        if mode == "greedy":
            return action
        noise = self.rng.normal(0.0, self.config.exploration_noise, action.shape)
        return np.clip(action + noise, -1.0, 1.0).astype(np.float32)

    def actions_with_state(
        self, obs: torch.Tensor, state: State, mode: ActMode
    ) -> tuple[np.ndarray, State]:
        if OU_STATE not in state:
            return self.actions(obs, mode), state
        action = self.net.actor(obs)
        if mode == "greedy":
            return action.cpu().numpy(), state
        x = state[OU_STATE]
        eps = torch.from_numpy(self.rng.standard_normal(tuple(x.shape), np.float32))
        config = self.config
        x = ops.ornstein_uhlenbeck_step(
            x, eps.to(x.device), config.ou_theta, config.exploration_noise, config.ou_dt
        )
        noisy = (action.reshape(x.shape) + x).cpu().numpy()
        return np.clip(noisy, -1.0, 1.0).astype(np.float32), {OU_STATE: x}
