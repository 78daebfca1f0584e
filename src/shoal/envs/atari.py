"""Atari 2600 games on the ALE with the standard preprocessing, as one `gymnasium.Env`.

The preprocessing is that of Mnih et al. (2015), "Human-level control through deep reinforcement
learning": up to 30 no-op frames at the start of an episode, each action repeated for 4 emulator
frames with the observation the pixel-wise max of the last two (Atari sprites flicker), 84x84
grey, the last 4 observations stacked. The evaluation settings of Machado et al. (2018),
"Revisiting the Arcade Learning Environment", are options: sticky actions (at every emulator
frame the previous action is repeated with probability 0.25), the full 18-action set, and life
loss not ending the episode (the default here; lives are reported in `info["lives"]`).

Frames and agent steps are counted apart: one agent step is `frames_per_step` (4) emulator
frames; the no-op frames of a reset are not agent steps. Episodes are truncated after
`max_frames // frame_skip` agent steps (27,000 = 108,000 frames), counted from the end of the
no-op start, exactly as envpool counts them, so both backends truncate at the same step.

The wrapper is written here rather than taken from gymnasium's `AtariPreprocessing` because that
one returns the previous step's frame when an episode ends early in a frame skip, restarts the
whole game after a life-loss "termination", and counts the frame cap in the emulator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from shoal.config import param
from shoal.envs.atari_ids import is_atari_id
from shoal.errors import ConfigError, EnvError, did_you_mean

__all__ = [
    "STICKY_ACTION_PROB",
    "AtariOptions",
    "AtariWrapper",
    "atari_game",
    "frames_per_step",
    "is_atari_id",
    "make_atari",
]

STICKY_ACTION_PROB = 0.25  # Machado et al. (2018), sticky actions


@dataclass(frozen=True, kw_only=True)
class AtariOptions:
    """The Atari protocol; the defaults are Mnih et al. (2015) with a 108k-frame cap."""

    noop_max: int = param(30, "Up to this many no-op frames at the start of an episode (0: none).")
    frame_skip: int = param(4, "Emulator frames per agent step; the last two are max-pooled.")
    frame_stack: int = param(4, "Observations stacked along the channel axis.")
    screen_size: int = param(84, "Side of the square grey observation, in pixels.")
    sticky_actions: bool = param(False, "Repeat the previous action with probability 0.25.")
    full_action_space: bool = param(False, "All 18 actions instead of the game's minimal set.")
    max_frames: int = param(108_000, "Truncate episodes after this many emulator frames.")
    terminal_on_life_loss: bool = param(False, "End the episode when a life is lost.")

    def __post_init__(self) -> None:
        for name in ("frame_skip", "frame_stack", "screen_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"AtariOptions.{name} must be >= 1, got {getattr(self, name)}.")
        if self.noop_max < 0:
            raise ConfigError(
                f"AtariOptions.noop_max must be >= 0 (0 turns no-op starts off), got "
                f"{self.noop_max}."
            )
        if self.max_frames < self.frame_skip:
            raise ConfigError(
                f"AtariOptions.max_frames ({self.max_frames}) is shorter than one agent step of "
                f"{self.frame_skip} frames; the usual cap is 108000 frames (30 minutes of play)."
            )

    @property
    def max_steps(self) -> int:
        """The episode cap in agent steps."""
        return self.max_frames // self.frame_skip

    @property
    def repeat_action_probability(self) -> float:
        return STICKY_ACTION_PROB if self.sticky_actions else 0.0


def atari_game(env_id: str) -> str:
    """The game's name in an Atari id: `ALE/Pong-v5` and `PongNoFrameskip-v4` give `Pong`."""
    if not is_atari_id(env_id):
        raise EnvError(
            f"{env_id!r} is not an Atari id shoal preprocesses; use 'ALE/<Game>-v5' (for "
            "example 'ALE/Pong-v5') or '<Game>NoFrameskip-v4'."
        )
    if env_id.startswith("ALE/"):
        return env_id[len("ALE/") : -len("-v5")]
    return env_id[: -len("NoFrameskip-v4")]


def frames_per_step(env: object) -> int:
    """Emulator frames per agent step of `env` (4 for Atari), 1 for an env that skips none.

    Frames = agent steps x frames_per_step; the no-op frames of resets are not counted. Reads
    the `frames_per_step` attribute of `env` or of any wrapper inside it; a vector env such as
    `EnvpoolVectorEnv` carries the attribute too.
    """
    value = getattr(env, "frames_per_step", None)
    if value is None and isinstance(env, gym.Env):
        try:
            value = env.get_wrapper_attr("frames_per_step")
        except AttributeError:
            value = None
    return 1 if value is None else int(value)


