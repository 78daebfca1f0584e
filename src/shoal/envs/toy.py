"""Tiny environments for tests and debugging, usable as `shoal.envs.toy:FUNCTION` factories."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class Countdown(gym.Env):
    """Observation is the step count; reward 1 per step; truncated (never terminated) at `length`.

    With `terminate_at`, the episode terminates there instead, so both ways of ending are testable.
    """

    def __init__(self, length: int = 5, terminate_at: int | None = None) -> None:
        self.observation_space = gym.spaces.Box(0.0, np.inf, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.length = length
        self.terminate_at = terminate_at
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action: int):
        self.t += 1
        obs = np.array([float(self.t)], np.float32)
        terminated = self.terminate_at is not None and self.t >= self.terminate_at
        return obs, 1.0, terminated, self.t >= self.length and not terminated, {}


class Broken(gym.Env):
    """Misbehaves at step `at_step`: returns NaN (`mode="nan"`) or a wrong shape (`"shape"`)."""

    def __init__(self, mode: str, at_step: int = 3) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.mode = mode
        self.at_step = at_step
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action: int):
        self.t += 1
        obs = np.zeros(3, np.float32)
        if self.t >= self.at_step:
            obs = np.full(3, np.nan, np.float32) if self.mode == "nan" else np.zeros(4, np.float32)
        return obs, 0.0, False, False, {}


class RepeatFirst(gym.Env):
    """A memory task: a cue shown only at the first step must be repeated at the last.

    The observation is `[cue one-hot (cues), query flag]`: the cue is visible at step 0 only,
    then the observation is blank for `delay` steps, and at the last step the query flag is set.
    The action there earns +1 if it names the cue and -1 otherwise; other steps earn 0. A
    memoryless policy cannot beat an expected return of `(2 - cues) / cues` (0 for two cues);
    one that remembers the cue earns 1.
    """

    def __init__(self, cues: int = 2, delay: int = 4) -> None:
        self.observation_space = gym.spaces.Box(0.0, 1.0, (cues + 1,), np.float32)
        self.action_space = gym.spaces.Discrete(cues)
        self.cues, self.delay = cues, delay
        self.t = 0
        self.cue = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.cues + 1, np.float32)
        if self.t == 0:
            obs[self.cue] = 1.0
        if self.t == self.delay + 1:
            obs[-1] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t = 0
        self.cue = int(self.np_random.integers(self.cues))
        return self._obs(), {}

    def step(self, action: int):
        query = self.t == self.delay + 1
        reward = (1.0 if int(action) == self.cue else -1.0) if query else 0.0
        self.t += 1
        return self._obs(), reward, query, False, {}


class HiddenVelocity(gym.ObservationWrapper):
    """CartPole with its velocities hidden: only cart position and pole angle are observed."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        box = env.observation_space
        self.observation_space = gym.spaces.Box(box.low[[0, 2]], box.high[[0, 2]], (2,), box.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[[0, 2]]


def repeat_first() -> gym.Env:
    """`RepeatFirst` with two cues and four blank steps: `--env shoal.envs.toy:repeat_first`."""
    return RepeatFirst()


def cartpole_no_velocity() -> gym.Env:
    """CartPole-v1 without velocities: `--env shoal.envs.toy:cartpole_no_velocity`."""
    return HiddenVelocity(gym.make("CartPole-v1"))


def countdown() -> gym.Env:
    return Countdown()


def nan_env() -> gym.Env:
    return Broken("nan")


def wrong_shape_env() -> gym.Env:
    return Broken("shape")
