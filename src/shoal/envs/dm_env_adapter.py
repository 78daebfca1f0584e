"""dm_env environments as Gymnasium envs, and Gymnasium envs as dm_env environments.

The two APIs say how an episode ends differently. dm_env (Muldal et al. 2019, "dm_env: A Python
interface for reinforcement learning environments") ends it with a LAST time step whose
`discount` is 0 for a termination and positive for a truncation (the value of the last state
still counts). Gymnasium (Towers et al. 2024) returns `terminated` and `truncated` flags. So:
LAST with discount 0 <-> terminated, LAST with discount > 0 <-> truncated. A discount below 1
on a mid-episode step has no Gymnasium equivalent and is passed on in `info["discount"]`.

Specs and spaces: `DiscreteArray` <-> `Discrete`, `BoundedArray` <-> `Box`, an unbounded `Array`
-> an unbounded `Box`, dicts <-> `Dict`, tuples <-> `Tuple`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dm_env
import gymnasium as gym
import numpy as np
from dm_env import specs

from shoal.errors import EnvError

__all__ = ["DmEnvToGymnasium", "GymnasiumToDmEnv", "space_to_spec", "spec_to_space"]


def spec_to_space(spec: Any) -> gym.spaces.Space:
    """The Gymnasium space of a dm_env spec (nested dicts and tuples of specs allowed)."""
    if isinstance(spec, Mapping):
        return gym.spaces.Dict({key: spec_to_space(value) for key, value in spec.items()})
    if isinstance(spec, tuple | list):
        return gym.spaces.Tuple(tuple(spec_to_space(value) for value in spec))
    if isinstance(spec, specs.DiscreteArray):
        return gym.spaces.Discrete(int(spec.num_values))
    if isinstance(spec, specs.BoundedArray):
        low = np.broadcast_to(spec.minimum, spec.shape).astype(spec.dtype)
        high = np.broadcast_to(spec.maximum, spec.shape).astype(spec.dtype)
        return gym.spaces.Box(low, high, spec.shape, spec.dtype)
    if isinstance(spec, specs.Array):
        dtype = np.dtype(spec.dtype)
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            return gym.spaces.Box(info.min, info.max, spec.shape, dtype)
        return gym.spaces.Box(-np.inf, np.inf, spec.shape, dtype)
    raise EnvError(
        f"Cannot turn the dm_env spec {spec!r} into a Gymnasium space; use Array, BoundedArray, "
        "DiscreteArray, or dicts and tuples of them."
    )


def space_to_spec(space: gym.spaces.Space, name: str) -> Any:
    """The dm_env spec of a Gymnasium space (nested Dict and Tuple spaces allowed)."""
    if isinstance(space, gym.spaces.Dict):
        return {key: space_to_spec(value, key) for key, value in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(space_to_spec(value, f"{name}_{i}") for i, value in enumerate(space.spaces))
    if isinstance(space, gym.spaces.Discrete):
        if int(space.start) == 0:
            return specs.DiscreteArray(int(space.n), np.int64, name)
        first = int(space.start)
        return specs.BoundedArray((), np.int64, first, first + int(space.n) - 1, name)
    if isinstance(space, gym.spaces.Box):
        return specs.BoundedArray(space.shape, space.dtype, space.low, space.high, name)
    if isinstance(space, gym.spaces.MultiBinary):
        return specs.BoundedArray(space.shape, np.int8, 0, 1, name)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return specs.BoundedArray(space.shape, np.int64, 0, space.nvec - 1, name)
    raise EnvError(
        f"Cannot turn the Gymnasium space {space} into a dm_env spec; use Box, Discrete, "
        "MultiBinary, MultiDiscrete, or Dict and Tuple spaces of them."
    )


def _to_space(value: Any, space: gym.spaces.Space) -> Any:
    """A dm_env value in the form `space` holds it."""
    if isinstance(space, gym.spaces.Dict):
        return {key: _to_space(value[key], sub) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_to_space(v, sub) for v, sub in zip(value, space.spaces, strict=True))
    if isinstance(space, gym.spaces.Discrete):
        return np.int64(value)
    return np.asarray(value, dtype=space.dtype)


def _to_spec(value: Any, spec: Any) -> Any:
    """A Gymnasium value as an array of `spec`'s dtype (nested like the spec)."""
    if isinstance(spec, Mapping):
        return {key: _to_spec(value[key], sub) for key, sub in spec.items()}
    if isinstance(spec, tuple | list):
        return tuple(_to_spec(v, sub) for v, sub in zip(value, spec, strict=True))
    return np.asarray(value, dtype=spec.dtype)


