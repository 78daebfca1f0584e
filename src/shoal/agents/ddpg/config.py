"""DDPG hyperparameters: Lillicrap et al. 2016, "Continuous control with deep reinforcement
learning" (arXiv:1509.02971); defaults are Stable-Baselines3's (its `DDPG`: one learning rate,
batch 256, tau 0.005, 400x300 MLPs, no input normalisation or weight decay), with its
`OrnsteinUhlenbeckActionNoise` (theta 0.15, dt 1e-2) as the option to Gaussian noise.

Ape-X DPG (Horgan et al. 2018, "Distributed Prioritized Experience Replay", section 3.2) is
this agent with `n_step`, `prioritized` and `noise_schedule: apex` set: n-step targets,
priorities `|δ|` that each actor computes for its own transitions, and a noise scale per actor
as Ape-X DQN gives each actor its own epsilon."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shoal.agents.checks import (
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.agents.continuous.config import OffPolicyContinuousConfig
from shoal.config import keeps_old_names, param

NoiseType = Literal["normal", "ornstein_uhlenbeck"]
NoiseSchedule = Literal["fixed", "apex"]


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
    noise_schedule: NoiseSchedule = param(
        "fixed",
        "fixed: every actor explores with exploration_noise; apex (Ape-X DPG): actor i of N "
        "with exploration_noise^(1 + apex_noise_alpha * i / (N - 1)), as Ape-X's epsilons.",
    )
    apex_noise_alpha: float = param(
        1.0, "Exponent spread across actors of the apex noise schedule (0: all alike)."
    )
    n_step: int = param(1, "Rewards summed into one transition before bootstrapping.")
    prioritized: bool = param(
        False,
        "Prioritised replay (Schaul et al. 2016): each actor gives its transitions the priority "
        "|TD error| under its own copy of the actor and critic (Ape-X), the learner updates "
        "them and weights the critic's loss by importance.",
    )
    priority_alpha: float = param(0.6, "Priority exponent alpha (0: uniform; prioritized).")
    priority_beta: float = param(0.4, "Importance-weight exponent beta at the start.")
    priority_beta_end: float = param(1.0, "beta at the end of the budget (annealed linearly).")
    priority_eps: float = param(1e-6, "Added to |TD error| so every transition can be drawn.")

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("ou_dt", "n_step"))
        nonnegative = ("exploration_noise", "ou_theta", "apex_noise_alpha")
        require_finite_nonnegative(self, (*nonnegative, "priority_alpha", "priority_eps"))
        require_unit_interval(self, ("priority_beta", "priority_beta_end"))
        if self.noise_schedule not in ("fixed", "apex"):
            raise ValueError(
                f"noise_schedule must be fixed or apex, got {self.noise_schedule!r}; set "
                "--agent.noise-schedule."
            )
        if self.noise_schedule == "apex" and self.exploration_noise > 1.0:
            raise ValueError(
                f"noise_schedule apex spreads exploration_noise^(1 + alpha i / (N - 1)) across "
                f"actors, which grows rather than shrinks from {self.exploration_noise:g} > 1. "
                "Set --agent.exploration-noise to at most 1 (actions are in [-1, 1])."
            )
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
