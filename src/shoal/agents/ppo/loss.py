"""PPO's loss, composed from `shoal.ops` (Schulman et al. 2017, eq. 9)."""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from shoal import ops
from shoal.agents.actor_critic import CoreState
from shoal.agents.ppo.config import PPOConfig
from shoal.agents.ppo.networks import ActorCritic
from shoal.tree import map_tree


class Minibatch(NamedTuple):
    """Flat samples, `[N, ...]`."""

    obs: torch.Tensor
    actions: torch.Tensor
    old_log_prob: torch.Tensor
    old_values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


class Sequences(NamedTuple):
    """Whole sequences for a recurrent network: one column per env, time-major `[T, B, ...]`,
    each column's steps in the order they were acted."""

    obs: Any  # [T, B, ...] (a dict of such for Dict observations)
    first: torch.Tensor  # [T, B] bool: obs[t] starts an episode (the cores' state is zeroed)
    state: CoreState  # {key: [B, H]}: the cores' state before obs[0], as the actor recorded it
    actions: torch.Tensor  # [T, B, ...]
    old_log_prob: torch.Tensor  # [T, B]
    old_values: torch.Tensor  # [T, B]
    advantages: torch.Tensor  # [T, B]
    returns: torch.Tensor  # [T, B]
    active: torch.Tensor | None  # [T, B] bool: the row held an agent (None: all did)

    def columns(self, index: torch.Tensor) -> Sequences:
        """The sequences of env columns `index` `[b]`, whole and in order."""

        def pick(x: torch.Tensor, axis: int) -> torch.Tensor:
            return x.index_select(axis, index)

        return Sequences(
            obs=map_tree(lambda x: pick(x, 1), self.obs),
            first=pick(self.first, 1),
            state={key: pick(value, 0) for key, value in self.state.items()},
            actions=pick(self.actions, 1),
            old_log_prob=pick(self.old_log_prob, 1),
            old_values=pick(self.old_values, 1),
            advantages=pick(self.advantages, 1),
            returns=pick(self.returns, 1),
            active=None if self.active is None else pick(self.active, 1),
        )

    def flat(self) -> Minibatch:
        """The steps as flat samples `[N, ...]` (the active ones where `active` is set)."""
        keep = None if self.active is None else self.active.flatten().nonzero().squeeze(1)
        return Minibatch(
            *(
                _flat(field, keep)
                for field in (
                    self.obs,
                    self.actions,
                    self.old_log_prob,
                    self.old_values,
                    self.advantages,
                    self.returns,
                )
            )
        )


def _flat(tree: Any, keep: torch.Tensor | None) -> Any:
    def one(x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(0, 1)
        return x if keep is None else x[keep]

    return map_tree(one, tree)


def rollout_targets(
    config: PPOConfig,
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    v_tm1: torch.Tensor,
    v_t: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE advantages and value targets `[T, B]`.

    `v_t` holds the values of final observations where episodes were truncated. Rewards are
    clipped to `[-reward_clip, reward_clip]` first when set (Mnih et al. 2015, for Atari).
    """
    if config.reward_clip is not None:
        rewards = rewards.clamp(-config.reward_clip, config.reward_clip)
    discount_t = config.gamma * (~terminated).float()
    end_t = terminated | truncated
    advantages = ops.generalized_advantage_estimation(
        rewards, discount_t, v_tm1, v_t, config.gae_lambda, end_t
    )
    return advantages, advantages + v_tm1


def turn_targets(
    config: PPOConfig,
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    v_tm1: torch.Tensor,
    v_t: torch.Tensor,
    acting: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GAE advantages and value targets `[T, B]` of rows that act only on some steps
    (`acting` `[T + 1, B]`: multi-agent rows, a turn-based game's players, a league's learner
    seat), over each row's own turns (`ops.turn_advantages`), and the steps to learn from
    (`[T, B]` bool: acting steps whose next turn lies in the unroll)."""
    if config.reward_clip is not None:
        rewards = rewards.clamp(-config.reward_clip, config.reward_clip)
    discount_t = config.gamma * (~terminated).float()
    turns = ops.turn_advantages(
        rewards, discount_t, v_tm1, v_t, config.gae_lambda, terminated | truncated, acting
    )
    return turns.advantages, turns.advantages + v_tm1, turns.valid


def ppo_loss(
    net: ActorCritic, batch: Minibatch, config: PPOConfig, clip_eps: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped surrogate + weighted value loss - weighted entropy, and its diagnostics."""
    params, values = net(batch.obs)
    return _clipped_loss(net, params, values, batch, config, clip_eps)


def ppo_sequence_loss(
    net: ActorCritic, sequences: Sequences, config: PPOConfig, clip_eps: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """`ppo_loss` of a recurrent network over whole sequences `[T, B]`: the cores run over each
    column in order from its recorded state, resetting where episodes start; the loss is then
    that of the (active) steps, as for flat samples."""
    unrolled = net.unroll(sequences.obs, sequences.first, sequences.state)
    batch = sequences.flat()
    keep = None if sequences.active is None else sequences.active.flatten().nonzero().squeeze(1)
    params, values = _flat(unrolled.params, keep), _flat(unrolled.values, keep)
    return _clipped_loss(net, params, values, batch, config, clip_eps)


def _clipped_loss(
    net: ActorCritic,
    params: torch.Tensor,
    values: torch.Tensor,
    batch: Minibatch,
    config: PPOConfig,
    clip_eps: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    if net.discrete:
        log_prob = ops.categorical_log_prob(params, batch.actions)
        entropy = ops.categorical_entropy(params)
    else:
        log_prob = ops.gaussian_log_prob(params, net.log_std, batch.actions)
        entropy = ops.gaussian_entropy(net.log_std, log_prob.shape)
    log_ratio = log_prob - batch.old_log_prob
    advantages = batch.advantages
    if config.normalize_advantages and advantages.numel() > 1:
        advantages = ops.normalize_advantages(advantages)
    policy_loss = ops.clipped_surrogate_loss(log_ratio, advantages, clip_eps).mean()
    if config.clip_value:
        value_loss = ops.clipped_value_loss(values, batch.old_values, batch.returns, clip_eps)
    else:
        value_loss = ops.value_loss(values, batch.returns)
    value_loss = value_loss.mean()
    entropy = entropy.mean()
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    diagnostics = {
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "entropy": entropy.detach(),
        "approx_kl": ops.approx_kl(log_ratio.detach()),
        "clip_fraction": ops.clip_fraction(log_ratio.detach(), clip_eps),
    }
    return loss, diagnostics
