from __future__ import annotations

import functools
import glob
import multiprocessing
import os
import resource
import signal
import time
import types

import gymnasium as gym
import numpy as np
import pytest

from shoal.envs import EnvSpec, InProcessVectorEnv, VectorStep
from shoal.envs.subprocess_vector import SubprocessVectorEnv
from shoal.envs.toy import Broken, Countdown, countdown
from shoal.errors import ConfigError, EnvError

CARTPOLE = functools.partial(gym.make, "CartPole-v1")
# Five envs over two workers (3 + 2), each with its own episode length, so an env stepped in
# the wrong slot or a slice off by one changes the results.
COUNTDOWNS = [functools.partial(Countdown, length=2 + i) for i in range(4)] + [
    functools.partial(Countdown, length=10, terminate_at=3)
]


def _segfault() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file left in the working dir
    os.kill(os.getpid(), signal.SIGSEGV)


class SegfaultsAtStep2(Countdown):
    """Crashes its worker process in the middle of a step, as a native-code bug would."""

    def step(self, action: int):
        if self.t + 1 >= 2:
            _segfault()
        return super().step(action)


class ForksThenSegfaultsAtStep2(Countdown):
    """Like SegfaultsAtStep2, but a forked child (a simulator, say) outlives the worker holding
    its pipe and sentinel open, so only the worker's exit status shows that it died."""

    def step(self, action: int):
        if self.t + 1 >= 2:
            if os.fork() == 0:
                time.sleep(4)
                os._exit(0)
            _segfault()
        return super().step(action)


def _spec(factory, env_id: str) -> EnvSpec:
    return EnvSpec.from_env(env_id, factory())


def _shm_segments() -> set[str]:
    return set(glob.glob(f"/dev/shm/shoal_{os.getpid()}_*"))


