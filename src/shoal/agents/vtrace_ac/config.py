"""The V-trace family's config section: what IMPALA and APPO set alike (Espeholt et al. 2018,
arXiv:1802.01561): the optimiser, the unroll and batch, V-trace's clipping, the loss weights,
the network and the reward clip, with their checks. Its defaults are IMPALA's; an agent
re-declares only the defaults its paper changes."""

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
class VTraceConfig:
    """Settings every V-trace actor-critic has. Losses are means over the `[T, B]` steps of a
    batch (torchbeast sums them), so the learning rate does not have to shrink as unrolls or
    batches grow."""

    learning_rate: float = param(6e-4, "Adam step size at the start (the paper uses RMSProp).")
    anneal_lr: bool = param(True, "Decay the learning rate linearly to 0 over the budget.")
    unroll_length: int = param(20, "Steps per environment in one unroll (T).")
    batch_size: int = param(
        1, "Unrolls per learner step (the runtime stacks them side by side along B)."
    )
    gamma: float = param(0.99, "Discount factor.")
    trace_lambda: float = param(1.0, "V-trace lambda, multiplying the trace coefficients c_s.")
    rho_bar: float = param(
        1.0, "V-trace rho-bar: clips importance weights in the value targets.", allow_inf=True
    )
    c_bar: float = param(1.0, "V-trace c-bar: clips the trace coefficients.", allow_inf=True)
    pg_rho_bar: float = param(
        1.0, "Clips importance weights in the policy-gradient advantage.", allow_inf=True
    )
    value_coef: float = param(0.5, "Weight of the baseline loss 0.5 (v_s - V(x_s))^2.")
    entropy_coef: float = param(0.01, "Weight of the entropy bonus.")
    normalize_advantages: bool = param(
        False, "Standardise the V-trace policy-gradient advantages over each batch (as PPO does)."
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
        require_positive(self, ("learning_rate", "unroll_length", "batch_size", "lstm_size"))
        require_unit_interval(self, ("gamma", "trace_lambda"))
        for name in ("rho_bar", "c_bar", "pg_rho_bar"):
            if not getattr(self, name) > 0:
                raise ValueError(
                    f"{name} must be > 0 (1.0 as in the paper; inf turns clipping off), got "
                    f"{getattr(self, name)}; set --agent.{flag(name)}."
                )
        require_finite_nonnegative(self, ("value_coef", "entropy_coef", "max_grad_norm"))
        check_network_settings(self)
