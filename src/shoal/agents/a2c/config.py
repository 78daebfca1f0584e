"""A2C hyperparameters (Mnih et al. 2016, arXiv:1602.01783; synchronous, as OpenAI Baselines)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.actor_critic.config import LossWeightsConfig, LSTMConfig, ObservationNormConfig
from shoal.config import keeps_old_names


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class A2CConfig(LSTMConfig, LossWeightsConfig, ObservationNormConfig):
    """The family's settings at their defaults, which are A2C's (`ActorCriticConfig`)."""
