"""QT-Opt's Bellman updaters: the updater's targets are the learner's in-turn targets for the
same batch and weights, a labelled batch teaches the learner what it would have learned
computing them itself, the learner's queue of labelled batches, the config's mistakes, and
(integration) a ray run with two updaters whose targets reach the learner, one of them killed
mid-run and restarted."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import numpy as np
import pytest
import torch
from continuous_helpers import fake_batch

import shoal
from shoal.agents.continuous import transitions
from shoal.agents.qtopt import AGENT, BellmanUpdater, QTOptConfig
from shoal.agents.qtopt.learner import QTOptLearner
from shoal.agents.qtopt.loss import bellman_targets
from shoal.agents.qtopt.networks import make_networks
from shoal.data import Batch
from shoal.runtime.ray_processes import LabelledBatches

CONFIG = QTOptConfig(hidden_sizes=(32, 32), batch_size=16, target_tau=0.2, target_lag=2)


def _trained_learner(spec, updates=5):
    """A learner whose two target networks differ from Q and from each other."""
    torch.manual_seed(0)
    learner = QTOptLearner(spec, CONFIG, make_networks(spec, CONFIG))
    for seed in range(updates):
        learner.update(fake_batch(spec, seed=seed), 0.0)
    return learner


def test_the_updaters_targets_are_the_learners_for_the_same_batch_and_weights(pendulum):
    learner = _trained_learner(pendulum)
    differ = [
        not torch.equal(a, b)
        for a, b in zip(learner.target1.parameters(), learner.target2.parameters(), strict=True)
    ]
    assert any(differ)  # so that a swap of the two networks would show
    updater = AGENT.make_updater(pendulum, CONFIG, make_networks(pendulum, CONFIG))
    assert isinstance(updater, BellmanUpdater) and AGENT.updaters(CONFIG) == 0
    updater.load_weights(learner.updater_weights())
    batch = fake_batch(pendulum, seed=11)
    torch.manual_seed(3)  # CEM's draws, from torch's generator on both sides
    labelled = updater.label(batch)
    torch.manual_seed(3)
    data = transitions(batch, torch.device("cpu"))
    expected = bellman_targets(learner.target1, learner.target2, data, CONFIG)
    assert set(labelled) == set(batch) | {"target"}
    assert labelled["target"].dtype == np.float32 and labelled["target"].shape == (16,)
    np.testing.assert_array_equal(labelled["target"], expected.numpy())
    # Different weights give different targets (the weights are the learner's, not its own).
    fresh = AGENT.make_updater(pendulum, CONFIG, make_networks(pendulum, CONFIG))
    torch.manual_seed(3)
    assert not np.array_equal(fresh.label(batch)["target"], labelled["target"])

    # The learner regressing Q onto the updater's targets takes the same step as the learner
    # computing them in turn with the same draws.
    twin = QTOptLearner(pendulum, CONFIG, make_networks(pendulum, CONFIG))
    twin.load_state_dict(learner.state_dict())
    torch.manual_seed(3)
    in_turn = learner.update(batch, 0.0).metrics
    torch.manual_seed(99)  # no draws when the batch is labelled
    from_updater = twin.update(labelled, 0.0).metrics
    assert in_turn == from_updater
    for a, b in zip(learner.net.parameters(), twin.net.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    for a, b in zip(learner.target1.parameters(), twin.target1.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


class _Shards:
    """What `LabelledBatches` asks of the learner's view of the shards."""

    def __init__(self):
        self.fed_back, self.closed = [], False

    def after_update(self, batch, priorities, version):
        self.fed_back.append((batch.shard, version))

    def stats(self):
        return {"replay_ratio": 8.0}

    def close(self):
        self.closed = True


def _batch(tag, rows=4, shard=0):
    return Batch({"obs": np.full((rows, 1), tag, np.float32)}, 0, key=np.arange(rows), shard=shard)


