"""APPO hyperparameters: PPO's clipped surrogate on V-trace advantages, learned asynchronously
(RLlib's APPO after IMPACT, Luo et al. 2020, arXiv:1912.00167; Sample Factory's APPO,
Petrenko et al. 2020, arXiv:2006.11751)."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.agents.checks import flag, require_finite_nonnegative, require_positive
from shoal.agents.vtrace_ac.config import VTraceConfig
from shoal.config import param


@dataclass(frozen=True, kw_only=True)
class APPOConfig(VTraceConfig):
    """APPO's settings: the V-trace family's section (`VTraceConfig`: the network, V-trace
    and reward fields, IMPALA's defaults but the learning rate and the advantage
    normalisation), then PPO's clip, RLlib's KL penalty and target network, and Sample
    Factory's epochs and policy-lag bound."""

    learning_rate: float = param(5e-4, "Adam step size at the start (RLlib's APPO default).")
    num_epochs: int = param(
        1,
        "Gradient steps on each batch (Sample Factory's num_epochs; RLlib's iterations per batch).",
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
    normalize_advantages: bool = param(
        True, "Standardise the V-trace advantages over each batch (Sample Factory does)."
    )
    max_policy_lag: int | None = param(
        None,
        "Drop unrolls acted more than this many learner versions ago (None: the queue's "
        "capacity alone bounds the lag).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive(self, ("num_epochs", "target_update_period", "kl_target"))
        if not self.target_max_weight > 0:
            raise ValueError(
                f"target_max_weight must be > 0 (inf turns the cap off), got "
                f"{self.target_max_weight}; set --agent.{flag('target_max_weight')}."
            )
        require_finite_nonnegative(self, ("clip_eps", "kl_coeff"))
        if self.max_policy_lag is not None and self.max_policy_lag < 0:
            raise ValueError(
                f"max_policy_lag must be >= 0 learner versions (or None for no bound), got "
                f"{self.max_policy_lag}; set --agent.max-policy-lag."
            )
