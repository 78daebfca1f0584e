"""A3C hyperparameters (Mnih et al. 2016, arXiv:1602.01783)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.actor_critic.config import LossWeightsConfig, LSTMConfig
from shoal.agents.checks import require_finite_nonnegative
from shoal.config import keeps_old_names, param


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class A3CConfig(LSTMConfig, LossWeightsConfig):
    """The family's settings at their defaults, which are A3C's (`ActorCriticConfig`), and the
    staleness bound of the actors' gradients. An actor's gradient cannot carry statistics the
    learner would merge, so A3C normalises neither observations nor rewards."""

    max_staleness: int = param(
        8, "Drop a gradient computed more than this many learner versions ago."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_finite_nonnegative(self, ("max_staleness",))
