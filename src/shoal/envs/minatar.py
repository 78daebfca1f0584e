"""MinAtar (Young & Tian 2019, "MinAtar: An Atari-Inspired Testbed for Thorough and Reproducible
Reinforcement Learning Experiments") as a `gymnasium.Env`.

Observations are the game's 10x10 binary planes, channels-first `[C, 10, 10]` uint8 like every
image in shoal; actions index the game's minimal action set. Sticky actions follow the paper:
at every step the previous action is repeated with probability 0.1. The paper runs episodes to
termination; the `max_steps` truncation is only a safety net against an agent that stalls.

`render()` draws the grid for people (and `shoal play`): each channel a colour of its own, on
black, every cell a square of `cell_pixels` pixels. A cell where several channels are on shows
the last of them, as MinAtar's own viewer does.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from shoal.envs.minatar_games import MINATAR_GAMES
from shoal.errors import EnvError, close_matches

__all__ = ["CHANNEL_COLOURS", "MINATAR_GAMES", "MinAtarEnv", "make_minatar"]

# One colour per channel (the most of any game: Seaquest's 10), far apart from each other and
# from the black of an empty cell: matplotlib's tab10, brightened.
CHANNEL_COLOURS = np.array(
    [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (188, 189, 34),
        (23, 190, 207),
        (240, 240, 240),
    ],
    np.uint8,
)
RENDER_FPS = 15  # one frame per step, slow enough to follow Breakout's ball


class MinAtarEnv(gym.Env[np.ndarray, np.int64]):
    """One MinAtar game driven through `minatar.Environment`, seeded by `reset(seed=...)`."""

    # gymnasium's class attribute
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS}  # noqa: RUF012

    def __init__(
        self,
        game: str,
        *,
        sticky_action_prob: float = 0.1,
        max_steps: int = 100_000,
        difficulty_ramping: bool = True,
        render_mode: str | None = "rgb_array",
        cell_pixels: int = 32,
    ) -> None:
        if game not in MINATAR_GAMES:
            hits = close_matches(game, MINATAR_GAMES)
            hint = f" Did you mean {' or '.join(repr(h) for h in hits)}?" if hits else ""
            raise EnvError(
                f"Unknown MinAtar game {game!r}.{hint} Games: {', '.join(MINATAR_GAMES)}."
            )
        if not 0.0 <= sticky_action_prob < 1.0:
            raise EnvError(
                f"sticky_action_prob must be in [0, 1), got {sticky_action_prob}; MinAtar's "
                "default is 0.1, and 0 turns sticky actions off."
            )
        if max_steps < 1:
            raise EnvError(f"max_steps must be >= 1, got {max_steps}.")
        if render_mode not in (None, "rgb_array"):
            raise EnvError(
                f"MinAtar renders only render_mode='rgb_array' (or None), got {render_mode!r}."
            )
        if isinstance(cell_pixels, bool) or not isinstance(cell_pixels, int) or cell_pixels < 1:
            raise EnvError(f"cell_pixels must be a whole number >= 1, got {cell_pixels!r}.")
        try:
            from minatar import Environment
        except ImportError:
            raise EnvError(
                "MinAtar games need the minatar package: pip install 'shoal[minatar]'."
            ) from None
        self.game = game
        self.max_steps = max_steps
        # rgb_array by default: a frame costs nothing until render() is called, and
        # `shoal play` and --video-every can then film the env the registry makes.
        self.render_mode = render_mode
        self.cell_pixels = cell_pixels
        self._env = Environment(
            game, sticky_action_prob=sticky_action_prob, difficulty_ramping=difficulty_ramping
        )
        self._actions = list(self._env.minimal_action_set())
        rows, cols, channels = self._env.state_shape()
        self.observation_space = gym.spaces.Box(0, 1, (channels, rows, cols), np.uint8)
        self.action_space = gym.spaces.Discrete(len(self._actions))
        self._steps = 0
        if channels > len(CHANNEL_COLOURS):  # no game has more; a new one would need colours
            raise EnvError(f"MinAtar {game} has {channels} channels; render() colours at most 10.")
        # Row 0: an empty cell; row c + 1: channel c.
        self._palette = np.concatenate([np.zeros((1, 3), np.uint8), CHANNEL_COLOURS[:channels]])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            # MinAtar draws game and sticky-action randomness from one RandomState.
            self._env.seed(int(self.np_random.integers(2**31)))
        self._env.reset()
        self._env.last_action = 0  # a sticky action must not leak in from the last episode
        self._steps = 0
        return self._obs(), {}

    def step(self, action: int | np.integer) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward, terminal = self._env.act(self._actions[int(action)])
        self._steps += 1
        truncated = self._steps >= self.max_steps and not terminal
        return self._obs(), float(reward), bool(terminal), truncated, {}

    def render(self) -> np.ndarray:
        """The current state as `[10 * cell_pixels, 10 * cell_pixels, 3]` uint8 RGB."""
        if self.render_mode != "rgb_array":
            raise EnvError(
                "This MinAtar env was made with render_mode=None; make it with "
                "render_mode='rgb_array' to render it."
            )
        state = self._env.state()  # [rows, cols, C] bool
        # The index of the last channel on in each cell (0: none), as MinAtar's viewer shows.
        top = (state * np.arange(1, state.shape[2] + 1)).max(axis=2)
        cells = self._palette[top]
        return cells.repeat(self.cell_pixels, axis=0).repeat(self.cell_pixels, axis=1)

    def _obs(self) -> np.ndarray:
        return self._env.state().transpose(2, 0, 1).astype(np.uint8)


def make_minatar(
    game: str,
    sticky_actions: bool = True,
    sticky_action_prob: float = 0.1,
    max_steps: int = 100_000,
    difficulty_ramping: bool = True,
    render_mode: str | None = "rgb_array",
    cell_pixels: int = 32,
) -> MinAtarEnv:
    """The MinAtar `game` (one of `MINATAR_GAMES`) with the paper's settings by default.

    `sticky_actions=False` sets the repeat probability to 0, whatever `sticky_action_prob` says.
    """
    prob = sticky_action_prob if sticky_actions else 0.0
    return MinAtarEnv(
        game,
        sticky_action_prob=prob,
        max_steps=max_steps,
        difficulty_ramping=difficulty_ramping,
        render_mode=render_mode,
        cell_pixels=cell_pixels,
    )
