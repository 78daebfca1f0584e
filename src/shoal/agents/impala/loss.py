"""IMPALA's loss, composed from `shoal.ops` (Espeholt et al. 2018, Section 4).

Policy gradient with V-trace advantages + weighted baseline loss `0.5 (v_s - V(x_s))^2`
- weighted entropy, each a mean over the `[T, B]` steps (over the active ones where the unroll
says which rows held an agent: a multi-agent env's absent agents are not learned from).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch

from shoal import ops
from shoal.agents.impala.config import IMPALAConfig
from shoal.agents.vtrace_ac import Batch, VTraceNet, evaluate, masked_mean

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
    logits, v_tm1, v_t = evaluate(net, batch)

    log_pi_a = ops.categorical_log_prob(logits, batch.actions)
    log_mu_a = ops.categorical_log_prob(batch.behaviour_logits, batch.actions)
    log_rhos = log_pi_a.detach() - log_mu_a
    rewards = batch.rewards
    if config.reward_clip is not None:
        rewards = rewards.clamp(-config.reward_clip, config.reward_clip)
    discount_t = config.gamma * (~batch.terminated).to(rewards.dtype)
    targets = ops.vtrace(
        v_tm1.detach(),
        v_t,
        rewards,
        discount_t,
        log_rhos,
        rho_bar=config.rho_bar,
        c_bar=config.c_bar,
        pg_rho_bar=config.pg_rho_bar,
        lambda_=config.trace_lambda,
        end_t=batch.terminated | batch.truncated,
    )
    advantages = targets.pg_advantages
    mean = functools.partial(masked_mean, active=batch.active)
    if config.normalize_advantages:
        # One scale for the policy gradient whatever the reward scale, so the entropy weight
        # means the same on every game (the PPO practice; the paper does not do this).
        if batch.active is None:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        else:
            centred = advantages - mean(advantages)
            advantages = centred / (mean(centred.square()).sqrt() + 1e-8)
    policy_loss = mean(ops.vtrace_policy_gradient_loss(log_pi_a, advantages))
    value_loss = mean(ops.value_loss(v_tm1, targets.vs))
    entropy = mean(ops.categorical_entropy(logits))
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    metrics = {
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "entropy": entropy.detach(),
        "rho_mean": targets.rhos.mean(),
        # Where π/μ exceeded ρ̄; the margin ignores float noise between actor and learner passes.
        "rho_clip_fraction": (log_rhos > math.log(config.rho_bar) + 1e-4).float().mean(),
    }
    return LossResult(loss, metrics, targets, log_rhos, v_tm1.detach(), v_t)
