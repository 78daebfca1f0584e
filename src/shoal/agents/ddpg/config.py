"""DDPG hyperparameters: Lillicrap et al. 2016, "Continuous control with deep reinforcement
learning" (arXiv:1509.02971); defaults are Stable-Baselines3's (its `DDPG`: one learning rate,
batch 256, tau 0.005, 400x300 MLPs, no input normalisation or weight decay), with its
`OrnsteinUhlenbeckActionNoise` (theta 0.15, dt 1e-2) as the option to Gaussian noise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shoal.agents.checks import (
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.agents.continuous import check_replay_and_mlp_settings
from shoal.config import keeps_old_names, param
from shoal.nets.mlp import Activation

NoiseType = Literal["normal", "ornstein_uhlenbeck"]


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class DDPGConfig:
    """DDPG's settings. Steps are agent steps; noise scales are in actions rescaled to [-1, 1]."""

    learning_rate: float = param(1e-3, "Adam step size of the actor and the critic.")
    batch_size: int = param(256, "Transitions per gradient step.")
    gamma: float = param(0.99, "Discount factor.")
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
    replay_capacity: int = param(1_000_000, "Replay size in transitions (FIFO eviction).")
    learning_starts: int = param(
        100, "Agent steps of uniform random actions, and transitions in replay before learning."
    )
    updates_per_step: float = param(
        1.0,
        "Gradient steps per agent step, i.e. per transition inserted (SB3: gradient_steps / "
        "(train_freq x num_envs)).",
    )
    unroll_length: int = param(1, "Steps per env an actor collects before sending transitions.")
    hidden_sizes: tuple[int, ...] = param(
        (400, 300), "Hidden layer widths of the actor's and the critic's MLP."
    )
    activation: Activation = param("relu", "Hidden activation of the MLPs.")
    torso: str = param(
        "auto",
        "Observation encoder before the MLPs: auto (flatten vectors, a CNN for images), mlp, "
        "nature_cnn, impala_resnet, minatar_cnn, or package.module:function.",
    )

    def __post_init__(self) -> None:
        positive = ("learning_rate", "batch_size", "target_tau", "replay_capacity", "ou_dt")
        positive += ("updates_per_step", "unroll_length")
        require_positive(self, positive)
        require_unit_interval(self, ("gamma", "target_tau"))
        nonnegative = ("learning_starts", "exploration_noise", "ou_theta")
        require_finite_nonnegative(self, nonnegative)
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
        check_replay_and_mlp_settings(self)

    @property
    def samples_per_insert(self) -> float:
        """Transitions sampled per transition inserted: the replay table's rate."""
        return self.updates_per_step * self.batch_size
