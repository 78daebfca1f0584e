"""TRPO's targets, surrogate and policy step, composed from `shoal.ops` (Schulman et al. 2015,
Appendix C; GAE from Schulman et al. 2016)."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from shoal import ops
from shoal.agents.actor_critic import ActorCritic
from shoal.agents.trpo.config import TRPOConfig


class Batch(NamedTuple):
    """Flat samples of one rollout, `[N, ...]`."""

    obs: torch.Tensor
    actions: torch.Tensor
    behaviour_log_prob: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    values: torch.Tensor  # V(s_t) before the update


def rollout_targets(
    config: TRPOConfig,
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    v_tm1: torch.Tensor,
    v_t: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE advantages and the value function's targets `A + V(s_t)`, `[T, B]`.

    `v_t` holds the values of final observations where episodes were truncated (those
    bootstrap); terminations do not.
    """
    discount_t = config.gamma * (~terminated).float()
    advantages = ops.generalized_advantage_estimation(
        rewards, discount_t, v_tm1, v_t, config.gae_lambda, terminated | truncated
    )
    return advantages, advantages + v_tm1


def surrogate_and_kl(
    net: ActorCritic, batch: Batch, old: tuple[torch.Tensor, torch.Tensor | None]
) -> tuple[torch.Tensor, torch.Tensor]:
    """The surrogate `L(θ) = mean π_θ(a|s) / q(a|s) Â` (eq. 14, q the behaviour policy) and the
    mean KL `D̄_KL(θold, θ)` at the network's current parameters.

    `old`: the distribution's parameters under θold, detached: logits, or the Gaussian's mean
    and log-std.
    """
    params = net.policy(batch.obs)
    if net.discrete:
        log_prob = ops.categorical_log_prob(params, batch.actions)
        kl = ops.categorical_kl(old[0], params)
    else:
        log_std, old_log_std = net.log_std, old[1]
        assert log_std is not None and old_log_std is not None  # Gaussian policies have them
        log_prob = ops.gaussian_log_prob(params, log_std, batch.actions)
        kl = ops.gaussian_kl(old[0], old_log_std, params, log_std)
    ratio = torch.exp(log_prob - batch.behaviour_log_prob)
    return (ratio * batch.advantages).mean(), kl.mean()


class PolicyStep(NamedTuple):
    search: ops.LineSearch
    cg: ops.ConjugateGradient
    surrogate_before: float


def natural_policy_step(
    net: ActorCritic, params: list[nn.Parameter], batch: Batch, config: TRPOConfig
) -> PolicyStep:
    """One TRPO policy update of `params` in place (Appendix C): the natural-gradient direction
    `s` solving `(A + λI) s = g` by conjugate gradient on Fisher-vector products, then the
    line search from the step `sqrt(2δ / sᵀ(A + λI)s) s`. A rejected search leaves θold."""
    with torch.no_grad():
        log_std = net.log_std
        old = (net.policy(batch.obs), None if log_std is None else log_std.detach().clone())
    surrogate, kl = surrogate_and_kl(net, batch, old)
    gradients = torch.autograd.grad(surrogate, params, retain_graph=True, allow_unused=True)
    g = torch.cat(
        [
            torch.zeros_like(p).reshape(-1) if d is None else d.reshape(-1)
            for d, p in zip(gradients, params, strict=True)
        ]
    )
    fisher = ops.fisher_vector_product(kl, params)
    cg = ops.conjugate_gradient(
        fisher, g, config.cg_iters, config.cg_residual_tol, config.cg_damping
    )
    s = cg.x
    curvature = torch.dot(s, fisher(s) + config.cg_damping * s)
    theta_old = nn.utils.parameters_to_vector(params).detach().clone()

    @torch.no_grad()
    def evaluate(theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _load(params, theta)
        return surrogate_and_kl(net, batch, old)

    search = ops.backtracking_line_search(
        evaluate,
        theta_old,
        s,
        curvature,
        surrogate.detach(),
        config.max_kl,
        config.line_search_shrink,
        config.line_search_steps,
    )
    _load(params, search.theta)
    return PolicyStep(search, cg, float(surrogate.detach()))


@torch.no_grad()
def _load(params: list[nn.Parameter], theta: torch.Tensor) -> None:
    offset = 0
    for p in params:
        n = p.numel()
        p.copy_(theta[offset : offset + n].view_as(p))
        offset += n


def value_loss(net: ActorCritic, obs: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """`mean ½ (V(s) - R)²` on a minibatch: the value function is fitted by regression."""
    return ops.value_loss(net.value(obs), returns).mean()
