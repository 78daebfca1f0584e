"""dm_control's suite (Tassa et al. 2018, "DeepMind Control Suite") as ids `dm_control:DOMAIN-TASK`.

Each task is a `dm_env.Environment`, served through shoal's dm_env adapter
(`DmEnvToGymnasium`), which maps dm_control's time limit (a LAST step with discount 1) to
Gymnasium's `truncated`. A seeded `reset` seeds the task's random state in place, as
`task_kwargs={"random": seed}` (dm_control's own seed) would.

Observations are state by default: the task's dict of arrays (cartpole: position (3,),
velocity (2,)) flattened in the task's order into one float32 vector, as is usual for
state-based agents on the suite. With `pixels=True` (`--env.dm-control-pixels true`) they are
the rendered frame instead, `(size, size, 3)` uint8 from camera 0, which shoal's observation
conversion turns channels-first; rendering needs an OpenGL backend, EGL by default when no
display is set (`MUJOCO_GL`). Actions are float32 in the task's bounds ([-1, 1] on every suite
task), cast to dm_control's float64. With `action_repeat=k` (`--env.dm-control-action-repeat`)
each action is held for k control steps and their rewards summed, as PlaNet (Hafner et al.
2019) and DrQ (Kostrikov et al. 2020) do; an episode then has 1000 / k agent steps, and shoal
counts each as k frames.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from shoal.errors import EnvError, close_matches

__all__ = [
    "DM_CONTROL_PREFIX",
    "FlatState",
    "Pixels",
    "dm_control_tasks",
    "make_dm_control",
    "parse_task",
]

DM_CONTROL_PREFIX = "dm_control:"
_INSTALL = "pip install 'shoal[dm_control]'"


def _suite():
    # The suite picks its OpenGL backend when first imported; without a display, GLFW cannot
    # open a context, so EGL (software or GPU) is the one that renders headless.
    if "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY"):
        os.environ["MUJOCO_GL"] = "egl"
    try:
        from dm_control import suite
    except ImportError as err:
        raise EnvError(
            f"dm_control ids need dm_control, which is not installed ({err}). Install the "
            f"extra: {_INSTALL}."
        ) from None
    return suite


def dm_control_tasks() -> list[str]:
    """Every suite task as `DOMAIN-TASK` (domains and tasks hold underscores, never dashes)."""
    return [f"{domain}-{task}" for domain, task in _suite().ALL_TASKS]


def parse_task(env_id: str) -> tuple[str, str]:
    """`(domain, task)` of `dm_control:DOMAIN-TASK`, or an EnvError with close matches."""
    name = env_id[len(DM_CONTROL_PREFIX) :]
    tasks = dm_control_tasks()
    if name not in tasks:
        hits = close_matches(name, tasks)
        hint = f" Did you mean {', '.join(DM_CONTROL_PREFIX + h for h in hits)}?" if hits else ""
        raise EnvError(
            f"Unknown dm_control task {name!r}.{hint} Ids are dm_control:DOMAIN-TASK, e.g. "
            "dm_control:cartpole-swingup; `shoal envs` lists the suite's tasks."
        )
    domain, _, task = name.partition("-")
    return domain, task


class _SuiteTask(gym.Wrapper):
    """A suite task with float32 actions in its bounds (cast to dm_control's float64) and
    observations made by `_observe`."""

    render_mode = "rgb_array"  # what a person watches (`shoal play`): camera 0, 240 x 320

    def __init__(self, env: gym.Env, action_repeat: int = 1) -> None:
        super().__init__(env)
        self.action_repeat = action_repeat
        raw = env.action_space
        self._raw_dtype = raw.dtype
        self.action_space = gym.spaces.Box(
            raw.low.astype(np.float32), raw.high.astype(np.float32), raw.shape, np.float32
        )
        control_fps = 1.0 / (float(self._task().control_timestep()) * action_repeat)
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": control_fps}

    def _task(self):
        return self.env.unwrapped.env  # the adapter's dm_control env

    def render(self) -> np.ndarray:
        return self._task().physics.render(240, 320, camera_id=0)

    def _observe(self, obs: Any) -> Any:
        raise NotImplementedError

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._observe(obs), info

    def step(self, action: Any):
        action = np.asarray(action, self._raw_dtype)
        total = 0.0
        for _ in range(self.action_repeat):  # held until the episode ends, at the latest
            obs, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            if terminated or truncated:
                break
        return self._observe(obs), total, terminated, truncated, info


class FlatState(_SuiteTask):
    """The task's dict observation flattened to one float32 vector: entries in the task's
    order, each raveled."""

    def __init__(self, env: gym.Env, action_repeat: int = 1) -> None:
        super().__init__(env, action_repeat)
        space = env.observation_space
        self._keys = list(space.spaces) if isinstance(space, gym.spaces.Dict) else None
        entries = [space[k] for k in self._keys] if self._keys is not None else [space]
        size = sum(int(np.prod(s.shape)) for s in entries)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def _observe(self, obs: Any) -> np.ndarray:
        parts = [obs[k] for k in self._keys] if self._keys is not None else [obs]
        return np.concatenate([np.ravel(p) for p in parts]).astype(np.float32)


class Pixels(_SuiteTask):
    """The task observed by its rendered frame `(size, size, 3)` uint8 (the pixel wrapper's
    only entry, unwrapped)."""

    def __init__(self, env: gym.Env, action_repeat: int = 1) -> None:
        super().__init__(env, action_repeat)
        self.observation_space = env.observation_space["pixels"]

    def _observe(self, obs: Any) -> np.ndarray:
        return obs["pixels"]


def _reseed(env, seed: int) -> None:
    """Seed a suite task in place, as `suite.load(task_kwargs={"random": seed})` would: cheaper
    than building it again, and a pixel task keeps its rendering context."""
    env.task.random.seed(seed)


def _load(domain: str, task: str, seed: int, pixels: bool, size: int):
    suite = _suite()
    env = suite.load(domain, task, task_kwargs={"random": seed})
    if pixels:
        from dm_control.suite.wrappers import pixels as pixel_wrapper

        render = {"height": size, "width": size, "camera_id": 0}
        env = pixel_wrapper.Wrapper(env, pixels_only=True, render_kwargs=render)
    return env


def make_dm_control(
    domain: str, task: str, pixels: bool = False, size: int = 84, action_repeat: int = 1
) -> gym.Env:
    """The Gymnasium env of one suite task (module docstring), seeded by its `reset`."""
    from shoal.envs.dm_env_adapter import DmEnvToGymnasium

    try:
        adapted = DmEnvToGymnasium(_load(domain, task, 0, pixels, size), reseed=_reseed)
    except EnvError:
        raise
    except Exception as err:  # an OpenGL backend that cannot render, mostly
        what = "rendering its pixels" if pixels else "building it"
        raise EnvError(
            f"dm_control:{domain}-{task}: {what} failed ({type(err).__name__}: {err}). "
            + (
                "Pixels need an OpenGL backend: set MUJOCO_GL=egl (libegl1 and Mesa's "
                "libegl-mesa0 on Debian) or MUJOCO_GL=osmesa (libosmesa6), or use state "
                "observations (--env.dm-control-pixels false)."
                if pixels
                else f"Check that dm_control and its MuJoCo match: {_INSTALL}."
            )
        ) from None
    return (Pixels if pixels else FlatState)(adapted, action_repeat)
