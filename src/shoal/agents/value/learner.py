"""DQN's learner: one gradient step per sampled batch, with a periodic or Polyak target network.

The replay and its ratio are the data path's (`shoal.agents.dqn.data`): the learner only learns
from the batches it is given and returns their new priorities. R2D2 (`shoal.agents.r2d2`)
reuses `DQNLearner` with its own loss: the learner only needs
`loss(online, target, sample, config) -> LossResult`, whatever the sampled items are.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from shoal.agents.base import NetworkLearner, Update
from shoal.agents.dqn.config import DQNConfig
from shoal.agents.dqn.loss import LossResult, dqn_loss
from shoal.agents.dqn.networks import QNet
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam

Loss = Callable[[Any, Any, Mapping[str, np.ndarray], Any], LossResult]


class DQNLearner(NetworkLearner):
    """Owns the online and target networks and the optimiser.

    `update(sample, progress)` takes one gradient step on a replay sample (its importance
    `weights` included) and returns the new priorities `|δ| + ε`. The config needs DQNConfig's
    learning-rate, target and priority fields.
    """

    def __init__(
        self, spec: EnvSpec, config: DQNConfig, net: QNet, *, loss: Loss = dqn_loss
    ) -> None:
        self.config = config
        self.net = net
        self.loss = loss
        self.target = copy.deepcopy(net).requires_grad_(False)
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate, eps=config.adam_eps)
        self.version = 0
        self.gradient_steps = 0

    def update(self, batch: Mapping[str, np.ndarray], progress: float) -> Update:
        """One gradient step on a sampled batch; the new priorities for the replay."""
        config = self.config
        if config.anneal_lr:
            self.optimizer.lr = config.learning_rate * max(0.0, 1.0 - progress)
        result = self.loss(self.net, self.target, batch, config)
        self.optimizer.zero_grad()
        result.loss.backward()
        grad_norm = self.optimizer.clip_grad_norm(config.max_grad_norm or math.inf)
        self.optimizer.step()
        self.gradient_steps += 1
        self.version += 1
        self._update_target()
        metrics = {key: float(value) for key, value in result.metrics.items()}
        metrics["grad_norm"] = float(grad_norm)
        metrics["importance_weight_mean"] = float(np.mean(batch["weights"]))
        metrics["gradient_steps"] = float(self.gradient_steps)
        metrics["learning_rate"] = float(self.optimizer.lr)
        priorities = None
        if config.prioritized:
            priorities = result.td_abs.cpu().numpy() + config.priority_eps
        return Update(metrics, priorities)

    @torch.no_grad()
    def _update_target(self) -> None:
        tau = self.config.target_tau
        if tau < 1.0:
            for target, online in zip(self.target.parameters(), self.net.parameters(), strict=True):
                target.lerp_(online, tau)
        elif self.gradient_steps % self.config.target_update_period == 0:
            self.target.load_state_dict(self.net.state_dict())

    def state_dict(self) -> dict[str, Any]:
        # The replay is the data path's and is not checkpointed: a resumed run refills it.
        state = super().state_dict()
        state["target"] = self.target.state_dict()
        state["gradient_steps"] = self.gradient_steps
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)
        self.target.load_state_dict(state["target"])
        self.gradient_steps = int(state["gradient_steps"])
