"""TD3 hyperparameters: Fujimoto et al. 2018, "Addressing Function Approximation Error in
Actor-Critic Methods" (arXiv:1802.09477); defaults are Stable-Baselines3's."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import (
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.agents.continuous import check_replay_and_mlp_settings
from shoal.config import keeps_old_names, param
from shoal.nets.mlp import Activation


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class TD3Config:
    """TD3's settings. Steps are agent steps; noise scales are in actions rescaled to [-1, 1]."""

    learning_rate: float = param(1e-3, "Adam step size of the actor and the critics.")
    anneal_lr: bool = param(False, "Decay the learning rates linearly to 0 over the budget.")
    batch_size: int = param(256, "Transitions per gradient step.")
    gamma: float = param(0.99, "Discount factor.")
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
    replay_capacity: int = param(1_000_000, "Replay size in transitions (FIFO eviction).")
    learning_starts: int = param(
        100,
        "Agent steps (all envs) of uniform random actions, which are also the transitions in "
        "replay before learning (the value agents' min_replay_size has no random warm-up).",
    )
    updates_per_step: float = param(
        1.0,
        "Gradient steps per agent step, i.e. per transition inserted (SB3: gradient_steps / "
        "(train_freq x num_envs)); the replay's samples_per_insert is this x batch_size.",
    )
    unroll_length: int = param(1, "Steps per env an actor collects before sending transitions.")
    hidden_sizes: tuple[int, ...] = param(
        (400, 300), "Hidden layer widths of the actor's and each critic's MLP."
    )
    activation: Activation = param("relu", "Hidden activation of the MLPs.")
    torso: str = param(
        "auto",
        "Observation encoder before the MLPs: auto (flatten vectors, a CNN for images), mlp, "
        "nature_cnn, impala_resnet, minatar_cnn, or package.module:function.",
    )

    def __post_init__(self) -> None:
        positive = ("learning_rate", "batch_size", "target_tau", "policy_delay", "replay_capacity")
        positive += ("updates_per_step", "unroll_length")
        require_positive(self, positive)
        require_unit_interval(self, ("gamma", "target_tau"))
        nonnegative = ("learning_starts", "exploration_noise", "target_noise")
        require_finite_nonnegative(self, (*nonnegative, "target_noise_clip"))
        check_replay_and_mlp_settings(self)

    @property
    def samples_per_insert(self) -> float:
        """Transitions sampled per transition inserted: the replay table's rate, derived
        (`updates_per_step x batch_size`), unlike the value agents' setting of that name."""
        return self.updates_per_step * self.batch_size
