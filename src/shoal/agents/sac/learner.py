"""SAC's learner: one gradient step of the temperature, the critics and the actor per batch.

The order is Stable-Baselines3's: a policy sample at the batch's observations drives the
temperature's step; the critics step towards targets made with the temperature before that
step; the actor then steps against the updated critics; the target critics follow by Polyak
averaging. The replay and its ratio are the data path's (`shoal.agents.sac.data`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from shoal.agents.base import Update, Weights
from shoal.agents.common import (
    DeclaredState,
    LearnerState,
    LearningRateSchedule,
    optimizer_step,
)
from shoal.agents.common import incremental_update as polyak_update
from shoal.agents.continuous.networks import twin_q_optimizer_state
from shoal.agents.sac.config import SACConfig
from shoal.agents.sac.loss import actor_loss, alpha_loss, critic_loss, sample_policy, transitions
from shoal.agents.sac.networks import SACNet, action_dim
from shoal.envs.spec import EnvSpec
from shoal.nets import module_device
from shoal.optim import Adam


class SACLearner(DeclaredState):
    """Owns the networks' optimisers, the target critics and the temperature α."""

    def __init__(self, spec: EnvSpec, config: SACConfig, net: SACNet) -> None:
        self.config, self.net = config, net
        # Copied before the optimisers move the parameters into their flat buffers.
        self.target_critic = copy.deepcopy(net.critic).requires_grad_(False)
        device = module_device(net)
        self.log_alpha = nn.Parameter(
            torch.tensor(math.log(config.init_alpha), device=device),
            requires_grad=config.autotune_alpha,
        )
        entropy = config.target_entropy
        self.target_entropy = -float(action_dim(spec)) if entropy is None else float(entropy)
        lr = config.learning_rate
        self.actor_optimizer = Adam(net.actor.parameters(), lr=lr)
        self.critic_optimizer = Adam(net.critic.parameters(), lr=lr)
        self.alpha_optimizer = Adam([self.log_alpha], lr=lr) if config.autotune_alpha else None
        self.version = 0
        self.gradient_steps = 0

    def update(self, batch: Mapping[str, np.ndarray], progress: float) -> Update:
        """One gradient step of α, the critics and the actor on a sampled batch."""
        if self.config.anneal_lr:
            schedule = LearningRateSchedule(base=self.config.learning_rate, anneal=True)
            for optimizer in self.declared_optimizers():
                optimizer.lr = schedule.value(progress)
        data = transitions(batch, self.log_alpha.device)
        alpha = self.log_alpha.detach().exp()
        sample = sample_policy(self.net, data.obs)
        metrics: dict[str, torch.Tensor] = {"alpha": alpha}
        if self.alpha_optimizer is not None:
            loss = alpha_loss(self.log_alpha, sample, self.target_entropy)
            optimizer_step(self.alpha_optimizer, loss)
            metrics["alpha_loss"] = loss.detach()
        loss, critic_metrics = critic_loss(self.net, self.target_critic, data, alpha)
        optimizer_step(self.critic_optimizer, loss)
        loss, actor_metrics = actor_loss(self.net, data, sample, alpha)
        optimizer_step(self.actor_optimizer, loss)
        self.gradient_steps += 1
        self.version += 1
        if self.gradient_steps % self.config.target_update_period == 0:
            polyak_update(self.target_critic, self.net.critic, self.config.target_tau)
        out = {
            key: float(value) for key, value in (metrics | critic_metrics | actor_metrics).items()
        }
        out["gradient_steps"] = float(self.gradient_steps)
        return Update(out)

    def weights(self) -> Weights:
        """CPU copies of the actor's weights: all that acting needs (`SACPolicy.load_weights`)."""
        state = self.net.actor.state_dict()
        return {key: value.detach().to("cpu", copy=True) for key, value in state.items()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """The state `state_dict` gave; a checkpoint of the twin critics' earlier layout (two
        separate MLPs) loads too, its critic optimiser's moments rearranged to match."""
        super().load_state_dict(twin_q_optimizer_state(state, self.net.critic))

    def learner_state(self) -> LearnerState:
        # The replay is the data path's and is not checkpointed: a resumed run refills it.
        return LearnerState(
            modules={"network": self.net, "target_critic": self.target_critic},
            tensors={"log_alpha": self.log_alpha},
            optimizers={
                "actor_optimizer": self.actor_optimizer,
                "critic_optimizer": self.critic_optimizer,
                "alpha_optimizer": self.alpha_optimizer,  # None when alpha is fixed
            },
            counters=("version", "gradient_steps"),
        )


__all__ = ["SACLearner", "optimizer_step", "polyak_update"]
