"""APPO's loss: the V-trace family's actor-critic loss (`shoal.agents.vtrace_ac.loss`, Espeholt
et al. 2018, Section 4.2) with PPO's clipped surrogate (Schulman et al. 2017, eq. 7) on the
V-trace advantages as its policy term, and an optional KL penalty.

The proximal anchor π_old of the ratio and the KL is the behaviour policy μ that acted (Sample
Factory) or, with `use_target_network`, a target network's policy (RLlib's APPO, after IMPACT,
Luo et al. 2020). V-trace corrects towards π_old with a target network (as RLlib does) and
towards the learner's π without one (as Sample Factory and IMPALA do).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from shoal import ops
from shoal.agents.appo.config import APPOConfig
from shoal.agents.vtrace_ac import Batch, VTraceNet, vtrace_actor_critic_loss, vtrace_terms

__all__ = ["Batch", "LossResult", "appo_loss"]


class LossResult(NamedTuple):
    loss: torch.Tensor  # scalar, differentiable
    metrics: dict[str, torch.Tensor]  # detached scalars
    kl: torch.Tensor  # mean KL(π_old ‖ π) over the active steps, detached
    targets: ops.VTraceReturns  # [T, B]
    log_ratio: torch.Tensor  # the surrogate's log π/π_old [T, B], detached


def appo_loss(
    net: VTraceNet,
    batch: Batch,
    config: APPOConfig,
    kl_coeff: float = 0.0,
    target: VTraceNet | None = None,
) -> LossResult:
    """The APPO loss of one batch under `net` (π), the anchor being `target`'s policy when given
    and the behaviour policy μ otherwise; the KL penalty enters with weight `kl_coeff` when
    `config.use_kl_loss`."""
    if target is None:
        old_logits, log_old_a = batch.behaviour_logits, None
    else:
        length = batch.rewards.shape[0]
        with torch.no_grad():
            old_logits = target.unroll(batch.obs, batch.first, batch.initial_state)[0][:length]
        log_old_a = ops.categorical_log_prob(old_logits, batch.actions)
    terms = vtrace_terms(net, batch, config, log_target_a=log_old_a)
    if log_old_a is None:
        log_ratio = terms.log_pi_a - terms.log_mu_a
    else:
        log_ratio = ops.target_clipped_log_ratio(
            terms.log_pi_a, terms.log_mu_a, log_old_a, max_weight=config.target_max_weight
        )
    policy_loss = terms.mean(
        ops.clipped_surrogate_loss(log_ratio, terms.advantages, config.clip_eps)
    )
    kl = terms.mean(ops.categorical_kl(old_logits.detach(), terms.logits))
    log_ratio = log_ratio.detach()
    clipped = (log_ratio.exp() - 1.0).abs().gt(config.clip_eps).float()
    loss, metrics = vtrace_actor_critic_loss(
        terms,
        config,
        policy_loss,
        {"kl": kl.detach(), "clip_fraction": terms.mean(clipped)},
        penalty=kl_coeff * kl if config.use_kl_loss else None,
    )
    return LossResult(loss, metrics, kl.detach(), terms.targets, log_ratio)
