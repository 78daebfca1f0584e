"""REINFORCE hyperparameters (Williams 1992; with a learned baseline, Sutton & Barto 2018, 13.4)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import require_finite_nonnegative, require_positive, require_unit_interval
from shoal.config import keeps_old_names, param
from shoal.nets.mlp import Activation
from shoal.nets.torso import check_torso_setting


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class PGConfig:
    learning_rate: float = param(1e-3, "Adam step size of the policy (and of the baseline).")
    anneal_lr: bool = param(False, "Decay the learning rate linearly to 0 over the budget.")
    unroll_length: int = param(
        256,
        "Steps per environment between updates. Returns run to each episode's end within it; "
        "an episode it cuts is bootstrapped by the baseline, or left out without one.",
        was=("rollout_length",),
    )
    gamma: float = param(0.99, "Discount factor of the reward-to-go.")
    baseline: bool = param(
        True, "Subtract a learned state value from the returns (REINFORCE with baseline)."
    )
    value_coef: float = param(0.5, "Weight of the baseline's regression loss (with baseline).")
    normalize_advantages: bool = param(
        True, "Standardise the returns (or advantages, with baseline) of each batch."
    )
    entropy_coef: float = param(0.0, "Weight of the entropy bonus (0: none, as Williams).")
    max_grad_norm: float = param(
        0.0,
        "Clip the global gradient norm to this (0: no clipping, as Williams). One norm covers "
        "policy and baseline, whose gradients dominate it.",
    )
    normalize_obs: bool = param(False, "Normalise observations by running statistics.")
    hidden_sizes: tuple[int, ...] = param((64, 64), "Hidden layer widths of policy and value MLPs.")
    activation: Activation = param("tanh", "Hidden activation.")
    torso: str = param(
        "auto", "auto, mlp, nature_cnn, impala_resnet, minatar_cnn, or package.module:function."
    )
    shared_torso: bool | None = param(
        None, "Share one torso between policy and value (default: yes for images, no for vectors)."
    )
    init_log_std: float = param(0.0, "Initial log standard deviation of Gaussian actions.")

    # The actor-critic network reads this; REINFORCE has no reward scaling.
    normalize_reward = False

    def __post_init__(self) -> None:
        require_positive(self, ("learning_rate", "unroll_length"))
        require_unit_interval(self, ("gamma",))
        require_finite_nonnegative(self, ("value_coef", "entropy_coef", "max_grad_norm"))
        if self.baseline and self.value_coef == 0:
            raise ValueError(
                "baseline is on but value_coef is 0, so the baseline would never learn and "
                "would subtract the untrained network's values; set --agent.value-coef to a "
                "positive weight (0.5), or --agent.baseline false for REINFORCE without one."
            )
        if not self.hidden_sizes or min(self.hidden_sizes) <= 0:
            raise ValueError(
                f"hidden_sizes must be positive widths, got {self.hidden_sizes}; "
                "set e.g. --agent.hidden-sizes 64,64."
            )
        check_torso_setting(self.torso)
