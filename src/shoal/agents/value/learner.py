"""The value family's learner: one gradient step per sampled batch on a loss it is given, with a
periodic or Polyak target network (Acme's `learning_lib`: a learner around a small loss
protocol, so DQN's transitions and R2D2's sequences share everything but the loss).

The replay and its ratio are the data path's: the learner only learns from the batches it is
given and returns their new priorities.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
from torch import nn

from shoal.agents.base import NetworkLearner, Update
from shoal.agents.common import DeclaredState, LearnerState, LearningRateSchedule, TargetUpdate
from shoal.agents.value.loss import LossResult, transition_loss
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam

__all__ = ["QLearner", "QLearnerSettings", "QLoss"]


class QLoss(Protocol):
    """`loss(online, target, sample, config) -> LossResult`, whatever the sampled items are
    (n-step transitions: `transition_loss`, i.e. `dqn_loss` or `categorical_dqn_loss`;
    sequences: R2D2's `r2d2_loss`)."""

    def __call__(
        self, online: Any, target: Any, sample: Mapping[str, np.ndarray], config: Any, /
    ) -> LossResult: ...


class QLearnerSettings(Protocol):
    """The config fields the learner reads (DQN's, R2D2's)."""

    @property
    def learning_rate(self) -> float: ...
    @property
    def anneal_lr(self) -> bool: ...
    @property
    def adam_eps(self) -> float: ...
    @property
    def max_grad_norm(self) -> float: ...
    @property
    def target_tau(self) -> float: ...
    @property
    def target_update_period(self) -> int: ...
    @property
    def prioritized(self) -> bool: ...
    @property
    def priority_eps(self) -> float: ...


class QLearner(DeclaredState, NetworkLearner):
    """Owns the online and target networks and the optimiser.

    `update(sample, progress)` takes one gradient step of `loss` on a replay sample (its
    importance `weights` included) and returns the new priorities `|δ| + ε` (the loss's
    `td_abs`: the KL divergence for the categorical loss).
    """

    def __init__(
        self,
        spec: EnvSpec,
        config: QLearnerSettings,
        net: nn.Module,
        *,
        loss: QLoss = transition_loss,
    ) -> None:
        self.config = config
        self.net = net
        self.loss = loss
        self.target = copy.deepcopy(net).requires_grad_(False)
        self.update_target = TargetUpdate(self.target, self.net)
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate, eps=config.adam_eps)
        self.version = 0
        self.gradient_steps = 0

    def learner_state(self) -> LearnerState:
        # The replay is the data path's and is not checkpointed: a resumed run refills it.
        return LearnerState(
            modules={"network": self.net, "target": self.target},
            optimizers={"optimizer": self.optimizer},
            counters=("version", "gradient_steps"),
        )

    def update(self, batch: Mapping[str, np.ndarray], progress: float) -> Update:
        """One gradient step on a sampled batch; the new priorities for the replay."""
        config = self.config
        if config.anneal_lr:
            schedule = LearningRateSchedule(base=config.learning_rate, anneal=True)
            self.optimizer.lr = schedule.value(progress)
        result = self.loss(self.net, self.target, batch, config)
        self.optimizer.zero_grad()
        result.loss.backward()
        grad_norm = self.optimizer.clip_grad_norm(config.max_grad_norm or math.inf)
        self.optimizer.step()
        self.gradient_steps += 1
        self.version += 1
        self.update_target(self.gradient_steps, config.target_tau, config.target_update_period)
        metrics = {key: float(value) for key, value in result.metrics.items()}
        metrics["grad_norm"] = float(grad_norm)
        metrics["importance_weight_mean"] = float(np.mean(batch["weights"]))
        metrics["gradient_steps"] = float(self.gradient_steps)
        metrics["learning_rate"] = float(self.optimizer.lr)
        priorities = None
        if config.prioritized:
            priorities = result.td_abs.cpu().numpy() + config.priority_eps
        return Update(metrics, priorities)
