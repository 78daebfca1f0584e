"""What `shoal envs` prints: the environment families shoal resolves, and one id in detail."""

from __future__ import annotations

import importlib.util

import gymnasium as gym

from shoal.config import describe
from shoal.envs.config import EnvConfig
from shoal.envs.minatar_games import MINATAR_GAMES
from shoal.envs.registry import env_spec, resolve_env
from shoal.envs.unavailable import UNAVAILABLE_FAMILIES
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
        "  pettingzoo  pettingzoo:<module> (e.g. pettingzoo:mpe.simple_spread_v3, "
        "pettingzoo:butterfly.pistonball_v6): each agent a row of the batch; "
        f"pettingzoo {_state('pettingzoo', 'pettingzoo')}; mpe2 {_state('mpe2', 'pettingzoo')}",
        "  classic     tictactoe, connect_four (PettingZoo's turn-based games, or any AEC "
        "pettingzoo:<module>): each player a row, the player to move active",
        *_dm_control_lines(),
        f"  minigrid    MiniGrid-<...>, BabyAI-<...> ids (its image as one-hot planes, the text "
        f"mission dropped); {_state('minigrid', 'minigrid')}",
        "  mujoco      Gymnasium's v5 tasks (Hopper-v5, HalfCheetah-v5, Walker2d-v5, Ant-v5, "
        f"Humanoid-v5, ...); {_state('mujoco', 'mujoco')}",
        "  factory     'package.module:function' returning a gymnasium.Env",
        "",
        "families shoal cannot serve on current Python (an id of theirs says why):",
        *(f"  {family.name}" for family in UNAVAILABLE_FAMILIES),
        "",
        "environment settings (--env.FIELD VALUE, or env_config: in a config file):",
    ]
    for name, type_name, default, doc in describe(EnvConfig):
        lines.append(f"  {name:<22} {type_name:<28} {default!s:<8} {doc}")
    lines.append("\n`shoal envs ID` shows an id's spaces and the backend that serves it.")
    return "\n".join(lines)


def _dm_control_lines() -> list[str]:
    head = "  dm_control  dm_control:DOMAIN-TASK, state vectors (pixels: --env.dm-control-pixels)"
    if not _installed("dm_control"):
        return [f"{head}; not installed: pip install 'shoal[dm_control]'"]
    from shoal.envs.dm_control_suite import dm_control_tasks

    tasks = dm_control_tasks()
    lines, line = [f"{head}; installed, {len(tasks)} tasks:"], "   "
    for task in tasks:  # wrapped to the width of the rest
        if len(line) + len(task) > 96:
            lines.append(line)
            line = "   "
        line += f" dm_control:{task}"
    return [*lines, line]


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
            *([f"  agents (rows):      {spec.num_agents}"] if spec.num_agents else []),
        ]
    )
