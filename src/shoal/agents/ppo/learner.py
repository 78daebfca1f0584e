"""PPO's learner: targets for a rollout, then epochs of minibatch updates of the clipped loss
(minibatches of steps, or of whole env sequences for a recurrent network)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from shoal.agents.actor_critic import CoreState, sequence_inputs, sequence_minibatches
from shoal.agents.base import NetworkLearner, Unroll, Update
from shoal.agents.common import LearningRateSchedule, legal_actions
from shoal.agents.ppo.config import PPOConfig
from shoal.agents.ppo.loss import (
    Minibatch,
    Sequences,
    ppo_loss,
    ppo_sequence_loss,
    rollout_targets,
    turn_targets,
)
from shoal.agents.ppo.networks import ActorCritic
from shoal.envs.spec import EnvSpec
from shoal.optim import Adam
from shoal.tree import map_tree


class PPOLearner(NetworkLearner):
    def __init__(self, spec: EnvSpec, config: PPOConfig, net: ActorCritic) -> None:
        self.config = config
        self.net = net
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate, eps=1e-5)
        self.version = 0
        self._return_acc: np.ndarray | None = None  # per-env discounted returns, for reward scaling

    def update(self, batch: Unroll, progress: float) -> Update:
        config, net = self.config, self.net
        remaining = max(0.0, 1.0 - progress)
        schedule = LearningRateSchedule(base=config.learning_rate, anneal=config.anneal_lr)
        learning_rate = schedule.value(progress)
        clip_eps = config.clip_eps * (remaining if config.anneal_clip else 1.0)
        self.optimizer.lr = learning_rate

        length, width = batch.length, batch.batch_size
        device = next(net.parameters()).device

        def tensor(x: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(x).to(device, non_blocking=True)

        obs = map_tree(tensor, batch.obs)
        terminated = tensor(batch.terminated)
        truncated = tensor(batch.truncated)
        rewards = tensor(self._scaled_rewards(batch))
        final_index = tensor(batch.final_index)
        with torch.no_grad():
            kept: dict[int, CoreState] = {}
            if net.recurrent:
                # Each env's whole sequence from the state its first step was acted from.
                starts, recorded = sequence_inputs(batch, net.initial_state(0).keys())
                first, state = tensor(starts), {k: tensor(v) for k, v in recorded.items()}
                t_trunc = final_index[:, 0].unique().tolist()
                unrolled = net.unroll(obs, first, state, t_trunc)
                values, kept = unrolled.values, unrolled.kept
            else:
                flat_obs = map_tree(lambda x: x.flatten(0, 1), obs)
                values = net.value(flat_obs).view(length + 1, width)
            v_t = values[1:].clone()
            if len(batch.final_index):
                t, b = final_index.unbind(1)
                v_t[t, b] = net.final_values(map_tree(tensor, batch.final_obs), final_index, kept)
        acting = _acting_steps(batch, obs, tensor)
        learn: torch.Tensor | None = None  # [T, B] bool: the steps to learn from (None: all)
        if acting is None:
            advantages, returns = rollout_targets(
                config, rewards, terminated, truncated, values[:-1], v_t
            )
        else:  # rows that act on some steps only (multi-agent rows, a league's learner seat)
            advantages, returns, learn = turn_targets(
                config, rewards, terminated, truncated, values[:-1], v_t, acting
            )
        actions = batch.extras.get("action", batch.actions)
        if net.recurrent:
            sequences = Sequences(
                obs=map_tree(lambda x: x[:-1], obs),
                first=first[:-1],
                state=state,
                actions=tensor(actions),
                old_log_prob=tensor(batch.extras["log_prob"]),
                old_values=values[:-1],
                advantages=advantages,
                returns=returns,
                active=learn,
            )
            data = sequences.flat()
            metrics = self._optimise_sequences(sequences, clip_eps)
        else:
            data = Minibatch(
                obs=map_tree(lambda x: x[:-1].flatten(0, 1), obs),
                actions=tensor(actions).flatten(0, 1),
                old_log_prob=tensor(batch.extras["log_prob"]).flatten(),
                old_values=values[:-1].flatten(),
                advantages=advantages.flatten(),
                returns=returns.flatten(),
            )
            if learn is not None:  # rows without an agent, or an opponent's, teach nothing
                keep = learn.flatten().nonzero().squeeze(1)
                data = Minibatch(*(map_tree(functools.partial(_rows, index=keep), f) for f in data))
            metrics = self._optimise(data, clip_eps)
        if net.obs_norm is not None:
            # After the update, so the epochs saw the normalisation the actor acted with.
            net.obs_norm.update(data.obs)
        self.version += 1
        y, v = data.returns, data.old_values
        metrics["explained_variance"] = float(1 - (y - v).var() / y.var().clamp_min(1e-8))
        metrics["learning_rate"] = learning_rate
        return Update(metrics)

    def _optimise(self, data: Minibatch, clip_eps: float) -> dict[str, float]:
        config = self.config
        size = data.actions.shape[0]
        if size == 0:  # no row held an agent
            return {}
        # minibatch_size None: the batch in num_minibatches parts, so any number of envs fits.
        wanted = config.minibatch_size or max(size // config.num_minibatches, 1)
        mb = min(wanted, size)  # a round that lost an actor is smaller

        def epoch() -> Iterator[tuple[torch.Tensor, dict[str, torch.Tensor]]]:
            order = torch.randperm(size).to(data.actions.device)
            for start in range(0, size - mb + 1, mb):
                index = order[start : start + mb]
                rows = functools.partial(_rows, index=index)
                minibatch = Minibatch(*(map_tree(rows, field) for field in data))
                yield ppo_loss(self.net, minibatch, config, clip_eps)

        return self._epochs(epoch)

    def _optimise_sequences(self, data: Sequences, clip_eps: float) -> dict[str, float]:
        """Minibatches of whole env columns (`sequence_minibatches`): a column's steps stay
        together and in order, so the LSTM sees each sequence as it was acted."""
        config = self.config
        length, width = data.first.shape
        # minibatch_size is in steps, a multiple of unroll_length (`validate`).
        wanted = (
            config.minibatch_size // length
            if config.minibatch_size
            else max(width // config.num_minibatches, 1)
        )

        def epoch() -> Iterator[tuple[torch.Tensor, dict[str, torch.Tensor]]]:
            for index in sequence_minibatches(width, wanted, data.first.device):
                minibatch = data.columns(index)
                if minibatch.active is not None and not minibatch.active.any():
                    continue  # no row of these columns held an agent
                yield ppo_sequence_loss(self.net, minibatch, config, clip_eps)

        return self._epochs(epoch)

    def _epochs(
        self, epoch: Callable[[], Iterator[tuple[torch.Tensor, dict[str, torch.Tensor]]]]
    ) -> dict[str, float]:
        """`num_epochs` passes of gradient steps on the losses `epoch()` yields; the mean of
        their diagnostics."""
        config = self.config
        sums: dict[str, float] = {}
        steps = 0
        for _ in range(config.num_epochs):
            epoch_kl = 0.0
            for loss, diagnostics in epoch():
                self.optimizer.zero_grad()
                loss.backward()
                if config.max_grad_norm > 0:
                    diagnostics["grad_norm"] = self.optimizer.clip_grad_norm(config.max_grad_norm)
                self.optimizer.step()
                for key, value in diagnostics.items():
                    sums[key] = sums.get(key, 0.0) + float(value)
                steps += 1
                epoch_kl = float(diagnostics["approx_kl"])
            if config.target_kl is not None and epoch_kl > config.target_kl:
                break
        return {key: value / max(steps, 1) for key, value in sums.items()}

    def _scaled_rewards(self, batch: Unroll) -> np.ndarray:
        norm = self.net.reward_norm
        if norm is None:
            return batch.rewards
        if self._return_acc is None or self._return_acc.shape[0] != batch.batch_size:
            self._return_acc = np.zeros(batch.batch_size, np.float64)
        # Running discounted return per env column (exact inline, where columns are fixed envs).
        returns = np.empty_like(batch.rewards, dtype=np.float64)
        ended = batch.terminated | batch.truncated
        for t in range(batch.length):
            self._return_acc = self._return_acc * self.config.gamma + batch.rewards[t]
            returns[t] = self._return_acc
            self._return_acc[ended[t]] = 0.0
        norm.update(torch.from_numpy(returns))
        scale = float((norm.var + norm.eps).sqrt())
        return np.clip(batch.rewards / scale, -norm.clip, norm.clip).astype(np.float32)


def _acting_steps(
    batch: Unroll, obs: Any, tensor: Callable[[np.ndarray], torch.Tensor]
) -> torch.Tensor | None:
    """`[T + 1, B]` bool: the steps each row acts on, for rows that act on some only (None:
    every row acts at every step). Step t: the env's `active` (the row's agent is present) and
    the policy's `learning` (the learner, not a league opponent, acted). Step T, past the
    unroll: the row's agent may move on its last observation (its action mask allows a move;
    without a mask, as at T - 1) and the row still plays the same seat (as at T - 1: if that
    step ended the game, step T is not needed)."""
    extras = batch.extras
    if "active" not in extras and "learning" not in extras:
        return None
    shape = batch.rewards.shape
    acting = np.ones(shape, bool)
    for key in ("active", "learning"):
        if key in extras:
            acting &= np.asarray(extras[key], bool)
    mask = legal_actions(obs)
    if mask is not None:
        last = mask[-1].any(-1).cpu().numpy()
        if "learning" in extras:
            last = last & np.asarray(extras["learning"][-1], bool)
    else:
        last = acting[-1]
    return tensor(np.concatenate([acting, last[None]]))


def _rows(tensor: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return tensor[index]
