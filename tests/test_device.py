"""Where learners learn: the learner device rule, and (on a GPU machine) learners on cuda."""

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
from shoal.data import Layout
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, make_vector_env, resolve_env
from shoal.errors import ShoalError
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.config import RunConfig
from shoal.runtime.program import Program
from shoal.runtime.rows import Acting


def _program(agent, **run):
    source = resolve_env("CartPole-v1", EnvConfig())
    spec = env_spec("CartPole-v1", EnvConfig())
    return Program(agent, agent.config_cls(), RunConfig(**run), EnvConfig(), source, spec, 0, None)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU fallback")
def test_learners_are_on_cpu_unless_a_gpu_is_there_or_asked_for():
    # Every learner moves its batches to its network's device, so the rule is the same for
    # every agent: auto picks cuda when the process sees a GPU.
    for agent in (PPO, IMPALA, DQN):
        assert _program(agent).learner_device().type == "cpu"
        assert _program(agent, learner_device="cpu").learner_device().type == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a CPU machine")
def test_asking_for_cuda_without_a_gpu_says_what_to_do(quiet_run):
    assert _program(IMPALA).learner_device().type == "cpu"  # auto
    with pytest.raises(ShoalError, match="--learner-gpus"):
        shoal.train("impala", "CartPole-v1", run={**quiet_run, "learner_device": "cuda"})
    runs = Path(quiet_run["runs_dir"])
    assert not runs.exists() or not any(runs.iterdir())  # refused before a run dir is made


@pytest.mark.gpu
@pytest.mark.parametrize("agent", [PPO, IMPALA, DQN])
def test_learners_update_on_cuda_like_on_cpu(agent):
    spec = env_spec("CartPole-v1", EnvConfig())
    config = agent.config_cls()
    if agent is DQN:
        config = dataclasses.replace(config, min_replay_size=64, batch_size=32)
    program = _program(agent)
    source = resolve_env("CartPole-v1", EnvConfig())
    metrics = {}
    for device in ("cpu", "cuda"):
        torch.manual_seed(0)
        net = agent.make_networks(spec, config)
        actor_net = agent.make_networks(spec, config)
        actor_net.load_state_dict(net.state_dict())
        learner = agent.make_learner(spec, config, net.to(device))
        acting = Acting(agent.make_policy(spec, config, actor_net, 0, Layout()), spec)
        data_path = agent.make_data_path(spec, config, program.layout)
        table = data_path.make_table(1, 0)
        adder = data_path.make_adder(acting.policy, 0)
        collector = UnrollCollector(make_vector_env(source, spec, EnvConfig(), 4, 0), acting, 32)
        while not table.can_sample():
            items = adder.add(collector.collect())
            if items is not None:
                table.insert(items, 0, block=False)
        metrics[device] = learner.update(table.sample(0.0, 0.0).data, 0.0).metrics
        assert all(v.device.type == "cpu" for v in learner.weights().values())
    key = "loss" if agent is DQN else "policy_loss"
    assert metrics["cuda"][key] == pytest.approx(metrics["cpu"][key], rel=1e-3, abs=1e-5)
    assert np.isfinite(metrics["cuda"][key])
