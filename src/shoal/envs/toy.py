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


class MaskedChoice(gym.Env):
    """A game whose legal actions change every step; an illegal action ends it with a penalty.

    Each step every one of `actions` actions is legal with probability 1/2 (at least one is;
    the first step of each episode has exactly one, so single-legal-action states are common),
    and one legal action is the cue, shown one-hot in `observation`. Taking the cue earns +1,
    another legal action 0, an illegal one `-penalty` and terminates the episode; episodes
    are truncated after `length` steps. The legal actions are given (as 0/1 int8) under
    `mask_key` of a Dict observation `{"observation", mask_key}` (`mask_in="observation"`, the
    PettingZoo classic convention; `mask_key="action_mask"` is what shoal masks actions by),
    or in `info["action_mask"]` with a Box observation (`mask_in="info"`, for
    `EnvConfig.action_mask_from_info`).

    Every illegal action taken, in any instance in this process, counts in the class's
    `illegal_actions` (and every step in `steps`), so a test can check that none was taken.
    A random legal policy returns about `length * 0.4`; a random one about `-penalty`.
    """

    illegal_actions = 0
    steps = 0

    def __init__(
        self,
        actions: int = 6,
        length: int = 16,
        penalty: float = 10.0,
        mask_in: str = "observation",
        mask_key: str = "action_mask",
    ) -> None:
        if mask_in not in ("observation", "info"):
            raise ValueError(f"mask_in must be 'observation' or 'info', got {mask_in!r}")
        self.actions, self.length, self.penalty = actions, length, penalty
        self.mask_in, self.mask_key = mask_in, mask_key
        cue = gym.spaces.Box(0.0, 1.0, (actions,), np.float32)
        mask = gym.spaces.Box(0, 1, (actions,), np.int8)
        self.observation_space = (
            gym.spaces.Dict({"observation": cue, mask_key: mask})
            if mask_in == "observation"
            else cue
        )
        self.action_space = gym.spaces.Discrete(actions)
        self.t = 0
        self.legal = np.ones(actions, np.int8)
        self.cue = 0

    def _draw(self) -> tuple[Any, dict[str, Any]]:
        if self.t == 0:
            self.legal = np.zeros(self.actions, np.int8)
            self.legal[self.np_random.integers(self.actions)] = 1
        else:
            self.legal = (self.np_random.random(self.actions) < 0.5).astype(np.int8)
            if not self.legal.any():
                self.legal[self.np_random.integers(self.actions)] = 1
        self.cue = int(self.np_random.choice(np.flatnonzero(self.legal)))
        cue = np.zeros(self.actions, np.float32)
        cue[self.cue] = 1.0
        if self.mask_in == "info":
            return cue, {"action_mask": self.legal.copy()}
        return {"observation": cue, self.mask_key: self.legal.copy()}, {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self._draw()

    def step(self, action: int):
        action = int(action)
        type(self).steps += 1
        if not self.legal[action]:
            type(self).illegal_actions += 1
            obs, info = self._draw()
            return obs, -self.penalty, True, False, info
        reward = 1.0 if action == self.cue else 0.0
        self.t += 1
        obs, info = self._draw()
        return obs, reward, False, self.t >= self.length, info


class HiddenVelocity(gym.ObservationWrapper):
    """CartPole with its velocities hidden: only cart position and pole angle are observed."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        box = env.observation_space
        self.observation_space = gym.spaces.Box(box.low[[0, 2]], box.high[[0, 2]], (2,), box.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[[0, 2]]


class ReachTarget(gym.Env):
    """One step with a continuous action: the observation is a target `x` in [-1, 1]^2, the
    action `a` in [-1, 1]^2, the reward `-|a - x|²`, then the episode terminates. The best
    return is 0; uniform random actions average -4/3. A continuous-control learner that finds
    `a = x` from its Q-function or its actor has learned; it takes a few thousand steps."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.target = np.zeros(2, np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.target = self.np_random.uniform(-1.0, 1.0, 2).astype(np.float32)
        return self.target.copy(), {}

    def step(self, action: np.ndarray):
        reward = -float(np.sum((np.asarray(action, np.float32) - self.target) ** 2))
        return self.target.copy(), reward, True, False, {}


def reach_target() -> gym.Env:
    """`ReachTarget`: `--env shoal.envs.toy:reach_target`."""
    return ReachTarget()


def repeat_first() -> gym.Env:
    """`RepeatFirst` with two cues and four blank steps: `--env shoal.envs.toy:repeat_first`."""
    return RepeatFirst()


def masked_choice() -> gym.Env:
    """`MaskedChoice` with its mask in the observation: `--env shoal.envs.toy:masked_choice`."""
    return MaskedChoice()


def masked_choice_info() -> gym.Env:
    """`MaskedChoice` with its mask in `info["action_mask"]` (train it with
    `--env.action-mask-from-info true`): `--env shoal.envs.toy:masked_choice_info`."""
    return MaskedChoice(mask_in="info")


def unmasked_choice() -> gym.Env:
    """`MaskedChoice` with the legal actions as an ordinary observation entry (`legal`), which
    the networks see but nothing masks by: the unmasked baseline of the same game."""
    return MaskedChoice(mask_key="legal")


def cartpole_no_velocity() -> gym.Env:
    """CartPole-v1 without velocities: `--env shoal.envs.toy:cartpole_no_velocity`."""
    return HiddenVelocity(gym.make("CartPole-v1"))


def countdown() -> gym.Env:
    return Countdown()


def nan_env() -> gym.Env:
    return Broken("nan")


def wrong_shape_env() -> gym.Env:
    return Broken("shape")
