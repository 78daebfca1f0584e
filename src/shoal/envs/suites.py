"""Families the registry knows by the form of their ids: dm_control, MiniGrid, and those it
cannot serve on current Python (`shoal.envs.unavailable`), whose ids get the reason.

- `dm_control:DOMAIN-TASK` (`shoal.envs.dm_control_suite`);
- `MiniGrid-...` and `BabyAI-...` (`shoal.envs.minigrid`): minigrid is imported to register
  them, so no `--env.import-module minigrid` is needed.

`suite_source` returns the `EnvSource` of such an id, or None for any other id.
"""

from __future__ import annotations

import functools
import importlib.util

import gymnasium as gym

from shoal.envs.config import EnvConfig
from shoal.errors import EnvError

MINIGRID_PREFIXES = ("MiniGrid-", "BabyAI-")


def suite_source(env_id: str, config: EnvConfig):  # -> EnvSource | None
    from shoal.envs.dm_control_suite import DM_CONTROL_PREFIX
    from shoal.envs.unavailable import check_unavailable

    if env_id not in gym.envs.registry:  # a user's registration of such an id is theirs
        check_unavailable(env_id)
    if env_id.startswith(DM_CONTROL_PREFIX):
        return _dm_control_source(env_id, config)
    if env_id.startswith(MINIGRID_PREFIXES):
        return _minigrid_source(env_id)
    return None


def _dm_control_source(env_id: str, config: EnvConfig):
    from shoal.envs.dm_control_suite import make_dm_control, parse_task
    from shoal.envs.registry import EnvSource

    domain, task = parse_task(env_id)
    repeat = config.dm_control_action_repeat
    factory = functools.partial(
        make_dm_control,
        domain,
        task,
        config.dm_control_pixels,
        config.dm_control_pixel_size,
        repeat,
    )
    return EnvSource(env_id, "dm_control", "dm_control", factory, frames_per_step=repeat)


def _minigrid_source(env_id: str):  # its image is converted by observations.py, per config
    from shoal.envs.minigrid import make_minigrid, minigrid_ids
    from shoal.envs.registry import EnvSource
    from shoal.errors import close_matches

    if importlib.util.find_spec("minigrid") is None:
        raise EnvError(
            f"{env_id} is a MiniGrid id, and minigrid is not installed. Install the extra: "
            "pip install 'shoal[minigrid]'."
        )
    ids = minigrid_ids()
    if env_id not in gym.envs.registry:
        hits = close_matches(env_id, ids)
        hint = f" Did you mean {' or '.join(repr(h) for h in hits)}?" if hits else ""
        raise EnvError(
            f"Unknown MiniGrid id {env_id!r}.{hint} `shoal envs` lists the families; "
            f"MiniGrid has {len(ids)} ids."
        )
    factory = functools.partial(make_minigrid, env_id)
    return EnvSource(env_id, "minigrid", "minigrid", factory)
