from __future__ import annotations

import numpy as np
import pytest

from shoal.envs import EnvSpec, InProcessVectorEnv, make_env, make_env_factory
from shoal.envs.toy import Countdown, nan_env, wrong_shape_env
from shoal.errors import EnvError


def _vector(factory, num_envs=2, env_id="toy"):
    env = factory()
    spec = EnvSpec.from_env(env_id, env)
    return InProcessVectorEnv([factory] * num_envs, spec, seed=0)


def test_unknown_id_suggests_close_matches():
    with pytest.raises(EnvError) as err:
        make_env_factory("CartPole-v3")
    assert "CartPole-v1" in str(err.value)
    with pytest.raises(EnvError, match="Unknown environment id"):
        make_env_factory("NoSuchThing-v0")


def test_factory_paths_resolve_and_bad_ones_are_explained():
    env = make_env("shoal.envs.toy:countdown")
    assert isinstance(env, Countdown)
    with pytest.raises(EnvError, match="Cannot import module"):
        make_env_factory("no_such_module_xyz:make")
    with pytest.raises(EnvError, match="no callable"):
        make_env_factory("shoal.envs.toy:missing")


def test_autoreset_returns_final_obs_and_episode_statistics():
    vector = _vector(lambda: Countdown(length=3), num_envs=2)
    obs = vector.reset()
    assert obs.shape == (2, 1) and np.all(obs == 0)
    for _ in range(2):
        step = vector.step(np.zeros(2, np.int64))
        assert not step.truncated.any() and not step.final_obs
    step = vector.step(np.zeros(2, np.int64))
    assert step.truncated.all() and not step.terminated.any()
    # The returned obs is the next episode's first; the finished one's last is in final_obs.
    assert np.all(step.obs == 0)
    assert {i: float(o[0]) for i, o in step.final_obs.items()} == {0: 3.0, 1: 3.0}
    assert step.episode_returns == [3.0, 3.0] and step.episode_lengths == [3, 3]


def test_termination_is_reported_apart_from_truncation():
    vector = _vector(lambda: Countdown(length=10, terminate_at=2), num_envs=1)
    vector.reset()
    vector.step(np.zeros(1, np.int64))
    step = vector.step(np.zeros(1, np.int64))
    assert step.terminated[0] and not step.truncated[0]


def test_nan_observation_names_env_and_step():
    vector = _vector(nan_env, env_id="shoal.envs.toy:nan_env")
    vector.reset()
    vector.step(np.zeros(2, np.int64))
    vector.step(np.zeros(2, np.int64))
    with pytest.raises(EnvError, match=r"nan_env \(env 0\).*non-finite.*step 3"):
        vector.step(np.zeros(2, np.int64))


def test_wrong_observation_shape_names_env_and_step():
    vector = _vector(wrong_shape_env, env_id="shoal.envs.toy:wrong_shape_env")
    vector.reset()
    vector.step(np.zeros(2, np.int64))
    vector.step(np.zeros(2, np.int64))
    with pytest.raises(EnvError, match=r"shape \(4,\) at step 3.*\(3,\)"):
        vector.step(np.zeros(2, np.int64))


def test_seeded_vector_envs_repeat_exactly():
    first = _vector(lambda: make_env("CartPole-v1"), num_envs=3, env_id="CartPole-v1")
    second = _vector(lambda: make_env("CartPole-v1"), num_envs=3, env_id="CartPole-v1")
    assert np.array_equal(first.reset(), second.reset())
    actions = np.array([0, 1, 1])
    assert np.array_equal(first.step(actions).obs, second.step(actions).obs)


class _Narrow(Countdown):
    """Returns shape (1,) observations from a space that says (3,): numpy would broadcast them."""

    def __init__(self):
        super().__init__()
        import gymnasium as gym

        self.observation_space = gym.spaces.Box(0.0, np.inf, (3,), np.float32)


def test_an_observation_that_numpy_would_broadcast_is_still_rejected():
    vector = _vector(_Narrow, num_envs=1)
    with pytest.raises(EnvError, match=r"shape \(1,\).*\(3,\)"):
        vector.reset()
