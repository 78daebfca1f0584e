"""APPO's loss, composed from `shoal.ops`: PPO's clipped surrogate (Schulman et al. 2017, eq. 7)
on V-trace advantages (Espeholt et al. 2018, Section 4.2), a V-trace baseline loss, an entropy
bonus and an optional KL penalty, each a mean over the active `[T, B]` steps.

The proximal anchor π_old of the ratio and the KL is the behaviour policy μ that acted (Sample
Factory) or, with `use_target_network`, a target network's policy (RLlib's APPO, after IMPACT,
Luo et al. 2020). V-trace corrects towards π_old with a target network (as RLlib does) and
towards the learner's π without one (as Sample Factory and IMPALA do).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch

from shoal import ops
from shoal.agents.appo.config import APPOConfig
from shoal.agents.vtrace_ac import Batch, VTraceNet, evaluate, masked_mean

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
    logits, v_tm1, v_t = evaluate(net, batch)
    log_pi_a = ops.categorical_log_prob(logits, batch.actions)
    log_mu_a = ops.categorical_log_prob(batch.behaviour_logits, batch.actions)
    if target is None:
        old_logits = batch.behaviour_logits
        log_ratio = log_pi_a - log_mu_a
        log_rhos = log_pi_a.detach() - log_mu_a
    else:
        with torch.no_grad():
            old_logits = target.unroll(batch.obs, batch.first, batch.initial_state)[0][
                : logits.shape[0]
            ]
        log_old_a = ops.categorical_log_prob(old_logits, batch.actions)
        log_ratio = ops.target_clipped_log_ratio(
            log_pi_a, log_mu_a, log_old_a, max_weight=config.target_max_weight
        )
        log_rhos = log_old_a - log_mu_a

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
    mean = functools.partial(masked_mean, active=batch.active)
    advantages = targets.pg_advantages
    if config.normalize_advantages:
        centred = advantages - mean(advantages)
        advantages = centred / (mean(centred.square()).sqrt() + 1e-8)
    policy_loss = mean(ops.clipped_surrogate_loss(log_ratio, advantages, config.clip_eps))
    value_loss = mean(ops.value_loss(v_tm1, targets.vs))
    entropy = mean(ops.categorical_entropy(logits))
    kl = mean(ops.categorical_kl(old_logits.detach(), logits))
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    if config.use_kl_loss:
        loss = loss + kl_coeff * kl
    log_ratio = log_ratio.detach()
    metrics = {
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "entropy": entropy.detach(),
        "kl": kl.detach(),
        "clip_fraction": mean((log_ratio.exp() - 1.0).abs().gt(config.clip_eps).float()),
        "rho_mean": targets.rhos.mean(),
        # Where π_old/μ exceeded ρ̄; the margin ignores float noise between actor and learner.
        "rho_clip_fraction": (log_rhos > math.log(config.rho_bar) + 1e-4).float().mean(),
    }
    return LossResult(loss, metrics, kl.detach(), targets, log_ratio)
