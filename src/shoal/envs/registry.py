"""Resolve an environment id to how it is built: Gymnasium, Atari, MinAtar or a user's factory.

Ids:
- any registered Gymnasium id (`CartPole-v1`); `EnvConfig.import_module` is imported first, so
  a user's module can register its own ids;
- Atari ids `ALE/Pong-v5` and `PongNoFrameskip-v4`, with the standard preprocessing
  (`shoal.envs.atari`), served by envpool when installed (backend "auto") or by ale-py;
- `minatar:<game>` (`minatar:breakout`, ...);
- `pettingzoo:<module>` (`pettingzoo:mpe.simple_spread_v3`), a PettingZoo parallel env whose
  agents are rows of the batch (`shoal.envs.pettingzoo_family`);
- `tictactoe` and `connect_four`, PettingZoo's turn-based classic games, their players rows of
  the batch (`shoal.envs.turn_based`);
- `vizdoom:<scenario>` (`vizdoom:basic`, ..., or `vizdoom:PATH.cfg`), with Sample Factory's
  preprocessing (`shoal.envs.vizdoom`);
- `package.module:function`, a function returning a `gymnasium.Env` or a `dm_env.Environment`
  (adapted to Gymnasium), called with no argument or, if it takes one, with the env copy's seed.

Every factory converts observations shoal's networks cannot take as they are
(`shoal.envs.observations`: channels-last images, Discrete entries, text), so everything that
makes envs from an `EnvSource` sees the same observation space.

Python callers may also pass an env object (`source_of`): a `gymnasium.Env` (each env copy is a
`copy.deepcopy` of it), a function as above, or a Gymnasium vector env (its first env function,
or its registered id, makes each copy). Such a run's config records a description in angle
brackets (`<env object CartPole-v1>`), which `is_env_object` recognises, since no id rebuilds it.

Factories are `functools.partial`s of module-level functions, so they pickle for worker processes
(a user's function or env object is pickled with them, by Ray's cloudpickle on ray).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from shoal.envs.agent_rows import AgentRows
from shoal.envs.config import EnvConfig
from shoal.envs.observations import ConvertedObservations, ImageLayout, adapt_observations
from shoal.envs.spec import EnvFactory, EnvSpec
from shoal.envs.turn_based import TurnRows
from shoal.errors import EnvError, ShoalWarning, close_matches

MINATAR_PREFIX = "minatar:"
VIZDOOM_PREFIX = "vizdoom:"


@dataclass(frozen=True)
class EnvSource:
    """How `env_id` is built: its family, the backend that steps it and a factory for one env."""

    env_id: str
    # "gymnasium" | "atari" | "minatar" | "dm_control" | "minigrid" | "pettingzoo" | "vizdoom"
    # | "factory"
    family: str
    backend: str  # the family's, or "ale-py" | "envpool" for Atari
    factory: EnvFactory
    frames_per_step: int = 1
    like: str | None = None  # an env object's registered id, whose presets apply to it
    num_envs: int | None = None  # a vector env object's number of envs


def _adapted_env(
    make: EnvFactory, image_layout: ImageLayout, minigrid_image: str, mask_from_info: bool = False
) -> gym.Env:
    return adapt_observations(make(), image_layout, minigrid_image, mask_from_info)  # type: ignore[arg-type]


def _adapted(source: EnvSource, config: EnvConfig) -> EnvSource:
    if source.family == "pettingzoo":  # converts each agent's observations itself
        return source
    factory = functools.partial(
        _adapted_env,
        source.factory,
        config.image_layout,
        config.minigrid_image,
        config.action_mask_from_info,
    )
    return dataclasses.replace(source, factory=factory)


def _gymnasium_env(env_id: str, **kwargs: Any) -> gym.Env:
    return gym.make(env_id, **kwargs)


def _atari_env(env_id: str, config: EnvConfig) -> gym.Env:
    from shoal.envs.atari import make_atari

    return make_atari(env_id, atari_options(config))


def _minatar_env(game: str, sticky_action_prob: float) -> gym.Env:
    from shoal.envs.minatar import make_minatar

    return make_minatar(game, sticky_action_prob=sticky_action_prob)


def _vizdoom_env(scenario: str, config: EnvConfig) -> gym.Env:
    from shoal.envs.vizdoom import make_vizdoom

    return make_vizdoom(
        scenario,
        frame_skip=config.vizdoom_frame_skip,
        width=config.vizdoom_width,
        height=config.vizdoom_height,
        grey=config.vizdoom_grey,
        game_variables=config.vizdoom_game_variables,
        max_buttons=config.vizdoom_max_buttons,
        scenario_dir=config.vizdoom_scenario_dir,
    )


def _vizdoom_source(env_id: str, config: EnvConfig) -> EnvSource:
    if importlib.util.find_spec("vizdoom") is None:
        raise EnvError(
            f"{env_id} is a ViZDoom scenario, and vizdoom is not installed. Install the ViZDoom "
            "extra: pip install 'shoal[vizdoom]'."
        )
    from shoal.envs.vizdoom import scenario_config_path

    scenario = env_id[len(VIZDOOM_PREFIX) :]
    scenario_config_path(scenario, config.vizdoom_scenario_dir)  # fail now, not in a worker
    if config.vizdoom_game_variables and config.vector == "subprocess":
        raise EnvError(
            f"{env_id} with --env.vizdoom-game-variables true gives Dict observations, which "
            "--env.vector subprocess cannot share (it shares one image array per env). Use "
            "--env.vector inline (each ViZDoom game already runs in an engine process of its "
            "own), or leave the game variables out."
        )
    factory = functools.partial(_vizdoom_env, scenario, config)
    return EnvSource(env_id, "vizdoom", "vizdoom", factory, config.vizdoom_frame_skip)


def _factory_env(path: str) -> gym.Env:
    return _built(_import_callable(path), repr(path))


def _callable_env(make: Callable[..., Any]) -> gym.Env:
    return _built(make, _callable_name(make))


def _built(make: Callable[..., Any], what: str) -> gym.Env:
    """The Gymnasium env `make` returns. A `make` that takes a seed is built again with each
    seed `reset` is given, so every env copy of a vector env has its own seeded env (dm_env has
    no other way to seed one)."""
    seeded = _seeded(make)
    if seeded is None:
        return _as_gymnasium(make(), what)
    first = seeded(0)
    if _is_dm_env(first):
        from shoal.envs.dm_env_adapter import DmEnvToGymnasium

        return DmEnvToGymnasium(first, make_seeded=seeded)
    return _Reseeded(lambda seed: _as_gymnasium(seeded(seed), what), _as_gymnasium(first, what))


def _seeded(make: Callable[..., Any]) -> Callable[[int], Any] | None:
    """`make` as a function of the seed if it takes one (a parameter named `seed`, or one
    parameter it requires), else None."""
    try:
        params = inspect.signature(make).parameters
    except (TypeError, ValueError):  # some builtins and C callables have no signature
        return None
    if "seed" in params:
        return lambda seed: make(seed=seed)
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    required = [p for p in params.values() if p.default is p.empty and p.kind not in variadic]
    return make if len(required) == 1 else None


def _is_dm_env(env: object) -> bool:
    try:
        import dm_env
    except ImportError:
        return False
    return isinstance(env, dm_env.Environment)


def _as_gymnasium(env: object, what: str) -> gym.Env:
    if isinstance(env, gym.Env):
        return env
    if _is_dm_env(env):
        from shoal.envs.dm_env_adapter import DmEnvToGymnasium

        return DmEnvToGymnasium(env)
    raise EnvError(
        f"The factory {what} returned a {type(env).__name__}; it must return a gymnasium.Env "
        "or a dm_env.Environment."
    )


class _Reseeded(gym.Wrapper):
    """A Gymnasium env from a factory taking a seed, made again by a `reset` with another seed."""

    def __init__(self, make: Callable[[int], gym.Env], env: gym.Env) -> None:
        super().__init__(env)
        self._make, self._seed = make, 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None and seed != self._seed:
            self.env.close()
            self.env, self._seed = self._make(seed), seed
        return self.env.reset(seed=seed, options=options)


def _import_callable(path: str) -> Callable[[], object]:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise EnvError(f"Cannot import module {module_name!r} for env {path!r}: {err}") from None
    except (Exception, SystemExit) as err:  # the module's own code failed while importing
        what = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        raise EnvError(
            f"Importing module {module_name!r} for env {path!r} raised {what}. The error is "
            f"in that module's own code, run when it is imported: `python -c 'import "
            f"{module_name}'` shows where."
        ) from None
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
    from shoal.envs.turn_based import CLASSIC_GAMES
    from shoal.envs.vizdoom import SCENARIOS

    return (
        ids
        + [MINATAR_PREFIX + game for game in MINATAR_GAMES]
        + [VIZDOOM_PREFIX + name for name in SCENARIOS]
        + list(CLASSIC_GAMES)
    )


def resolve_env(env_id: str, config: EnvConfig | None = None) -> EnvSource:
    """Where `env_id` comes from and how to build it, or a clear EnvError with close matches."""
    config = config or EnvConfig()
    return _adapted(_resolve(env_id, config), config)


def _resolve(env_id: str, config: EnvConfig) -> EnvSource:
    if config.import_module:
        try:
            importlib.import_module(config.import_module)
        except ImportError as err:
            raise EnvError(
                f"Cannot import --env.import-module {config.import_module!r}: {err}"
            ) from None
    from shoal.envs.suites import suite_source

    suite = suite_source(env_id, config)
    if suite is not None:
        return suite
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
    from shoal.envs.pettingzoo_family import PETTINGZOO_PREFIX, pettingzoo_factory
    from shoal.envs.turn_based import CLASSIC_GAMES, classic_factory

    if env_id in CLASSIC_GAMES and env_id not in gym.envs.registry:
        return EnvSource(env_id, "pettingzoo", "pettingzoo", classic_factory(env_id))
    if env_id.startswith(PETTINGZOO_PREFIX):
        factory = pettingzoo_factory(env_id, config.agent_id, config.image_layout)
        return EnvSource(env_id, "pettingzoo", "pettingzoo", factory)
    if env_id.startswith(VIZDOOM_PREFIX):
        return _vizdoom_source(env_id, config)
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


def is_env_object(env_id: str) -> bool:
    """Whether a recorded env id describes an env object (which must be passed again)."""
    return env_id.startswith("<")


def source_of(env: Any, config: EnvConfig | None = None) -> EnvSource:
    """How to build `env`: an id or `module:function` string (`resolve_env`), a gymnasium.Env,
    a function making one (or a dm_env.Environment), or a Gymnasium vector env."""
    config = config or EnvConfig()
    if config.vector == "numpy":
        _check_numpy_vector(env)
    if isinstance(env, str):
        return resolve_env(env, config)
    if isinstance(env, gym.vector.VectorEnv):
        return _adapted(_vector_source(env), config)
    if isinstance(env, gym.Env):
        return _adapted(_instance_source(env), config)
    if _is_dm_env(env):
        raise EnvError(
            f"shoal cannot copy a dm_env environment ({type(env).__name__}) for its env copies. "
            "Pass a function that makes one and takes a seed, e.g. "
            "`lambda seed: Catch(seed=seed)`, or a 'package.module:function' string."
        )
    if callable(env):
        name = _callable_name(env)
        factory = functools.partial(_callable_env, env)
        return _adapted(EnvSource(f"<callable {name}>", "object", "object", factory), config)
    raise EnvError(
        f"env must be an environment id such as 'CartPole-v1', a 'package.module:function' "
        f"factory, a gymnasium.Env, a function returning one, or a Gymnasium vector env; got "
        f"{type(env).__name__} {env!r:.60}."
    )


def _check_numpy_vector(env: Any) -> None:
    from shoal.envs.numpy_cartpole import NUMPY_VECTOR_ENVS

    if not (isinstance(env, str) and env in NUMPY_VECTOR_ENVS):
        described = repr(env) if isinstance(env, str) else f"a {type(env).__name__} object"
        raise EnvError(
            f"--env.vector numpy steps Gymnasium's numpy vector env, which exists for "
            f"{', '.join(NUMPY_VECTOR_ENVS)} given by id only; the env here is {described}. "
            "Use --env.vector inline (the default) or subprocess for it."
        )


def _callable_name(make: Callable[..., Any]) -> str:
    name = getattr(make, "__name__", None) or type(make).__name__
    return name.replace("<", "").replace(">", "")  # a lambda's, so descriptions nest cleanly


def _registered_id(env: gym.Env | gym.vector.VectorEnv) -> str | None:
    spec = getattr(env, "spec", None)
    env_id = getattr(spec, "id", None)
    return env_id if env_id in gym.envs.registry else None


def _instance_source(env: gym.Env) -> EnvSource:
    """Each env copy a deep copy of `env` (so the user's object is never stepped or closed)."""
    try:
        copy.deepcopy(env).close()
    except Exception as err:
        raise EnvError(
            f"shoal makes its env copies as copies of the env object you pass, and "
            f"{type(env.unwrapped).__name__} cannot be copied ({type(err).__name__}: {err}). "
            "Pass a function that makes the env instead, e.g. `lambda: make_my_env()`, or a "
            "'package.module:function' string."
        ) from None
    like = _registered_id(env)
    name = like or type(env.unwrapped).__name__
    factory = functools.partial(copy.deepcopy, env)
    return EnvSource(f"<env object {name}>", "object", "object", factory, like=like)


def _vector_source(env: gym.vector.VectorEnv) -> EnvSource:
    """A Gymnasium vector env's first env function makes every copy (shoal steps its own
    vector env); one made by a vector entry point (`gym.make_vec`) is made again by its id."""
    like = _registered_id(env)
    fns = getattr(env, "env_fns", None)
    if fns:
        factory = functools.partial(_callable_env, fns[0])
    elif like is not None:
        skip = ("num_envs", "vectorization_mode", "vector_kwargs")
        kwargs = {k: v for k, v in env.spec.kwargs.items() if k not in skip}
        factory = functools.partial(_gymnasium_env, like, **kwargs)
    else:
        raise EnvError(
            f"shoal cannot tell how the envs of this {type(env).__name__} are made. Pass a "
            "function that makes one env, with run={'num_envs': N}, or a SyncVectorEnv or "
            "AsyncVectorEnv of such functions."
        )
    name = f"<vector env of {env.num_envs} {like or type(env).__name__}>"
    return EnvSource(name, "object", "object", factory, like=like, num_envs=env.num_envs)


def make_env_factory(env_id: str, config: EnvConfig | None = None) -> EnvFactory:
    """A picklable zero-argument function that builds one env for `env_id`."""
    return resolve_env(env_id, config).factory


def make_env(env_id: str, config: EnvConfig | None = None) -> gym.Env:
    """Build one env for `env_id`, turning a failure inside its constructor into an EnvError."""
    return built(resolve_env(env_id, config))


def built(source: EnvSource) -> gym.Env:
    """One env of `source`, a failure inside its constructor turned into an EnvError."""
    try:
        return source.factory()
    except EnvError:
        raise
    except Exception as err:
        raise EnvError(
            f"Making environment {source.env_id!r} failed: {type(err).__name__}: {err}"
        ) from None


def env_spec(env_id: str, config: EnvConfig | None = None) -> EnvSpec:
    """Spaces of `env_id`, read from one env that is then closed."""
    return spec_of_source(resolve_env(env_id, config))


def spec_of_source(source: EnvSource) -> EnvSpec:
    """Spaces of `source`'s envs, read from one env that is then closed; a ShoalWarning names
    the text entries its observations drop."""
    env = built(source)
    try:
        raw, agents = None, 0
        if isinstance(env, AgentRows | TurnRows):  # multi-agent: the spaces are one agent's
            raw, agents = env.raw_observation_space, env.num_rows
        if isinstance(env, ConvertedObservations):
            raw = env.conversion.raw_space
            if env.conversion.dropped:
                kinds = ", ".join(
                    f"{k!r} ({type(raw[k]).__name__})" for k in env.conversion.dropped
                )
                warnings.warn(
                    f"{source.env_id}: observation entries holding text are dropped ({kinds}); "
                    "shoal's networks take numbers.",
                    ShoalWarning,
                    stacklevel=2,
                )
        return EnvSpec(
            source.env_id,
            env.observation_space,
            env.action_space,
            source.frames_per_step,
            raw_observation_space=raw,
            num_agents=agents,
        )
    finally:
        env.close()


def make_vector_env(
    source: EnvSource, spec: EnvSpec, config: EnvConfig, num_envs: int, seed: int
):  # -> VectorEnv
    """The vector env an actor steps: envpool, worker processes or this process, per config;
    a multi-agent env's `num_envs` games, each making `spec.num_agents` rows."""
    if spec.num_agents and config.vector == "subprocess":
        raise EnvError(
            f"{source.env_id}: PettingZoo games step in the actor's process; "
            "--env.vector subprocess is not supported for them. Leave it at inline, and "
            "use more actors (--runtime ray --actors N) to step games in parallel."
        )
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
    if config.vector == "numpy":
        from shoal.envs.numpy_cartpole import NumpyCartPoleVectorEnv

        return NumpyCartPoleVectorEnv(num_envs, spec, seed)
    if config.vector == "subprocess":
        from shoal.envs.subprocess_vector import SubprocessVectorEnv

        return SubprocessVectorEnv([source.factory] * num_envs, spec, seed, config.num_workers)
    from shoal.envs.vector import in_process_vector_env

    return in_process_vector_env([source.factory] * num_envs, spec, seed)
