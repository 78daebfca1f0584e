"""DDPG's actor side: the deterministic actor plus exploration noise, after a uniform warm-up.

Gaussian noise needs no state. Ornstein-Uhlenbeck noise is a process per env row and action
entry (Lillicrap et al. 2016, section 3): the policy declares it as the rows' state
(`initial_state`: zeros at an episode's start) and returns its next value with each step; the
runtime keeps it per row (`shoal.runtime.rows`), for every actor, the central inference server
and the evaluator alike.

With `noise_schedule: apex` (Ape-X DPG) each actor has its own noise scale, as Ape-X gives each
actor its own epsilon: actor i of N explores with `exploration_noise^(1 + apex_noise_alpha i /
(N - 1))` (`shoal.agents.common.apex_spread`), Gaussian or as its Ornstein-Uhlenbeck sigma.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shoal import ops
from shoal.agents.base import ActMode, PolicyStep, State, StepInputs, Weights
from shoal.agents.common import apex_spread
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
    _sigma: np.ndarray | float = 0.0  # the noise scale of each row of the step being taken

    def load_weights(self, weights: Weights) -> None:
        """The actor's weights, or the whole network's when prioritised (`DDPGLearner.weights`)."""
        if self.config.prioritized:
            self.net.load_state_dict(weights)
        else:
            super().load_weights(weights)

    def noise_scales(self, inputs: StepInputs) -> np.ndarray | float:
        """The noise scale (Gaussian std, or OU sigma) of each row of a training step: one for
        all (`fixed`), or actor i's `apex_spread` (`apex`, the actor of env slot s is s // E)."""
        config = self.config
        if config.noise_schedule == "fixed":
            return config.exploration_noise
        actor = inputs.slot // self.layout.envs_per_actor
        scales = apex_spread(
            config.exploration_noise, config.apex_noise_alpha, actor, self.layout.actors
        )
        return scales.astype(np.float32)[:, None]

    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        self._sigma = self.noise_scales(inputs)
        return super().step(obs, state, inputs, mode)

    def initial_state(self, slots: np.ndarray) -> State:
        if self.config.noise_type != "ornstein_uhlenbeck":
            return {}
        shape = (len(slots), int(np.prod(self.shape)))
        return {OU_STATE: torch.zeros(shape, device=module_device(self.net))}

    def actions(self, obs: torch.Tensor, mode: ActMode) -> np.ndarray:
        action = self.net.actor(obs).cpu().numpy()
        if mode == "greedy":
            return action
        noise = self.rng.normal(0.0, 1.0, action.shape) * self._sigma
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
        # sigma sqrt(dt) eps = 1 sqrt(dt) (sigma eps): each row's own sigma, drawn in.
        eps = eps * torch.from_numpy(np.asarray(self._sigma, np.float32))
        x = ops.ornstein_uhlenbeck_step(x, eps.to(x.device), config.ou_theta, 1.0, config.ou_dt)
        noisy = (action.reshape(x.shape) + x).cpu().numpy()
        return np.clip(noisy, -1.0, 1.0).astype(np.float32), {OU_STATE: x}
