"""A2C hyperparameters (Mnih et al. 2016, arXiv:1602.01783; synchronous, as OpenAI Baselines)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import require_finite_nonnegative, require_positive, require_unit_interval
from shoal.config import keeps_old_names, param
from shoal.nets.mlp import Activation
from shoal.nets.torso import check_torso_setting


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class A2CConfig:
    learning_rate: float = param(7e-4, "Adam step size (the paper's RMSProp is not used).")
    anneal_lr: bool = param(False, "Decay the learning rate linearly to 0 over the budget.")
    unroll_length: int = param(
        5, "Steps per environment between updates: the n of n-step.", was=("rollout_length",)
    )
    gamma: float = param(0.99, "Discount factor.")
    value_coef: float = param(0.5, "Weight of the value loss.")
    entropy_coef: float = param(0.01, "Weight of the entropy bonus.")
    max_grad_norm: float = param(0.5, "Clip the global gradient norm to this (0 disables).")
    normalize_advantages: bool = param(False, "Standardise the advantages of each batch.")
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
    use_lstm: bool = param(
        False, "Put an LSTM core between each torso and its head (recurrent policy and value)."
    )
    lstm_size: int = param(256, "Hidden units of the LSTM core(s) when use_lstm is set.")

    # PPO's actor-critic network reads this; A2C has no reward scaling.
    normalize_reward = False

    def __post_init__(self) -> None:
        require_positive(self, ("learning_rate", "unroll_length", "lstm_size"))
        require_unit_interval(self, ("gamma",))
        require_finite_nonnegative(self, ("value_coef", "entropy_coef", "max_grad_norm"))
        if not self.hidden_sizes or min(self.hidden_sizes) <= 0:
            raise ValueError(
                f"hidden_sizes must be positive widths, got {self.hidden_sizes}; "
                "set e.g. --agent.hidden-sizes 64,64."
            )
        check_torso_setting(self.torso)
