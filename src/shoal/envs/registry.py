"""Resolve an environment id to a factory: Gymnasium ids and a user's `module:function`."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import gymnasium as gym

from shoal.errors import EnvError, did_you_mean

EnvFactory = Callable[[], gym.Env]


def _import_factory(env_id: str) -> EnvFactory:
    module_name, _, attr = env_id.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise EnvError(f"Cannot import module {module_name!r} for env {env_id!r}: {err}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise EnvError(f"{module_name!r} has no callable {attr!r} to make env {env_id!r}.")
    return factory


def make_env_factory(env_id: str) -> EnvFactory:
    """A zero-argument function that builds a fresh env for `env_id`, or a clear EnvError.

    `env_id` is a registered Gymnasium id (`CartPole-v1`) or a factory path
    (`my_package.envs:make_maze`) returning a `gymnasium.Env`.
    """
    if ":" in env_id and not env_id.startswith("ALE/"):
        return _import_factory(env_id)
    if env_id not in gym.envs.registry:
        raise EnvError(
            f"Unknown environment id {env_id!r}.{did_you_mean(env_id, gym.envs.registry)} "
            "Run `shoal list` for the environment families, or pass a factory as "
            "'package.module:function'."
        )
    return lambda: gym.make(env_id)


def make_env(env_id: str) -> gym.Env:
    """Build one env for `env_id` (see `make_env_factory`)."""
    env = make_env_factory(env_id)()
    if not isinstance(env, gym.Env):
        raise EnvError(
            f"The factory for {env_id!r} returned {type(env).__name__}, not a gymnasium.Env."
        )
    return env