def make_atari(env_id: str, options: AtariOptions | None = None) -> gym.Env:
    """`env_id` (`ALE/<Game>-v5` or `<Game>NoFrameskip-v4`) with the standard preprocessing.

    Observations are Box(0, 255, (frame_stack, screen_size, screen_size), uint8). The ALE env
    is made with `frameskip=1`, so frames are skipped once, by the wrapper, and with the sticky
    action probability set from `options` (ALE v5 ids would otherwise default to 0.25).
    """
    options = options or AtariOptions()
    try:
        import ale_py
        import cv2  # noqa: F401  (used by AtariWrapper; fail here with a clear message)
    except ImportError as err:
        raise EnvError(
            f"{env_id} needs ale-py and opencv-python ({err.name} is missing). Install the Atari "
            "extra: pip install 'shoal[atari]'."
        ) from None
    gym.register_envs(ale_py)
    game = atari_game(env_id)
    if env_id not in gym.envs.registry:
        known = [i for i in gym.envs.registry if is_atari_id(i)]
        raise EnvError(
            f"ale-py has no Atari game {game!r} ({env_id!r}).{did_you_mean(env_id, known)} "
            "Game names are CamelCase, e.g. 'ALE/MontezumaRevenge-v5'."
        )
    env = gym.make(
        env_id,
        obs_type="grayscale",
        frameskip=1,
        repeat_action_probability=options.repeat_action_probability,
        full_action_space=options.full_action_space,
        max_num_frames_per_episode=0,  # the wrapper counts the cap in agent steps
    )
    return AtariWrapper(env, options)


class AtariWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """No-op starts, frame skip with max-pool, resize, frame stack and the episode cap.

    Wraps an ALE env made with `frameskip=1` and `obs_type="grayscale"` (as `make_atari` does).
    Observations are `[frame_stack, screen_size, screen_size]` uint8, oldest frame first; after
    a reset every slot holds the first frame. With `terminal_on_life_loss`, a lost life ends
    the episode and the next `reset()` (without a seed) continues the same game from the next
    life, as in Mnih et al. (2015); the episode cap then counts the whole game.
    """

    def __init__(self, env: gym.Env, options: AtariOptions) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, options=options)
        gym.Wrapper.__init__(self, env)
        if getattr(env.unwrapped, "_frameskip", 1) != 1:
            raise EnvError(
                f"{env.spec.id if env.spec else env} skips frames itself; make it with "
                "frameskip=1 (make_atari does) so that frames are not skipped twice."
            )
        if options.noop_max > 0 and env.unwrapped.get_action_meanings()[0] != "NOOP":
            raise EnvError("No-op starts need action 0 to be NOOP; set noop_max=0 for this game.")
        self.options = options
        self.frames_per_step = options.frame_skip
        size = options.screen_size
        self.observation_space = gym.spaces.Box(0, 255, (options.frame_stack, size, size), np.uint8)
        self._stack = np.zeros(self.observation_space.shape, np.uint8)
        self._steps = 0
        self._lives = 0
        self._life_lost = False

    @property
    def ale(self) -> Any:
        """The emulator (`ale_py.ALEInterface`): frame counters, lives, screens."""
        return self.env.unwrapped.ale

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        continue_game = self._life_lost and self._steps < self.options.max_steps
        if continue_game and seed is None and options is None:
            frame, info = self.ale.getScreenGrayscale(), {"lives": self.ale.lives()}
        else:
            frame, info = self.env.reset(seed=seed, options=options)
            self._steps = 0
        self._life_lost = False
        noop_max = self.options.noop_max
        for _ in range(int(self.np_random.integers(1, noop_max + 1)) if noop_max > 0 else 0):
            frame, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                frame, info = self.env.reset()
                self._steps = 0
        self._lives = self.ale.lives()
        self._stack[:] = self._resize(frame)
        return self._stack.copy(), info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        total = 0.0
        terminated = truncated = False
        info: dict[str, Any] = {}
        last: np.ndarray | None = None
        previous: np.ndarray | None = None
        for _ in range(self.frames_per_step):
            frame, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            previous, last = last, frame
            if terminated or truncated:
                break
        assert last is not None
        self._steps += 1
        lives = self.ale.lives()
        if self.options.terminal_on_life_loss and lives < self._lives and not terminated:
            terminated = self._life_lost = True
        self._lives = lives
        if self._steps >= self.options.max_steps and not terminated:
            truncated = True
        pooled = last if previous is None else np.maximum(previous, last)
        self._stack[:-1] = self._stack[1:]
        self._stack[-1] = self._resize(pooled)
        return self._stack.copy(), total, bool(terminated), bool(truncated), info

    def _resize(self, frame: np.ndarray) -> np.ndarray:
        import cv2  # imported by make_atari already; optional for users who never make Atari

        size = self.options.screen_size
        return cv2.resize(frame, (size, size), interpolation=cv2.INTER_AREA)
