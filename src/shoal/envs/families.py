"""What `shoal envs` prints: the environment families shoal resolves, and one id in detail."""

from __future__ import annotations

import importlib.util

import gymnasium as gym

from shoal.config import describe
from shoal.envs.config import EnvConfig
from shoal.envs.minatar_games import MINATAR_GAMES
from shoal.envs.registry import env_spec, resolve_env
from shoal.envs.vizdoom import SCENARIOS


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _state(module: str, extra: str) -> str:
    return "installed" if _installed(module) else f"not installed: pip install 'shoal[{extra}]'"


def describe_families() -> str:
    gym_ids = [i for i in gym.envs.registry if not i.startswith("ALE/")]
    lines = [
        "environment families:",
        f"  gymnasium   any registered id ({len(gym_ids)} now, e.g. CartPole-v1, Pendulum-v1)",
        f"  atari       ALE/<Game>-v5, <Game>NoFrameskip-v4; ale-py {_state('ale_py', 'atari')}; "
        f"envpool {_state('envpool', 'envpool')}",
        f"  minatar     minatar:<game> for {', '.join(MINATAR_GAMES)}; "
        f"{_state('minatar', 'minatar')}",
        f"  vizdoom     vizdoom:<scenario> for {', '.join(SCENARIOS)} (battle, battle2: "
        "Sample Factory's files, --env.vizdoom-scenario-dir), or vizdoom:PATH.cfg; "
        f"{_state('vizdoom', 'vizdoom')}",
        "  dm_env      a factory 'package.module:function' returning a dm_env.Environment "
        f"(adapted); dm-env {_state('dm_env', 'dm_env')}",
        "  factory     'package.module:function' returning a gymnasium.Env",
        "",
        "environment settings (--env.FIELD VALUE, or env_config: in a config file):",
    ]
    for name, type_name, default, doc in describe(EnvConfig):
        lines.append(f"  {name:<22} {type_name:<28} {default!s:<8} {doc}")
    lines.append("\n`shoal envs ID` shows an id's spaces and the backend that serves it.")
    return "\n".join(lines)


def describe_env(env_id: str, config: EnvConfig) -> str:
    source = resolve_env(env_id, config)
    spec = env_spec(env_id, config)
    raw = spec.raw_observation_space
    return "\n".join(
        [
            f"{env_id}",
            f"  family:             {source.family}",
            f"  backend:            {source.backend}",
            f"  frames per step:    {source.frames_per_step}",
            f"  observation space:  {spec.observation_space}",
            *([] if raw is None else [f"    converted from:   {raw}"]),
            f"  action space:       {spec.action_space}",
        ]
    )
