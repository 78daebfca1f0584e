"""DQN's actor side: epsilon-greedy acting, n-step transitions and their initial priorities.

Ape-X (Horgan et al. 2018) has each actor assemble n-step transitions and compute their
initial priorities `|δ|` with its own copy of the network, so new experience enters replay with
an informed priority rather than the maximum. `prepare` does both for each unroll.
"""

from __future__ import annotations

import numpy as np
import torch

from shoal.agents.base import Transitions, Unroll, Weights
from shoal.agents.dqn.config import DQNConfig
from shoal.agents.dqn.loss import td_errors
from shoal.agents.dqn.networks import QNet
from shoal.envs.spec import EnvSpec
from shoal.replay import NStepAccumulator

# Each actor's envs get their own replay streams: actor i owns ids [i * STREAMS, (i + 1) * STREAMS).
STREAMS_PER_ACTOR = 1 << 20


class DQNPolicy:
    """Epsilon-greedy on Q for E environments; `prepare(unroll)` makes n-step transitions."""

    acts_per_env = True  # no per-env state: a double-buffered collector may act on part of the envs

    def __init__(self, spec: EnvSpec, config: DQNConfig, net: QNet, seed: int) -> None:
        self.config = config
        self.net = net
        self.version = 0
        self.rng = np.random.default_rng(seed)
        self.actor_index, self.num_actors = 0, 1
        self.steps = 0  # agent steps this actor has taken (per env step, not per vector step)
        self._nstep: NStepAccumulator | None = None

    def set_actor_index(self, index: int, count: int) -> None:
        self.actor_index, self.num_actors = index, count

    @property
    def epsilon(self) -> float:
        return self.config.epsilon(self.steps, self.actor_index, self.num_actors)

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        with torch.inference_mode():
            greedy = self.net(torch.from_numpy(obs)).argmax(-1).numpy()
        width = len(greedy)
        explore = self.rng.random(width) < self.epsilon
        random = self.rng.integers(0, self.net.num_actions, width)
        self.steps += width
        return np.where(explore, random, greedy), {}

    def prepare(self, unroll: Unroll) -> Transitions:
        """The n-step transitions this unroll completes, with initial priorities if prioritised.

        Transitions of steps near the unroll's end wait in the accumulator for the next unroll's
        rewards, so each is sent exactly once, with its full n steps.
        """
        config = self.config
        if self._nstep is None:
            streams = self.actor_index * STREAMS_PER_ACTOR + np.arange(unroll.batch_size)
            self._nstep = NStepAccumulator(unroll.batch_size, config.n_step, config.gamma, streams)
        final = {}
        for k, (t, b) in enumerate(unroll.final_index):
            final.setdefault(int(t), {})[int(b)] = unroll.final_obs[k]
        parts = []
        for t in range(unroll.length):
            ended = unroll.terminated[t] | unroll.truncated[t]
            # A terminated episode bootstraps from nothing: its next_obs only fills the slot.
            final_obs = {int(b): unroll.obs[t + 1, b] for b in np.flatnonzero(ended)}
            final_obs |= final.get(t, {})
            parts.append(
                self._nstep.step(
                    unroll.obs[t],
                    unroll.actions[t],
                    unroll.rewards[t],
                    unroll.terminated[t],
                    unroll.truncated[t],
                    unroll.obs[t + 1],
                    final_obs,
                )
            )
        data = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        if config.prioritized and len(data["reward"]):
            data["priority"] = self.initial_priorities(data)
        steps = unroll.length * unroll.batch_size
        return Transitions(data, steps, unroll.behaviour_version)

    @torch.inference_mode()
    def initial_priorities(self, data: dict[str, np.ndarray]) -> np.ndarray:
        """`|δ|` of each transition under this actor's weights (its own copy as the target)."""
        errors = td_errors(self.net, self.net, data, self.config)
        return (errors.abs() + self.config.priority_eps).cpu().numpy().astype(np.float32)

    def load_weights(self, weights: Weights, version: int) -> None:
        if version > self.version:
            self.net.load_state_dict(weights)
            self.version = version


class DQNEvalPolicy:
    """Greedy on Q when deterministic; else epsilon-greedy with `eval_epsilon`."""

    def __init__(self, spec: EnvSpec, config: DQNConfig, net: QNet, deterministic: bool) -> None:
        self.net = net
        self.epsilon = 0.0 if deterministic else config.eval_epsilon
        self.rng = np.random.default_rng(0)

    def act(self, obs: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            greedy = self.net(torch.from_numpy(obs)).argmax(-1).numpy()
        explore = self.rng.random(len(greedy)) < self.epsilon
        return np.where(explore, self.rng.integers(0, self.net.num_actions, len(greedy)), greedy)
