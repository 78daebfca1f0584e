"""QT-Opt's acting: CEM's argmax of Q, with exploration, after the family's uniform warm-up."""

from __future__ import annotations

import numpy as np
import torch

from shoal.agents.base import ActMode, Layout, Weights
from shoal.agents.continuous import BoundedActionPolicy
from shoal.agents.qtopt.config import QTOptConfig
from shoal.agents.qtopt.networks import QTOptNet, cem_argmax
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device


class QTOptPolicy(BoundedActionPolicy):
    """The continuous family's warm-up and rescaling (`BoundedActionPolicy`) around CEM.

    `greedy`: CEM's argmax of Q (Kalashnikov et al. 2018, section 4.2); `train` and `sample`:
    with exploration `epsilon`, a uniform random action with probability `epsilon` in each
    row, else the argmax; with `gaussian`, the argmax plus `N(0, exploration_noise²)`, clipped
    to [-1, 1]. CEM's own sampling is seeded from `seed`, so greedy acting is reproducible but
    not a function of the observation alone.
    """

    config: QTOptConfig
    net: QTOptNet

    def __init__(
        self,
        spec: EnvSpec,
        config: QTOptConfig,
        net: QTOptNet,
        seed: int,
        layout: Layout | None = None,
    ) -> None:
        super().__init__(spec, config, net, seed, layout)  # type: ignore[arg-type]
        self.generator = torch.Generator(module_device(net)).manual_seed(seed)

    def actions(self, obs: torch.Tensor, mode: ActMode) -> np.ndarray:
        if self.generator.device != module_device(self.net):  # the network moved
            self.generator = torch.Generator(module_device(self.net)).manual_seed(
                int(self.rng.integers(2**62))
            )
        action = cem_argmax(self.net.q, obs, self.config, self.generator)[0].cpu().numpy()
        if mode == "greedy":
            return action
        if self.config.exploration == "gaussian":
            noise = self.rng.normal(0.0, self.config.exploration_noise, action.shape)
            return np.clip(action + noise, -1.0, 1.0).astype(np.float32)
        explore = self.rng.random(len(action)) < self.config.epsilon
        random = self.rng.uniform(-1.0, 1.0, action.shape).astype(np.float32)
        return np.where(explore[:, None], random, action).astype(np.float32)

    def load_weights(self, weights: Weights) -> None:
        """The learner publishes the Q-function's weights (`QTOptLearner.weights`)."""
        self.net.q.load_state_dict(weights)
