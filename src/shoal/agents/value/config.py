"""The value family's config sections, and the transition agents' config (DQN, Ape-X, Rainbow).

`ReplayConfig` is what every value agent sets alike: the optimiser's step, the target period and
the replay with its priorities, declared and checked once. `SequenceReplayConfig` adds the
replayed sequences and re-declares the replay's defaults for them (R2D2's and Agent57's);
`NStepTargetConfig` stands beside either, the n-step bootstrapped targets (DQN's and R2D2's;
Agent57 learns by Retrace). An agent's config inherits the sections it has and re-declares a
field only where its default differs; every section checks its own fields.

`DQNConfig`: Mnih et al. 2015 with double Q (van Hasselt et al. 2016), dueling heads (Wang et
al. 2016), n-step returns and prioritised replay (Schaul et al. 2016), as in Ape-X (Horgan et
al. 2018), and optionally a categorical return distribution (C51, Bellemare et al. 2017) and
noisy layers (Fortunato et al. 2018): all six together are Rainbow (Hessel et al. 2018). Or
quantiles of the return instead of the categorical (QR-DQN, Dabney et al. 2018)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from shoal.agents.checks import (
    check_network_settings,
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.agents.value.exploration import apex_epsilon
from shoal.config import param
from shoal.nets.mlp import Activation


@dataclass(frozen=True, kw_only=True)
class ConfigSection:
    """The root of the sections: each section's `__post_init__` checks its own fields and calls
    `super().__post_init__()`, so a config of several sections runs every section's checks once
    (in the reverse of its method resolution order)."""

    def __post_init__(self) -> None:
        """Nothing left to check."""


@dataclass(frozen=True, kw_only=True)
class ReplayConfig(ConfigSection):
    """The section every value agent shares: its optimiser step, target period, replay and
    priorities. Defaults are DQN's, counted in transitions; `SequenceReplayConfig` re-declares
    R2D2's and Agent57's, counted in sequences. Steps are agent steps."""

    learning_rate: float = param(1e-4, "Adam step size (at the start, when annealed).")
    anneal_lr: bool = param(False, "Decay the learning rate linearly to 0 over the budget.")
    adam_eps: float = param(1.5e-4, "Adam epsilon (Rainbow's 1.5e-4).")
    batch_size: int = param(32, "Transitions per gradient step.")
    unroll_length: int = param(8, "Steps per env an actor collects before sending transitions.")
    replay_capacity: int = param(100_000, "Replay size in transitions (FIFO eviction).")
    min_replay_size: int = param(
        1_000, "Transitions in replay before learning starts (no random warm-up, unlike SAC's)."
    )
    samples_per_insert: float = param(
        8.0,
        "Transitions sampled per transition inserted (8: a batch of 32 every 4 steps); gradient "
        "steps per agent step are this / batch_size (SAC's updates_per_step).",
    )
    target_update_period: int = param(
        1_000, "Gradient steps between copies of the online weights to the target network."
    )
    max_grad_norm: float = param(10.0, "Clip the global gradient norm to this (0 disables).")
    prioritized: bool = param(True, "Prioritised replay; False samples uniformly.")
    priority_alpha: float = param(0.6, "Priority exponent alpha (0: uniform).")
    priority_beta: float = param(0.4, "Importance-weight exponent beta at the start.")
    priority_beta_end: float = param(1.0, "beta at the end of the budget (annealed linearly).")
    priority_eps: float = param(1e-6, "Added to every priority so every item can be drawn.")

    def __post_init__(self) -> None:
        super().__post_init__()
        positive: tuple[str, ...] = ("learning_rate", "adam_eps", "batch_size", "unroll_length")
        positive += ("replay_capacity", "samples_per_insert", "target_update_period")
        require_positive(self, positive)
        require_unit_interval(self, ("priority_beta", "priority_beta_end"))
        require_finite_nonnegative(self, ("priority_alpha", "max_grad_norm", "priority_eps"))
        if not 0 <= self.min_replay_size <= self.replay_capacity:
            raise ValueError(
                f"min_replay_size must be in [0, replay_capacity={self.replay_capacity}], got "
                f"{self.min_replay_size}; set --agent.min-replay-size lower."
            )
        if self.batch_size > self.replay_capacity:
            raise ValueError(
                f"batch_size {self.batch_size} exceeds replay_capacity {self.replay_capacity}."
            )


@dataclass(frozen=True, kw_only=True)
class NStepTargetConfig(ConfigSection):
    """n-step bootstrapped targets from a target network (DQN's, R2D2's; Agent57 learns by
    Retrace): a section beside `ReplayConfig` or `SequenceReplayConfig`, listed first among a
    config's bases (`class DQNConfig(NStepTargetConfig, ReplayConfig)`). It derives from neither,
    so it cannot bring `ReplayConfig`'s defaults back over `SequenceReplayConfig`'s."""

    gamma: float = param(0.99, "Discount factor.")
    n_step: int = param(3, "Rewards summed before bootstrapping (n of the n-step return).")
    target_tau: float = param(
        1.0, "1: copy every target_update_period steps; < 1: Polyak averaging every step."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("n_step",))
        require_unit_interval(self, ("gamma", "target_tau"))
        if self.target_tau == 0:
            raise ValueError("target_tau must be > 0 (1 copies, < 1 averages); got 0.")


@dataclass(frozen=True, kw_only=True)
class SequenceReplayConfig(ReplayConfig):
    """`ReplayConfig` over sequences of an LSTM's steps with stored state (R2D2's, Agent57's):
    replay sizes and the replay ratio count sequences. Defaults are small settings for toy
    memory tasks and CartPole; each agent's preset holds its paper's."""

    learning_rate: float = param(
        1e-3, "Adam step size of the Q-networks (both papers: 1e-4), at the start if annealed."
    )
    adam_eps: float = param(1e-5, "Adam epsilon (papers: R2D2 1e-3, Agent57 1e-4).")
    sequence_length: int = param(
        20, "Steps per replayed sequence, burn-in included (Atari presets: 40 + 80 trained)."
    )
    sequence_period: int = param(
        10, "Steps between the starts of an env's sequences; overlap = length - period."
    )
    burn_in: int = param(
        5, "Leading steps of each sequence that only warm the LSTM state, without gradients."
    )
    batch_size: int = param(32, "Sequences per gradient step (both papers: 64).")
    unroll_length: int = param(10, "Steps per env an actor collects before sending sequences.")
    replay_capacity: int = param(5_000, "Replay size in sequences (FIFO eviction).")
    min_replay_size: int = param(100, "Sequences in replay before learning starts.")
    samples_per_insert: float = param(
        4.0, "Sequences sampled per sequence inserted (the replay ratio)."
    )
    target_update_period: int = param(
        100,
        "Gradient steps between copies of the online weights to the targets (papers: "
        "R2D2 2500, Agent57 1500).",
    )
    max_grad_norm: float = param(
        40.0, "Clip each optimiser's global gradient norm to this (0 disables)."
    )
    priority_alpha: float = param(0.9, "Priority exponent alpha (paper: 0.9).")
    priority_beta: float = param(0.6, "Importance-weight exponent beta at the start (paper: 0.6).")
    priority_beta_end: float = param(0.6, "beta at the end of the budget (annealed linearly).")
    eta: float = param(
        0.9, "Sequence priority eta max|delta| + (1 - eta) mean|delta| (paper: 0.9)."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("sequence_length", "sequence_period"))
        require_unit_interval(self, ("eta",))
        require_finite_nonnegative(self, ("burn_in",))
        if self.burn_in >= self.sequence_length:
            raise ValueError(
                f"burn_in {self.burn_in} must be < sequence_length {self.sequence_length}; "
                "raise --agent.sequence-length or lower --agent.burn-in."
            )
        if self.sequence_period > self.sequence_length:
            raise ValueError(
                f"sequence_period {self.sequence_period} exceeds sequence_length "
                f"{self.sequence_length}: steps between sequences would never be replayed; set "
                "--agent.sequence-period <= --agent.sequence-length."
            )


@dataclass(frozen=True, kw_only=True)
class DQNConfig(NStepTargetConfig, ReplayConfig):
    """DQN's settings: the family's replay and n-step sections with their defaults (DQN's), the
    Q-network's parts and the exploration. The replay ratio is counted in transitions."""

    double_q: bool = param(True, "Choose the bootstrap action with the online network.")
    dueling: bool = param(True, "Dueling value and advantage streams.")
    dueling_hidden: int = param(256, "Hidden units of each dueling stream.")
    huber_delta: float = param(
        1.0,
        "Huber loss threshold on the TD error (inf: squared loss); kappa of the quantile Huber "
        "loss when quantile (finite); unused when distributional.",
        allow_inf=True,
    )
    distributional: bool = param(
        False,
        "C51: learn a categorical return distribution on num_atoms atoms in [v_min, v_max] "
        "(Bellemare et al. 2017); loss: its cross-entropy, priority: its KL (Rainbow).",
    )
    num_atoms: int = param(51, "Atoms of the return distribution (distributional).")
    quantile: bool = param(
        False,
        "QR-DQN: learn num_quantiles quantiles of the return per action (Dabney et al. 2018) by "
        "the quantile Huber loss (kappa: huber_delta), which is also the priority.",
    )
    num_quantiles: int = param(200, "Quantiles per action (quantile; the paper's Atari 200).")
    v_min: float = param(-10.0, "Lowest atom (distributional); targets below it are clipped to it.")
    v_max: float = param(10.0, "Highest atom (distributional); targets above it are clipped to it.")
    noisy: bool = param(
        False,
        "Noisy linear layers with factorised Gaussian noise in the Q head (Fortunato et al. "
        "2018); they explore on top of epsilon: set the epsilons to 0 to explore by noise alone.",
    )
    noisy_sigma: float = param(0.5, "sigma_0 of the noisy layers' initial noise scale (noisy).")
    exploration: Literal["linear", "apex"] = param(
        "linear",
        "linear: epsilon decays from epsilon_start to epsilon_end; apex: actor i of N acts with "
        "apex_epsilon^(1 + apex_alpha * i / (N - 1)) throughout.",
    )
    epsilon_start: float = param(1.0, "Exploration rate at the start (linear).")
    epsilon_end: float = param(0.01, "Exploration rate after the decay (linear).")
    epsilon_decay_steps: int = param(
        50_000, "Agent steps of one actor over which epsilon decays (linear)."
    )
    apex_epsilon: float = param(0.4, "Ape-X base exploration rate epsilon.")
    apex_alpha: float = param(7.0, "Ape-X exponent spread alpha across actors.")
    eval_epsilon: float = param(0.0, "Exploration rate of the evaluation policy.")
    torso: str = param(
        "auto", "auto, mlp, nature_cnn, impala_resnet, minatar_cnn, or package.module:function."
    )
    hidden_sizes: tuple[int, ...] = param((64, 64), "Hidden layer widths of the MLP torso.")
    activation: Activation = param("relu", "Hidden activation of the MLP torso.")
    reward_clip: float | None = param(
        None, "Clip rewards to [-x, x] for learning (1.0 for Atari); None keeps them."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("dueling_hidden", "epsilon_decay_steps"))
        unit = ("epsilon_start", "epsilon_end", "apex_epsilon", "eval_epsilon")
        require_unit_interval(self, unit)
        require_finite_nonnegative(self, ("apex_alpha",))
        if not self.huber_delta > 0:
            raise ValueError(
                f"huber_delta must be > 0 (inf for squared loss), got {self.huber_delta}."
            )
        check_network_settings(self)
        self._check_distribution_and_noise()

    def _check_distribution_and_noise(self) -> None:
        if self.distributional and self.quantile:
            raise ValueError(
                "distributional (C51) and quantile (QR-DQN) are two ways to learn the return "
                "distribution; pick one: --agent.distributional false or --agent.quantile false."
            )
        if self.num_quantiles < 1:
            raise ValueError(
                f"num_quantiles must be >= 1, got {self.num_quantiles}; set "
                "--agent.num-quantiles 200 (QR-DQN's Atari setting)."
            )
        if self.quantile and self.huber_delta == math.inf:
            raise ValueError(
                "quantile needs a finite huber_delta (the quantile Huber loss's kappa); set "
                "--agent.huber-delta 1.0 (the paper's)."
            )
        if self.num_atoms < 2:
            raise ValueError(
                f"num_atoms must be >= 2 (a support needs two ends), got {self.num_atoms}; set "
                "--agent.num-atoms 51."
            )
        if not (-math.inf < self.v_min < self.v_max < math.inf):
            raise ValueError(
                f"v_min must be finite and below v_max, got v_min={self.v_min}, v_max="
                f"{self.v_max}; set --agent.v-min and --agent.v-max to the range of the "
                "discounted returns (e.g. -10 and 10 for clipped Atari rewards)."
            )
        if not 0 < self.noisy_sigma < math.inf:
            raise ValueError(
                f"noisy_sigma must be a finite number > 0, got {self.noisy_sigma}; set "
                "--agent.noisy-sigma 0.5 (Fortunato et al.'s sigma_0)."
            )

    @property
    def atoms(self) -> int:
        """Outputs per action of the Q-network: num_atoms when distributional, num_quantiles
        when quantile, else 1."""
        if self.distributional:
            return self.num_atoms
        return self.num_quantiles if self.quantile else 1

    def epsilon(self, actor_steps: int, actor_index: int, num_actors: int) -> float:
        """The exploration rate of actor `actor_index` of `num_actors` after `actor_steps`."""
        return float(self.epsilons(np.array([actor_steps]), np.array([actor_index]), num_actors)[0])

    def epsilons(
        self, actor_steps: np.ndarray, actor_index: np.ndarray, num_actors: int
    ) -> np.ndarray:
        """`epsilon` for many envs at once: `[n]` steps of their actors and actor indices."""
        if self.exploration == "apex":
            spread = actor_index / (num_actors - 1) if num_actors > 1 else 0.0 * actor_index
            return self.apex_epsilon ** (1.0 + self.apex_alpha * spread)
        fraction = np.minimum(1.0, actor_steps / self.epsilon_decay_steps)
        return self.epsilon_start + fraction * (self.epsilon_end - self.epsilon_start)


# What the learner reads from its config at each update, and the exploration rates the acting
# policy reads at each step (`DQNPolicy.apply_settings`): what PBT may change in place. Gamma is
# not here: the actors' n-step returns already in replay were discounted with the old one.
MUTABLE_SETTINGS = frozenset(
    {
        "learning_rate",
        "max_grad_norm",
        "huber_delta",
        "epsilon_start",
        "epsilon_end",
        "epsilon_decay_steps",
        "apex_epsilon",
        "apex_alpha",
    }
)

__all__ = [
    "MUTABLE_SETTINGS",
    "ConfigSection",
    "DQNConfig",
    "NStepTargetConfig",
    "ReplayConfig",
    "SequenceReplayConfig",
    "apex_epsilon",
]
