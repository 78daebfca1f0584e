"""DQN's learner: inserts actors' transitions into replay and takes gradient steps at a fixed
replay ratio (samples per insert), with a periodic or Polyak target network.

R2D2 (`shoal.agents.r2d2`) reuses `DQNLearner` with its own loss and a sequence replay: the
learner only needs `loss(online, target, sample, config) -> LossResult` and a replay with
`TransitionReplay`'s methods, whatever the sampled items are.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from shoal.agents.base import NetworkLearner, Transitions
from shoal.agents.dqn.config import DQNConfig
from shoal.agents.dqn.loss import LossResult, dqn_loss
from shoal.agents.dqn.networks import QNet
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.optim import Adam
from shoal.replay import TransitionReplay


def stored_frame_stack(spec: EnvSpec) -> int:
    """How many stacked frames an observation holds that replay can store once each (Atari: 4
    uint8 frames of one image per agent step), else 1."""
    shape = spec.obs_shape
    stacked = spec.frames_per_step > 1 and spec.obs_dtype == np.uint8 and len(shape) == 3
    return shape[0] if stacked else 1


def make_replay(spec: EnvSpec, config: DQNConfig, shards: int = 1) -> TransitionReplay:
    """One of `shards` replays for `spec`'s observations, holding `replay_capacity / shards`
    transitions; stacked Atari frames are stored once each."""
    if spec.dict_obs:
        raise ConfigError(
            f"DQN's replay stores Box observations; {spec.env_id} has Dict observations. Use "
            "PPO or IMPALA, or flatten the observation in your env factory."
        )
    return TransitionReplay(
        max(2, -(-config.replay_capacity // shards)),
        spec.obs_shape,
        spec.obs_dtype,
        frame_stack=stored_frame_stack(spec),
        prioritized=config.prioritized,
        alpha=config.priority_alpha,
        eps=config.priority_eps,
    )


class ReplayRates:
    """Inserted and sampled transition counts, and their rates since the last report."""

    def __init__(self) -> None:
        self.inserted = self.sampled = 0
        self._last = (time.perf_counter(), 0, 0)

    def report(self) -> dict[str, float]:
        now = time.perf_counter()
        then, inserted, sampled = self._last
        seconds = max(now - then, 1e-9)
        self._last = (now, self.inserted, self.sampled)
        return {
            "replay_inserted": float(self.inserted),
            "replay_sampled": float(self.sampled),
            "replay_ratio": self.sampled / max(self.inserted, 1),
            "inserts_per_s": (self.inserted - inserted) / seconds,
            "samples_per_s": (self.sampled - sampled) / seconds,
        }


Loss = Callable[[Any, Any, Mapping[str, np.ndarray], Any], LossResult]


class DQNLearner(NetworkLearner):
    """Owns the online and target networks, the optimiser and (by default) the replay.

    `update(items, progress)` inserts, then takes gradient steps while the items (transitions,
    or R2D2's sequences) sampled since learning started stay within `samples_per_insert` times
    those inserted since. A `replay` object with the same methods as `TransitionReplay` (e.g.
    remote shards) can be passed instead of the one `replay_factory(spec, config)` builds.
    `loss(online, target, sample, config)` gives the loss and the new priorities (`td_abs`).
    The config needs DQNConfig's learning-rate, replay, target and priority fields.
    """

    def __init__(
        self,
        spec: EnvSpec,
        config: DQNConfig,
        net: QNet,
        replay: Any | None = None,
        *,
        loss: Loss = dqn_loss,
        replay_factory: Callable[[EnvSpec, Any], Any] = make_replay,
    ) -> None:
        self.config = config
        self.net = net
        self.loss = loss
        self.target = copy.deepcopy(net).requires_grad_(False)
        self.optimizer = Adam(net.parameters(), lr=config.learning_rate, eps=config.adam_eps)
        self.replay = replay if replay is not None else replay_factory(spec, config)
        self.rng = np.random.default_rng(int(torch.initial_seed()) % 2**32)
        self.version = 0
        self.gradient_steps = 0
        self.rates = ReplayRates()
        self._learning_inserts = 0  # inserted since the replay reached min_replay_size

    def update(
        self, batch: Transitions | Sequence[Transitions], progress: float
    ) -> dict[str, float]:
        """Insert `batch`, then learn until the replay ratio is met; metrics of this call."""
        items = [batch] if isinstance(batch, Transitions) else list(batch)
        for item in items:
            count = item.count
            if count:
                if item.data is not None:  # None: the actor inserted them into a replay shard
                    self.replay.add(item.data)
                self.rates.inserted += count
                if len(self.replay) >= self.config.min_replay_size:
                    self._learning_inserts += count
        return self.learn(progress)

    def learn(self, progress: float) -> dict[str, float]:
        config = self.config
        sums: dict[str, float] = {}
        steps = 0
        budget = config.samples_per_insert * self._learning_inserts
        while (
            len(self.replay) >= max(config.min_replay_size, 1)
            and self.rates.sampled + config.batch_size <= budget
        ):
            for key, value in self.step(progress).items():
                sums[key] = sums.get(key, 0.0) + value
            steps += 1
        metrics = {key: total / steps for key, total in sums.items()}
        metrics |= self.rates.report()
        metrics["replay_size"] = float(len(self.replay))
        metrics["gradient_steps"] = float(self.gradient_steps)
        return metrics

    def step(self, progress: float) -> dict[str, float]:
        """One gradient step on a sampled batch; new priorities go back to the replay."""
        config = self.config
        beta = config.priority_beta + progress * (config.priority_beta_end - config.priority_beta)
        sample = self.replay.sample(config.batch_size, beta, self.rng)
        result = self.loss(self.net, self.target, sample, config)
        self.optimizer.zero_grad()
        result.loss.backward()
        grad_norm = self.optimizer.clip_grad_norm(config.max_grad_norm or math.inf)
        self.optimizer.step()
        if config.prioritized:
            priorities = result.td_abs.cpu().numpy() + config.priority_eps
            self.replay.update_priorities(sample["indices"], priorities)
        self.rates.sampled += config.batch_size
        self.gradient_steps += 1
        self.version += 1
        self._update_target()
        metrics = {key: float(value) for key, value in result.metrics.items()}
        metrics["grad_norm"] = float(grad_norm)
        metrics["importance_weight_mean"] = float(np.mean(sample["weights"]))
        metrics["priority_beta"] = beta
        return metrics

    @torch.no_grad()
    def _update_target(self) -> None:
        tau = self.config.target_tau
        if tau < 1.0:
            for target, online in zip(self.target.parameters(), self.net.parameters(), strict=True):
                target.lerp_(online, tau)
        elif self.gradient_steps % self.config.target_update_period == 0:
            self.target.load_state_dict(self.net.state_dict())

    def state_dict(self) -> dict[str, Any]:
        # The replay is not checkpointed: a resumed run refills it before learning again.
        state = super().state_dict()
        state["target"] = self.target.state_dict()
        state["gradient_steps"] = self.gradient_steps
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)
        self.target.load_state_dict(state["target"])
        self.gradient_steps = int(state["gradient_steps"])
