"""TD3 hyperparameters: Fujimoto et al. 2018, "Addressing Function Approximation Error in
Actor-Critic Methods" (arXiv:1802.09477); defaults are Stable-Baselines3's."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import require_finite_nonnegative, require_positive
from shoal.agents.continuous.config import OffPolicyContinuousConfig
from shoal.config import keeps_old_names, param


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class TD3Config(OffPolicyContinuousConfig):
    """TD3's settings: the family's section, and the delayed policy update and the target
    smoothing. Noise scales are in actions rescaled to [-1, 1]."""

    target_tau: float = param(
        0.005,
        "Polyak rate of the target actor and critics, applied with each actor step (1 copies "
        "them).",
        was=("tau",),
    )
    policy_delay: int = param(
        2, "Critic updates per actor update; the targets move with the actor."
    )
    exploration_noise: float = param(
        0.1, "Std of the Gaussian noise added to the actor's actions while training."
    )
    target_noise: float = param(0.2, "Std of the target policy smoothing noise.")
    target_noise_clip: float = param(0.5, "The smoothing noise is clipped to [-c, c].")

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("policy_delay",))
        nonnegative = ("exploration_noise", "target_noise", "target_noise_clip")
        require_finite_nonnegative(self, nonnegative)
