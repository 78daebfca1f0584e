"""The value family's losses: DQN's TD errors and loss over a batch of n-step transitions, the
`LossResult` every Q loss returns (`shoal.agents.value.learner.QLoss`), and the sequence
priorities of R2D2 and Agent57.

Target of an m-step transition (discount = γ^m, 0 after a termination):

    y = R + discount · Q_target(s', a*),   a* = argmax_a Q_online(s', a)   (double Q)
                                           a* = argmax_a Q_target(s', a)   (otherwise)

with the argmax over the legal actions of s' where observations carry an action mask (carried
through replay packed with the observation, `shoal.agents.common.ObsPacking`), and the loss is
the importance-weighted Huber loss of `δ = y - Q_online(s, a)`.

With `config.distributional` (C51, Bellemare et al. 2017; Rainbow, Hessel et al. 2018) the
network gives a categorical return distribution per action, the target is the target network's
distribution at the same `a*`, shifted by R and scaled by the discount and projected onto the
atoms (`shoal.ops.categorical_double_q_learning`), the loss its importance-weighted
cross-entropy and the priority its KL divergence (`categorical_dqn_loss`). With
`config.quantile` (QR-DQN, Dabney et al. 2018) it gives quantiles of the return per action; the
target is the target network's quantiles at `a*` (by the means), shifted and scaled likewise,
and the loss the importance-weighted quantile Huber loss (`shoal.ops.quantile_double_q_learning`),
also the priority, as Rainbow's KL is (the paper replays uniformly). `transition_loss` picks one
of the three from the config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import torch

from shoal import ops
from shoal.agents.common.masks import legal_actions
from shoal.agents.value.config import DQNConfig
from shoal.agents.value.networks import QNet
from shoal.tree import map_tree


def _tensor(data: Mapping[str, np.ndarray], key: str, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(np.asarray(data[key])).to(device, non_blocking=True)


def _obs(data: Mapping[str, np.ndarray], key: str, net: QNet) -> Any:
    """Observations of a batch as the network takes them: a Dict observation (and its action
    mask) unpacked from the vector replay stores (`ObsPacking`)."""
    obs = _tensor(data, key, next(net.parameters()).device)
    packing = getattr(net, "obs_packing", None)  # user Q-networks may not have one
    return obs if packing is None else packing.unpack(obs)


def _tensors(data: Mapping[str, np.ndarray], net: QNet) -> dict[str, Any]:
    device = next(net.parameters()).device
    out: dict[str, Any] = {k: _tensor(data, k, device) for k in ("action", "reward", "discount")}
    return out | {k: _obs(data, k, net) for k in ("obs", "next_obs")}


def _best(q: torch.Tensor, next_obs: Any) -> torch.Tensor:
    """`argmax_a q(s', a)` over the legal actions of s' where it carries a mask."""
    legal = legal_actions(next_obs)
    return q.argmax(-1) if legal is None else ops.masked_argmax(q, legal)


def td_errors(
    online: QNet,
    target: QNet,
    data: Mapping[str, np.ndarray],
    config: DQNConfig,
    q_taken: torch.Tensor | None = None,
    next_online: torch.Tensor | None = None,
) -> torch.Tensor:
    """`δ [B]`; gradients flow through `q_taken` (Q_online(s, a)) when it is given.

    `next_online` (Q_online(s') `[B, A]`) saves a forward pass when the caller has it.
    """
    batch = _tensors(data, online)
    reward = batch["reward"]
    if config.reward_clip is not None:
        reward = reward.clamp(-config.reward_clip, config.reward_clip)
    with torch.no_grad():
        next_target = target(batch["next_obs"])
        if config.double_q:
            if online is target:
                next_online = next_target
            elif next_online is None:
                next_online = online(batch["next_obs"])
            choice = _best(next_online, batch["next_obs"])
        else:
            choice = _best(next_target, batch["next_obs"])
        bootstrap = next_target.gather(-1, choice[:, None]).squeeze(-1)
        y = reward + batch["discount"] * bootstrap
    if q_taken is None:
        with torch.no_grad():
            q_taken = online(batch["obs"]).gather(-1, batch["action"][:, None]).squeeze(-1)
    return y - q_taken


