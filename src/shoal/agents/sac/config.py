"""SAC hyperparameters: Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"
(arXiv:1812.05905), with automatic entropy tuning; defaults are Stable-Baselines3's."""

from __future__ import annotations

import math
from dataclasses import dataclass

from shoal.agents.checks import require_positive
from shoal.agents.continuous.config import (
    OffPolicyContinuousConfig,
    check_replay_and_mlp_settings,
)
from shoal.config import keeps_old_names, param


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class SACConfig(OffPolicyContinuousConfig):
    """SAC's settings: the family's section (its own step size and widths), the target period
    and the entropy temperature."""

    learning_rate: float = param(3e-4, "Adam step size of the actor, the critics and alpha.")
    target_tau: float = param(
        0.005,
        "Polyak rate of the target critics, applied every target_update_period gradient steps "
        "(1 copies them).",
        was=("tau",),
    )
    target_update_period: int = param(1, "Gradient steps between updates of the target critics.")
    init_alpha: float = param(1.0, "Initial entropy temperature alpha.")
    autotune_alpha: bool = param(
        True, "Tune alpha so the policy's entropy tracks target_entropy; false keeps init_alpha."
    )
    target_entropy: float | None = param(
        None, "Entropy the tuning aims for; none: -dim(A), the paper's choice."
    )
    hidden_sizes: tuple[int, ...] = param(
        (256, 256), "Hidden layer widths of the actor's and each critic's MLP."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("target_update_period", "init_alpha"))
        if self.target_entropy is not None and not math.isfinite(self.target_entropy):
            raise ValueError(
                f"target_entropy must be a finite number or none, got {self.target_entropy}; "
                "set --agent.target-entropy none for -dim(A)."
            )


__all__ = ["SACConfig", "check_replay_and_mlp_settings"]
