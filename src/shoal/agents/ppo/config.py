"""PPO hyperparameters (Schulman et al. 2017, arXiv:1707.06347)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.actor_critic.config import (
    GAEConfig,
    LossWeightsConfig,
    LSTMConfig,
    ObservationNormConfig,
    unroll_length_param,
)
from shoal.agents.checks import require_positive
from shoal.agents.common.league import LeagueConfig
from shoal.config import keeps_old_names, param
from shoal.data import Layout


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class PPOConfig(LeagueConfig, LSTMConfig, LossWeightsConfig, GAEConfig, ObservationNormConfig):
    """The family's settings (`ActorCriticConfig`) with PPO's defaults where they differ, the
    clipped surrogate's epochs and minibatches, reward scaling and clipping, and self-play with a
    league (`shoal.agents.common.league`)."""

    learning_rate: float = param(3e-4, "Adam step size at the start of training.")
    anneal_lr: bool = param(True, "Decay the learning rate linearly to 0 over the budget.")
    unroll_length: int = unroll_length_param(128, "Steps per environment between updates (T).")
    normalize_advantages: bool = param(True, "Normalise advantages per minibatch.")
    entropy_coef: float = param(0.0, "Weight of the entropy bonus.")
    num_epochs: int = param(4, "Passes over each rollout.")
    minibatch_size: int | None = param(
        256,
        "Samples per gradient step; at most unroll_length x num_envs. None: the batch divided "
        "into num_minibatches.",
    )
    num_minibatches: int = param(
        1, "Minibatches per epoch when minibatch_size is None, whatever the number of envs."
    )
    clip_eps: float = param(0.2, "Clip range of the probability ratio.")
    anneal_clip: bool = param(False, "Decay the clip range linearly to 0 over the budget.")
    clip_value: bool = param(False, "Clip value updates to ± clip_eps around the rollout's values.")
    normalize_reward: bool = param(False, "Scale rewards by the running std of discounted returns.")
    target_kl: float | None = param(None, "Stop the epochs of an update early past this KL.")
    reward_clip: float | None = param(
        None, "Clip rewards to [-x, x] for learning (1.0 for Atari); None keeps them."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("num_epochs", "num_minibatches", "clip_eps"))
        if self.minibatch_size is not None and self.minibatch_size <= 0:
            raise ValueError(f"minibatch_size must be > 0, got {self.minibatch_size}.")
        if self.reward_clip is not None and not self.reward_clip > 0:
            raise ValueError(f"reward_clip must be > 0 or None, got {self.reward_clip}.")
        if self.target_kl is not None and self.target_kl <= 0:
            raise ValueError(f"target_kl must be > 0 or None, got {self.target_kl}.")


def validate(config: PPOConfig, layout: Layout) -> None:
    """Checks that need the run's layout as well as the agent config: a batch holds one rollout
    of every actor's envs (with an LSTM, one sequence of unroll_length steps per env)."""
    num_envs = layout.total_envs
    rollout = config.unroll_length * num_envs
    if config.use_lstm:
        _validate_sequences(config, num_envs)
    if config.minibatch_size is None:
        if config.num_minibatches > rollout:
            raise ValueError(
                f"num_minibatches={config.num_minibatches} is more than the {rollout} samples of "
                f"a rollout (unroll_length x num_envs = {config.unroll_length} x {num_envs}). "
                f"Set --agent.num-minibatches to at most {rollout} or collect longer rollouts."
            )
        return
    if config.minibatch_size > rollout:
        raise ValueError(
            f"minibatch_size={config.minibatch_size} is larger than a rollout of "
            f"unroll_length x num_envs = {config.unroll_length} x {num_envs} = {rollout}. "
            f"Set --agent.minibatch-size to at most {rollout} or collect longer rollouts."
        )


def _validate_sequences(config: PPOConfig, num_envs: int) -> None:
    """A recurrent minibatch is a set of whole env sequences (unroll_length steps each)."""
    if config.minibatch_size is None:
        if config.num_minibatches > num_envs:
            raise ValueError(
                f"With use_lstm a minibatch holds whole env sequences, so num_minibatches="
                f"{config.num_minibatches} cannot exceed the {num_envs} envs of a rollout. Set "
                f"--agent.num-minibatches to at most {num_envs} or run more envs."
            )
        return
    if config.minibatch_size % config.unroll_length:
        fits = max(config.minibatch_size // config.unroll_length, 1) * config.unroll_length
        raise ValueError(
            f"With use_lstm a minibatch holds whole env sequences of unroll_length="
            f"{config.unroll_length} steps, so minibatch_size={config.minibatch_size} must be "
            f"a multiple of it. Set --agent.minibatch-size {fits}, or --agent.minibatch-size "
            "none with --agent.num-minibatches (minibatches of num_envs / num_minibatches "
            "sequences)."
        )
