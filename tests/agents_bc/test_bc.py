"""Behavioural cloning: its loss, the dataset table, mistakes in naming a dataset (one paragraph,
exit code 2, nothing written), runs that learn from a dataset, checkpoint and resume, and
(integration) a trained PPO on CartPole recorded and cloned to a greedy return of 500."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from dataset_helpers import random_dataset

import shoal
from shoal.agents.bc import BCConfig
from shoal.agents.bc.loss import bc_loss
from shoal.agents.bc.networks import make_networks
from shoal.cli import main
from shoal.data.datasets import open_dataset, transitions
from shoal.data.offline import DatasetTable
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec
from shoal.errors import ConfigError
from shoal.record import record

minari = pytest.importorskip("minari")


def test_training_mistakes_name_what_to_pass(tmp_path, minari_root, quiet_run, capsys):
    cartpole = random_dataset(minari_root, "CartPole-v1", episodes=2)
    runs = ["--runs-dir", str(tmp_path / "runs"), "--progress", "false"]
    assert main(["train", "bc", "--env", "CartPole-v1", *runs]) == 2
    assert "pass --dataset" in capsys.readouterr().err
    assert (
        main(["train", "bc", "--env", "CartPole-v1", "--dataset", "cartpole/nope-v0", *runs]) == 2
    )
    err = capsys.readouterr().err
    assert "No such dataset" in err and "test/random-cartpole_v1-v0" in err  # what is there
    assert main(["train", "bc", "--env", "Acrobot-v1", "--dataset", str(cartpole), *runs]) == 2
    assert "recorded on CartPole-v1" in capsys.readouterr().err
    assert main(["train", "ppo", "--env", "CartPole-v1", "--dataset", str(cartpole), *runs]) == 2
    assert "learns from its own experience" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # nothing was written
    with pytest.raises(ConfigError, match="observation space"):
        shoal.train(
            "bc",
            lambda: gym.make("MountainCar-v0"),
            agent={"dataset": str(cartpole)},
            run=quiet_run,
        )


def test_the_loss_is_cross_entropy_for_discrete_and_nll_or_mse_for_continuous(pendulum):
    torch.manual_seed(0)
    spec = env_spec("CartPole-v1", EnvConfig())
    config = BCConfig(hidden_sizes=(8,))
    net = make_networks(spec, config)
    obs, actions = torch.randn(5, 4), torch.tensor([0, 1, 1, 0, 1])
    loss, metrics = bc_loss(net, obs, actions, config)
    expected = torch.nn.functional.cross_entropy(net(obs), actions)
    torch.testing.assert_close(loss, expected)
    assert 0 <= metrics["accuracy"] <= 1
    for kind in ("nll", "mse"):
        config = BCConfig(hidden_sizes=(8,), loss=kind, init_log_std=-0.5)
        net = make_networks(pendulum, config)
        obs, actions = torch.randn(5, 3), torch.rand(5, 1) * 4 - 2
        loss, _ = bc_loss(net, obs, actions, config)
        mean = net(obs)
        if kind == "mse":
            expected = ((mean - actions) ** 2).sum(-1).mean()
        else:
            normal = torch.distributions.Normal(mean, torch.exp(net.log_std))
            expected = -normal.log_prob(actions).sum(-1).mean()
        torch.testing.assert_close(loss, expected)


def test_the_table_releases_updates_per_step_and_reads_every_transition(tmp_path):
    folder = random_dataset(tmp_path, "CartPole-v1", episodes=2)
    steps = transitions(open_dataset(str(folder)))
    assert len(steps) == steps.obs.shape[0] and steps.episodes == 2
    table = DatasetTable(
        {"obs": steps.obs, "actions": steps.actions},
        batch_size=4,
        updates_per_step=0.5,
        max_insert=8,
    )
    assert not table.can_sample()
    table.insert(None, 0, block=False, steps=8)
    batches = []
    while table.can_sample():
        batches.append(table.sample(0.0, 0.0))
    assert len(batches) == 4 and batches[0].data["obs"].shape == (4, 4)
    assert table.stats()["dataset_batches"] == 4


def test_bc_learns_from_a_dataset_checkpoints_resumes_and_acts(tmp_path, minari_root, quiet_run):
    folder = random_dataset(minari_root, "CartPole-v1", episodes=3)
    run = {**quiet_run, "total_steps": 256, "num_envs": 2, "eval_episodes": 2}
    agent = {"dataset": "test/random-cartpole_v1-v0", "unroll_length": 16, "batch_size": 32}
    first = shoal.train("bc", "CartPole-v1", agent=agent, run=run)
    assert first.summary["updates"] == 128  # 0.5 per step played
    assert first.evaluation is not None
    resumed = shoal.train(resume=first.run_dir, run={"total_steps": 512})
    assert resumed.env_steps >= 512 and resumed.summary["updates"] >= 256
    policy = shoal.load(resumed.run_dir)
    assert policy.act(np.zeros(4, np.float32)) in (0, 1)
    # The same dataset by its folder gives the same run: only the name differs.
    again = shoal.train("bc", "CartPole-v1", agent={**agent, "dataset": str(folder)}, run=run)
    assert again.summary["updates"] == first.summary["updates"]


def test_continuous_actions_are_cloned_from_a_pendulum_dataset(tmp_path, quiet_run):
    folder = random_dataset(tmp_path, "Pendulum-v1", episodes=1)
    run = {**quiet_run, "total_steps": 128, "num_envs": 1, "eval_episodes": 1}
    result = shoal.train(
        "bc", "Pendulum-v1", agent={"dataset": str(folder), "unroll_length": 32}, run=run
    )
    assert result.summary["updates"] == 64
    action = shoal.load(result.run_dir).act(np.zeros(3, np.float32))
    assert action.shape == (1,)


@pytest.mark.integration
def test_bc_clones_a_trained_ppo_on_cartpole_to_a_greedy_500(tmp_path, minari_root, quiet_run):
    expert = shoal.train("ppo", "CartPole-v1", seed=0, run={**quiet_run, "stop_at_return": 475})
    assert expert.evaluation.mean_return == 500.0
    recorded = record(expert.run_dir, 20, "cartpole/ppo-expert-v0")
    assert recorded.steps == 10_000 and recorded.mean_return == 500.0
    clone = shoal.train(
        "bc", "CartPole-v1", seed=0, agent={"dataset": "cartpole/ppo-expert-v0"}, run=quiet_run
    )
    assert clone.evaluation.mean_return == 500.0  # greedy, 10 episodes
    assert shoal.evaluate(clone.run_dir, episodes=10, seed=123).mean_return == 500.0


@pytest.mark.distributed
@pytest.mark.timeout(900)
@pytest.mark.integration
def test_bc_runs_on_ray_with_two_actors(ray_cluster, tmp_path, quiet_run):
    folder = random_dataset(tmp_path, "CartPole-v1", episodes=3)
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 2, "eval_episodes": 1}
    agent = {"dataset": str(folder), "unroll_length": 16, "hidden_sizes": (32, 32)}
    result = shoal.train("bc", "CartPole-v1", seed=0, total_steps=1_024, agent=agent, run=run)
    assert result.env_steps >= 1_024
    # 0.5 update per step played at most (the rate limiter); fewer when the learner was still
    # behind as the actors' steps ended the run: 389 of 512 on a busy CI machine, 400-512 idle.
    assert 256 <= result.summary["updates"] <= 512
    assert shoal.load(result.run_dir).act(np.zeros(4, np.float32)) in (0, 1)
