"""Double-buffered collection: two halves stepping in turn give the same unrolls as one env."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shoal.agents.base import Policy, PolicyStep
from shoal.envs import EnvSpec, InProcessVectorEnv
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, make_vector_env, resolve_env
from shoal.envs.split_vector import SplitVectorEnv
from shoal.envs.toy import Countdown
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting

SPEC = EnvSpec.from_env("countdown", Countdown())
# Truncations and terminations at different steps in different envs.
FACTORIES = [
    lambda: Countdown(length=3),
    lambda: Countdown(length=9, terminate_at=4),
    lambda: Countdown(length=5),
    lambda: Countdown(length=7, terminate_at=2),
]


class SendRecv(InProcessVectorEnv):
    """An in-process vector env with the `send`/`recv` pair of the envpool adapter."""

    def send(self, actions):
        self._pending = actions

    def recv(self):
        return self.step(self._pending)


class ObsPolicy(Policy):
    """A deterministic policy: the action follows the obs."""

    def __init__(self):
        self.widths = []

    def step(self, obs, state, inputs, mode):
        self.widths.append(len(obs))
        flat = obs.reshape(len(obs), -1).astype(np.int64)
        actions = flat.sum(axis=1) % 2
        return PolicyStep(actions, {"seen": flat[:, 0].astype(np.float32)})


class SumPolicy(ObsPolicy):
    """A recurrent policy: its state sums the episode's observations and picks the action."""

    def initial_state(self, slots):
        return {"total": torch.zeros(len(slots))}

    def step(self, obs, state, inputs, mode):
        self.widths.append(len(obs))
        total = state["total"] + torch.from_numpy(obs.reshape(len(obs), -1).sum(1))
        actions = total.long().numpy() % 2
        return PolicyStep(actions, {"seen": total.numpy().astype(np.float32)}, {"total": total})


def _collector(env, policy, length):
    return UnrollCollector(env, Acting(policy, SPEC), length)


def _assert_same(a, b):
    for name in ("obs", "actions", "rewards", "terminated", "truncated", "final_index"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.final_obs, b.final_obs)
    np.testing.assert_array_equal(a.extras["seen"], b.extras["seen"])


@pytest.mark.parametrize("kind", [ObsPolicy, SumPolicy])
def test_double_buffered_unrolls_equal_synchronous_ones(kind):
    whole = _collector(InProcessVectorEnv(FACTORIES, SPEC, seed=0), kind(), 6)
    policy = kind()
    halves = [SendRecv(FACTORIES[:2], SPEC, seed=0), SendRecv(FACTORIES[2:], SPEC, seed=2)]
    split = _collector(SplitVectorEnv(halves), policy, 6)
    for _ in range(3):  # across unroll boundaries too
        _assert_same(split.collect(), whole.collect())
    # The policy acted on one half at a time; recurrent ones too, since the runtime keeps each
    # env's state in its own row.
    assert set(policy.widths) == {2}
    assert split.drain_episodes() == whole.drain_episodes()


@pytest.mark.parametrize("split", [False, True], ids=["one env", "split"])
def test_a_stop_mid_unroll_drops_it_and_the_next_one_goes_on_from_the_env(split):
    asked = []

    def stop():  # the run's deadline passes before the 4th step of the first unroll
        asked.append(True)
        return len(asked) == 4

    if split:
        halves = [SendRecv(FACTORIES[:2], SPEC, seed=0), SendRecv(FACTORIES[2:], SPEC, seed=2)]
        env = SplitVectorEnv(halves)
    else:
        env = InProcessVectorEnv(FACTORIES, SPEC, seed=0)
    stopped = UnrollCollector(env, Acting(ObsPolicy(), SPEC), 6, stop)
    assert stopped.collect() is None
    reference = _collector(InProcessVectorEnv(FACTORIES, SPEC, seed=0), ObsPolicy(), 3)
    reference.collect()  # the 3 steps taken before the stop
    reference.length = 6
    _assert_same(stopped.collect(), reference.collect())


def test_split_env_steps_both_halves_for_callers_of_step():
    halves = [SendRecv(FACTORIES[:2], SPEC, seed=0), SendRecv(FACTORIES[2:], SPEC, seed=2)]
    split, whole = SplitVectorEnv(halves), InProcessVectorEnv(FACTORIES, SPEC, seed=0)
    np.testing.assert_array_equal(split.reset(), whole.reset())
    for _ in range(5):
        a, b = split.step(np.ones(4, np.int64)), whole.step(np.ones(4, np.int64))
        np.testing.assert_array_equal(a.obs, b.obs)
        assert sorted(a.final_obs) == sorted(b.final_obs)
        assert a.episode_returns == b.episode_returns


def test_envpool_double_buffered_matches_one_pool():
    pytest.importorskip("envpool")
    spec = env_spec("ALE/Pong-v5", EnvConfig(backend="gymnasium"))
    unrolls = []
    for double in (True, False):
        config = EnvConfig(backend="envpool", double_buffer=double)
        env = make_vector_env(resolve_env("ALE/Pong-v5", config), spec, config, 4, 7)
        assert isinstance(env, SplitVectorEnv) == double
        try:
            unrolls.append(_collector(env, ObsPolicy(), 8).collect())
        finally:
            env.close()
    _assert_same(*unrolls)
