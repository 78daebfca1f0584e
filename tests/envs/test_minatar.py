"""MinAtar games as channels-first gymnasium envs."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

pytest.importorskip("minatar")

from shoal.envs.minatar import MINATAR_GAMES, MinAtarEnv, make_minatar
from shoal.errors import EnvError


def test_breakout_observations_are_channels_first_binary_uint8() -> None:
    env = make_minatar("breakout")
    assert env.observation_space == gym.spaces.Box(0, 1, (4, 10, 10), np.uint8)
    assert env.action_space == gym.spaces.Discrete(3)  # no-op, left, right
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 10, 10) and obs.dtype == np.uint8
    assert set(np.unique(obs)) == {0, 1}
    # Breakout's channels are paddle, ball, trail, bricks: the paddle is one cell, the bricks
    # fill three rows, so the planes are on the first axis, not the last.
    assert obs[0].sum() == 1 and obs[3].sum() == 30


@pytest.mark.parametrize("game", MINATAR_GAMES)
def test_check_env_passes(game: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(make_minatar(game), skip_render_check=True)


def _trajectory(
    game: str, seed: int, env: MinAtarEnv | None = None, steps: int = 300
) -> list[tuple[bytes, float, bool]]:
    env = env or make_minatar(game)
    env.action_space.seed(0)
    obs, _ = env.reset(seed=seed)
    out = [(obs.tobytes(), 0.0, False)]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        out.append((obs.tobytes(), reward, terminated))
        if terminated or truncated:
            obs, _ = env.reset()
    return out


@pytest.mark.parametrize("game", ["breakout", "asterix"])
def test_seeding_reproduces_a_trajectory(game: str) -> None:
    # Sticky actions are on (p = 0.1), so the sticky draws are seeded too.
    assert _trajectory(game, 7) == _trajectory(game, 7)
    assert _trajectory(game, 7) != _trajectory(game, 8)


def test_a_seeded_reset_forgets_the_previous_episode() -> None:
    used = make_minatar("breakout", sticky_action_prob=0.9)
    used.reset(seed=1)
    for _ in range(30):  # the last action becomes "right"; it must not stick into the next episode
        used.step(2)
    fresh = make_minatar("breakout", sticky_action_prob=0.9)
    assert _trajectory("breakout", 7, used, 20) == _trajectory("breakout", 7, fresh, 20)


def test_an_episode_terminates_and_max_steps_truncates() -> None:
    env = make_minatar("breakout")
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(10_000):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            break
    assert terminated and not truncated
    freeway = make_minatar("freeway", max_steps=5)  # freeway only ends on its 2500-step clock
    freeway.reset(seed=0)
    ends = [freeway.step(0)[2:4] for _ in range(5)]
    assert ends == [(False, False)] * 4 + [(False, True)]


def _paddle_columns(sticky: bool, seed: int) -> list[int]:
    """Breakout paddle column while pressing left, right, left, ... (it starts in column 4)."""
    env = make_minatar("breakout", sticky_actions=sticky, sticky_action_prob=0.5)
    obs, _ = env.reset(seed=seed)
    columns = [int(np.flatnonzero(obs[0].any(0))[0])]
    for action in [1, 2, 1, 2]:  # indices into the minimal set (no-op, left, right)
        obs, *_ = env.step(action)
        columns.append(int(np.flatnonzero(obs[0].any(0))[0]))
    return columns


def test_sticky_actions_can_be_turned_off() -> None:
    assert all(_paddle_columns(False, seed) == [4, 3, 4, 3, 4] for seed in range(5))
    assert any(_paddle_columns(True, seed) != [4, 3, 4, 3, 4] for seed in range(5))


def test_unknown_game_names_close_matches() -> None:
    with pytest.raises(EnvError, match="space_invaders"):
        make_minatar("space_invader")
