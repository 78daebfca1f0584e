"""MinAtar's rgb_array render: the 10 x 10 grid, each channel a colour, scaled up to be seen."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("minatar")

from shoal.envs.minatar import CHANNEL_COLOURS, MINATAR_GAMES, make_minatar
from shoal.errors import EnvError


def cell_colours(frame: np.ndarray, cell: int) -> np.ndarray:
    """`[10, 10, 3]`: the colour of each cell, checked to fill its square."""
    rows, cols = frame.shape[0] // cell, frame.shape[1] // cell
    squares = frame.reshape(rows, cell, cols, cell, 3)
    corner = squares[:, :1, :, :1]
    assert (squares == corner).all(), "a cell is not one colour"
    return corner[:, 0, :, 0]


@pytest.mark.parametrize("game", MINATAR_GAMES)
def test_each_channel_is_drawn_in_its_own_colour_at_32_pixels_a_cell(game: str) -> None:
    env = make_minatar(game)
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    seen: dict[int, tuple[int, ...]] = {}
    for _ in range(60):
        frame = env.render()
        assert frame.shape == (320, 320, 3) and frame.dtype == np.uint8
        colours = cell_colours(frame, 32)
        # Each cell shows the last channel on in it (MinAtar's viewer), black when none is.
        for row in range(10):
            for col in range(10):
                on = np.flatnonzero(obs[:, row, col])
                want = (0, 0, 0) if on.size == 0 else tuple(CHANNEL_COLOURS[on[-1]])
                assert tuple(colours[row, col]) == want
                if on.size:
                    seen[int(on[-1])] = want
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    assert seen, "nothing was on the grid"
    # distinct channels, distinct colours, none of them black
    assert len(set(seen.values())) == len(seen) and (0, 0, 0) not in seen.values()


def test_the_palette_tells_every_channel_of_every_game_apart() -> None:
    most = max(make_minatar(game).observation_space.shape[0] for game in MINATAR_GAMES)
    colours = {tuple(c) for c in CHANNEL_COLOURS[:most]}
    assert len(colours) == most and (0, 0, 0) not in colours


def test_the_render_follows_the_game() -> None:
    env = make_minatar("breakout", sticky_action_prob=0.0)
    env.reset(seed=3)
    frames = [env.render().copy()]
    for _ in range(10):
        env.step(0)
        frames.append(env.render().copy())
    assert len({f.tobytes() for f in frames}) > 5  # the ball moves every step
    again = make_minatar("breakout", sticky_action_prob=0.0)
    again.reset(seed=3)
    assert np.array_equal(again.render(), frames[0])  # a frame is the state, nothing else


def test_cell_size_and_render_mode() -> None:
    env = make_minatar("breakout", cell_pixels=4)
    env.reset(seed=0)
    assert env.render().shape == (40, 40, 3)
    assert env.metadata["render_fps"] == 15 and env.render_mode == "rgb_array"
    quiet = make_minatar("breakout", render_mode=None)
    quiet.reset(seed=0)
    with pytest.raises(EnvError, match="render_mode='rgb_array'"):
        quiet.render()
    with pytest.raises(EnvError, match="only render_mode='rgb_array'"):
        make_minatar("breakout", render_mode="human")
    with pytest.raises(EnvError, match="cell_pixels must be a whole number >= 1"):
        make_minatar("breakout", cell_pixels=0)
