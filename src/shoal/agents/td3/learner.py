"""TD3's learner: a critic step per batch; every `policy_delay`-th, an actor step and the
targets' Polyak update (Fujimoto et al. 2018, section 5.2, Algorithm 1).

The replay and its ratio are the data path's (`shoal.agents.continuous.data`): one `update` is one
gradient step of the critics, whatever the replay ratio.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from shoal.agents.base import Update, Weights
from shoal.agents.common import (
    DeclaredState,
    LearnerState,
    LearningRateSchedule,
    incremental_update,
    optimizer_step,
)
from shoal.agents.continuous import transitions
from shoal.agents.continuous.networks import twin_q_optimizer_state
from shoal.agents.td3.config import TD3Config
from shoal.agents.td3.loss import actor_loss, critic_loss
from shoal.agents.td3.networks import TD3Net
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.optim import Adam


class TD3Learner(DeclaredState):
    """Owns the optimisers and the target actor and critics."""

    def __init__(self, spec: EnvSpec, config: TD3Config, net: TD3Net) -> None:
        self.config, self.net = config, net
        # Copied before the optimisers move the parameters into their flat buffers.
        self.target_actor = copy.deepcopy(net.actor).requires_grad_(False)
        self.target_critic = copy.deepcopy(net.critic).requires_grad_(False)
        self.actor_optimizer = Adam(net.actor.parameters(), lr=config.learning_rate)
        self.critic_optimizer = Adam(net.critic.parameters(), lr=config.learning_rate)
        self.version = 0
        self.gradient_steps = 0
        self.actor_steps = 0
        # The last actor step's, for the metrics between them (none before the first: a NaN
        # placeholder would read as divergence).
        self._actor_loss: float | None = None

    def update(self, batch: Mapping[str, np.ndarray], progress: float) -> Update:
        """A critic step on a sampled batch; an actor and target step every `policy_delay`."""
        if self.config.anneal_lr:
            schedule = LearningRateSchedule(base=self.config.learning_rate, anneal=True)
            for optimizer in self.declared_optimizers():
                optimizer.lr = schedule.value(progress)
        data = transitions(batch, module_device(self.net))
        loss, metrics = critic_loss(
            self.net, self.target_actor, self.target_critic, data, self.config
        )
        optimizer_step(self.critic_optimizer, loss)
        self.gradient_steps += 1
        if self.gradient_steps % self.config.policy_delay == 0:
            loss, actor_metrics = actor_loss(self.net, data)
            optimizer_step(self.actor_optimizer, loss)
            self.actor_steps += 1
            self._actor_loss = float(actor_metrics["actor_loss"])
            tau = self.config.target_tau
            incremental_update(self.target_critic, self.net.critic, tau)
            incremental_update(self.target_actor, self.net.actor, tau)
        self.version += 1
        out = {key: float(value) for key, value in metrics.items()}
        if self._actor_loss is not None:
            out["actor_loss"] = self._actor_loss
        out["gradient_steps"] = float(self.gradient_steps)
        out["actor_steps"] = float(self.actor_steps)
        return Update(out)

    def weights(self) -> Weights:
        """CPU copies of the actor's weights: all that acting needs (`TD3Policy.load_weights`)."""
        state = self.net.actor.state_dict()
        return {key: value.detach().to("cpu", copy=True) for key, value in state.items()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """The state `state_dict` gave; a checkpoint of the twin critics' earlier layout (two
        separate MLPs) loads too, its critic optimiser's moments rearranged to match."""
        super().load_state_dict(twin_q_optimizer_state(state, self.net.critic))

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
            counters=("version", "gradient_steps", "actor_steps"),
        )