def _scalar_spec(spec: Any, what: str) -> None:
    if not isinstance(spec, specs.Array) or spec.shape != ():
        raise EnvError(
            f"The dm_env environment has a {what} spec {spec!r}; Gymnasium needs one scalar "
            f"{what} per step. Wrap the environment to sum or select its {what}s first."
        )


class DmEnvToGymnasium(gym.Env):
    """A `dm_env.Environment` seen as a `gymnasium.Env`.

    dm_env has no seeding API, so `reset(seed=...)` seeds only this adapter's `np_random`,
    unless `make_seeded(seed)` is given: it then builds the seeded environment that replaces
    the current one (bsuite's `Catch(seed=...)`, for example), making seeded runs reproducible.
    `reseed(env, seed)` instead seeds the environment in place (dm_control: its task's
    `RandomState`), where building it again would be costly.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012  (gymnasium's class attribute)

    def __init__(
        self,
        env: dm_env.Environment,
        *,
        make_seeded: Callable[[int], dm_env.Environment] | None = None,
        reseed: Callable[[dm_env.Environment, int], None] | None = None,
    ) -> None:
        _scalar_spec(env.reward_spec(), "reward")
        _scalar_spec(env.discount_spec(), "discount")
        self.env = env
        self.make_seeded = make_seeded
        self.reseed = reseed
        self.observation_space = spec_to_space(env.observation_spec())
        self.action_space = spec_to_space(env.action_spec())
        self._action_spec = env.action_spec()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None and self.reseed is not None:
            self.reseed(self.env, seed)
        elif seed is not None and self.make_seeded is not None:
            self.env.close()
            self.env = self.make_seeded(seed)
        timestep = self.env.reset()
        return _to_space(timestep.observation, self.observation_space), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        timestep = self.env.step(_to_spec(action, self._action_spec))
        if timestep.first():
            raise EnvError(
                "The dm_env environment started a new episode inside step(); with Gymnasium, "
                "call reset() after an episode ends (terminated or truncated)."
            )
        discount = float(timestep.discount)
        last = timestep.last()
        obs = _to_space(timestep.observation, self.observation_space)
        info = {} if last or discount == 1.0 else {"discount": discount}
        return obs, float(timestep.reward), last and discount == 0.0, last and discount > 0.0, info

    def close(self) -> None:
        self.env.close()


class GymnasiumToDmEnv(dm_env.Environment):
    """A `gymnasium.Env` seen as a `dm_env.Environment`.

    `terminated` gives `dm_env.termination` (discount 0), `truncated` gives `dm_env.truncation`
    (discount 1). As dm_env requires, a `step` on a fresh environment or after a LAST step
    starts a new episode and ignores its action. `seed` seeds the first reset only, so that
    later episodes draw fresh randomness from the same stream.
    """

    def __init__(self, env: gym.Env, seed: int | None = None) -> None:
        self.env = env
        self._seed = seed
        self._observation_spec = space_to_spec(env.observation_space, "observation")
        self._action_spec = space_to_spec(env.action_space, "action")
        self._needs_reset = True

    def reset(self) -> dm_env.TimeStep:
        obs, _ = self.env.reset(seed=self._seed)
        self._seed = None
        self._needs_reset = False
        return dm_env.restart(_to_spec(obs, self._observation_spec))

    def step(self, action: Any) -> dm_env.TimeStep:
        if self._needs_reset:
            return self.reset()
        obs, reward, terminated, truncated, _ = self.env.step(
            _to_space(action, self.env.action_space)
        )
        obs = _to_spec(obs, self._observation_spec)
        reward = np.float64(reward)
        if terminated or truncated:
            self._needs_reset = True
            if terminated:
                return dm_env.termination(reward, obs)
            return dm_env.truncation(reward, obs)
        return dm_env.transition(reward, obs)

    def observation_spec(self) -> Any:
        return self._observation_spec

    def action_spec(self) -> Any:
        return self._action_spec

    def close(self) -> None:
        self.env.close()
