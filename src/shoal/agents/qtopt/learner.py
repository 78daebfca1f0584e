"""QT-Opt's learner: per batch, the Bellman targets from the two lagged target networks at
CEM's argmax, one Adam step of Q, then the targets' updates (Kalashnikov et al. 2018, section
4.2). The paper computes the targets in separate Bellman-updater processes: on the ray launcher
with `--agent.bellman-updaters N` they do (`shoal.agents.qtopt.updater`), from the target
networks this learner publishes (`updater_weights`), and the learner takes the targets from the
batch; otherwise (inline, always) it computes them itself, in turn (see
docs/algorithms/qtopt.md).

The replay and its ratio are the data path's: one `update` is one gradient step.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import numpy as np
import torch

from shoal.agents.base import Update, Weights
from shoal.agents.common import (
    DeclaredState,
    LearnerState,
    LearningRateSchedule,
    incremental_update,
    optimizer_step,
    periodic_update,
)
from shoal.agents.continuous import transitions
from shoal.agents.qtopt.config import QTOptConfig
from shoal.agents.qtopt.loss import bellman_targets, q_loss
from shoal.agents.qtopt.networks import QTOptNet
from shoal.agents.qtopt.updater import TARGET, target_weights
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.optim import Adam


class QTOptLearner(DeclaredState):
    """Owns the optimiser and the two target networks: `target1` (Polyak, `target_tau`) and
    `target2` (`target1` copied every `target_lag` steps)."""

    def __init__(self, spec: EnvSpec, config: QTOptConfig, net: QTOptNet) -> None:
        self.config, self.net = config, net
        # CEM values batch x samples x iterations actions per target; activations and Adam's
        # second moments that decay into subnormal floats slowed each update 3x on CPU here.
        torch.set_flush_denormal(True)
        # Copied before the optimiser moves the parameters into its flat buffer.
        self.target1 = copy.deepcopy(net.q).requires_grad_(False)
        self.target2 = copy.deepcopy(net.q).requires_grad_(False)
        self.optimizer = Adam(net.q.parameters(), lr=config.learning_rate)
        self.version = 0
        self.gradient_steps = 0

    def update(self, batch: Mapping[str, np.ndarray], progress: float) -> Update:
        if self.config.anneal_lr:
            schedule = LearningRateSchedule(base=self.config.learning_rate, anneal=True)
            self.optimizer.lr = schedule.value(progress)
        data = transitions(batch, module_device(self.net))
        if TARGET in batch:  # labelled by a Bellman updater
            targets = torch.from_numpy(np.asarray(batch[TARGET])).to(data.reward.device)
        else:
            targets = bellman_targets(self.target1, self.target2, data, self.config)
        loss, metrics = q_loss(self.net.q, data, targets)
        optimizer_step(self.optimizer, loss)
        self.gradient_steps += 1
        incremental_update(self.target1, self.net.q, self.config.target_tau)
        periodic_update(self.target2, self.target1, self.gradient_steps, self.config.target_lag)
        self.version += 1
        out = {key: float(value) for key, value in metrics.items()}
        out["gradient_steps"] = float(self.gradient_steps)
        return Update(out)

    def weights(self) -> Weights:
        """CPU copies of the Q-function's weights: all that acting needs."""
        state = self.net.q.state_dict()
        return {key: value.detach().to("cpu", copy=True) for key, value in state.items()}

    def updater_weights(self) -> Weights:
        """CPU copies of both target networks' weights: what a Bellman updater needs."""
        return target_weights(self.target1, self.target2)

    def learner_state(self) -> LearnerState:
        # The replay is the data path's: its snapshot (dataset rows included) is the table's.
        return LearnerState(
            modules={"network": self.net, "target1": self.target1, "target2": self.target2},
            optimizers={"optimizer": self.optimizer},
            counters=("version", "gradient_steps"),
        )
