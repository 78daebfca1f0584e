"""Where learners learn: the learner device rule, and (on a GPU machine) IMPALA and DQN on cuda."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

import shoal
from shoal.agents.dqn import AGENT as DQN
from shoal.agents.impala import AGENT as IMPALA
from shoal.agents.ppo import AGENT as PPO
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, make_vector_env, resolve_env
from shoal.errors import ShoalError
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.config import RunConfig
from shoal.runtime.program import Program


def _program(agent, **run):
    source = resolve_env("CartPole-v1", EnvConfig())
    spec = env_spec("CartPole-v1", EnvConfig())
    return Program(agent, agent.config_cls(), RunConfig(**run), EnvConfig(), source, spec, 0, None)


def test_on_policy_and_shared_networks_learn_on_cpu():
    assert _program(PPO).learner_device(shares_network_with_actor=False).type == "cpu"
    assert _program(IMPALA).learner_device(shares_network_with_actor=True).type == "cpu"
    assert _program(IMPALA, learner_device="cpu").learner_device(False).type == "cpu"
    with pytest.raises(ShoalError, match="learns on CPU"):
        _program(PPO, learner_device="cuda").learner_device(False)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a CPU machine")
def test_asking_for_cuda_without_a_gpu_says_what_to_do(quiet_run):
    assert _program(IMPALA).learner_device(False).type == "cpu"  # auto
    with pytest.raises(ShoalError, match="--learner-gpus"):
        shoal.train("impala", "CartPole-v1", run={**quiet_run, "learner_device": "cuda"})
    runs = Path(quiet_run["runs_dir"])
    assert not runs.exists() or not any(runs.iterdir())  # refused before a run dir is made


@pytest.mark.gpu
@pytest.mark.parametrize("agent", [IMPALA, DQN])
def test_off_policy_learners_update_on_cuda_like_on_cpu(agent):
    spec = env_spec("CartPole-v1", EnvConfig())
    config = agent.config_cls()
    if agent is DQN:
        config = dataclasses.replace(config, min_replay_size=64, batch_size=32)
    source = resolve_env("CartPole-v1", EnvConfig())
    metrics = {}
    for device in ("cpu", "cuda"):
        torch.manual_seed(0)
        net = agent.make_networks(spec, config)
        actor_net = agent.make_networks(spec, config)
        actor_net.load_state_dict(net.state_dict())
        learner = agent.make_learner(spec, config, net.to(device))
        policy = agent.make_policy(spec, config, actor_net, 0)
        env = make_vector_env(source, spec, EnvConfig(), 4, 0)
        collector = UnrollCollector(env, policy, 32)
        metrics[device] = learner.update(collector.collect_for_learner(), 0.0)
        assert all(v.device.type == "cpu" for v in learner.weights().values())
    key = "policy_loss" if agent is IMPALA else "loss"
    assert metrics["cuda"][key] == pytest.approx(metrics["cpu"][key], rel=1e-3, abs=1e-5)
    assert np.isfinite(metrics["cuda"][key])
