"""A loaded policy as a Stable-Baselines3 user drives it: `predict` with and without state,
`save` to one file, then `shoal.load` of that file in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

import shoal
from shoal.errors import ConfigError, ShoalError, StorageError

MEMORY_TASK = "shoal.envs.toy:repeat_first"


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    run = {"runs_dir": str(runs), "progress": False, "tensorboard": False, "eval_episodes": 0}
    return shoal.train("ppo", "CartPole-v1", total_steps=2048, run=run).run_dir


@pytest.fixture(scope="module")
def r2d2_run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    run = {"runs_dir": str(runs), "progress": False, "tensorboard": False, "eval_episodes": 0}
    agent = {"min_replay_size": 8, "batch_size": 8}
    return shoal.train("r2d2", MEMORY_TASK, total_steps=600, run=run, agent=agent).run_dir


def test_predict_of_a_feed_forward_policy_has_no_state(ppo_run):
    policy = shoal.load(ppo_run)
    obs = np.array([0.01, 0.2, -0.03, -0.3], np.float32)
    action, state = policy.predict(obs)
    assert state is None and action == policy.act(obs)
    batch, state = policy.predict(np.stack([obs] * 64), deterministic=False)
    assert state is None and batch.shape == (64,) and set(batch) <= {0, 1}
    sampled = {int(policy.predict(obs, deterministic=False)[0]) for _ in range(50)}
    greedy = {int(policy.predict(obs, deterministic=True)[0]) for _ in range(50)}
    assert len(greedy) == 1 and sampled >= greedy


def _play(env, seed, choose):
    """One episode's actions, `choose(obs, reward, first)` picking each."""
    obs, _ = env.reset(seed=seed)
    reward, first, actions = 0.0, True, []
    while True:
        action = choose(obs, reward, first)
        actions.append(int(action))
        obs, reward, terminated, truncated, _ = env.step(action)
        first = False
        if terminated or truncated:
            return actions


def test_predict_with_state_continues_a_recurrent_policy_as_act_does(r2d2_run):
    policy = shoal.load(r2d2_run, trust_run=False)
    assert policy.recurrent
    env = shoal.envs.make_env(MEMORY_TASK)
    held = {}

    def by_predict(obs, reward, first):
        action, held["state"] = policy.predict(obs, None if first else held["state"], reward=reward)
        return action

    def by_act(obs, reward, first):
        if not first:
            policy.step_result(reward, False)
        return policy.act(obs)

    for seed in range(5):
        assert _play(env, seed, by_predict) == _play(env, seed, by_act)
        policy.step_result(0.0, True)
    obs = env.reset(seed=0)[0]
    _, first = policy.predict(obs)
    _, second = policy.predict(obs, first)
    with pytest.raises(ShoalError, match="older state"):
        policy.predict(obs, first)
    with pytest.raises(ShoalError, match="batch size"):
        policy.predict(np.stack([obs, obs]), second)
    with pytest.raises(ShoalError, match="state must be None"):
        policy.predict(obs, "not a state")


def test_save_writes_one_file_a_fresh_process_loads(ppo_run, tmp_path):
    policy = shoal.load(ppo_run)
    path = policy.save(tmp_path / "models" / "cartpole.pt")
    assert [p.name for p in path.parent.iterdir()] == ["cartpole.pt"]  # no temp file left
    data = torch.load(path, weights_only=True)  # no pickled code
    assert data["algo"] == "ppo" and data["env"] == "CartPole-v1"
    obs = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    script = (
        "import json, sys, numpy as np, shoal\n"
        "policy = shoal.load(sys.argv[1])\n"
        "obs = np.array(json.loads(sys.argv[2]), np.float32)\n"
        "print(json.dumps(policy.predict(obs)[0].tolist()))\n"
        "print(shoal.evaluate(sys.argv[1], episodes=2).episodes)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(path), json.dumps(obs.tolist())],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    assert json.loads(out[0]) == policy.predict(obs)[0].tolist() and out[1] == "2"


def test_load_takes_a_checkpoint_file_and_evaluate_takes_an_env(ppo_run):
    checkpoint = sorted((ppo_run / "checkpoints").glob("step-*.pt"))[-1]
    policy = shoal.load(checkpoint)
    assert policy.env_steps == int(checkpoint.stem.split("-")[1])
    env = gym.make("CartPole-v1", max_episode_steps=20)
    result = shoal.evaluate(checkpoint, episodes=3, env=env)
    assert result.episodes == 3 and result.max_return <= 20
    result = shoal.evaluate(ppo_run, episodes=2, env=lambda: gym.make("CartPole-v1"))
    assert result.episodes == 2


def test_save_and_load_mistakes_are_one_clear_error(ppo_run, tmp_path):
    policy = shoal.load(ppo_run)
    with pytest.raises(ConfigError, match="is a folder"):
        policy.save(tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(StorageError, match="Cannot create the folder"):
        policy.save(tmp_path / "file" / "policy.pt")
    with pytest.raises(ShoalError, match=r"policy\.save"):
        shoal.load(tmp_path / "file")
    with pytest.raises(ConfigError, match="env passed does not fit"):
        shoal.evaluate(ppo_run, episodes=1, env=gym.make("MountainCar-v0"))
    saved = policy.save(tmp_path / "policy.pt")
    with pytest.raises(ConfigError, match="observation space"):
        shoal.evaluate(saved, episodes=1, env=gym.make("MountainCar-v0"))


def test_act_on_a_recurrent_policy_refuses_a_second_call_without_step_result(r2d2_run):
    # Issue 35, item 17: a second act would silently act on a zero previous reward.
    policy = shoal.load(r2d2_run)
    env = shoal.envs.make_env(MEMORY_TASK)
    obs, _ = env.reset(seed=0)
    policy.act(obs)
    with pytest.raises(ShoalError, match="without step_result") as refused:
        policy.act(obs)
    assert "predict" in str(refused.value) and "step_result(reward" in str(refused.value)
    policy.step_result(1.0, False)
    policy.act(obs)  # acts again once told the step's result


def test_act_on_a_feed_forward_policy_needs_no_step_result(ppo_run):
    policy = shoal.load(ppo_run)
    obs = np.zeros(4, np.float32)
    assert policy.act(obs) == policy.act(obs)


def small_torso(observation_space):
    """A custom torso for the test below, passed as the function itself."""
    torso = torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(int(np.prod(observation_space.shape)), 16)
    )
    torso.out_features = 16
    return torso


def test_a_custom_torso_may_be_the_function_itself(tmp_path):
    # Issue 35, item 17: `agent={"torso": fn}` was refused (a string was required).
    run = {"runs_dir": str(tmp_path), "progress": False, "tensorboard": False, "eval_episodes": 0}
    agent = {"torso": small_torso, "minibatch_size": 64, "unroll_length": 16}
    result = shoal.train(
        "ppo", "CartPole-v1", total_steps=128, run={**run, "num_envs": 4}, agent=agent
    )
    recorded = (result.run_dir / "config.yaml").read_text()
    assert f"torso: {__name__}:small_torso" in recorded
    policy = shoal.load(result.run_dir, trust_run=True)
    assert policy.net.policy_torso[1].out_features == 16
    assert policy.act(np.zeros(4, np.float32)) in (0, 1)
    with pytest.raises(ConfigError, match="no import path names") as refused:
        shoal.train("ppo", "CartPole-v1", total_steps=128, run=run, agent={"torso": lambda s: None})
    assert "package.module:function" in str(refused.value)
