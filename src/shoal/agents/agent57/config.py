"""Agent57's settings (Badia et al. 2020, "Agent57", appendix; NGU, Badia et al. 2020, appendix).

The defaults are small settings that learn CartPole and the shipped DeepSea on a CPU;
`presets/agent57.yaml` holds the papers' settings for Atari. Replay counts sequences; steps are
agent steps (on Atari one agent step is 4 frames).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shoal.agents.agent57.mixtures import MixtureTable, mixture_table
from shoal.agents.checks import (
    check_network_settings,
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.agents.value.config import SequenceReplayConfig
from shoal.agents.value.exploration import apex_epsilon
from shoal.config import param
from shoal.nets.mlp import Activation


@dataclass(frozen=True, kw_only=True)
class Agent57Config(SequenceReplayConfig):
    """Agent57's settings: the value family's replay and sequence sections (see
    `shoal.agents.value.config`; Retrace instead of n-step targets) plus NGU's novelty, mixtures
    and bandits."""

    # Learning (R2D2's parts).
    retrace_lambda: float = param(0.95, "Retrace trace-cutting lambda (paper: 0.95).")
    lstm_size: int = param(64, "Units of each Q-network's LSTM (paper: 512).")
    dueling_hidden: int = param(64, "Hidden units of each dueling stream (paper: 512).")
    rescale_eps: float = param(1e-3, "eps of the value rescaling h (paper: 1e-3).")
    torso: str = param(
        "auto", "auto, mlp, nature_cnn, impala_resnet, minatar_cnn, or package.module:function."
    )
    hidden_sizes: tuple[int, ...] = param((64,), "Hidden widths of the MLP torsos.")
    activation: Activation = param("relu", "Hidden activation of the MLP torsos.")
    reward_clip: float | None = param(None, "Clip extrinsic rewards to [-x, x] for learning.")

    # Acting: epsilon-greedy on the combined Q-values (Ape-X rates), an evaluator row.
    exploration: Literal["per_env", "per_actor"] = param(
        "per_env", "Spread Ape-X's rates over every env (per_env) or one per actor."
    )
    apex_epsilon: float = param(0.4, "Ape-X base exploration rate epsilon.")
    apex_alpha: float = param(7.0, "Ape-X exponent spread alpha.")
    eval_epsilon: float = param(0.001, "Exploration rate of the evaluator and of sampled eval.")
    evaluator_row: bool = param(
        True,
        "Run the last env of the last actor as the evaluator (its own bandit, eval_epsilon), "
        "whose bandit picks the mixture `shoal eval` and the final evaluation act with.",
    )

    # Mixtures (beta_j, gamma_j) and the meta-controller.
    num_mixtures: int = param(32, "N policies (beta_j, gamma_j) (paper: 32).")
    beta_max: float = param(0.3, "Largest intrinsic-reward weight beta_{N-1} (paper: 0.3).")
    gamma_max: float = param(0.9999, "Discount of mixture 0 (paper: 0.9999).")
    gamma_mid: float = param(0.997, "Discount of mixture 7 (paper: 0.997).")
    gamma_min: float = param(0.99, "Discount of mixture N-1 (paper: 0.99).")
    bandit_window: int = param(160, "Actors' sliding-window UCB: episodes in the window.")
    bandit_epsilon: float = param(0.5, "Actors' bandit: probability of a uniform arm.")
    bandit_bonus: float = param(1.0, "UCB exploration bonus beta of both bandits.")
    eval_bandit_window: int = param(3600, "Evaluator's bandit window (paper: 3600).")
    eval_bandit_epsilon: float = param(0.01, "Evaluator's bandit uniform-arm rate (0.01).")

    # Never Give Up's intrinsic reward.
    embedding_size: int = param(32, "Controllable-state embedding width (paper: 32).")
    embedding_learning_rate: float = param(5e-4, "Adam step size of the inverse dynamics.")
    rnd_size: int = param(128, "Output width of the random network distillation nets.")
    rnd_learning_rate: float = param(5e-4, "Adam step size of the RND predictor.")
    episodic_capacity: int = param(30_000, "Episodic memory slots per env (paper: 30,000).")
    num_neighbours: int = param(10, "k of the k-nearest-neighbour novelty (paper: 10).")
    kernel_epsilon: float = param(1e-4, "Kernel epsilon (paper: 1e-4).")
    cluster_distance: float = param(8e-3, "Cluster distance xi (paper: 8e-3).")
    pseudo_count: float = param(1e-3, "Pseudo-count constant c (paper: 1e-3).")
    max_similarity: float = param(8.0, "Maximum similarity s_m (paper: 8).")
    # The whole run's mean is the default every measured figure (CartPole, MinAtar) was taken
    # with; the snake-maze preset restarts it each episode, as rlax keeps it.
    distance_mean: Literal["episode", "lifelong"] = param(
        "lifelong", "Average d²_m over the whole run's k-NN distances or the episode's (rlax)."
    )
    max_lifelong_multiplier: float = param(5.0, "L, the RND multiplier's cap (paper: 5).")

    def __post_init__(self) -> None:
        super().__post_init__()
        positive: tuple[str, ...] = ("lstm_size", "dueling_hidden", "rescale_eps", "bandit_window")
        positive += ("eval_bandit_window", "embedding_size", "rnd_size")
        positive += ("embedding_learning_rate", "rnd_learning_rate", "episodic_capacity")
        positive += ("num_neighbours", "kernel_epsilon", "pseudo_count", "max_similarity")
        require_positive(self, positive)
        unit = ("retrace_lambda", "apex_epsilon", "eval_epsilon", "bandit_epsilon")
        require_unit_interval(self, (*unit, "eval_bandit_epsilon"))
        finite = ("apex_alpha", "beta_max", "bandit_bonus", "cluster_distance")
        require_finite_nonnegative(self, finite)
        if self.max_lifelong_multiplier < 1:
            raise ValueError(
                f"max_lifelong_multiplier must be >= 1 (the multiplier is clipped to [1, L]), "
                f"got {self.max_lifelong_multiplier}; set --agent.max-lifelong-multiplier."
            )
        if self.num_mixtures < 2:
            raise ValueError(
                f"num_mixtures must be >= 2 (mixture 0 exploits, N-1 explores most), got "
                f"{self.num_mixtures}; set --agent.num-mixtures."
            )
        if not 0 <= self.gamma_min <= self.gamma_mid <= self.gamma_max < 1:
            raise ValueError(
                "Discounts must satisfy 0 <= gamma_min <= gamma_mid <= gamma_max < 1, got "
                f"{self.gamma_min}, {self.gamma_mid}, {self.gamma_max}; set --agent.gamma-*."
            )
        check_network_settings(self)

    def mixtures(self) -> MixtureTable:
        """The run's one (β_j, γ_j) table: the actors, the learner and the evaluator all read
        it from here, so they cannot disagree on which index is which mixture."""
        return mixture_table(
            self.num_mixtures, self.beta_max, self.gamma_max, self.gamma_mid, self.gamma_min
        )

    def epsilon(self, index: int, count: int) -> float:
        """The exploration rate of actor (or env) `index` of `count` (Ape-X's)."""
        return apex_epsilon(self.apex_epsilon, self.apex_alpha, index, count)
