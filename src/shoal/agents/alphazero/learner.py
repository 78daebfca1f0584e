"""AlphaZero's learner: one gradient step of `(z - v)^2 - pi^T log p + c ||theta||^2` per batch
of replayed positions (Silver et al. 2018; `shoal.ops.policy_value_loss`). Adam instead of the
paper's SGD with momentum and a step schedule: the small games need no tuned schedule."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from shoal import ops
from shoal.agents.alphazero.config import AlphaZeroConfig
from shoal.agents.alphazero.networks import PolicyValueNet
from shoal.agents.base import NetworkLearner, Update
from shoal.agents.common import LearningRateSchedule, optimizer_step
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.optim import Adam


class AlphaZeroLearner(NetworkLearner):
    """Owns the network's optimiser; `weights()` are the whole network (batch-norm statistics
    included), which the policy searches with."""

    def __init__(self, spec: EnvSpec, config: AlphaZeroConfig, net: PolicyValueNet) -> None:
        self.config, self.net = config, net
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate)
        self.version = 0

    def update(self, batch: Mapping[str, np.ndarray], progress: float) -> Update:
        if self.config.anneal_lr:
            schedule = LearningRateSchedule(base=self.config.learning_rate, anneal=True)
            self.optimizer.lr = schedule.value(progress)
        device = module_device(self.net)

        def tensor(key: str) -> torch.Tensor:
            return torch.from_numpy(np.asarray(batch[key])).to(device)

        self.net.train()
        logits, value = self.net(tensor("observation"))
        out = ops.policy_value_loss(
            logits,
            value,
            tensor("search_policy"),
            tensor("outcome"),
            legal=tensor("action_mask") != 0,
        )
        l2 = sum(p.pow(2).sum() for p in self.net.parameters() if p.dim() > 1)
        loss = out.loss + self.config.weight_decay * l2
        optimizer_step(self.optimizer, loss)
        self.version += 1
        return Update(
            {
                "loss": float(loss.detach()),
                "value_loss": float(out.value_loss.detach()),
                "policy_loss": float(out.policy_loss.detach()),
            }
        )
