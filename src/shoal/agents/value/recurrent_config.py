"""R2D2 hyperparameters (Kapturowski et al. 2019, section 2.3 and appendix table of settings).

The defaults are small settings that learn the tiny memory tasks of the test suite in seconds on
a CPU; `presets/r2d2.yaml` holds the paper's settings for Atari and MinAtar. Replay sizes and
the replay ratio count sequences, not steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shoal.agents.checks import (
    check_network_settings,
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.agents.value.config import NStepTargetConfig, SequenceReplayConfig
from shoal.agents.value.exploration import apex_epsilon
from shoal.config import param
from shoal.nets.mlp import Activation


@dataclass(frozen=True, kw_only=True)
class R2D2Config(NStepTargetConfig, SequenceReplayConfig):
    """R2D2's settings: the value family's replay, n-step and sequence sections (see
    `shoal.agents.value.config`), the LSTM Q-network and Ape-X's exploration."""

    lstm_size: int = param(64, "Units of the LSTM core (paper: 512).")
    dueling_hidden: int = param(64, "Hidden units of each dueling stream (paper: 512).")
    rescale_eps: float = param(1e-3, "eps of the value rescaling h (paper: 1e-3).")
    exploration: Literal["per_env", "per_actor"] = param(
        "per_env",
        "per_env: env j of all N envs explores with apex_epsilon^(1 + apex_alpha j / (N - 1)) "
        "(one actor with many envs still spreads its rates); per_actor: one rate per actor.",
    )
    apex_epsilon: float = param(0.4, "Ape-X base exploration rate epsilon.")
    apex_alpha: float = param(7.0, "Ape-X exponent spread alpha.")
    eval_epsilon: float = param(
        0.001, "Exploration rate of the stochastic evaluation (deterministic is greedy)."
    )
    torso: str = param(
        "auto", "auto, mlp, nature_cnn, impala_resnet, minatar_cnn, or package.module:function."
    )
    hidden_sizes: tuple[int, ...] = param((64,), "Hidden layer widths of the MLP torso.")
    activation: Activation = param("relu", "Hidden activation of the MLP torso.")
    reward_clip: float | None = param(
        None, "Clip rewards to [-x, x] for learning; None keeps them (value rescaling copes)."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("lstm_size", "dueling_hidden", "rescale_eps"))
        require_unit_interval(self, ("apex_epsilon", "eval_epsilon"))
        require_finite_nonnegative(self, ("apex_alpha",))
        if self.burn_in + self.n_step >= self.sequence_length:
            raise ValueError(
                f"burn_in + n_step = {self.burn_in} + {self.n_step} must be < sequence_length "
                f"= {self.sequence_length}, so each sequence trains steps with full n-step "
                "targets; raise --agent.sequence-length or lower --agent.burn-in."
            )
        check_network_settings(self)

    def epsilon(self, actor_index: int, num_actors: int) -> float:
        """The exploration rate of actor (or env) `actor_index` of `num_actors` (Ape-X's)."""
        return apex_epsilon(self.apex_epsilon, self.apex_alpha, actor_index, num_actors)
