"""A policy trained on shoal's Atari pipeline plays Gymnasium's own Atari wrappers.

A user who evaluates a shoal policy outside shoal builds the env the usual way:
`gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)` wrapped in Gymnasium's
`AtariPreprocessing` (84x84 grey, frame skip 4 with a max over the last two frames, no-op
starts) and `FrameStackObservation(4)`. Those observations must be the ones the policy learned
on, frame for frame, and `shoal.load(run).predict(obs, state)` must play them.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import shoal
from shoal.envs.atari import AtariOptions, make_atari

ale_py = pytest.importorskip("ale_py")
gym.register_envs(ale_py)


def gymnasium_pong(noop_max: int) -> gym.Env:
    env = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
    env = gym.wrappers.AtariPreprocessing(env, noop_max=noop_max, frame_skip=4, screen_size=84)
    return gym.wrappers.FrameStackObservation(env, 4)


def test_gymnasium_wrappers_give_shoals_observations_frame_for_frame():
    ours = make_atari("ALE/Pong-v5", AtariOptions(noop_max=0))
    theirs = gymnasium_pong(noop_max=0)
    obs, _ = ours.reset(seed=3)
    other, _ = theirs.reset(seed=3)
    assert obs.shape == other.shape == (4, 84, 84) and obs.dtype == other.dtype == np.uint8
    np.testing.assert_array_equal(obs, np.asarray(other))
    actions = np.random.default_rng(0).integers(0, ours.action_space.n, 300)
    rewards = [0.0, 0.0]
    for t, action in enumerate(actions):
        obs, reward, terminated, truncated, _ = ours.step(int(action))
        other, other_reward, other_terminated, other_truncated, _ = theirs.step(int(action))
        np.testing.assert_array_equal(obs, np.asarray(other), err_msg=f"step {t}")
        assert (reward, terminated, truncated) == (other_reward, other_terminated, other_truncated)
        rewards[0] += reward
        rewards[1] += other_reward
    assert rewards[0] < 0  # points were played (a random policy loses them) and agreed on
    ours.close()
    theirs.close()


def test_a_trained_atari_policy_predicts_on_the_gymnasium_env(tmp_path):
    result = shoal.train(
        "impala",
        "ALE/Pong-v5",
        run={
            "total_steps": 256,
            "num_envs": 4,
            "runs_dir": str(tmp_path),
            "eval_episodes": 0,
            "progress": False,
            "log_interval": 128,
            "tensorboard": False,
        },
        agent={"unroll_length": 16, "batch_size": 1},
    )
    policy = shoal.load(result.run_dir)
    env = gymnasium_pong(noop_max=30)
    obs, _ = env.reset(seed=0)
    state, total, steps = None, 0.0, 0
    while steps < 400:
        action, state = policy.predict(obs, state)
        assert env.action_space.contains(int(action))
        obs, reward, terminated, truncated, _ = env.step(int(action))
        total += reward
        steps += 1
        if terminated or truncated:
            break
    assert steps == 400 or terminated
    env.close()
