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


def countdown() -> gym.Env:
    return Countdown()


def nan_env() -> gym.Env:
    return Broken("nan")


def wrong_shape_env() -> gym.Env:
    return Broken("shape")
