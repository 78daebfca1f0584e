"""TRPO hyperparameters (Schulman et al. 2015, arXiv:1502.05477, Appendix C; GAE: Schulman et al.
2016, arXiv:1506.02438). Defaults are sb3-contrib's TRPO's."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.actor_critic.config import GAEConfig, ObservationNormConfig, unroll_length_param
from shoal.agents.checks import flag, require_finite_nonnegative, require_positive
from shoal.config import keeps_old_names, param
from shoal.data import Layout


@keeps_old_names
@dataclass(frozen=True, kw_only=True)
class TRPOConfig(GAEConfig, ObservationNormConfig):
    """The family's settings (`ActorCriticConfig`) with sb3-contrib's defaults where they
    differ, the trust region's, and the value function's Adam steps."""

    unroll_length: int = unroll_length_param(2048, "Steps per environment between updates (T).")
    max_kl: float = param(0.01, "Trust region radius delta: the mean KL a policy step may reach.")
    cg_iters: int = param(15, "Most conjugate-gradient iterations for the search direction.")
    cg_damping: float = param(0.1, "Damping added to the Fisher matrix's diagonal in the solve.")
    cg_residual_tol: float = param(1e-10, "Stop conjugate gradient once r.r falls to this.")
    line_search_shrink: float = param(0.8, "Factor the step shrinks by per rejected try.")
    line_search_steps: int = param(10, "Most steps the line search tries before keeping θold.")
    normalize_advantages: bool = param(True, "Standardise the advantages of each batch.")
    learning_rate: float = param(1e-3, "Adam step size of the value function.")
    value_epochs: int = param(10, "Passes of value-function Adam steps over each batch.")
    minibatch_size: int = param(128, "Samples per value-function Adam step.")
    shared_torso: bool | None = param(
        False,
        "Share one torso between policy and value (then the value trains its head only, so "
        "that its steps keep to the policy's trust region). None: yes for images.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        positive = ("max_kl", "cg_iters", "line_search_steps", "value_epochs", "minibatch_size")
        require_positive(self, positive)
        for name in ("unroll_length", "cg_iters", "line_search_steps", "value_epochs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(
                    f"{name} must be an integer, got {value!r}; set --agent.{flag(name)}."
                )
        require_finite_nonnegative(self, ("max_kl", "cg_damping", "cg_residual_tol"))
        if not 0.0 < self.line_search_shrink < 1.0:
            raise ValueError(
                f"line_search_shrink must lie strictly between 0 and 1, got "
                f"{self.line_search_shrink}: each rejected step is multiplied by it. Set "
                "--agent.line-search-shrink 0.8 (Schulman et al. use 0.5 to 0.8)."
            )


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
