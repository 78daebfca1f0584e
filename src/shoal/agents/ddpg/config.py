"""DDPG hyperparameters: Lillicrap et al. 2016, "Continuous control with deep reinforcement
learning" (arXiv:1509.02971); defaults are Stable-Baselines3's (its `DDPG`: one learning rate,
batch 256, tau 0.005, 400x300 MLPs, no input normalisation or weight decay), with its
`OrnsteinUhlenbeckActionNoise` (theta 0.15, dt 1e-2) as the option to Gaussian noise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shoal.agents.checks import require_finite_nonnegative, require_positive
from shoal.agents.continuous.config import OffPolicyContinuousConfig
from shoal.config import keeps_old_names, param

NoiseType = Literal["normal", "ornstein_uhlenbeck"]


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class DDPGConfig(OffPolicyContinuousConfig):
    """DDPG's settings: the family's section and the exploration noise. Noise scales are in
    actions rescaled to [-1, 1]."""

    target_tau: float = param(
        0.005, "Polyak rate of the target actor and critic (1 copies them).", was=("tau",)
    )
    noise_type: NoiseType = param(
        "normal",
        "Exploration noise added to the actor's actions while training: normal (independent "
        "Gaussian per step) or ornstein_uhlenbeck (temporally correlated, one process per env).",
    )
    exploration_noise: float = param(
        0.1, "Std of the Gaussian noise, or sigma of the Ornstein-Uhlenbeck process."
    )
    ou_theta: float = param(0.15, "Ornstein-Uhlenbeck mean-reversion rate theta.")
    ou_dt: float = param(1e-2, "Ornstein-Uhlenbeck time step dt (1 is the paper's process).")

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("ou_dt",))
        require_finite_nonnegative(self, ("exploration_noise", "ou_theta"))
        if self.noise_type not in ("normal", "ornstein_uhlenbeck"):
            raise ValueError(
                f"noise_type must be normal or ornstein_uhlenbeck, got {self.noise_type!r}; set "
                "--agent.noise-type."
            )
        if self.ou_theta * self.ou_dt >= 2.0:
            # x_t - mu = (1 - theta dt)(x_{t-1} - mu) + noise: |1 - theta dt| >= 1 never reverts.
            raise ValueError(
                f"ou_theta x ou_dt is {self.ou_theta * self.ou_dt:g}: at 2 or more the "
                "discretised Ornstein-Uhlenbeck process grows without bound. Set "
                "--agent.ou-theta or --agent.ou-dt lower (SB3's: 0.15 and 0.01)."
            )
