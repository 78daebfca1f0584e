"""SAC hyperparameters: Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"
(arXiv:1812.05905), with automatic entropy tuning; defaults are Stable-Baselines3's."""

from __future__ import annotations

import math
from dataclasses import dataclass

from shoal.agents.checks import (
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.agents.continuous.config import check_replay_and_mlp_settings
from shoal.config import keeps_old_names, param
from shoal.nets.mlp import Activation


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class SACConfig:
    """SAC's settings. Steps are agent steps; the replay ratio is counted in transitions."""

    learning_rate: float = param(3e-4, "Adam step size of the actor, the critics and alpha.")
    anneal_lr: bool = param(False, "Decay the learning rates linearly to 0 over the budget.")
    batch_size: int = param(256, "Transitions per gradient step.")
    gamma: float = param(0.99, "Discount factor.")
    target_tau: float = param(
        0.005,
        "Polyak rate of the target critics, applied every target_update_period gradient steps "
        "(1 copies them).",
        was=("tau",),
    )
    target_update_period: int = param(1, "Gradient steps between updates of the target critics.")
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
    activation: Activation = param("relu", "Hidden activation of the MLPs.")
    torso: str = param(
        "auto",
        "Observation encoder before the MLPs: auto (flatten vectors, a CNN for images), mlp, "
        "nature_cnn, impala_resnet, minatar_cnn, or package.module:function.",
    )

    def __post_init__(self) -> None:
        positive = ("learning_rate", "batch_size", "target_tau", "target_update_period")
        positive += ("replay_capacity", "updates_per_step", "unroll_length", "init_alpha")
        require_positive(self, positive)
        require_unit_interval(self, ("gamma", "target_tau"))
        require_finite_nonnegative(self, ("learning_starts",))
        check_replay_and_mlp_settings(self)
        if self.target_entropy is not None and not math.isfinite(self.target_entropy):
            raise ValueError(
                f"target_entropy must be a finite number or none, got {self.target_entropy}; "
                "set --agent.target-entropy none for -dim(A)."
            )

    @property
    def samples_per_insert(self) -> float:
        """Transitions sampled per transition inserted: the replay table's rate, derived
        (`updates_per_step x batch_size`), unlike the value agents' setting of that name."""
        return self.updates_per_step * self.batch_size


__all__ = ["SACConfig", "check_replay_and_mlp_settings"]
