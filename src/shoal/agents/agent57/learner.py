"""Agent57's learner: three optimisers on one network, target Q-networks, the mixture table.

The Q-networks, the embedding (with its inverse-dynamics head) and the RND predictor each have
their own Adam (Agent57 and NGU, appendices: separate learning rates), stepped on the same
replayed batch. Everything is checkpointed; the replay is the data path's and is refilled.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Mapping

import numpy as np

from shoal.agents.agent57.config import Agent57Config
from shoal.agents.agent57.loss import agent57_losses
from shoal.agents.agent57.networks import Agent57Net
from shoal.agents.base import NetworkLearner, Update
from shoal.agents.common import DeclaredState, HardUpdate, LearnerState, LearningRateSchedule
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam


class Agent57Learner(DeclaredState, NetworkLearner):
    def __init__(self, spec: EnvSpec, config: Agent57Config, net: Agent57Net) -> None:
        self.config, self.net = config, net
        self.table = config.mixtures()
        self.target = copy.deepcopy(net).requires_grad_(False)
        eps = config.adam_eps
        q_params = itertools.chain(net.extrinsic.parameters(), net.intrinsic.parameters())
        embedding_params = itertools.chain(
            net.embedding.parameters(),
            net.inverse_dynamics.parameters(),
            net.inverse_logits.parameters(),
        )
        self.optimizers = {
            "q": Adam(q_params, lr=config.learning_rate, eps=eps),
            "embedding": Adam(embedding_params, lr=config.embedding_learning_rate, eps=eps),
            "rnd": Adam(net.rnd_predictor.parameters(), lr=config.rnd_learning_rate, eps=eps),
        }
        self.base_lr = {name: opt.lr for name, opt in self.optimizers.items()}
        self.update_target = HardUpdate(self.target, self.net, config.target_update_period)
        self.version = 0
        self.gradient_steps = 0

    def update(self, batch: Mapping[str, np.ndarray], progress: float) -> Update:
        config = self.config
        if config.anneal_lr:
            for name, optimizer in self.optimizers.items():
                schedule = LearningRateSchedule(base=self.base_lr[name], anneal=True)
                optimizer.lr = schedule.value(progress)
        losses = agent57_losses(self.net, self.target, batch, config, self.table)
        for optimizer in self.optimizers.values():
            optimizer.zero_grad()
        (losses.q + losses.embedding + losses.rnd).backward()  # disjoint parameters
        metrics = {key: float(value) for key, value in losses.metrics.items()}
        for name, optimizer in self.optimizers.items():
            norm = optimizer.clip_grad_norm(config.max_grad_norm or math.inf)
            optimizer.step()
            metrics[f"{name}_grad_norm"] = float(norm)
        self.gradient_steps += 1
        self.version += 1
        self.update_target(self.gradient_steps)
        metrics["embedding_loss"] = float(losses.embedding.detach())
        metrics["rnd_loss"] = float(losses.rnd.detach())
        metrics["importance_weight_mean"] = float(np.mean(batch["weights"]))
        metrics["gradient_steps"] = float(self.gradient_steps)
        metrics["learning_rate"] = float(self.optimizers["q"].lr)
        priorities = None
        if config.prioritized:
            priorities = losses.priorities.detach().cpu().numpy() + config.priority_eps
        return Update(metrics, priorities)

    def learner_state(self) -> LearnerState:
        return LearnerState(
            modules={"network": self.net, "target": self.target},
            optimizers={"optimizers": self.optimizers},
            counters=("version", "gradient_steps"),
        )
