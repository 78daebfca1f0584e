"""REINFORCE hyperparameters (Williams 1992; with a learned baseline, Sutton & Barto 2018, 13.4)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.actor_critic.config import (
    LossWeightsConfig,
    ObservationNormConfig,
    unroll_length_param,
)
from shoal.config import keeps_old_names, param


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class PGConfig(LossWeightsConfig, ObservationNormConfig):
    """The family's settings (`ActorCriticConfig`) with Williams' defaults where they differ
    (no entropy bonus, no gradient clipping), and the baseline switch."""

    learning_rate: float = param(1e-3, "Adam step size of the policy (and of the baseline).")
    unroll_length: int = unroll_length_param(
        256,
        "Steps per environment between updates. Returns run to each episode's end within it; "
        "an episode it cuts is bootstrapped by the baseline, or left out without one.",
    )
    normalize_advantages: bool = param(
        True, "Standardise the returns (or advantages, with baseline) of each batch."
    )
    entropy_coef: float = param(0.0, "Weight of the entropy bonus (0: none, as Williams).")
    max_grad_norm: float = param(
        0.0,
        "Clip the global gradient norm to this (0: no clipping, as Williams). One norm covers "
        "policy and baseline, whose gradients dominate it.",
    )
    baseline: bool = param(
        True, "Subtract a learned state value from the returns (REINFORCE with baseline)."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.baseline and self.value_coef == 0:
            raise ValueError(
                "baseline is on but value_coef is 0, so the baseline would never learn and "
                "would subtract the untrained network's values; set --agent.value-coef to a "
                "positive weight (0.5), or --agent.baseline false for REINFORCE without one."
            )
