"""QT-Opt: config mistakes, CEM acting and its exploration, one update (the clipped double-Q
target at CEM's argmax of the first target network, the Polyak and lagged targets), the
learner's state round trip, the dataset seeding the replay or alone, a one-step continuous task
learned, and a run resumed from its checkpoint."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from continuous_helpers import BOX, fake_batch, params, step_inputs
from dataset_helpers import random_dataset

import shoal
from shoal import ops
from shoal.agents.continuous import transitions
from shoal.agents.qtopt import QTOptConfig
from shoal.agents.qtopt.actor import QTOptPolicy
from shoal.agents.qtopt.data import dataset_transitions
from shoal.agents.qtopt.learner import QTOptLearner
from shoal.agents.qtopt.loss import bellman_targets
from shoal.agents.qtopt.networks import make_networks
from shoal.data.datasets import open_dataset
from shoal.errors import ShoalError

SMALL = QTOptConfig(hidden_sizes=(32, 32), batch_size=16, learning_starts=0)
REACH = "shoal.envs.toy:reach_target"


def rows(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_config_mistakes_name_the_flag_to_set(quiet_run, tmp_path):
    with pytest.raises(ValueError, match=r"--agent\.cem-elites"):
        QTOptConfig(cem_samples=8, cem_elites=9)
    with pytest.raises(ValueError, match=r"--agent\.cem-iterations"):
        QTOptConfig(cem_iterations=0)
    with pytest.raises(ValueError, match=r"--agent\.exploration"):
        QTOptConfig(exploration="boltzmann")
    with pytest.raises(ValueError, match=r"--agent\.epsilon"):
        QTOptConfig(epsilon=1.5)
    with pytest.raises(ValueError, match=r"--agent\.target-lag"):
        QTOptConfig(target_lag=0)
    with pytest.raises(ValueError, match="pass --dataset"):
        QTOptConfig(offline=True)
    with pytest.raises(ShoalError, match=r"cem.elites"):
        shoal.train("qtopt", "Pendulum-v1", agent={"cem_elites": 100}, run=quiet_run)
    with pytest.raises(ShoalError, match="continuous"):
        shoal.train("qtopt", "CartPole-v1", total_steps=10, run=quiet_run)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_greedy_acts_with_cem_in_bounds_and_exploration_is_the_configs():
    net = make_networks(BOX, SMALL)
    obs = np.random.default_rng(0).normal(size=(400, 4))
    inputs = step_inputs(np.full(400, 10**6))
    low, high = BOX.action_space.low, BOX.action_space.high
    greedy = QTOptPolicy(BOX, SMALL, net, seed=0).step(obs, {}, inputs, "greedy")
    assert greedy.action.shape == (400, 2) and greedy.action.dtype == np.float32
    assert np.all(np.abs(greedy.action) <= 1.0)
    assert np.all(greedy.env_action >= low) and np.all(greedy.env_action <= high)
    # CEM's sampling is seeded: the same seed acts the same.
    again = QTOptPolicy(BOX, SMALL, net, seed=0).step(obs, {}, inputs, "greedy")
    np.testing.assert_array_equal(greedy.action, again.action)
    # The greedy action is CEM's best: Q there beats Q at random actions of the same states.
    with torch.no_grad():
        t_obs = torch.as_tensor(obs, dtype=torch.float32)
        q_greedy = net.q(t_obs, torch.as_tensor(greedy.action))
        q_random = net.q(t_obs, torch.rand(400, 2) * 2 - 1)
    assert (q_greedy >= q_random).float().mean() > 0.9
    # epsilon 1: every action uniform; gaussian: the argmax plus noise of the std set.
    uniform = QTOptPolicy(BOX, QTOptConfig(**{**_fields(SMALL), "epsilon": 1.0}), net, seed=0)
    acted = uniform.step(obs, {}, inputs, "train").action
    assert abs(acted.std() - 1 / np.sqrt(3)) < 0.05
    gaussian_config = QTOptConfig(**{**_fields(SMALL), "exploration": "gaussian"})
    noisy = QTOptPolicy(BOX, gaussian_config, net, seed=0).step(obs, {}, inputs, "train").action
    inside = np.abs(greedy.action) < 0.7  # where clipping cannot shrink the noise
    assert 0.08 < (noisy - greedy.action)[inside].std() < 0.12


def _fields(config):
    from dataclasses import fields

    return {f.name: getattr(config, f.name) for f in fields(config)}


def test_one_update_moves_q_and_the_targets_as_the_paper_says(pendulum):
    config = QTOptConfig(hidden_sizes=(32, 32), batch_size=16, target_tau=0.1, target_lag=3)
    learner = QTOptLearner(pendulum, config, make_networks(pendulum, config))
    batch = fake_batch(pendulum, seed=1)
    data = transitions(batch, torch.device("cpu"))
    # y = r + discount · min(Q'_1, Q'_2) at CEM's argmax of Q'_1 (the same draws replayed).
    torch.manual_seed(5)
    y = bellman_targets(learner.target1, learner.target2, data, config)
    torch.manual_seed(5)
    found = torch.randn(2, 16, 64, 1)
    features = learner.target1.features(data.next_obs)
    best = ops.cem_maximize(lambda a: learner.target1.values(features, a), found, num_elites=6)
    with torch.no_grad():
        q1 = learner.target1(data.next_obs, best.action)
        q2 = learner.target2(data.next_obs, best.action)
    torch.testing.assert_close(y, data.reward + data.discount * torch.minimum(q1, q2))
    before_q, before_t1 = params(learner.net.q), params(learner.target1)
    before_t2 = params(learner.target2)
    metrics = learner.update(batch, 0.0).metrics
    assert {"q_loss", "q_mean", "target_mean", "gradient_steps"} <= set(metrics)
    assert all(
        not torch.equal(a, b) for a, b in zip(before_q, learner.net.q.parameters(), strict=True)
    )
    # Q'_1 <- 0.9 Q'_1 + 0.1 Q after each step; Q'_2 waits for the lag.
    online = learner.net.q.parameters()
    for old, new, now in zip(before_t1, learner.target1.parameters(), online, strict=True):
        torch.testing.assert_close(new, old + 0.1 * (now.detach() - old))
    assert all(
        torch.equal(a, b) for a, b in zip(before_t2, learner.target2.parameters(), strict=True)
    )
    learner.update(batch, 0.0)
    learner.update(batch, 0.0)  # step 3: Q'_2 <- Q'_1
    for a, b in zip(learner.target1.parameters(), learner.target2.parameters(), strict=True):
        assert torch.equal(a, b)


def test_state_dict_round_trips_and_learning_continues_identically(pendulum):
    learner = QTOptLearner(pendulum, SMALL, make_networks(pendulum, SMALL))
    for seed in range(3):
        learner.update(fake_batch(pendulum, seed=seed), 0.0)
    state = learner.state_dict()
    assert {"network", "target1", "target2", "optimizer"} <= set(state)
    make_networks(pendulum, SMALL).load_state_dict(state["network"])  # as shoal.load does
    copy = QTOptLearner(pendulum, SMALL, make_networks(pendulum, SMALL))
    copy.load_state_dict(state)
    assert copy.version == copy.gradient_steps == 3
    batch = fake_batch(pendulum, seed=9)
    torch.manual_seed(0)
    first = learner.update(batch, 0.0).metrics
    torch.manual_seed(0)
    assert first == copy.update(batch, 0.0).metrics
    for a, b in zip(learner.net.parameters(), copy.net.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_dataset_transitions_rescale_actions_and_end_episodes(tmp_path, pendulum):
    pytest.importorskip("minari")
    folder = random_dataset(tmp_path, "Pendulum-v1", episodes=2)
    dataset = open_dataset(str(folder))
    items = dataset_transitions(dataset, pendulum, 0.9)
    episodes = list(dataset.iterate_episodes())
    assert len(items["reward"]) == 400 and items["first"].sum() == items["last"].sum() == 2
    np.testing.assert_allclose(items["action"][:200], episodes[0].actions / 2.0, rtol=1e-6)
    np.testing.assert_array_equal(items["next_obs"][:199], items["obs"][1:200])
    np.testing.assert_allclose(items["next_obs"][199], episodes[0].observations[200], rtol=1e-6)
    assert np.all(items["discount"] == np.float32(0.9))  # truncated, never terminated


def test_the_dataset_seeds_the_replay_or_is_learned_from_alone(tmp_path, quiet_run):
    pytest.importorskip("minari")
    folder = random_dataset(tmp_path, "Pendulum-v1", episodes=2)
    run = {**quiet_run, "num_envs": 1, "eval_episodes": 0, "log_interval": 100}
    agent = {
        "hidden_sizes": [16, 16],
        "batch_size": 16,
        "unroll_length": 50,
        "learning_starts": 50,
        "dataset": str(folder),
    }
    seeded = shoal.train("qtopt", "Pendulum-v1", total_steps=200, agent=agent, run=run)
    last = rows(seeded.run_dir)[-1]
    # 400 dataset transitions in the replay beside the run's own 200; the limiter counts these.
    assert last["replay_size"] == 600 and last["replay_inserted"] == 200
    offline = {**agent, "offline": True, "updates_per_step": 0.5}
    alone = shoal.train("qtopt", "Pendulum-v1", total_steps=200, agent=offline, run=run)
    last = rows(alone.run_dir)[-1]
    assert last["dataset_size"] == 400 and last["gradient_steps"] == 100
    with pytest.raises(ShoalError, match="replay-capacity"):
        shoal.train(
            "qtopt",
            "Pendulum-v1",
            total_steps=200,
            agent={**agent, "replay_capacity": 300},
            run=run,
        )


def test_qtopt_learns_a_one_step_continuous_task_and_resumes(quiet_run):
    """ReachTarget: reward -|a - x|² for a target x in the observation; random actions score
    -4/3 on average, a = x scores 0."""
    run = {**quiet_run, "num_envs": 4, "eval_episodes": 100, "log_interval": 400}
    run |= {"checkpoint_interval": 800}
    agent = {"hidden_sizes": [32, 32], "batch_size": 32, "learning_starts": 200}
    agent |= {"gamma": 0.0, "unroll_length": 8}
    first = shoal.train("qtopt", REACH, seed=0, total_steps=800, agent=agent, run=run)
    assert first.evaluation is not None
    steps = rows(first.run_dir)[-1]["gradient_steps"]
    resumed = shoal.train(resume=first.run_dir, run={"total_steps": 1600})
    assert resumed.env_steps >= 1600
    assert rows(resumed.run_dir)[-1]["gradient_steps"] > steps + 600  # counted on
    print("greedy return", first.evaluation.mean_return, resumed.evaluation.mean_return)
    assert resumed.evaluation.mean_return > -0.1, resumed.evaluation
    action = shoal.load(resumed.run_dir).act(np.array([0.5, -0.5], np.float32))
    assert np.abs(action - [0.5, -0.5]).max() < 0.3


@pytest.mark.distributed
@pytest.mark.timeout(900)
@pytest.mark.integration
def test_qtopt_runs_on_ray_with_replay_shards(ray_cluster, quiet_run):
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 2, "replay_shards": 2}
    run |= {"eval_episodes": 1, "log_interval": 200}
    agent = {"hidden_sizes": [32, 32], "batch_size": 32, "learning_starts": 200}
    result = shoal.train("qtopt", "Pendulum-v1", seed=0, total_steps=1_200, agent=agent, run=run)
    last = rows(result.run_dir)[-1]
    assert last["replay_inserted"] >= 800 and last["gradient_steps"] > 0
    actions = shoal.load(result.run_dir).act(np.zeros((5, 3), np.float32))
    assert actions.shape == (5, 1) and np.all(np.abs(actions) <= 2.0)
