"""What a person watching an environment sees: one env and its colour screen, for videos.

- Atari: the emulator's full-colour screen (210 x 160), not the agent's 84 x 84 grey input.
  An agent step covers `frame_skip` (4) emulator frames; a video frame is the pixel-wise
  maximum of the last two, as the agent's observation is, so sprites the ALE draws on
  alternate frames (Asteroids' rocks, Space Invaders' shots) show rather than vanish with an
  even frame skip. The video runs at 60 / frame_skip frames per second: the game's own speed.
- Everything else: the env's `render()` in `rgb_array` mode, at its `metadata["render_fps"]`.

An env that cannot give colour frames raises an EnvError saying what to change.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from shoal.envs.config import EnvConfig
from shoal.envs.observations import adapt_observations
from shoal.envs.registry import make_env, resolve_env
from shoal.errors import EnvError

__all__ = ["ATARI_FPS", "ScreenEnv", "make_screen_env"]

ATARI_FPS = 60  # emulator frames per second of an NTSC Atari 2600
_DEFAULT_FPS = 30  # for an env whose metadata names no render_fps


@dataclass
class ScreenEnv:
    """One env and its screen: call `screen()` after every `reset` and `step`.

    `screen()` returns `[H, W, 3]` uint8 of the env's current state; the array may be reused
    by the next call."""

    env: gym.Env
    screen: Callable[[], np.ndarray]
    fps: float

    def close(self) -> None:
        self.env.close()


def make_screen_env(env_id: str, config: EnvConfig | None = None) -> ScreenEnv:
    """One env of `env_id`, as the registry builds it, with the screen a person would watch."""
    config = config or EnvConfig()
    source = resolve_env(env_id, config)
    if source.family == "atari":
        return _atari(make_env(env_id, config))
    if source.family == "pettingzoo":
        raise cannot_render(env_id, "is a game of many agents, which shoal does not record yet", "")
    if source.family in ("gymnasium", "minigrid"):  # ids gym.make takes (minigrid imported)
        env = _rgb_gymnasium(env_id, config)
    else:  # MinAtar, dm_control, dm_env, a user's factory: it renders as its maker set it up
        env = make_env(env_id, config)
        if env.render_mode != "rgb_array":
            env.close()
            raise cannot_render(
                env_id,
                f"was made with render_mode={env.render_mode!r}",
                "Make your factory create it with render_mode='rgb_array' (for a Gymnasium id: "
                "gym.make(id, render_mode='rgb_array')) and return [H, W, 3] uint8 frames from "
                "render().",
            )
    return ScreenEnv(env, _checked_render(env, env_id), _fps(env))


def cannot_render(env_id: str, reason: str, fix: str) -> EnvError:
    return EnvError(
        f"{env_id} cannot be recorded: a video needs colour frames from render() in 'rgb_array' "
        f"mode, and this environment {reason}. {fix} `shoal eval` evaluates it without a video."
    )


def _rgb_gymnasium(env_id: str, config: EnvConfig) -> gym.Env:
    probe = make_env(env_id, config)
    modes = probe.metadata.get("render_modes", [])
    probe.close()
    if "rgb_array" not in modes:
        raise cannot_render(
            env_id,
            f"offers the render modes {list(modes)}",
            "Register it with an 'rgb_array' render mode, or record another environment.",
        )
    # rgb_array draws off screen; SDL (pygame, classic control) would otherwise look for a
    # display and print an error where there is none.
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    try:
        env = gym.make(env_id, render_mode="rgb_array")
    except Exception as err:
        raise cannot_render(
            env_id,
            f"failed to build with render_mode='rgb_array' ({type(err).__name__}: {err})",
            "Install what its renderer needs (classic control: pip install pygame).",
        ) from None
    # Made here, not by the registry's factory (for the render mode): converted as it converts.
    return adapt_observations(
        env, config.image_layout, config.minigrid_image, config.action_mask_from_info
    )


def _checked_render(env: gym.Env, env_id: str) -> Callable[[], np.ndarray]:
    """`env.render`, checked on its first frame (rendering before a reset is undefined)."""
    checked = False

    def screen() -> np.ndarray:
        nonlocal checked
        try:
            frame = env.render()
        except Exception as err:
            raise cannot_render(
                env_id,
                f"raised {type(err).__name__} in render(): {err}",
                "Install what its renderer needs (classic control: pip install pygame).",
            ) from None
        if not checked:
            if not (
                isinstance(frame, np.ndarray)
                and frame.dtype == np.uint8
                and frame.ndim == 3
                and frame.shape[2] == 3
            ):
                what = (
                    f"an array {frame.dtype} {frame.shape}"
                    if isinstance(frame, np.ndarray)
                    else type(frame).__name__
                )
                raise cannot_render(
                    env_id, f"returned {what} from render()", "Return [H, W, 3] uint8 frames."
                )
            checked = True
        return frame

    return screen


def _fps(env: gym.Env) -> float:
    fps = env.metadata.get("render_fps")
    return float(fps) if fps else _DEFAULT_FPS


def _atari(env: gym.Env) -> ScreenEnv:
    from shoal.envs.atari import AtariWrapper

    wrapper = env
    while not isinstance(wrapper, AtariWrapper):
        wrapper = wrapper.env
    screens = _AtariScreens(wrapper)
    return ScreenEnv(env, screens.screen, ATARI_FPS / wrapper.frames_per_step)


class _AtariScreens:
    """The colour screen of an `AtariWrapper`'s emulator, max-pooled over the last two frames
    of each agent step.

    The RGB screen costs the ALE about 45 us to convert, so it is taken only at the frames a
    video frame needs: the last two of each agent step (and every frame of a reset's no-ops).
    A tap between the wrapper and the emulator env sees each frame; `screen()` marks where the
    next agent step starts."""

    def __init__(self, wrapper: gym.Wrapper) -> None:
        self.ale = wrapper.ale
        self.frame_skip = wrapper.frames_per_step
        height, width = self.ale.getScreenDims()
        self._frames = np.zeros((2, height, width, 3), np.uint8)
        self._pooled = np.zeros((height, width, 3), np.uint8)
        self._last = 0  # index of the newest frame in `_frames`
        self._taken = 0  # frames taken since the last `screen()` (the ring holds 2)
        self._frames_left = 0  # of the current agent step; < 2: take the frame
        wrapper.env = _FrameTap(wrapper.env, self)

    def on_frame(self, ended: bool) -> None:
        self._frames_left -= 1
        if self._frames_left < 2:
            self._take()
        elif ended:  # early in a frame skip: the step's last frame alone
            self._taken = 0
            self._take()

    def on_reset(self) -> None:
        self._taken = 0
        self._frames_left = 0  # every no-op frame after it is taken
        self._take()

    def _take(self) -> None:
        self._last ^= 1
        self.ale.getScreenRGB(self._frames[self._last])
        self._taken += 1

    def screen(self) -> np.ndarray:
        if self._taken == 0:  # a game continued after a lost life with fewer than 2 no-ops
            self._take()
        taken, self._taken = self._taken, 0
        self._frames_left = self.frame_skip
        if taken >= 2:
            return np.maximum(self._frames[0], self._frames[1], out=self._pooled)
        return self._frames[self._last]


class _FrameTap(gym.Wrapper):
    """Tells `_AtariScreens` of every emulator frame the Atari wrapper steps."""

    def __init__(self, env: gym.Env, screens: _AtariScreens) -> None:
        super().__init__(env)
        self.screens = screens

    def reset(self, **kwargs):  # type: ignore[override]
        out = self.env.reset(**kwargs)
        self.screens.on_reset()
        return out

    def step(self, action):  # type: ignore[override]
        out = self.env.step(action)
        self.screens.on_frame(ended=bool(out[2] or out[3]))
        return out
