"""envpool behind shoal's VectorEnv: same spaces, frames and observations as the gymnasium path,
and shoal's same-step autoreset instead of envpool's next-step autoreset."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("envpool")
pytest.importorskip("ale_py")

from shoal.envs.atari import AtariOptions, frames_per_step, make_atari
from shoal.envs.envpool_vector import (
    EnvpoolVectorEnv,
    envpool_available,
    envpool_task_id,
)
from shoal.errors import EnvError

PONG_IDS = ["ALE/Pong-v5", "PongNoFrameskip-v4"]


@pytest.mark.parametrize(
    ("env_id", "options"),
    [
        ("ALE/Pong-v5", AtariOptions()),
        ("PongNoFrameskip-v4", AtariOptions()),
        ("ALE/Pong-v5", AtariOptions(full_action_space=True)),
    ],
)
def test_spaces_match_the_gymnasium_path(env_id: str, options: AtariOptions) -> None:
    assert envpool_available()
    assert envpool_task_id(env_id) == "Pong-v5"
    vec = EnvpoolVectorEnv(env_id, 1, 0, options)
    env = make_atari(env_id, options)
    assert vec.spec.observation_space == env.observation_space
    assert vec.spec.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    assert vec.spec.action_space == env.action_space
    assert env.action_space.n == (18 if options.full_action_space else 6)
    obs = vec.reset()
    assert obs.shape == (1, 4, 84, 84) and obs.dtype == np.uint8
    vec.close()


def test_frames_per_step_is_four() -> None:
    vec = EnvpoolVectorEnv("ALE/Pong-v5", 1, 0)
    assert frames_per_step(vec) == 4 and vec.spec.frames_per_step == 4
    vec.close()


@pytest.mark.parametrize("game", ["ALE/Pong-v5", "BreakoutNoFrameskip-v4"])
def test_observations_equal_the_gymnasium_path_step_for_step(game: str) -> None:
    # With one no-op frame and no sticky actions both paths are deterministic, so equal
    # observations mean equal frame skip (4 ALE frames, counted in test_atari), max-pool,
    # resize and stack. They may differ only on a game-over step that ends inside a frame skip.
    options = AtariOptions(noop_max=1)
    vec = EnvpoolVectorEnv(game, 1, 0, options)
    env = make_atari(game, options)
    first, _ = env.reset(seed=0)
    assert (vec.reset()[0] == first).all()
    rng = np.random.default_rng(0)
    for _ in range(150):
        action = int(rng.integers(env.action_space.n))
        step = vec.step(np.array([action]))
        obs, reward, terminated, truncated, _ = env.step(action)
        assert not (terminated or truncated)
        assert (step.obs[0] == obs).all()
        assert step.reward[0] == reward
    vec.close()


def _is_first_observation(obs: np.ndarray) -> bool:
    return all((obs[k] == obs[0]).all() for k in range(1, len(obs)))


def test_episode_end_follows_shoals_same_step_autoreset() -> None:
    vec = EnvpoolVectorEnv("ALE/Pong-v5", 2, 3)
    previous = vec.reset()
    rng = np.random.default_rng(3)
    returns, lengths = np.zeros(2), np.zeros(2, int)
    finished = 0
    for _ in range(3000):
        step = vec.step(rng.integers(6, size=2))
        returns += step.reward
        lengths += 1
        done = np.flatnonzero(step.terminated | step.truncated)
        assert set(step.final_obs) == set(done.tolist())
        for i in done:
            final = step.final_obs[i]
            assert (final[:3] == previous[i][1:]).all()  # the last frame of the same episode
            assert _is_first_observation(step.obs[i])  # the next episode's first observation
            assert not (final == step.obs[i]).all()
        assert step.episode_returns == [returns[i] for i in done]
        assert step.episode_lengths == [lengths[i] for i in done]
        returns[done], lengths[done] = 0, 0
        finished += len(done)
        previous = step.obs
        if finished:
            break
    assert finished and step.terminated.any()  # a Pong game ended, within the 3000 steps
    vec.close()


def test_truncated_episodes_have_exactly_the_cap_in_agent_steps() -> None:
    # envpool alone would spend the step after an episode end on its reset, so the second
    # episode would last 201 steps; shoal's convention makes every step count.
    vec = EnvpoolVectorEnv("ALE/Pong-v5", 2, 0, AtariOptions(max_frames=4 * 200))
    vec.reset()
    rng = np.random.default_rng(0)
    ends = []
    for t in range(1, 401):
        step = vec.step(rng.integers(6, size=2))
        if step.truncated.any():
            assert step.truncated.all() and not step.terminated.any()
            ends.append((t, step.episode_lengths))
    assert ends == [(200, [200, 200]), (400, [200, 200])]
    vec.close()


def test_errors_say_what_to_do() -> None:
    with pytest.raises(EnvError, match="noop_max"):
        EnvpoolVectorEnv("ALE/Pong-v5", 1, 0, AtariOptions(noop_max=0))
    vec = EnvpoolVectorEnv("ALE/Pong-v5", 1, 0)
    with pytest.raises(EnvError, match="reset"):
        vec.step(np.zeros(1, int))
    vec.reset()
    with pytest.raises(EnvError, match=r"\[0, 6\)"):
        vec.step(np.array([6]))
    vec.close()
