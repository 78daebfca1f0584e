"""Resolve an environment id to how it is built: Gymnasium, Atari, MinAtar or a user's factory.

Ids:
- any registered Gymnasium id (`CartPole-v1`); `EnvConfig.import_module` is imported first, so
  a user's module can register its own ids;
- Atari ids `ALE/Pong-v5` and `PongNoFrameskip-v4`, with the standard preprocessing
  (`shoal.envs.atari`), served by envpool when installed (backend "auto") or by ale-py;
- `minatar:<game>` (`minatar:breakout`, ...);
- `package.module:function`, a zero-argument function returning a `gymnasium.Env` or a
  `dm_env.Environment` (adapted to Gymnasium).

Factories are `functools.partial`s of module-level functions, so they pickle for worker processes.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym

from shoal.envs.config import EnvConfig
from shoal.envs.spec import EnvSpec
from shoal.errors import EnvError, close_matches

EnvFactory = Callable[[], gym.Env]
MINATAR_PREFIX = "minatar:"


@dataclass(frozen=True)
class EnvSource:
    """How `env_id` is built: its family, the backend that steps it and a factory for one env."""

    env_id: str
    family: str  # "gymnasium" | "atari" | "minatar" | "factory"
    backend: str  # "gymnasium" | "ale-py" | "envpool" | "minatar" | "factory"
    factory: EnvFactory
    frames_per_step: int = 1


def _gymnasium_env(env_id: str) -> gym.Env:
    return gym.make(env_id)


def _atari_env(env_id: str, config: EnvConfig) -> gym.Env:
    from shoal.envs.atari import make_atari

    return make_atari(env_id, atari_options(config))


def _minatar_env(game: str, sticky_action_prob: float) -> gym.Env:
    from shoal.envs.minatar import make_minatar

    return make_minatar(game, sticky_action_prob=sticky_action_prob)


def _factory_env(path: str) -> gym.Env:
    env = _import_callable(path)()
    if isinstance(env, gym.Env):
        return env
    try:
        import dm_env
    except ImportError:
        dm_env = None
    if dm_env is not None and isinstance(env, dm_env.Environment):
        from shoal.envs.dm_env_adapter import DmEnvToGymnasium

        return DmEnvToGymnasium(env)
    raise EnvError(
        f"The factory {path!r} returned a {type(env).__name__}; it must return a gymnasium.Env "
        "or a dm_env.Environment."
    )


def _import_callable(path: str) -> Callable[[], object]:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise EnvError(f"Cannot import module {module_name!r} for env {path!r}: {err}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise EnvError(f"{module_name!r} has no callable {attr!r} to make env {path!r}.")
    return factory


def atari_options(config: EnvConfig):  # -> shoal.envs.atari.AtariOptions (imported lazily)
    from shoal.envs.atari import AtariOptions

    return AtariOptions(
        noop_max=config.noop_max,
        sticky_actions=config.sticky_actions,
        full_action_space=config.full_action_space,
        max_frames=config.max_frames,
        terminal_on_life_loss=config.terminal_on_life_loss,
    )


def _atari_source(env_id: str, config: EnvConfig) -> EnvSource:
    try:
        import ale_py  # ROMs ship inside ale-py 0.9+
    except ImportError:
        raise EnvError(
            f"{env_id} is an Atari game, and ale-py is not installed. Install the Atari extra: "
            "pip install 'shoal[atari]'."
        ) from None
    gym.register_envs(ale_py)
    if env_id not in gym.envs.registry:
        atari = [i for i in gym.envs.registry if i.startswith("ALE/") or "NoFrameskip" in i]
        hits = close_matches(env_id, atari)
        hint = f" Did you mean {' or '.join(repr(h) for h in hits)}?" if hits else ""
        raise EnvError(f"Unknown Atari game {env_id!r}.{hint} `shoal envs` lists the families.")
    from shoal.envs.envpool_vector import envpool_available

    if config.backend == "envpool" and not envpool_available():
        raise EnvError(
            "--env.backend envpool was asked for, and envpool is not installed "
            "(pip install envpool), or use --env.backend gymnasium."
        )
    use_envpool = config.backend == "envpool" or (config.backend == "auto" and envpool_available())
    factory = functools.partial(_atari_env, env_id, config)
    return EnvSource(env_id, "atari", "envpool" if use_envpool else "ale-py", factory, 4)


def _known_ids() -> list[str]:
    ids = list(gym.envs.registry)
    try:
        import ale_py

        gym.register_envs(ale_py)
        ids = list(gym.envs.registry)
    except ImportError:
        pass
    from shoal.envs.minatar_games import MINATAR_GAMES

    return ids + [MINATAR_PREFIX + game for game in MINATAR_GAMES]


def resolve_env(env_id: str, config: EnvConfig | None = None) -> EnvSource:
    """Where `env_id` comes from and how to build it, or a clear EnvError with close matches."""
    config = config or EnvConfig()
    if config.import_module:
        try:
            importlib.import_module(config.import_module)
        except ImportError as err:
            raise EnvError(
                f"Cannot import --env.import-module {config.import_module!r}: {err}"
            ) from None
    if env_id.startswith(MINATAR_PREFIX):
        from shoal.envs.minatar_games import MINATAR_GAMES

        game = env_id[len(MINATAR_PREFIX) :]
        if game not in MINATAR_GAMES:
            hits = close_matches(game, MINATAR_GAMES)
            hint = f" Did you mean {', '.join(MINATAR_PREFIX + h for h in hits)}?" if hits else ""
            raise EnvError(
                f"Unknown MinAtar game {game!r}.{hint} Games: {', '.join(MINATAR_GAMES)}."
            )
        factory = functools.partial(_minatar_env, game, config.minatar_sticky_prob)
        return EnvSource(env_id, "minatar", "minatar", factory)
    from shoal.envs.atari_ids import is_atari_id

    if is_atari_id(env_id):
        return _atari_source(env_id, config)
    if ":" in env_id:
        _import_callable(env_id)  # fail now, with a clear message, not in a worker later
        return EnvSource(env_id, "factory", "factory", functools.partial(_factory_env, env_id))
    if env_id in gym.envs.registry:
        return EnvSource(
            env_id, "gymnasium", "gymnasium", functools.partial(_gymnasium_env, env_id)
        )
    hits = close_matches(env_id, _known_ids())
    hint = f" Did you mean {' or '.join(repr(h) for h in hits)}?" if hits else ""
    raise EnvError(
        f"Unknown environment id {env_id!r}.{hint} Run `shoal envs` for the families shoal "
        "knows, or pass a factory as 'package.module:function'."
    )


def make_env_factory(env_id: str, config: EnvConfig | None = None) -> EnvFactory:
    """A picklable zero-argument function that builds one env for `env_id`."""
    return resolve_env(env_id, config).factory


def make_env(env_id: str, config: EnvConfig | None = None) -> gym.Env:
    """Build one env for `env_id`, turning a failure inside its constructor into an EnvError."""
    factory = make_env_factory(env_id, config)
    try:
        return factory()
    except EnvError:
        raise
    except Exception as err:
        raise EnvError(
            f"Making environment {env_id!r} failed: {type(err).__name__}: {err}"
        ) from None


def env_spec(env_id: str, config: EnvConfig | None = None) -> EnvSpec:
    """Spaces of `env_id`, read from one env that is then closed."""
    source = resolve_env(env_id, config)
    env = make_env(env_id, config)
    try:
        return EnvSpec(env_id, env.observation_space, env.action_space, source.frames_per_step)
    finally:
        env.close()


def make_vector_env(
    source: EnvSource, spec: EnvSpec, config: EnvConfig, num_envs: int, seed: int
):  # -> VectorEnv
    """The vector env an actor steps: envpool, worker processes or this process, per config."""
    if source.backend == "envpool":
        from shoal.envs.envpool_vector import EnvpoolVectorEnv

        options = atari_options(config)
        if not config.double_buffer or num_envs < 2:
            return EnvpoolVectorEnv(source.env_id, num_envs, seed, options)
        from shoal.envs.split_vector import SplitVectorEnv

        first = num_envs // 2  # env i keeps seed + i across the two pools
        threads = max(1, (os.cpu_count() or 2) // 2)  # the cores shared between the pools
        return SplitVectorEnv(
            [
                EnvpoolVectorEnv(source.env_id, first, seed, options, threads),
                EnvpoolVectorEnv(source.env_id, num_envs - first, seed + first, options, threads),
            ]
        )
    if config.vector == "subprocess":
        from shoal.envs.subprocess_vector import SubprocessVectorEnv

        return SubprocessVectorEnv([source.factory] * num_envs, spec, seed, config.num_workers)
    from shoal.envs.vector import InProcessVectorEnv

    return InProcessVectorEnv([source.factory] * num_envs, spec, seed)
