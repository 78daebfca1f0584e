"""Learning on PettingZoo envs: absent agents' rows teach nothing; PPO and IMPALA learn inline."""

from __future__ import annotations

import copy
import dataclasses
import json

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

import shoal
from shoal.agents.impala import AGENT as IMPALA
from shoal.agents.impala import IMPALAConfig
from shoal.agents.impala.loss import Batch, impala_loss
from shoal.agents.ppo import AGENT as PPO
from shoal.agents.ppo import PPOConfig
from shoal.envs.config import EnvConfig
from shoal.envs.registry import make_vector_env, resolve_env, spec_of_source
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting

TOY = "pettingzoo:shoal.envs.toy_agents"
# CueMatch's agents take 3, 8 and 6 steps an episode and score 1 a step for the right cue of
# 3: the mean return of an agent's episode is 17/3 = 5.67 at best and 17/9 = 1.89 at random;
# a game's summed return is 17 at best and 5.67 at random. Each step's reward depends only on
# that step, so a short horizon (gamma 0.5) learns it fastest.
BANDIT = {"gamma": 0.5}


def _unroll(agent, config, length: int = 12):
    source = resolve_env(TOY)
    spec = spec_of_source(source)
    torch.manual_seed(0)
    net = agent.make_networks(spec, config)
    env = make_vector_env(source, spec, EnvConfig(), 2, seed=0)
    acting = Acting(agent.make_policy(spec, config, net, 0), spec)
    unroll = UnrollCollector(env, acting, length).collect()
    env.close()
    return spec, net, unroll


def _garbled(unroll):
    """The unroll with every absent row's step replaced by nonsense."""
    absent = ~unroll.extras["active"]
    assert absent.any() and (~absent).any()
    rng = np.random.default_rng(1)
    rewards, actions = unroll.rewards.copy(), unroll.actions.copy()
    rewards[absent] = rng.normal(0, 1e3, absent.sum())
    actions[absent] = (actions[absent] + 1) % 3
    extras = dict(unroll.extras)
    for key in ("logits", "log_prob"):
        if key in extras:
            value = extras[key].copy()
            value[absent] = rng.normal(0, 10, value[absent].shape)
            extras[key] = value
    obs = unroll.obs.copy()
    obs[:-1][absent] = rng.normal(0, 1e3, obs[:-1][absent].shape)
    return dataclasses.replace(unroll, rewards=rewards, actions=actions, extras=extras, obs=obs)


def test_impala_loss_ignores_absent_agents_rows():
    config = IMPALAConfig(unroll_length=12)
    _, net, unroll = _unroll(IMPALA, config)

    def gradients(u):
        net.zero_grad()
        impala_loss(net, Batch.from_unroll(u), config).loss.backward()
        return [p.grad.clone() for p in net.parameters()]

    clean, garbled = gradients(unroll), gradients(_garbled(unroll))
    for a, b in zip(clean, garbled, strict=True):
        torch.testing.assert_close(a, b)
    without_mask = dataclasses.replace(
        unroll, extras={k: v for k, v in unroll.extras.items() if k != "active"}
    )
    # Without the mask the absent rows would be learned from: the test can fail.
    assert any(not torch.equal(a, b) for a, b in zip(clean, gradients(without_mask), strict=True))


def test_ppo_update_ignores_absent_agents_rows():
    config = PPOConfig(unroll_length=12, minibatch_size=24, num_epochs=2)
    spec, net, unroll = _unroll(PPO, config)

    def updated(u):
        learner_net = copy.deepcopy(net)
        learner = PPO.make_learner(spec, config, learner_net)
        torch.manual_seed(5)  # the same minibatch order
        learner.update(u, 0.0)
        return [p.detach().clone() for p in learner_net.parameters()]

    clean, garbled = updated(unroll), updated(_garbled(unroll))
    for a, b in zip(clean, garbled, strict=True):
        torch.testing.assert_close(a, b)
    unmasked = updated(_garbled_mask_off(unroll))
    assert any(not torch.equal(a, b) for a, b in zip(clean, unmasked, strict=True))


def _garbled_mask_off(unroll):
    garbled = _garbled(unroll)
    return dataclasses.replace(
        garbled, extras={k: v for k, v in garbled.extras.items() if k != "active"}
    )


def _train(algo: str, tmp_path, total_steps: int, agent: dict, **run):
    settings = {"runs_dir": str(tmp_path), "progress": False, "tensorboard": False}
    settings |= {"num_envs": 4, "total_steps": total_steps, "eval_episodes": 30}
    settings |= {"log_interval": 1000, **run}
    result = shoal.train(algo, TOY, seed=0, run=settings, agent=agent)
    rows = [json.loads(r) for r in (result.run_dir / "metrics.jsonl").read_text().splitlines()]
    return result, rows[-1]


@pytest.mark.parametrize(
    ("algo", "agent"),
    [
        ("ppo", {"unroll_length": 16, "learning_rate": 0.003, "minibatch_size": 64, **BANDIT}),
        ("impala", {"learning_rate": 0.003, "unroll_length": 8, **BANDIT}),
    ],
)
@pytest.mark.integration
def test_ppo_and_impala_learn_a_cooperative_task_whose_agents_join_and_leave(algo, agent, tmp_path):
    result, last = _train(algo, tmp_path, 8_000, agent)
    assert last["team_return_mean"] >= 12.0  # random 5.67, best 17
    assert result.train_return_mean >= 4.0  # per agent: random 1.89, best 5.67
    assert result.evaluation.mean_return >= 4.0
    assert {"return_agent_0_mean", "return_agent_1_mean", "return_agent_2_mean"} <= set(last)
    assert last["return_agent_1_mean"] >= last["return_agent_0_mean"]  # 8 steps against 3


@pytest.mark.integration
def test_ppo_with_central_inference_learns_with_absent_rows_masked(tmp_path):
    """Central inference's env-only actors send which rows are active with each step."""
    agent = {"unroll_length": 16, "learning_rate": 0.003, "minibatch_size": 64, **BANDIT}
    result, last = _train("ppo", tmp_path, 8_000, agent, inference="central", actors=2, num_envs=2)
    assert last["team_return_mean"] >= 12.0
    assert result.evaluation.mean_return >= 4.0