def test_the_learners_queue_hands_out_labelled_batches_in_order_and_waits_when_full():
    shards = _Shards()
    queue = LabelledBatches(shards, capacity=2)
    assert queue.sample(0.0, 0.0) is None and not queue.can_sample()
    assert queue.put(_batch(1), version=3) and queue.put(_batch(2, shard=1), version=4)
    # Full: a third put waits until the learner takes one.
    third = []
    putter = threading.Thread(target=lambda: third.append(queue.put(_batch(3), version=5)))
    putter.start()
    time.sleep(0.2)
    assert not third
    first = queue.sample(0.0, 1.0)
    putter.join(2.0)
    assert third == [True] and first.data["obs"][0, 0] == 1
    queue.after_update(first, None, version=7)  # learned at version 6 from weights of 3
    second = queue.sample(0.0, 1.0)
    queue.after_update(second, None, version=8)  # 7 - 4
    assert shards.fed_back == [(0, 7), (1, 8)]
    row = queue.stats()
    assert row["replay_ratio"] == 8.0 and row["target_lag"] == 3.0
    assert row["labelled_items"] == 12 and row["learned_items"] == 8
    assert row["labelled_queue"] == 1 and row["learned_per_s"] > 0
    # Closed: puts are refused, a waiting learner is released, the shards are told.
    queue.close()
    assert not queue.put(_batch(4), version=9) and shards.closed
    assert queue.sample(0.0, 1.0).data["obs"][0, 0] == 3  # what is left is still handed out
    assert queue.sample(0.0, 5.0) is None


def test_bellman_updater_mistakes_name_the_flag_to_set(tmp_path):
    with pytest.raises(ValueError, match=r"--agent\.bellman-updaters"):
        QTOptConfig(bellman_updaters=-1)
    with pytest.raises(ValueError, match=r"--agent\.bellman-updaters 0"):
        QTOptConfig(bellman_updaters=2, offline=True, dataset=str(tmp_path))
    assert AGENT.updaters(QTOptConfig(bellman_updaters=3)) == 3


class _KillUpdater(shoal.Callback):
    """SIGKILLs updater0's process at the first metrics row after learning started."""

    def __init__(self):
        self.run_dir, self.killed = None, None

    def on_start(self, run):
        self.run_dir = run.run_dir

    def on_row(self, row):
        if self.killed is None and row.get("gradient_steps", 0) > 0:
            placement = json.loads((self.run_dir / "ray_actors.json").read_text())
            self.killed = placement["updater0"]["pid"]
            os.kill(self.killed, signal.SIGKILL)


@pytest.mark.distributed
@pytest.mark.timeout(900)
@pytest.mark.integration
def test_qtopt_learns_from_two_bellman_updaters_on_ray(ray_cluster, quiet_run):
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 2, "replay_shards": 1}
    run |= {"eval_episodes": 1, "log_interval": 200}
    agent = {"hidden_sizes": [32, 32], "batch_size": 32, "learning_starts": 200}
    agent |= {"bellman_updaters": 2}
    kill = _KillUpdater()
    result = shoal.train(
        "qtopt", "Pendulum-v1", seed=0, total_steps=1_600, agent=agent, run=run, callbacks=[kill]
    )
    table = [
        json.loads(line) for line in (result.run_dir / "metrics.jsonl").read_text().splitlines()
    ]
    last = table[-1]
    assert last["gradient_steps"] > 0 and last["replay_inserted"] >= 1_200
    # Every batch the learner learned from came from an updater, labelled.
    assert last["learned_items"] == 32 * last["gradient_steps"]
    assert last["labelled_items"] >= last["learned_items"]
    # The updaters' samples are the replay's, which the rate limiter counts.
    assert last["replay_sampled"] >= last["labelled_items"]
    assert any("target_lag" in row for row in table)
    # updater0 was killed once learning had started; Ray restarted it and the run went on.
    placement = json.loads((result.run_dir / "ray_actors.json").read_text())
    assert {"updater0", "updater1", "learner", "replay0"} <= set(placement)
    assert kill.killed is not None and placement["updater0"]["pid"] != kill.killed
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["updater_restarts"] == 1
    killed_at = next(row["gradient_steps"] for row in table if row.get("gradient_steps", 0) > 0)
    assert last["gradient_steps"] > killed_at + 100
