"""A2C: its update, and CartPole solved inline and on Ray with two actors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import shoal
from shoal.agents.a2c import AGENT, A2CConfig
from shoal.envs import EnvSpec, InProcessVectorEnv
from shoal.envs.toy import Countdown
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting


def _unroll(config: A2CConfig):
    spec = EnvSpec.from_env("countdown", Countdown(length=3))
    net = AGENT.make_networks(spec, config)
    envs = InProcessVectorEnv([lambda: Countdown(length=3)] * 2, spec, seed=0)
    policy = AGENT.make_policy(spec, config, net, 0, None)
    return spec, net, UnrollCollector(envs, Acting(policy, spec), config.unroll_length).collect()


def test_one_update_is_one_gradient_step_that_moves_the_weights():
    config = A2CConfig(unroll_length=7, hidden_sizes=(8,))
    spec, net, unroll = _unroll(config)
    learner = AGENT.make_learner(spec, config, net)
    before = [p.detach().clone() for p in net.parameters()]
    update = learner.update(unroll, progress=0.0)
    assert learner.version == 1 and learner.optimizer.steps == 1
    assert any(not torch.equal(a, b) for a, b in zip(before, net.parameters(), strict=True))
    for key in ("policy_loss", "value_loss", "entropy", "grad_norm", "explained_variance"):
        assert np.isfinite(update.metrics[key]), key


def test_config_errors_name_the_flag():
    with pytest.raises(ValueError, match=r"--agent\.unroll-length"):
        A2CConfig(unroll_length=0)
    with pytest.raises(ValueError, match=r"--agent\.gamma"):
        A2CConfig(gamma=1.5)


@pytest.mark.integration
def test_a2c_solves_cartpole_with_its_preset(quiet_run):
    result = shoal.train("a2c", "CartPole-v1", seed=0, run={**quiet_run, "stop_at_return": 475})
    assert result.stop_reason == "stop_at_return"
    assert result.evaluation.mean_return >= 475


@pytest.mark.integration
@pytest.mark.distributed
@pytest.mark.timeout(900)
def test_a2c_solves_cartpole_on_ray_with_two_actors(ray_cluster, quiet_run):
    # Stop on the greedy policy, not the training mean: A2C's last update can undo a
    # policy whose training episodes averaged 475.
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 4, "eval_every": 10_000}
    result = shoal.train("a2c", "CartPole-v1", seed=0, run=run, callbacks=[_StopAt(475)])
    assert result.stop_reason == "callback"
    assert result.evaluation.mean_return >= 400


class _StopAt(shoal.Callback):
    def __init__(self, target: float) -> None:
        self.target = target

    def on_evaluation(self, evaluation):
        return evaluation.final or evaluation.mean_return < self.target
