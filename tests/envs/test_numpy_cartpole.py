"""`--env.vector numpy`: CartPole-v1 stepped as one array by Gymnasium's vector CartPole, with
shoal's same-step autoreset, and the PPO preset that uses it."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from shoal.envs.config import EnvConfig
from shoal.envs.numpy_cartpole import NumpyCartPoleVectorEnv
from shoal.envs.registry import make_vector_env, source_of, spec_of_source
from shoal.errors import EnvError
from shoal.experiment import resolve


def _vector(num_envs: int = 4, seed: int = 0) -> NumpyCartPoleVectorEnv:
    source = source_of("CartPole-v1", EnvConfig(vector="numpy"))
    env = make_vector_env(source, spec_of_source(source), EnvConfig(vector="numpy"), num_envs, seed)
    assert isinstance(env, NumpyCartPoleVectorEnv)
    return env


def _single_from(state: np.ndarray) -> gym.Env:
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    env.unwrapped.state = state.astype(np.float64).copy()  # type: ignore[attr-defined]
    return env


def test_each_row_moves_as_gymnasiums_own_cartpole_and_restarts_on_the_same_step():
    vector = _vector(num_envs=4, seed=3)
    obs = vector.reset()
    assert obs.shape == (4, 4) and obs.dtype == np.float32 and np.all(np.abs(obs) <= 0.05)
    singles = [_single_from(vector.env.state[:, i]) for i in range(4)]
    rng = np.random.default_rng(1)
    ended = 0
    for _ in range(300):
        actions = rng.integers(0, 2, size=4)
        step = vector.step(actions)
        for i, single in enumerate(singles):
            expected, reward, terminated, truncated, _ = single.step(int(actions[i]))
            assert reward == step.reward[i] == 1.0
            assert (terminated, truncated) == (step.terminated[i], step.truncated[i])
            if terminated or truncated:
                # The last observation in final_obs, a fresh start in obs, at once.
                np.testing.assert_allclose(step.final_obs[i], expected, rtol=1e-6, atol=1e-6)
                assert np.all(np.abs(step.obs[i]) <= 0.05)
                singles[i] = _single_from(vector.env.state[:, i])
                ended += 1
            else:
                np.testing.assert_allclose(step.obs[i], expected, rtol=1e-6, atol=1e-6)
                assert i not in step.final_obs
    assert ended >= 20  # random CartPole episodes last about 20 steps: restarts were exercised


def test_episode_returns_and_lengths_are_counted_per_row_and_truncate_at_500():
    vector = _vector(num_envs=2, seed=0)
    vector.reset()
    vector.env.steps[1] = 498  # row 1 is one step from CartPole-v1's limit
    vector.env.state[:, 1] = 0.0  # upright and still: it cannot fall in one step
    first = vector.step(np.array([0, 0]))
    assert not first.truncated.any()
    second = vector.step(np.array([1, 0]))
    assert second.truncated[1] and not second.terminated[1]
    assert 1 in second.final_obs
    assert second.episode_lengths[-1] == 2  # the steps this vector saw of that episode
    assert second.episode_returns[-1] == 2.0
    assert vector.env.steps[1] == 0
    lengths: list[int] = []
    for _ in range(200):
        step = vector.step(np.array([0, 1]))
        lengths += step.episode_lengths
        assert step.episode_returns == [float(n) for n in step.episode_lengths]
    assert lengths and all(1 <= n <= 500 for n in lengths)


def test_the_same_seed_gives_the_same_run():
    def run(seed: int) -> np.ndarray:
        vector = _vector(num_envs=3, seed=seed)
        rows = [vector.reset()]
        for t in range(100):
            rows.append(vector.step(np.array([t % 2, 1, 0])).obs)
        return np.stack(rows)

    assert np.array_equal(run(5), run(5))
    assert not np.array_equal(run(5), run(6))


@pytest.mark.parametrize("env", ["Pendulum-v1", "minatar:breakout"])
def test_another_env_with_the_numpy_vector_is_a_clear_error(env):
    with pytest.raises(EnvError, match=r"--env.vector numpy .* CartPole-v1 given by id only"):
        source_of(env, EnvConfig(vector="numpy"))


def test_an_env_object_with_the_numpy_vector_is_a_clear_error():
    with pytest.raises(EnvError, match="a TimeLimit object"):
        source_of(gym.make("CartPole-v1"), EnvConfig(vector="numpy"))


def test_a_run_on_the_numpy_vector_continues_on_an_env_object_stepped_one_by_one(tmp_path):
    from shoal.experiment import new_run_dir, read_run_dir

    resolved = resolve(
        "ppo",
        "CartPole-v1",
        run_overrides={"runs_dir": str(tmp_path), "run_name": "numpy"},
        env_overrides={"vector": "numpy"},
    )
    assert resolved.env_config.vector == "numpy"
    store = new_run_dir(resolved)
    again = read_run_dir(store.local)
    assert again.env_config.vector == "numpy"
    on_object = read_run_dir(store.local, env=gym.make("CartPole-v1"))
    assert on_object.env_config.vector == "inline"