def _cat(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.cat([a, b])


class LossResult(NamedTuple):
    loss: torch.Tensor  # scalar, differentiable
    td_abs: torch.Tensor  # [B] detached, the new priorities: |δ| (R2D2: per sequence)
    metrics: dict[str, torch.Tensor]


def dqn_loss(
    online: QNet, target: QNet, data: Mapping[str, np.ndarray], config: DQNConfig
) -> LossResult:
    """Importance-weighted Huber loss of the TD errors of a sampled batch."""
    device = next(online.parameters()).device
    obs, action = _obs(data, "obs", online), _tensor(data, "action", device)
    next_online = None
    if config.double_q:
        # One online pass over s and s' together; only the s half carries gradients.
        both = online(map_tree(_cat, obs, _obs(data, "next_obs", online)))
        q, next_online = both[: len(action)], both[len(action) :].detach()
    else:
        q = online(obs)
    q_taken = q.gather(-1, action[:, None]).squeeze(-1)
    delta = td_errors(online, target, data, config, q_taken, next_online)
    if config.huber_delta == float("inf"):
        per_item = 0.5 * delta.square()
    else:
        per_item = ops.huber_loss(delta, config.huber_delta)
    weights = torch.from_numpy(np.asarray(data["weights"], np.float32)).to(device)
    loss = (weights * per_item).mean()
    metrics = {
        "loss": loss.detach(),
        "q_mean": q_taken.detach().mean(),
        "td_abs_mean": delta.detach().abs().mean(),
    }
    return LossResult(loss, delta.detach().abs(), metrics)


class _DistributionInputs(NamedTuple):
    batch: dict[str, Any]  # the batch's tensors (`_tensors`)
    reward: torch.Tensor  # [B], clipped as configured
    next_dist: torch.Tensor  # [B, A, N], the target network's at the bootstrap state
    selector: torch.Tensor  # [B, A], the Q-values that choose a*
    dist: torch.Tensor  # [B, A, N], the online network's at s (with gradients if given)


def _distribution_inputs(
    online: QNet,
    target: QNet,
    data: Mapping[str, np.ndarray],
    config: DQNConfig,
    head: str,
    dist: torch.Tensor | None,
    next_online_q: torch.Tensor | None,
) -> _DistributionInputs:
    """What the categorical and the quantile loss take alike. `head` is the networks' method
    giving distributions (`logits` or `quantiles`); a* is chosen by the online network's
    Q-values for double Q (`next_online_q` when the caller has them), else by the target
    network's own."""
    batch = _tensors(data, online)
    reward = batch["reward"]
    if config.reward_clip is not None:
        reward = reward.clamp(-config.reward_clip, config.reward_clip)
    with torch.no_grad():
        next_dist = getattr(target, head)(batch["next_obs"])
        if not config.double_q or online is target:
            selector = target.q_values(next_dist)
        else:
            selector = next_online_q if next_online_q is not None else online(batch["next_obs"])
        if dist is None:
            dist = getattr(online, head)(batch["obs"])
    return _DistributionInputs(batch, reward, next_dist, selector, dist)


def _online_distributions(
    online: QNet, data: Mapping[str, np.ndarray], config: DQNConfig, head: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The online network's distributions at s `[B, A, N]` (with gradients), the actions taken
    and, for double Q, its Q-values at s' `[B, A]`: one pass over s and s' together (one draw of
    the noisy layers' noise), only the s half carrying gradients."""
    device = next(online.parameters()).device
    obs, action = _obs(data, "obs", online), _tensor(data, "action", device)
    if not config.double_q:
        return getattr(online, head)(obs), action, None
    both = getattr(online, head)(map_tree(_cat, obs, _obs(data, "next_obs", online)))
    return both[: len(action)], action, online.q_values(both[len(action) :].detach())


def _weights(data: Mapping[str, np.ndarray], like: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.asarray(data["weights"], np.float32)).to(like.device)


def categorical_terms(
    online: QNet,
    target: QNet,
    data: Mapping[str, np.ndarray],
    config: DQNConfig,
    logits: torch.Tensor | None = None,
    next_online_q: torch.Tensor | None = None,
) -> ops.CategoricalLoss:
    """The categorical double-Q loss terms of a batch (cross-entropy and KL `[B]`, target).

    `logits` (the online logits at s, `[B, A, N]`) carry the gradients when given;
    `next_online_q` (Q_online(s') `[B, A]`) saves a forward pass when the caller has it.
    """
    x = _distribution_inputs(online, target, data, config, "logits", logits, next_online_q)
    return ops.categorical_double_q_learning(
        online.atoms,
        x.dist,
        x.batch["action"],
        x.reward,
        x.batch["discount"],
        x.next_dist,
        x.selector,
        legal_actions(x.batch["next_obs"]),
    )


def categorical_dqn_loss(
    online: QNet, target: QNet, data: Mapping[str, np.ndarray], config: DQNConfig
) -> LossResult:
    """Importance-weighted cross-entropy of the projected n-step distributional target; the
    priorities are the KL divergences (Hessel et al. 2018, section 3)."""
    logits, action, next_online_q = _online_distributions(online, data, config, "logits")
    terms = categorical_terms(online, target, data, config, logits, next_online_q)
    loss = (_weights(data, logits) * terms.cross_entropy).mean()
    kl = terms.kl.detach().clamp(min=0.0)  # >= 0 up to rounding
    q_taken = online.q_values(logits.detach()).gather(-1, action[:, None]).squeeze(-1)
    metrics = {"loss": loss.detach(), "q_mean": q_taken.mean(), "kl_mean": kl.mean()}
    return LossResult(loss, kl, metrics)


def quantile_terms(
    online: QNet,
    target: QNet,
    data: Mapping[str, np.ndarray],
    config: DQNConfig,
    theta: torch.Tensor | None = None,
    next_online_q: torch.Tensor | None = None,
) -> ops.QuantileLoss:
    """The quantile double-Q loss of a batch (`[B]`) and its target quantiles.

    `theta` (the online quantiles at s, `[B, A, N]`) carry the gradients when given;
    `next_online_q` (Q_online(s') `[B, A]`) saves a forward pass when the caller has it.
    """
    x = _distribution_inputs(online, target, data, config, "quantiles", theta, next_online_q)
    return ops.quantile_double_q_learning(
        x.dist,
        x.batch["action"],
        x.reward,
        x.batch["discount"],
        x.next_dist,
        x.selector,
        legal_actions(x.batch["next_obs"]),
        kappa=config.huber_delta,
    )


def quantile_dqn_loss(
    online: QNet, target: QNet, data: Mapping[str, np.ndarray], config: DQNConfig
) -> LossResult:
    """Importance-weighted quantile Huber loss of the n-step quantile targets (QR-DQN); the
    priorities are the per-transition losses."""
    theta, action, next_online_q = _online_distributions(online, data, config, "quantiles")
    terms = quantile_terms(online, target, data, config, theta, next_online_q)
    loss = (_weights(data, theta) * terms.loss).mean()
    per_item = terms.loss.detach()
    q_taken = online.q_values(theta.detach()).gather(-1, action[:, None]).squeeze(-1)
    metrics = {"loss": loss.detach(), "q_mean": q_taken.mean()}
    return LossResult(loss, per_item, metrics | {"quantile_loss_mean": per_item.mean()})


def transition_loss(
    online: QNet, target: QNet, data: Mapping[str, np.ndarray], config: DQNConfig
) -> LossResult:
    """`categorical_dqn_loss` when `config.distributional`, `quantile_dqn_loss` when
    `config.quantile`, else `dqn_loss`."""
    if getattr(config, "distributional", False):
        return categorical_dqn_loss(online, target, data, config)
    if getattr(config, "quantile", False):
        return quantile_dqn_loss(online, target, data, config)
    return dqn_loss(online, target, data, config)


def sequence_priorities(td_abs: torch.Tensor, mask: torch.Tensor, eta: float) -> torch.Tensor:
    """`η max_t |δ_t| + (1 - η) mean_t |δ_t|` over the masked steps of each sequence, `[B]`.

    `td_abs`, `mask`: `[T, B]`. Kapturowski et al. 2019, section 2.3: the max keeps a few large
    errors from being washed out by averaging over long sequences.
    """
    masked = td_abs * mask
    count = mask.sum(0).clamp(min=1.0)
    return eta * masked.max(0).values + (1.0 - eta) * masked.sum(0) / count