def _assert_same(got: VectorStep, want: VectorStep) -> None:
    for name in ("obs", "reward", "terminated", "truncated"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert list(got.final_obs) == list(want.final_obs)
    for i, obs in want.final_obs.items():
        np.testing.assert_array_equal(got.final_obs[i], obs)
    assert got.episode_returns == want.episode_returns
    assert got.episode_lengths == want.episode_lengths


@pytest.fixture(scope="module")
def cartpole():
    with SubprocessVectorEnv([CARTPOLE] * 4, _spec(CARTPOLE, "CartPole-v1"), 7, 2) as env:
        yield env


@pytest.fixture(scope="module")
def countdowns():
    with SubprocessVectorEnv(COUNTDOWNS, _spec(countdown, "countdown"), 0, num_workers=2) as env:
        yield env


def test_cartpole_matches_in_process_step_for_step(cartpole):
    reference = InProcessVectorEnv([CARTPOLE] * 4, cartpole.spec, seed=7)
    obs = cartpole.reset()
    np.testing.assert_array_equal(obs, reference.reset())
    assert obs.dtype == np.float32 and obs.shape == (4, 4)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(300):
        actions = rng.integers(0, 2, size=4)
        want = reference.step(actions)
        _assert_same(cartpole.step(actions), want)
        episodes += len(want.episode_returns)
    assert episodes >= 20  # random CartPole episodes last ~20 steps: autoreset was exercised


def test_countdown_truncation_gives_final_obs_stats_and_reset_obs(countdowns):
    countdowns.reset()
    zeros = np.zeros(5, np.int64)
    countdowns.step(zeros)
    step = countdowns.step(zeros)  # env 0 (length 2) truncates
    assert step.truncated.tolist() == [True, False, False, False, False]
    assert not step.terminated.any()
    assert {i: o.tolist() for i, o in step.final_obs.items()} == {0: [2.0]}
    assert step.obs[:, 0].tolist() == [0.0, 2.0, 2.0, 2.0, 2.0]  # env 0 shows its reset obs
    assert step.episode_returns == [2.0] and step.episode_lengths == [2]
    step = countdowns.step(zeros)  # env 1 truncates at 3, env 4 terminates at 3
    assert step.truncated.tolist() == [False, True, False, False, False]
    assert step.terminated.tolist() == [False, False, False, False, True]
    assert {i: o.tolist() for i, o in step.final_obs.items()} == {1: [3.0], 4: [3.0]}
    assert step.obs[:, 0].tolist() == [1.0, 0.0, 3.0, 3.0, 0.0]
    assert step.episode_returns == [3.0, 3.0] and step.episode_lengths == [3, 3]
    assert step.reward.dtype == np.float32 and step.reward.tolist() == [1.0] * 5


def test_uneven_split_matches_in_process(countdowns):
    assert countdowns.num_envs == 5 and countdowns.num_workers == 2
    assert len(set(countdowns.worker_pids)) == 2
    reference = InProcessVectorEnv(COUNTDOWNS, countdowns.spec, seed=0)
    np.testing.assert_array_equal(countdowns.reset(), reference.reset())
    for t in range(13):
        actions = np.full(5, t % 2)
        _assert_same(countdowns.step(actions), reference.step(actions))


def test_env_exception_comes_back_as_env_error_naming_global_env(cartpole):
    cartpole.reset()
    with pytest.raises(EnvError, match=r"CartPole-v1 \(env 3\) raised at step \d+: Assert") as err:
        cartpole.step(np.array([0, 1, 0, 7]))  # 7 is not a CartPole action; env 3 is in worker 1
    assert "Traceback from the worker" in str(err.value.__cause__)
    cartpole.reset()  # the workers survive an env's error
    assert cartpole.step(np.zeros(4, np.int64)).obs.shape == (4, 4)


@pytest.mark.parametrize(("mode", "what"), [("nan", "non-finite"), ("shape", r"shape \(4,\)")])
def test_bad_output_names_global_env_and_step_like_in_process(mode, what):
    # Env 3, the second of worker 1's two envs, misbehaves from step 3; env 1 (worker 0) from
    # step 4, when both are bad and the lower index must be named, as in-process.
    factories = [functools.partial(Broken, mode, at_step=at) for at in (100, 4, 100, 3)]
    spec = _spec(factories[0], f"broken-{mode}")
    reference = InProcessVectorEnv(factories, spec, seed=0)
    actions = np.zeros(4, np.int64)
    with SubprocessVectorEnv(factories, spec, seed=0, num_workers=2) as env:
        env.reset()
        reference.reset()
        for _ in range(2):
            _assert_same(env.step(actions), reference.step(actions))
        for bad, step in [(3, 3), (1, 4)]:
            with pytest.raises(EnvError, match=rf"\(env {bad}\).*{what}.*at step {step}") as got:
                env.step(actions)
            with pytest.raises(EnvError) as want:
                reference.step(actions)
            assert str(got.value) == str(want.value)


@pytest.mark.timeout(30)
def test_killed_worker_raises_promptly_and_close_still_cleans_up():
    before = set(multiprocessing.active_children())
    env = SubprocessVectorEnv([countdown] * 4, _spec(countdown, "countdown"), 0, 2)
    env.reset()
    os.kill(env.worker_pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(EnvError, match=r"worker 1 \(envs 2-3, .*exit code -9 \(signal SIGKILL\)"):
        env.step(np.zeros(4, np.int64))
    assert time.monotonic() - start < 3.0
    with pytest.raises(EnvError, match="worker 1 died"):
        env.step(np.zeros(4, np.int64))
    env.close()
    env.close()
    assert set(multiprocessing.active_children()) <= before


@pytest.mark.timeout(30)
@pytest.mark.parametrize("crashing", [SegfaultsAtStep2, ForksThenSegfaultsAtStep2])
def test_worker_crashing_mid_step_raises_instead_of_hanging(crashing):
    factories = [countdown] * 4 + [crashing]
    env = SubprocessVectorEnv(factories, _spec(countdown, "countdown"), 0, num_workers=2)
    env.reset()
    env.step(np.zeros(5, np.int64))
    start = time.monotonic()
    with pytest.raises(EnvError, match=r"worker 1 \(envs 3-4, .*SIGSEGV.*while stepping at step 2"):
        env.step(np.zeros(5, np.int64))
    assert time.monotonic() - start < 3.0
    assert not {p.pid for p in multiprocessing.active_children()} & set(env.worker_pids)


def test_close_stops_workers_frees_shared_memory_and_is_idempotent():
    before_children = set(multiprocessing.active_children())
    before_shm = _shm_segments()
    env = SubprocessVectorEnv([countdown] * 3, _spec(countdown, "countdown"), 0, 2)
    pids = set(env.worker_pids)
    assert pids <= {p.pid for p in multiprocessing.active_children()}
    assert len(_shm_segments() - before_shm) == 1
    env.close()
    assert set(multiprocessing.active_children()) <= before_children
    assert _shm_segments() == before_shm
    env.close()
    with pytest.raises(EnvError, match="closed"):
        env.reset()


def test_a_forgotten_env_is_closed_by_its_finaliser():
    before_children = set(multiprocessing.active_children())
    before_shm = _shm_segments()
    env = SubprocessVectorEnv([countdown] * 2, _spec(countdown, "countdown"), 0, 2)
    env.reset()
    del env
    assert set(multiprocessing.active_children()) <= before_children
    assert _shm_segments() == before_shm


def test_failures_while_making_envs_name_the_env_and_leave_nothing_behind():
    before = set(multiprocessing.active_children())
    spec = _spec(countdown, "countdown")
    raising = [countdown] * 2 + [functools.partial(gym.make, "NoSuchEnv-v0"), countdown]
    with pytest.raises(EnvError, match=r"countdown \(env 2\) could not be made: \w*NameNotFound"):
        SubprocessVectorEnv(raising, spec, seed=0, num_workers=2)
    dying = [countdown] * 3 + [functools.partial(os._exit, 3)]
    with pytest.raises(EnvError, match=r"worker 1 \(envs 2-3, .*exit code 3 while making"):
        SubprocessVectorEnv(dying, spec, seed=0, num_workers=2)
    assert set(multiprocessing.active_children()) <= before


def test_unpicklable_factory_and_bad_arguments_are_explained():
    spec = _spec(countdown, "countdown")
    with pytest.raises(EnvError, match=r"env 1 .*cannot be pickled.*lambda.*functools.partial"):
        SubprocessVectorEnv([countdown, lambda: Countdown()], spec, seed=0)
    with pytest.raises(ConfigError, match="num_workers=3 cannot split 2 envs"):
        SubprocessVectorEnv([countdown] * 2, spec, seed=0, num_workers=3)
    dict_spec = types.SimpleNamespace(
        env_id="dict-env", observation_space=gym.spaces.Dict({"x": gym.spaces.Discrete(2)})
    )
    with pytest.raises(EnvError, match=r"only Box observations.*InProcessVectorEnv"):
        SubprocessVectorEnv([countdown], dict_spec, seed=0)
