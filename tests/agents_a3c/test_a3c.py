"""A3C: actors send gradients, the learner applies them within a staleness bound."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import shoal
from shoal.agents.a3c import AGENT, A3CConfig
from shoal.agents.a3c.data import GradientQueue
from shoal.data import Layout
from shoal.envs import EnvSpec, InProcessVectorEnv, make_env
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting


def _actor(config: A3CConfig):
    spec = EnvSpec.from_env("CartPole-v1", make_env("CartPole-v1"))
    net = AGENT.make_networks(spec, config)
    vector = InProcessVectorEnv([lambda: make_env("CartPole-v1")] * 2, spec, seed=0)
    policy = AGENT.make_policy(spec, config, net, 0, None)
    collector = UnrollCollector(vector, Acting(policy, spec), config.unroll_length)
    collector.acting.version = 0  # as if it had taken the learner's first weights
    adder = AGENT.make_data_path(spec, config, Layout()).make_adder(policy, 0)
    return spec, net, collector, adder


def test_the_adder_sends_the_gradient_of_the_actor_critic_loss_at_the_acting_weights():
    config = A3CConfig(unroll_length=6, hidden_sizes=(8,))
    spec, net, collector, adder = _actor(config)
    unroll = collector.collect()
    item = adder.add(unroll)
    params = [p for p in net.parameters() if p.requires_grad]
    assert item["gradient"].shape == (sum(p.numel() for p in params),)
    assert item["version"] == unroll.behaviour_version
    # The same gradient as backpropagating A2C's loss through a copy of the network.
    from shoal.agents.a2c.loss import actor_critic_loss

    copy = AGENT.make_networks(spec, config)
    copy.load_state_dict(net.state_dict())
    loss, _, _ = actor_critic_loss(copy, unroll, config)
    loss.backward()
    expected = torch.cat([p.grad.reshape(-1) for p in copy.parameters()])
    np.testing.assert_allclose(item["gradient"], expected.numpy(), rtol=1e-5, atol=1e-7)
    # The actor's own parameters hold no gradient: nothing leaks into a shared learner.
    assert all(p.grad is None for p in net.parameters())


def test_the_learner_applies_a_gradient_as_adam_would():
    config = A3CConfig(unroll_length=6, hidden_sizes=(8,), max_grad_norm=0.0)
    spec, net, collector, adder = _actor(config)
    item = adder.add(collector.collect())
    learner = AGENT.make_learner(spec, config, net)
    before = torch.cat([p.detach().reshape(-1).clone() for p in net.parameters()])
    update = learner.update(item, 0.0)
    after = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    g = torch.from_numpy(item["gradient"])
    # Adam's first step: -lr * g / (|g| + eps), which is -lr * sign(g) to within rtol where
    # |g| >> eps = 1e-8 (at |g| = 2.5e-6 it is 0.4% short: a sampled unroll once had such g).
    moved = g.abs() > 1e-4
    torch.testing.assert_close(
        (after - before)[moved], -config.learning_rate * torch.sign(g[moved]), rtol=1e-3, atol=1e-6
    )
    assert learner.version == 1 and update.metrics["staleness"] == 0.0


def test_the_queue_drops_gradients_staler_than_the_bound_and_reports_staleness():
    queue = GradientQueue(capacity=8, max_staleness=2)
    for version in (0, 1, 3):
        queue.insert({"gradient": np.zeros(1), "version": version}, version, block=False)
    queue.after_update(None, None, 4)  # the learner is at version 4
    batch = queue.sample(0.0, timeout=0)
    # Versions 0 and 1 are 4 and 3 behind: dropped; version 3 is 1 behind: applied.
    assert batch is not None and batch.behaviour_version == 3
    stats = queue.stats()
    assert stats["gradients_dropped"] == 2.0 and stats["staleness_max"] == 1.0
    assert queue.sample(0.0, timeout=0) is None


@pytest.mark.integration
def test_a3c_solves_cartpole_inline_with_two_workers_in_turn(quiet_run):
    # Learning is checked in turn (--no-overlap: each worker's gradient applied before the next
    # acts), which no machine load changes; the threads are checked for staleness below.
    # Seeds 0-2 at a load average of 9: stopped at 64k-80k steps, fresh 480.25, 500, 500.
    run = {**quiet_run, "actors": 2, "overlap": False, "eval_every": 8_000}
    run |= {"eval_every_episodes": 20}
    result = shoal.train("a3c", "CartPole-v1", seed=0, run=run, callbacks=[_StopWhenGreedySolves()])
    assert result.stop_reason == "callback"
    assert shoal.evaluate(result.run_dir / "best.pt", episodes=20, seed=123).mean_return >= 450


def test_a3c_worker_threads_both_send_gradients_within_the_staleness_bound(quiet_run):
    # Two gradient workers (actor threads, each with its own network and envs) feed one learner;
    # how stale a gradient gets depends on thread timing, but never beyond the bound.
    run = {**quiet_run, "actors": 2, "total_steps": 6_000, "log_interval": 1_000}
    run |= {"eval_episodes": 0}
    result = shoal.train("a3c", "CartPole-v1", seed=0, run=run)
    rows = [r for r in _rows(result.run_dir) if "staleness_max" in r]
    assert rows and max(r["staleness_max"] for r in rows) <= A3CConfig().max_staleness
    # Gradients of both workers reached the learner.
    assert max(r["gradient_workers"] for r in rows) == 2.0


def test_inline_a3c_gets_one_actor_per_actors_setting_from_its_data_path():
    # The launcher learns how many inline actors to run from the data path alone: A3C's asks
    # for --actors, A2C's (the same network and policy) for one actor stepping every env.
    from shoal.runtime.config import RunConfig
    from shoal.runtime.program import Program

    spec = EnvSpec.from_env("CartPole-v1", make_env("CartPole-v1"))
    run = RunConfig(actors=3, num_envs=4)
    a3c = Program(AGENT, A3CConfig(), run, None, None, spec, 0, None)
    assert a3c.layout.actors == 3 and a3c.layout.total_envs == 12
    assert a3c.layout.queue_capacity >= 3  # each worker's gradient may wait
    from shoal.agents.a2c import AGENT as A2C
    from shoal.agents.a2c import A2CConfig

    a2c = Program(A2C, A2CConfig(), run, None, None, spec, 0, None)
    assert a2c.layout.actors == 1 and a2c.layout.total_envs == 4


def test_the_queue_reports_how_many_workers_its_gradients_came_from():
    queue = GradientQueue(capacity=8, max_staleness=4)
    for actor in (0, 1, 1):
        queue.insert({"gradient": np.zeros(1), "version": 0, "actor": actor}, 0, block=False)
    while queue.sample(0.0, timeout=0) is not None:
        pass
    assert queue.stats()["gradient_workers"] == 2.0
    queue.insert({"gradient": np.zeros(1), "version": 0, "actor": 1}, 0, block=False)
    queue.sample(0.0, timeout=0)
    assert queue.stats()["gradient_workers"] == 1.0  # counted per row, not over the run


class _StopWhenGreedySolves(shoal.Callback):
    def on_evaluation(self, evaluation):
        return evaluation.final or evaluation.mean_return < 475


def _rows(run_dir):
    import json

    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.distributed
def test_a3c_actors_on_ray_both_send_gradients_within_the_staleness_bound(ray_cluster, quiet_run):
    # The ray half of the learning test below, short enough for every `make test`.
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 4, "total_steps": 4_000}
    run |= {"eval_episodes": 0, "log_interval": 500}
    result = shoal.train("a3c", "CartPole-v1", seed=0, run=run)
    assert result.stop_reason == "total_steps"
    rows = [r for r in _rows(result.run_dir) if "staleness_max" in r]
    assert rows and max(r["staleness_max"] for r in rows) <= A3CConfig().max_staleness
    assert max(r["gradient_workers"] for r in rows) == 2.0


@pytest.mark.slow  # 90 s on the 2-core machine
@pytest.mark.distributed
@pytest.mark.timeout(900)
def test_a3c_solves_cartpole_on_ray_with_two_actors(ray_cluster, quiet_run):
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 4, "stop_at_return": 475}
    result = shoal.train("a3c", "CartPole-v1", seed=0, run=run)
    assert result.stop_reason == "stop_at_return"
    assert result.evaluation.mean_return >= 400
    rows = [r for r in _rows(result.run_dir) if "staleness_max" in r]
    assert rows and max(r["staleness_max"] for r in rows) <= A3CConfig().max_staleness


def test_a3c_in_turn_runs_its_workers_each_in_turn(quiet_run):
    # --no-overlap: the same two workers, acting one after the other in this thread, each
    # gradient applied before the next worker acts (so none is stale).
    run = {**quiet_run, "actors": 2, "overlap": False, "total_steps": 3_000, "log_interval": 1_000}
    run |= {"eval_episodes": 0, "num_envs": 2}
    result = shoal.train("a3c", "CartPole-v1", seed=0, run=run)
    rows = [r for r in _rows(result.run_dir) if "staleness_max" in r]
    assert rows and all(r["gradient_workers"] == 2.0 for r in rows)
    assert max(r["staleness_max"] for r in rows) == 0.0
