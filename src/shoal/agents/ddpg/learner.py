"""DDPG's learner: per batch, a critic step, an actor step and the targets' Polyak update
(Lillicrap et al. 2016, Algorithm 1).

The replay and its ratio are the data path's (`shoal.agents.continuous.data`): one `update` is
one gradient step of each network, whatever the replay ratio. With prioritised replay (Ape-X
DPG) the critic's loss is weighted by the sample's importance weights and the update returns
the batch's new priorities `|δ| + ε`, and the published weights hold the critic too, with
which the actors prioritise their own transitions.
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
    SoftUpdate,
    optimizer_step,
)
from shoal.agents.continuous import transitions
from shoal.agents.ddpg.config import DDPGConfig
from shoal.agents.ddpg.loss import actor_loss, critic_loss
from shoal.agents.ddpg.networks import DDPGNet
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.optim import Adam


class DDPGLearner(DeclaredState):
    """Owns the two optimisers and the target actor and critic."""

    def __init__(self, spec: EnvSpec, config: DDPGConfig, net: DDPGNet) -> None:
        self.config, self.net = config, net
        # Copied before the optimisers move the parameters into their flat buffers.
        self.target_actor = copy.deepcopy(net.actor).requires_grad_(False)
        self.target_critic = copy.deepcopy(net.critic).requires_grad_(False)
        self.actor_optimizer = Adam(net.actor.parameters(), lr=config.learning_rate)
        self.critic_optimizer = Adam(net.critic.parameters(), lr=config.learning_rate)
        self.targets = (
            SoftUpdate(self.target_critic, net.critic, config.target_tau),
            SoftUpdate(self.target_actor, net.actor, config.target_tau),
        )
        self.version = 0
        self.gradient_steps = 0

    def update(self, batch: Mapping[str, np.ndarray], progress: float) -> Update:
        """A critic step, then an actor step against the updated critic, then the targets."""
        if self.config.anneal_lr:
            schedule = LearningRateSchedule(base=self.config.learning_rate, anneal=True)
            for optimizer in self.declared_optimizers():
                optimizer.lr = schedule.value(progress)
        config, device = self.config, module_device(self.net)
        data = transitions(batch, device)
        weights = None
        if config.prioritized:
            weights = torch.from_numpy(np.asarray(batch["weights"])).to(device)
        loss, metrics, td_abs = critic_loss(
            self.net, self.target_actor, self.target_critic, data, weights
        )
        optimizer_step(self.critic_optimizer, loss)
        loss, actor_metrics = actor_loss(self.net, data)
        optimizer_step(self.actor_optimizer, loss)
        self.gradient_steps += 1
        for target in self.targets:
            target(self.gradient_steps)
        self.version += 1
        out = {key: float(value) for key, value in (metrics | actor_metrics).items()}
        out["gradient_steps"] = float(self.gradient_steps)
        if not config.prioritized:
            return Update(out)
        out["importance_weight_mean"] = float(np.mean(batch["weights"]))
        return Update(out, td_abs.cpu().numpy() + config.priority_eps)

    def weights(self) -> Weights:
        """CPU copies of what acting needs (`DDPGPolicy.load_weights`): the actor's weights, and
        with prioritised replay the whole network's (`actor.*`, `critic.*`), since the actors
        compute their transitions' priorities."""
        module = self.net if self.config.prioritized else self.net.actor
        state = module.state_dict()
        return {key: value.detach().to("cpu", copy=True) for key, value in state.items()}

    def learner_state(self) -> LearnerState:
        # The replay is the data path's and is not checkpointed: a resumed run refills it.
        return LearnerState(
            modules={
                "network": self.net,
                "target_actor": self.target_actor,
                "target_critic": self.target_critic,
            },
            optimizers={
                "actor_optimizer": self.actor_optimizer,
                "critic_optimizer": self.critic_optimizer,
            },
            counters=("version", "gradient_steps"),
        )
