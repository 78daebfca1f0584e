"""The actor-critic family's config sections and their checks: one declaration of the settings
PPO, A2C, A3C, REINFORCE (`pg`) and TRPO share, so that the same setting has one name, one
default where the papers agree, one help line and one check in every agent.

`ActorCriticConfig` holds what every agent of the family sets (the unroll, Adam's step size, the
discount, advantage standardisation, and `ActorCritic`'s torso and heads). The sections below
add what only some of them have; an agent's config inherits the ones it has and re-declares a
field only where its paper (or sb3's preset) changes the default:

- `ObservationNormConfig`: `normalize_obs` (all but A3C, whose actors' gradients cannot carry
  the statistics a learner would merge);
- `GAEConfig`: `gae_lambda` (PPO, TRPO);
- `LossWeightsConfig`: `value_coef`, `entropy_coef`, `max_grad_norm` (all but TRPO, whose
  policy takes a trust-region step and whose value function has its own loss);
- `LSTMConfig`: `use_lstm`, `lstm_size` (PPO, A2C, A3C).

An agent re-declaring `unroll_length` declares it with `unroll_length_param`, which keeps its
old name `rollout_length` (the config class must be decorated `keeps_old_names` as well).

IMPALA is not in the family: its network is its own (no `shared_torso`, `init_log_std` or
observation normalisation), its torso defaults differ (ReLU) and its `unroll_length` never had
the old name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shoal.agents.checks import (
    check_mlp_settings,
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.config import keeps_old_names, param
from shoal.nets.mlp import Activation

__all__ = [
    "ActorCriticConfig",
    "GAEConfig",
    "LSTMConfig",
    "LossWeightsConfig",
    "ObservationNormConfig",
    "unroll_length_param",
]


def unroll_length_param(default: int, doc: str) -> Any:
    """The `unroll_length` field of a family config, which was called `rollout_length`."""
    return param(default, doc, was=("rollout_length",))


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class ActorCriticConfig:
    """What every actor-critic agent sets alike. Defaults are A2C's and A3C's (Mnih et al. 2016,
    arXiv:1602.01783, with Adam) and OpenAI Baselines' networks; the other agents re-declare
    the fields their papers change."""

    learning_rate: float = param(7e-4, "Adam step size (the paper's RMSProp is not used).")
    anneal_lr: bool = param(False, "Decay the learning rate linearly to 0 over the budget.")
    unroll_length: int = unroll_length_param(
        5, "Steps per environment between updates: the n of n-step."
    )
    gamma: float = param(0.99, "Discount factor.")
    normalize_advantages: bool = param(False, "Standardise the advantages of each batch.")
    hidden_sizes: tuple[int, ...] = param((64, 64), "Hidden layer widths of policy and value MLPs.")
    activation: Activation = param("tanh", "Hidden activation.")
    torso: str = param(
        "auto",
        "auto, mlp, nature_cnn, impala_resnet, minatar_cnn, board_cnn, or package.module:function.",
    )
    shared_torso: bool | None = param(
        None, "Share one torso between policy and value (default: yes for images, no for vectors)."
    )
    init_log_std: float = param(0.0, "Initial log standard deviation of Gaussian actions.")

    # `ActorCritic` reads these; an agent without the setting (a section below, or PPO's reward
    # scaling) has it off.
    normalize_obs = False
    normalize_reward = False

    def __post_init__(self) -> None:
        require_positive(self, ("learning_rate", "unroll_length"))
        require_unit_interval(self, ("gamma",))
        check_mlp_settings(self)


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class ObservationNormConfig(ActorCriticConfig):
    """Observations normalised by running statistics that the learner keeps."""

    normalize_obs: bool = param(False, "Normalise observations by running statistics.")


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class GAEConfig(ActorCriticConfig):
    """Advantages by generalised advantage estimation (Schulman et al. 2016, arXiv:1506.02438)."""

    gae_lambda: float = param(0.95, "GAE lambda: 0 is TD(0), 1 is Monte-Carlo.")

    def __post_init__(self) -> None:
        super().__post_init__()
        require_unit_interval(self, ("gae_lambda",))


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class LossWeightsConfig(ActorCriticConfig):
    """The weights of one loss of policy, value and entropy terms, and its gradient clipping."""

    value_coef: float = param(0.5, "Weight of the value loss.")
    entropy_coef: float = param(0.01, "Weight of the entropy bonus.")
    max_grad_norm: float = param(0.5, "Clip the global gradient norm to this (0 disables).")

    def __post_init__(self) -> None:
        super().__post_init__()
        require_finite_nonnegative(self, ("value_coef", "entropy_coef", "max_grad_norm"))


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class LSTMConfig(ActorCriticConfig):
    """A recurrent `ActorCritic`: an LSTM core after each torso (sb3-contrib's RecurrentPPO)."""

    use_lstm: bool = param(
        False, "Put an LSTM core between each torso and its head (recurrent policy and value)."
    )
    lstm_size: int = param(256, "Hidden units of the LSTM core(s) when use_lstm is set.")

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("lstm_size",))
