"""TRPO hyperparameters (Schulman et al. 2015, arXiv:1502.05477, Appendix C; GAE: Schulman et al.
2016, arXiv:1506.02438). Defaults are sb3-contrib's TRPO's."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import (
    flag,
    require_finite_nonnegative,
    require_positive,
    require_unit_interval,
)
from shoal.config import keeps_old_names, param
from shoal.data import Layout
from shoal.nets.mlp import Activation
from shoal.nets.torso import check_torso_setting


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class TRPOConfig:
    unroll_length: int = param(
        2048, "Steps per environment between updates (T).", was=("rollout_length",)
    )
    gamma: float = param(0.99, "Discount factor.")
    gae_lambda: float = param(0.95, "GAE lambda: 0 is TD(0), 1 is Monte-Carlo.")
    max_kl: float = param(0.01, "Trust region radius delta: the mean KL a policy step may reach.")
    cg_iters: int = param(15, "Most conjugate-gradient iterations for the search direction.")
    cg_damping: float = param(0.1, "Damping added to the Fisher matrix's diagonal in the solve.")
    cg_residual_tol: float = param(1e-10, "Stop conjugate gradient once r.r falls to this.")
    line_search_shrink: float = param(0.8, "Factor the step shrinks by per rejected try.")
    line_search_steps: int = param(10, "Most steps the line search tries before keeping θold.")
    normalize_advantages: bool = param(True, "Standardise the advantages of each batch.")
    learning_rate: float = param(1e-3, "Adam step size of the value function.")
    anneal_lr: bool = param(False, "Decay the value function's step size linearly to 0.")
    value_epochs: int = param(10, "Passes of value-function Adam steps over each batch.")
    minibatch_size: int = param(128, "Samples per value-function Adam step.")
    normalize_obs: bool = param(False, "Normalise observations by running statistics.")
    hidden_sizes: tuple[int, ...] = param((64, 64), "Hidden layer widths of policy and value MLPs.")
    activation: Activation = param("tanh", "Hidden activation.")
    torso: str = param(
        "auto", "auto, mlp, nature_cnn, impala_resnet, minatar_cnn, or package.module:function."
    )
    shared_torso: bool | None = param(
        False,
        "Share one torso between policy and value (then the value trains its head only, so "
        "that its steps keep to the policy's trust region). None: yes for images.",
    )
    init_log_std: float = param(0.0, "Initial log standard deviation of Gaussian actions.")

    # The family's network reads this; TRPO has no reward scaling.
    normalize_reward = False

    def __post_init__(self) -> None:
        positive = ("unroll_length", "max_kl", "cg_iters", "line_search_steps")
        require_positive(self, (*positive, "learning_rate", "value_epochs", "minibatch_size"))
        for name in ("unroll_length", "cg_iters", "line_search_steps", "value_epochs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(
                    f"{name} must be an integer, got {value!r}; set --agent.{flag(name)}."
                )
        require_unit_interval(self, ("gamma", "gae_lambda"))
        require_finite_nonnegative(self, ("max_kl", "cg_damping", "cg_residual_tol"))
        if not 0.0 < self.line_search_shrink < 1.0:
            raise ValueError(
                f"line_search_shrink must lie strictly between 0 and 1, got "
                f"{self.line_search_shrink}: each rejected step is multiplied by it. Set "
                "--agent.line-search-shrink 0.8 (Schulman et al. use 0.5 to 0.8)."
            )
        if not self.hidden_sizes or min(self.hidden_sizes) <= 0:
            raise ValueError(
                f"hidden_sizes must be positive widths, got {self.hidden_sizes}; "
                "set e.g. --agent.hidden-sizes 64,64."
            )
        check_torso_setting(self.torso)


def validate(config: TRPOConfig, layout: Layout) -> None:
    """Checks that need the run's layout: a batch holds one rollout of every actor's envs."""
    num_envs = layout.total_envs
    rollout = config.unroll_length * num_envs
    if config.normalize_advantages and rollout < 2:
        raise ValueError(
            f"normalize_advantages needs at least 2 samples per batch, and a batch holds "
            f"unroll_length x num_envs = {config.unroll_length} x {num_envs} = {rollout}. "
            "Set --agent.unroll-length higher or --agent.normalize-advantages false."
        )
    if config.minibatch_size > rollout:
        raise ValueError(
            f"minibatch_size={config.minibatch_size} is larger than a batch of unroll_length x "
            f"num_envs = {config.unroll_length} x {num_envs} = {rollout}. Set "
            f"--agent.minibatch-size to at most {rollout} or collect longer rollouts."
        )
