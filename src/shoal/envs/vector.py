"""An in-process vector of environments with same-step autoreset and episode bookkeeping.

When an episode ends at step t, `step` returns the first observation of the next episode in
`obs` and the last observation of the finished one in `final_obs`, so the learner can bootstrap
truncated episodes from their real final state and never mixes two episodes in one return.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from shoal.envs.registry import EnvFactory
from shoal.envs.spec import EnvSpec
from shoal.errors import EnvError


@dataclass
class VectorStep:
    """The result of one step of E environments."""

    obs: np.ndarray  # [E, ...] observation after the step (reset obs where an episode ended)
    reward: np.ndarray  # [E] float32
    terminated: np.ndarray  # [E] bool
    truncated: np.ndarray  # [E] bool
    final_obs: dict[int, np.ndarray] = field(default_factory=dict)  # env index -> last obs
    episode_returns: list[float] = field(default_factory=list)  # of episodes that ended here
    episode_lengths: list[int] = field(default_factory=list)


class VectorEnv(Protocol):
    """E environments stepped together with same-step autoreset (see the module docstring).

    Implementations: `InProcessVectorEnv`, `SubprocessVectorEnv`, the envpool adapter. All
    seed env i with `seed + i` on the first `reset`, return observations with the spec's shape
    and dtype, and raise `EnvError` naming the env and step for NaN or wrongly shaped output.
    """

    num_envs: int
    spec: EnvSpec

    def reset(self) -> np.ndarray: ...

    def step(self, actions: np.ndarray) -> VectorStep: ...

    def close(self) -> None: ...


class InProcessVectorEnv:
    """Steps E environments one after another in this process."""

    def __init__(self, factories: Sequence[EnvFactory], spec: EnvSpec, seed: int) -> None:
        self.envs = [make() for make in factories]
        self.spec = spec
        self.num_envs = len(self.envs)
        self.seed = seed
        self._obs = np.zeros((self.num_envs, *spec.obs_shape), spec.obs_dtype)
        self._check_finite = np.issubdtype(spec.obs_dtype, np.floating)
        self._returns = np.zeros(self.num_envs, np.float64)
        self._lengths = np.zeros(self.num_envs, np.int64)
        self._steps = 0
        self._discrete = spec.discrete
        for i, env in enumerate(self.envs):
            env.action_space.seed(seed + i)

    def reset(self) -> np.ndarray:
        """Reset all envs (env i seeded with seed + i) and return observations [E, ...]."""
        for i, env in enumerate(self.envs):
            obs, _ = env.reset(seed=self.seed + i)
            self._store(i, obs)
        self._returns[:] = 0
        self._lengths[:] = 0
        self._validate(self._obs)
        return self._obs.copy()

    def step(self, actions: np.ndarray) -> VectorStep:
        """Apply actions [E, ...] and return the batched result."""
        self._steps += 1
        rewards = np.empty(self.num_envs, np.float32)
        terminated = np.empty(self.num_envs, bool)
        truncated = np.empty(self.num_envs, bool)
        final_obs: dict[int, np.ndarray] = {}
        returns: list[float] = []
        lengths: list[int] = []
        for i, env in enumerate(self.envs):
            action = int(actions[i]) if self._discrete else actions[i]
            obs, reward, term, trunc, _ = env.step(action)
            rewards[i] = reward
            terminated[i] = term
            truncated[i] = trunc
            if term or trunc:
                final_obs[i] = self._checked(i, obs)
                returns.append(float(self._returns[i] + reward))
                lengths.append(int(self._lengths[i] + 1))
                self._returns[i] = 0
                self._lengths[i] = 0
                obs, _ = env.reset()
            else:
                self._returns[i] += reward
                self._lengths[i] += 1
            self._store(i, obs)
        self._validate(self._obs, rewards)
        return VectorStep(
            self._obs.copy(), rewards, terminated, truncated, final_obs, returns, lengths
        )

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def _checked(self, i: int, obs: object) -> np.ndarray:
        array = np.asarray(obs, dtype=self.spec.obs_dtype)
        if array.shape != self.spec.obs_shape:
            raise EnvError(
                f"{self.spec.env_id} (env {i}) returned an observation of shape {array.shape} "
                f"at step {self._steps}; its observation space says {self.spec.obs_shape}."
            )
        return array

    def _store(self, i: int, obs: object) -> None:
        try:
            self._obs[i] = obs
        except (ValueError, TypeError):
            self._checked(i, obs)  # raises a clear EnvError for a wrong shape
            raise

    def _validate(self, obs: np.ndarray, rewards: np.ndarray | None = None) -> None:
        # One vectorised check per step: cheap, and it names the env before NaN reaches the net.
        if self._check_finite and not np.isfinite(obs).all():
            bad = int(np.nonzero(~np.isfinite(obs.reshape(self.num_envs, -1)).all(1))[0][0])
            raise EnvError(
                f"{self.spec.env_id} (env {bad}) returned a non-finite observation (NaN or inf) "
                f"at step {self._steps}. Check the environment's dynamics or clip its output."
            )
        if rewards is not None and not np.isfinite(rewards).all():
            bad = int(np.nonzero(~np.isfinite(rewards))[0][0])
            raise EnvError(
                f"{self.spec.env_id} (env {bad}) returned a non-finite reward (NaN or inf) "
                f"at step {self._steps}."
            )
