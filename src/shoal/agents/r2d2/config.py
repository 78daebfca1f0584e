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
    check_replay_sizes,
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.agents.value.exploration import apex_epsilon
from shoal.config import param
from shoal.nets.mlp import Activation


@dataclass(frozen=True, kw_only=True)
class R2D2Config:
    """R2D2's settings. Steps are agent steps; replay counts sequences."""

    learning_rate: float = param(1e-3, "Adam step size (paper: 1e-4), at the start if annealed.")
    anneal_lr: bool = param(False, "Decay the learning rate linearly to 0 over the budget.")
    adam_eps: float = param(1e-5, "Adam epsilon (paper: 1e-3).")
    gamma: float = param(0.99, "Discount factor (paper: 0.997).")
    n_step: int = param(3, "Rewards summed before bootstrapping (paper: 5).")
    sequence_length: int = param(
        20, "Steps per replayed sequence, burn-in included (paper: 40 burn-in + 80 trained)."
    )
    sequence_period: int = param(
        10, "Steps between the starts of an env's sequences; overlap = length - period."
    )
    burn_in: int = param(
        5, "Leading steps of each sequence that only warm the LSTM state, without gradients."
    )
    batch_size: int = param(32, "Sequences per gradient step (paper: 64).")
    unroll_length: int = param(10, "Steps per env an actor collects before sending sequences.")
    replay_capacity: int = param(5_000, "Replay size in sequences (FIFO eviction).")
    min_replay_size: int = param(100, "Sequences in replay before learning starts.")
    samples_per_insert: float = param(
        4.0, "Sequences sampled per sequence inserted (the replay ratio)."
    )
    target_update_period: int = param(
        100, "Gradient steps between copies of the online weights to the target (paper: 2500)."
    )
    target_tau: float = param(
        1.0, "1: copy every target_update_period steps; < 1: Polyak averaging every step."
    )
    max_grad_norm: float = param(40.0, "Clip the global gradient norm to this (0 disables).")
    lstm_size: int = param(64, "Units of the LSTM core (paper: 512).")
    dueling_hidden: int = param(64, "Hidden units of each dueling stream (paper: 512).")
    prioritized: bool = param(True, "Prioritised replay; False samples uniformly.")
    priority_alpha: float = param(0.9, "Priority exponent alpha (paper: 0.9).")
    priority_beta: float = param(0.6, "Importance-weight exponent beta at the start (paper 0.6).")
    priority_beta_end: float = param(0.6, "beta at the end of the budget (annealed linearly).")
    priority_eps: float = param(1e-6, "Added to priorities so every sequence can be drawn.")
    eta: float = param(
        0.9, "Sequence priority eta max|delta| + (1 - eta) mean|delta| (paper: 0.9)."
    )
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
        positive = ("learning_rate", "adam_eps", "n_step", "sequence_length", "sequence_period")
        positive += ("batch_size", "unroll_length", "replay_capacity", "samples_per_insert")
        positive += ("target_update_period", "lstm_size", "dueling_hidden", "rescale_eps")
        require_positive(self, positive)
        unit = ("gamma", "target_tau", "priority_beta", "priority_beta_end", "eta")
        unit += ("apex_epsilon", "eval_epsilon")
        require_unit_interval(self, unit)
        require_finite_nonnegative(
            self, ("priority_alpha", "apex_alpha", "max_grad_norm", "priority_eps", "burn_in")
        )
        if self.target_tau == 0:
            raise ValueError("target_tau must be > 0 (1 copies, < 1 averages); got 0.")
        if self.burn_in + self.n_step >= self.sequence_length:
            raise ValueError(
                f"burn_in + n_step = {self.burn_in} + {self.n_step} must be < sequence_length "
                f"= {self.sequence_length}, so each sequence trains steps with full n-step "
                "targets; raise --agent.sequence-length or lower --agent.burn-in."
            )
        if self.sequence_period > self.sequence_length:
            raise ValueError(
                f"sequence_period {self.sequence_period} exceeds sequence_length "
                f"{self.sequence_length}: steps between sequences would never be replayed; set "
                "--agent.sequence-period <= --agent.sequence-length."
            )
        check_replay_sizes(self)
        check_network_settings(self)

    def epsilon(self, actor_index: int, num_actors: int) -> float:
        """The exploration rate of actor (or env) `actor_index` of `num_actors` (Ape-X's)."""
        return apex_epsilon(self.apex_epsilon, self.apex_alpha, actor_index, num_actors)
