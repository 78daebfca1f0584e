"""The Atari protocol of `shoal.envs.atari`, checked against the ALE's own frame counter."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

from shoal.envs.atari import AtariOptions, atari_game, frames_per_step, make_atari
from shoal.errors import ConfigError, EnvError

PONG_IDS = ["ALE/Pong-v5", "PongNoFrameskip-v4"]


def _random_steps(env: gym.Env, seed: int):
    env.action_space.seed(seed)
    while True:
        yield env.step(env.action_space.sample())


@pytest.mark.parametrize("env_id", PONG_IDS)
def test_one_agent_step_is_four_emulator_frames(env_id: str) -> None:
    env = make_atari(env_id)
    env.reset(seed=0)
    ale = env.unwrapped.ale
    assert 1 <= ale.getEpisodeFrameNumber() <= 30  # the no-op start, not agent steps
    assert frames_per_step(env) == 4
    steps = _random_steps(env, 0)
    for _ in range(10):
        before = ale.getEpisodeFrameNumber()
        next(steps)
        assert ale.getEpisodeFrameNumber() - before == 4


@pytest.mark.parametrize("env_id", PONG_IDS)
def test_observation_is_a_channels_first_stack_of_four_84x84_grey_frames(env_id: str) -> None:
    env = make_atari(env_id)
    assert env.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    first, _ = env.reset(seed=1)
    assert first.shape == (4, 84, 84) and first.dtype == np.uint8
    assert all((first[k] == first[0]).all() for k in range(4))  # the reset frame fills the stack
    steps = _random_steps(env, 1)
    previous = first
    for _ in range(60):
        obs, *_ = next(steps)
        assert (obs[:3] == previous[1:]).all()  # oldest first: the stack shifts by one frame
        previous = obs
    assert not (previous[3] == first[0]).all()  # the game moved on


@pytest.mark.parametrize("env_id", PONG_IDS)
def test_noop_starts_vary_the_first_observation(env_id: str) -> None:
    # Pong's screen is still for its first frames, so only some no-op counts show: 8 seeds do.
    env = make_atari(env_id)
    assert len({env.reset(seed=seed)[0].tobytes() for seed in range(8)}) > 1
    without = make_atari(env_id, AtariOptions(noop_max=0))
    assert len({without.reset(seed=seed)[0].tobytes() for seed in range(4)}) == 1


def _step_until_a_life_is_lost(env: gym.Env) -> tuple[bool, bool, dict]:
    env.reset(seed=0)
    lives = env.unwrapped.ale.lives()
    for _, _, terminated, truncated, info in _random_steps(env, 0):
        if info["lives"] < lives:
            return terminated, truncated, info
        assert not (terminated or truncated)
    raise AssertionError("unreachable")


def test_life_loss_is_not_terminal_by_default() -> None:
    env = make_atari("ALE/Breakout-v5")
    terminated, truncated, info = _step_until_a_life_is_lost(env)
    assert info["lives"] == 4
    assert terminated is False and truncated is False


def test_life_loss_is_terminal_on_request_and_the_game_goes_on() -> None:
    env = make_atari("ALE/Breakout-v5", AtariOptions(terminal_on_life_loss=True))
    terminated, truncated, _ = _step_until_a_life_is_lost(env)
    assert terminated is True and truncated is False
    frames = env.unwrapped.ale.getEpisodeFrameNumber()
    env.reset()
    assert env.unwrapped.ale.lives() == 4  # the next life, not a new game
    assert env.unwrapped.ale.getEpisodeFrameNumber() > frames
    env.reset(seed=0)  # a seeded reset always starts a new game
    assert env.unwrapped.ale.lives() == 5


@pytest.mark.parametrize("env_id", PONG_IDS)
def test_episodes_are_truncated_after_max_frames_of_play(env_id: str) -> None:
    env = make_atari(env_id, AtariOptions(max_frames=4 * 25))
    env.reset(seed=0)
    start = env.unwrapped.ale.getEpisodeFrameNumber()
    steps = 0
    for _, _, terminated, truncated, _ in _random_steps(env, 0):
        steps += 1
        assert not terminated
        if truncated:
            break
    assert steps == 25
    assert env.unwrapped.ale.getEpisodeFrameNumber() - start == 100


@pytest.mark.parametrize("env_id", PONG_IDS)
def test_sticky_actions_option_sets_the_repeat_probability(env_id: str) -> None:
    # ALE v5 ids default to 0.25 in ale-py; the option decides, for both id families.
    plain = make_atari(env_id).unwrapped.ale
    sticky = make_atari(env_id, AtariOptions(sticky_actions=True)).unwrapped.ale
    assert plain.getFloat("repeat_action_probability") == 0.0
    assert sticky.getFloat("repeat_action_probability") == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("env_id", "sticky"), [("ALE/Pong-v5", True), ("PongNoFrameskip-v4", False)]
)
def test_check_env_passes(env_id: str, sticky: bool) -> None:
    env = make_atari(env_id, AtariOptions(sticky_actions=sticky))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # check_env is meant for the unwrapped env and says so; the wrapped env is the product.
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version")
        check_env(env, skip_render_check=True)


def test_seeded_runs_with_sticky_actions_are_reproducible() -> None:
    def trajectory() -> list[np.ndarray]:
        env = make_atari("ALE/Breakout-v5", AtariOptions(sticky_actions=True))
        obs, _ = env.reset(seed=5)
        steps = _random_steps(env, 5)
        return [obs] + [next(steps)[0] for _ in range(100)]

    assert all((a == b).all() for a, b in zip(trajectory(), trajectory(), strict=True))


def test_full_action_space_has_18_actions() -> None:
    assert make_atari("ALE/Pong-v5").action_space == gym.spaces.Discrete(6)
    full = make_atari("ALE/Pong-v5", AtariOptions(full_action_space=True))
    assert full.action_space == gym.spaces.Discrete(18)


def test_ids_and_errors() -> None:
    assert atari_game("ALE/MontezumaRevenge-v5") == "MontezumaRevenge"
    assert atari_game("PongNoFrameskip-v4") == "Pong"
    with pytest.raises(EnvError, match="ALE/Pong-v5"):
        make_atari("ALE/Pongg-v5")
    with pytest.raises(EnvError, match="NoFrameskip-v4"):
        make_atari("Pong-v4")
    with pytest.raises(ConfigError, match="frame_skip"):
        AtariOptions(frame_skip=0)
