"""APPO hyperparameters: PPO's clipped surrogate on V-trace advantages, learned asynchronously
(RLlib's APPO after IMPACT, Luo et al. 2020, arXiv:1912.00167; Sample Factory's APPO,
Petrenko et al. 2020, arXiv:2006.11751)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import (
    check_network_settings,
    flag,
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.config import param
from shoal.nets.mlp import Activation


@dataclass(frozen=True, kw_only=True)
class APPOConfig:
    """APPO's settings. The network, V-trace and reward fields are IMPALA's (the V-trace
    family's `NetworkSettings`); the rest are PPO's clip, RLlib's KL penalty and target network,
    and Sample Factory's epochs and policy-lag bound.

    Losses are means over the `[T, B]` steps of a batch.
    """

    learning_rate: float = param(5e-4, "Adam step size at the start (RLlib's APPO default).")
    anneal_lr: bool = param(True, "Decay the learning rate linearly to 0 over the budget.")
    unroll_length: int = param(20, "Steps per environment in one unroll (T).")
    batch_size: int = param(
        1, "Unrolls per learner step (the runtime stacks them side by side along B)."
    )
    num_epochs: int = param(
        1,
        "Gradient steps on each batch (Sample Factory's num_epochs; RLlib's iterations per batch).",
    )
    gamma: float = param(0.99, "Discount factor.")
    trace_lambda: float = param(1.0, "V-trace lambda, multiplying the trace coefficients c_s.")
    rho_bar: float = param(
        1.0, "V-trace rho-bar: clips importance weights in the value targets.", allow_inf=True
    )
    c_bar: float = param(1.0, "V-trace c-bar: clips the trace coefficients.", allow_inf=True)
    pg_rho_bar: float = param(
        1.0, "Clips importance weights in the V-trace policy advantage.", allow_inf=True
    )
    clip_eps: float = param(0.2, "PPO clip range of the probability ratio.")
    use_target_network: bool = param(
        False,
        "Take the ratio against a target policy copied every target_update_period steps "
        "(RLlib, IMPACT) instead of the behaviour policy (Sample Factory).",
    )
    target_update_period: int = param(
        8, "Gradient steps between copies of the network into the target network."
    )
    target_max_weight: float = param(
        2.0,
        "Caps the behaviour-to-target weight mu/pi_target in the target ratio (RLlib: 2).",
        allow_inf=True,
    )
    use_kl_loss: bool = param(False, "Add a KL(pi_old || pi) penalty with an adaptive weight.")
    kl_coeff: float = param(1.0, "Initial weight of the KL penalty.")
    kl_target: float = param(
        0.01, "Target KL: the weight x1.5 above twice this, x0.5 below half of it."
    )
    value_coef: float = param(0.5, "Weight of the baseline loss 0.5 (v_s - V(x_s))^2.")
    entropy_coef: float = param(0.01, "Weight of the entropy bonus.")
    normalize_advantages: bool = param(
        True, "Standardise the V-trace advantages over each batch (Sample Factory does)."
    )
    max_policy_lag: int | None = param(
        None,
        "Drop unrolls acted more than this many learner versions ago (None: the queue's "
        "capacity alone bounds the lag).",
    )
    max_grad_norm: float = param(40.0, "Clip the global gradient norm to this (0 disables).")
    torso: str = param(
        "auto", "auto, mlp, nature_cnn, impala_resnet, minatar_cnn, or package.module:function."
    )
    hidden_sizes: tuple[int, ...] = param((64, 64), "Hidden layer widths of the MLP torso.")
    activation: Activation = param("relu", "Hidden activation of the MLP torso.")
    use_lstm: bool = param(False, "Put an LSTM core between the torso and the heads.")
    lstm_size: int = param(256, "Hidden units of the LSTM core.")
    reward_clip: float | None = param(
        None, "Clip rewards to [-x, x] for learning (1.0 for Atari); None keeps them."
    )

    def __post_init__(self) -> None:
        require_positive(
            self,
            (
                "learning_rate",
                "unroll_length",
                "batch_size",
                "num_epochs",
                "target_update_period",
                "lstm_size",
                "kl_target",
            ),
        )
        require_unit_interval(self, ("gamma", "trace_lambda"))
        for name in ("rho_bar", "c_bar", "pg_rho_bar", "target_max_weight"):
            if not getattr(self, name) > 0:
                raise ValueError(
                    f"{name} must be > 0 (inf turns clipping off), got {getattr(self, name)}; "
                    f"set --agent.{flag(name)}."
                )
        require_finite_nonnegative(
            self, ("clip_eps", "kl_coeff", "value_coef", "entropy_coef", "max_grad_norm")
        )
        if self.max_policy_lag is not None and self.max_policy_lag < 0:
            raise ValueError(
                f"max_policy_lag must be >= 0 learner versions (or None for no bound), got "
                f"{self.max_policy_lag}; set --agent.max-policy-lag."
            )
        check_network_settings(self)
