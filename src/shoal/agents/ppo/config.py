"""PPO hyperparameters (Schulman et al. 2017, arXiv:1707.06347)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.config import keeps_old_names, param
from shoal.data import Layout
from shoal.nets.mlp import Activation
from shoal.nets.torso import check_torso_setting


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class PPOConfig:
    learning_rate: float = param(3e-4, "Adam step size at the start of training.")
    anneal_lr: bool = param(True, "Decay the learning rate linearly to 0 over the budget.")
    unroll_length: int = param(
        128, "Steps per environment between updates (T).", was=("rollout_length",)
    )
    num_epochs: int = param(4, "Passes over each rollout.")
    minibatch_size: int | None = param(
        256,
        "Samples per gradient step; at most unroll_length x num_envs. None: the batch divided "
        "into num_minibatches.",
    )
    num_minibatches: int = param(
        1, "Minibatches per epoch when minibatch_size is None, whatever the number of envs."
    )
    gamma: float = param(0.99, "Discount factor.")
    gae_lambda: float = param(0.95, "GAE lambda: 0 is TD(0), 1 is Monte-Carlo.")
    clip_eps: float = param(0.2, "Clip range of the probability ratio.")
    anneal_clip: bool = param(False, "Decay the clip range linearly to 0 over the budget.")
    clip_value: bool = param(False, "Clip value updates to ± clip_eps around the rollout's values.")
    value_coef: float = param(0.5, "Weight of the value loss.")
    entropy_coef: float = param(0.0, "Weight of the entropy bonus.")
    max_grad_norm: float = param(0.5, "Clip the global gradient norm to this (0 disables).")
    normalize_advantages: bool = param(True, "Normalise advantages per minibatch.")
    normalize_obs: bool = param(False, "Normalise observations by running statistics.")
    normalize_reward: bool = param(False, "Scale rewards by the running std of discounted returns.")
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
    target_kl: float | None = param(None, "Stop the epochs of an update early past this KL.")
    reward_clip: float | None = param(
        None, "Clip rewards to [-x, x] for learning (1.0 for Atari); None keeps them."
    )

    def __post_init__(self) -> None:
        positive = (
            "learning_rate",
            "unroll_length",
            "num_epochs",
            "num_minibatches",
            "clip_eps",
            "lstm_size",
        )
        for name in (*positive, "minibatch_size"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}.")
        for name in ("gamma", "gae_lambda"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}.")
        for name in ("value_coef", "entropy_coef", "max_grad_norm"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}.")
        if not self.hidden_sizes or min(self.hidden_sizes) <= 0:
            raise ValueError(f"hidden_sizes must be positive widths, got {self.hidden_sizes}.")
        check_torso_setting(self.torso)
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
