"""IMPALA's loss (Espeholt et al. 2018, Section 4): the V-trace family's actor-critic loss
(`shoal.agents.vtrace_ac.loss`) with the V-trace policy gradient `-ρ̄_s A_s log π(a_s|x_s)` as
its policy term, V-trace correcting towards the learner's π."""

from __future__ import annotations

from typing import NamedTuple

import torch

from shoal import ops
from shoal.agents.impala.config import IMPALAConfig
from shoal.agents.vtrace_ac import Batch, VTraceNet, vtrace_actor_critic_loss, vtrace_terms

__all__ = ["Batch", "LossResult", "impala_loss"]


class LossResult(NamedTuple):
    loss: torch.Tensor  # scalar, differentiable
    metrics: dict[str, torch.Tensor]  # detached scalars
    targets: ops.VTraceReturns  # [T, B]
    log_rhos: torch.Tensor  # log π(a_t|x_t) - log μ(a_t|x_t) [T, B], detached
    values: torch.Tensor  # V(x_t) [T, B] under the current weights, detached
    v_t: torch.Tensor  # V(x_{t+1}) [T, B], the final observation's value at a truncation


def impala_loss(net: VTraceNet, batch: Batch, config: IMPALAConfig) -> LossResult:
    """The IMPALA loss of one batch under the current network (the target policy π)."""
    # Bessel's std where no row is masked: what IMPALA's standardisation has always used.
    terms = vtrace_terms(net, batch, config, unbiased_std=True)
    policy_loss = terms.mean(ops.vtrace_policy_gradient_loss(terms.log_pi_a, terms.advantages))
    loss, metrics = vtrace_actor_critic_loss(terms, config, policy_loss)
    return LossResult(loss, metrics, terms.targets, terms.log_rhos, terms.v_tm1.detach(), terms.v_t)
