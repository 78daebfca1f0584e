"""Behavioural cloning's learner: one Adam step of `bc_loss` per minibatch of the dataset."""

from __future__ import annotations

from typing import Any

import torch

from shoal.agents.base import NetworkLearner, Update
from shoal.agents.bc.config import BCConfig
from shoal.agents.bc.loss import bc_loss
from shoal.agents.bc.networks import BCNet
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.optim import Adam
from shoal.tree import map_tree


class BCLearner(NetworkLearner):
    net: BCNet

    def __init__(self, spec: EnvSpec, config: BCConfig, net: BCNet) -> None:
        self.config, self.net = config, net
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate)
        self.version = 0

    def update(self, batch: dict[str, Any], progress: float) -> Update:
        """`batch`: `obs [B, ...]` (or a dict of such) and `actions [B, ...]`, numpy."""
        device = module_device(self.net)
        obs = map_tree(lambda x: torch.from_numpy(x).to(device), batch["obs"])
        actions = torch.from_numpy(batch["actions"]).to(device)
        loss, metrics = bc_loss(self.net, obs, actions, self.config)
        self.optimizer.zero_grad()
        loss.backward()
        if self.config.max_grad_norm > 0:
            metrics["grad_norm"] = float(self.optimizer.clip_grad_norm(self.config.max_grad_norm))
        self.optimizer.step()
        self.version += 1
        return Update(metrics)
