"""The V-trace actor-critic loss (Espeholt et al. 2018, Section 4), composed from `shoal.ops`,
with the policy term left to the agent.

`vtrace_terms` runs the network over a batch once and computes what every V-trace agent's loss
builds on: the log-probabilities of the actions under the learner's π and the behaviour μ, the
V-trace targets `v_s` and policy-gradient advantages (standardised per batch when the config
says). The agent makes its policy term from them (IMPALA: the V-trace policy gradient; APPO:
PPO's clipped surrogate), and `vtrace_actor_critic_loss` adds the weighted baseline loss
`0.5 (v_s - V(x_s))^2` and entropy bonus. Each term is a mean over the `[T, B]` steps (over the
active ones where the unroll says which rows held an agent: a multi-agent env's absent agents
are not learned from).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import torch

from shoal import ops
from shoal.agents.vtrace_ac.batch import Batch, evaluate, masked_mean
from shoal.agents.vtrace_ac.config import VTraceConfig
from shoal.agents.vtrace_ac.networks import VTraceNet

__all__ = ["VTraceTerms", "vtrace_actor_critic_loss", "vtrace_terms"]


class VTraceTerms(NamedTuple):
    """What a V-trace agent's loss is made of, time-major."""

    logits: torch.Tensor  # π's logits [T, B, A], differentiable
    v_tm1: torch.Tensor  # V(x_t) [T, B], differentiable
    v_t: torch.Tensor  # V(x_{t+1}) [T, B], detached: the final observation's value at a truncation
    log_pi_a: torch.Tensor  # log π(a_t|x_t) [T, B], differentiable
    log_mu_a: torch.Tensor  # log μ(a_t|x_t) [T, B], the behaviour policy's
    log_rhos: torch.Tensor  # the log importance weights V-trace corrected with [T, B], detached
    targets: ops.VTraceReturns  # [T, B]
    advantages: torch.Tensor  # the policy-gradient advantages [T, B], standardised if asked
    active: torch.Tensor | None  # [T, B] bool: the rows that held an agent (None: all did)

    def mean(self, x: torch.Tensor) -> torch.Tensor:
        """The mean of `x` `[T, B]` over the active steps."""
        return masked_mean(x, self.active)


def vtrace_terms(
    net: VTraceNet,
    batch: Batch,
    config: VTraceConfig,
    *,
    log_target_a: torch.Tensor | None = None,
    unbiased_std: bool = False,
) -> VTraceTerms:
    """One pass of `net` (the learner's π) over `batch`, and the V-trace targets towards π, or
    towards the policy whose `log_target_a` `[T, B]` is given (APPO's target network).

    With `config.normalize_advantages` the advantages are centred and divided by their
    standard deviation over the active steps; `unbiased_std` takes Bessel's (torch's `std()`)
    where no row is masked, as IMPALA always has, rather than the population one (APPO's)."""
    logits, v_tm1, v_t = evaluate(net, batch)
    log_pi_a = ops.categorical_log_prob(logits, batch.actions)
    log_mu_a = ops.categorical_log_prob(batch.behaviour_logits, batch.actions)
    log_target = log_pi_a.detach() if log_target_a is None else log_target_a
    log_rhos = log_target - log_mu_a
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
    if config.normalize_advantages:
        # One scale for the policy gradient whatever the reward scale, so the entropy weight
        # means the same on every game (the PPO practice; the IMPALA paper does not do this).
        if unbiased_std and batch.active is None:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        else:
            centred = advantages - masked_mean(advantages, batch.active)
            scale = masked_mean(centred.square(), batch.active).sqrt()
            advantages = centred / (scale + 1e-8)
    return VTraceTerms(
        logits, v_tm1, v_t, log_pi_a, log_mu_a, log_rhos, targets, advantages, batch.active
    )


def vtrace_actor_critic_loss(
    terms: VTraceTerms,
    config: VTraceConfig,
    policy_loss: torch.Tensor,
    policy_metrics: Mapping[str, torch.Tensor] | None = None,
    penalty: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """`policy_loss + value_coef * value_loss - entropy_coef * entropy (+ penalty)` and its
    metrics (detached scalars), from the agent's policy term `policy_loss` (a mean over the
    active steps, `terms.mean`), its own metrics (listed after the entropy) and an optional
    `penalty` added last (APPO's weighted KL)."""
    value_loss = terms.mean(ops.value_loss(terms.v_tm1, terms.targets.vs))
    entropy = terms.mean(ops.categorical_entropy(terms.logits))
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    if penalty is not None:
        loss = loss + penalty
    metrics = {
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "entropy": entropy.detach(),
        **(policy_metrics or {}),
        "rho_mean": terms.targets.rhos.mean(),
        # Where the ratio V-trace corrected with exceeded ρ̄; the margin ignores float noise
        # between the actor's and the learner's passes.
        "rho_clip_fraction": (terms.log_rhos > math.log(config.rho_bar) + 1e-4).float().mean(),
    }
    return loss, metrics
