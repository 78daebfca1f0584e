"""The continuous-control agents' config section (SAC's, TD3's, DDPG's) and the checks they
share: one declaration of the replay, the target averaging and the MLPs, so the same setting
has one name, one default where the papers agree, and one check in every agent."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from shoal.agents.checks import require_finite_nonnegative, require_positive, require_unit_interval
from shoal.config import param
from shoal.nets.mlp import Activation
from shoal.nets.torso import check_torso_setting

__all__ = ["OffPolicyContinuousConfig", "check_replay_and_mlp_settings"]


@dataclass(frozen=True, kw_only=True)
class OffPolicyContinuousConfig:
    """What every off-policy continuous-control agent sets alike; an agent's config inherits it,
    re-declares a field where its paper's default differs, and adds its own. Defaults are
    Stable-Baselines3's (TD3's and DDPG's; SAC changes the step size and the widths).
    Steps are agent steps; the replay ratio is counted in transitions."""

    learning_rate: float = param(1e-3, "Adam step size of every network's optimiser.")
    anneal_lr: bool = param(False, "Decay the learning rates linearly to 0 over the budget.")
    batch_size: int = param(256, "Transitions per gradient step.")
    gamma: float = param(0.99, "Discount factor.")
    target_tau: float = param(
        0.005, "Polyak rate of the target networks (1 copies them).", was=("tau",)
    )
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
        positive = ("learning_rate", "batch_size", "target_tau", "replay_capacity")
        require_positive(self, (*positive, "updates_per_step", "unroll_length"))
        require_unit_interval(self, ("gamma", "target_tau"))
        require_finite_nonnegative(self, ("learning_starts",))
        check_replay_and_mlp_settings(self)

    @property
    def samples_per_insert(self) -> float:
        """Transitions sampled per transition inserted: the replay table's rate, derived
        (`updates_per_step x batch_size`), unlike the value agents' setting of that name."""
        return self.updates_per_step * self.batch_size


def check_replay_and_mlp_settings(config: Any) -> None:
    """The checks SAC's and TD3's configs share: a finite replay ratio, a batch and a warm-up
    that fit the replay, positive MLP widths and a known torso."""
    if not math.isfinite(config.updates_per_step):
        raise ValueError(
            f"updates_per_step must be finite, got {config.updates_per_step}; set "
            "--agent.updates-per-step to e.g. 1."
        )
    if config.batch_size > config.replay_capacity:
        raise ValueError(
            f"batch_size {config.batch_size} exceeds replay_capacity {config.replay_capacity}; "
            "set --agent.batch-size lower or --agent.replay-capacity higher."
        )
    if config.learning_starts > config.replay_capacity:
        raise ValueError(
            f"learning_starts {config.learning_starts} exceeds replay_capacity "
            f"{config.replay_capacity}: learning would never start. Set "
            "--agent.learning-starts lower."
        )
    if not config.hidden_sizes or min(config.hidden_sizes) <= 0:
        raise ValueError(
            f"hidden_sizes must be positive widths, got {config.hidden_sizes}; "
            "set e.g. --agent.hidden-sizes 256,256."
        )
    check_torso_setting(config.torso)
