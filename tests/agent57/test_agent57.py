"""Agent57: one mixture table for actors and learner, whole-episode returns for the bandits, the
evaluator row, resumable policy state, and the run-level checks."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

import shoal
from shoal import ops
from shoal.agents.agent57 import Agent57Config
from shoal.agents.agent57.actor import Agent57Policy
from shoal.agents.agent57.data import replay_fields
from shoal.agents.agent57.learner import Agent57Learner
from shoal.agents.agent57.networks import make_networks
from shoal.agents.base import StepInputs
from shoal.data import Layout
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, resolve_env
from shoal.envs.toy import Countdown
from shoal.envs.vector import InProcessVectorEnv
from shoal.run.checkpoints import list_checkpoints, load_checkpoint
from shoal.runtime.rows import Acting

SMALL = {"num_mixtures": 4, "lstm_size": 16, "dueling_hidden": 16, "hidden_sizes": (16,)}
SMALL |= {"embedding_size": 8, "rnd_size": 16, "episodic_capacity": 500}


@pytest.fixture(scope="module")
def cartpole():
    return env_spec("CartPole-v1", EnvConfig())


def _policy(spec, layout=None, **changes):
    config = Agent57Config(**(SMALL | changes))
    torch.manual_seed(0)
    net = make_networks(spec, config)
    return config, net, Agent57Policy(spec, config, net, seed=0, layout=layout)


def test_actors_pick_the_mixture_the_learner_learns_with(cartpole, monkeypatch):
    """Mixture 0 exploits (beta 0, gamma 0.9999), N - 1 explores most (beta_max, gamma 0.99);
    reversing the table on either side fails this test."""
    config, net, policy = _policy(cartpole, beta_max=0.3)
    n = config.num_mixtures
    # The extrinsic head prefers action 0 a little, the intrinsic head action 1 a lot.
    q_e, q_i = torch.tensor([[2.0, 1.9]]), torch.tensor([[0.0, 30.0]])
    monkeypatch.setattr(net.extrinsic, "unroll", lambda *a: (q_e.expand(1, 2, 2), a[4]))
    monkeypatch.setattr(net.intrinsic, "unroll", lambda *a: (q_i.expand(1, 2, 2), a[4]))
    state = policy.initial_state(np.arange(2))
    state["arm"] = torch.tensor([0, n - 1])
    inputs = shoal.agents.base.StepInputs(
        np.zeros(2, bool), np.zeros(2, np.int64), np.zeros(2, np.float32), np.arange(2), np.ones(2)
    )
    step = policy.step(np.zeros((2, 4), np.float32), state, inputs, "greedy")
    assert step.action.tolist() == [0, 1]
    assert step.extras["mixture"].tolist() == [0, n - 1]

    # The learner: the discount of each replayed step is its own mixture's gamma.
    learner = Agent57Learner(cartpole, config, make_networks(cartpole, config))
    fields = replay_fields(cartpole, config)
    batch = {key: np.zeros((2, *shape), dtype) for key, (shape, dtype) in fields.items()}
    batch["acted"][:] = True
    batch["mixture"][0], batch["mixture"][1] = 0, n - 1
    batch["weights"] = np.ones(2, np.float32)
    seen = []
    original = ops.transformed_greedy_retrace

    def spy(q, a, greedy, r, discount, *rest):
        seen.append(discount.clone())
        return original(q, a, greedy, r, discount, *rest)

    monkeypatch.setattr(ops, "transformed_greedy_retrace", spy)
    learner.update(batch, 0.0)
    table = config.mixtures()
    assert table.gammas[0] == pytest.approx(0.9999) and table.gammas[-1] == pytest.approx(0.99)
    for discount in seen:  # [T, B]: column b is sequence b
        np.testing.assert_allclose(discount[:, 0].numpy(), table.gammas[0], rtol=1e-6)
        np.testing.assert_allclose(discount[:, 1].numpy(), table.gammas[-1], rtol=1e-6)


def _act(acting, env, steps):
    obs = env.reset()
    for _ in range(steps):
        step = env.step(acting.act(obs)[0])
        acting.observe(step.reward, step.terminated | step.truncated)
        obs = step.obs


def test_bandits_learn_whole_episode_returns_and_the_evaluator_row_has_its_own(cartpole):
    """Countdown pays 1 per step for 5 steps: every bandit return is 5, the last reward too."""
    layout = Layout(actors=1, envs_per_actor=3)
    spec = env_spec("shoal.envs.toy:countdown", EnvConfig())
    config, _, policy = _policy(spec, layout)
    acting = Acting(policy, spec, "train")
    env = InProcessVectorEnv([lambda: Countdown(5)] * 3, spec, seed=0)
    _act(acting, env, 5 * 8)
    state = policy.state_dict()
    actor, evaluator = state["actor0/bandit"], state["evaluator/bandit"]
    assert len(actor["rewards"]) == 16 and len(evaluator["rewards"]) == 8  # envs 0, 1 and env 2
    assert set(actor["rewards"]) == {5.0} and set(evaluator["rewards"]) == {5.0}
    assert actor["arms"][: config.num_mixtures] == list(range(config.num_mixtures))  # warm-up
    rates = policy.exploration_rates(np.arange(3), "train")
    assert rates[2] == config.eval_epsilon and rates[0] == pytest.approx(config.apex_epsilon)


def test_greedy_evaluation_plays_the_evaluators_best_arm_and_sampling_lets_it_choose(cartpole):
    layout = Layout(actors=1, envs_per_actor=2)
    _, _, policy = _policy(cartpole, layout, num_mixtures=4)
    evaluator = policy._bandit("evaluator")
    for arm, reward in [(0, 10.0), (1, 30.0), (2, 20.0), (3, 5.0)]:
        evaluator.update(arm, reward)
    slots = np.zeros(1, np.int64)

    def first_arm(mode):
        zero = np.zeros(1, np.int64)
        inputs = StepInputs(np.ones(1, bool), zero, np.zeros(1, np.float32), slots, zero)
        obs = np.zeros((1, 4), np.float32)  # a CartPole observation
        return int(policy.step(obs, policy.initial_state(slots), inputs, mode).extras["mixture"][0])

    assert [first_arm("greedy") for _ in range(3)] == [1, 1, 1]
    assert [first_arm("sample") for _ in range(4)] == [0, 1, 2, 3]  # the bandit's warm-up


def test_intrinsic_rewards_start_at_zero_and_rate_novel_observations(cartpole):
    _, _, policy = _policy(cartpole, Layout(actors=1, envs_per_actor=2))
    acting = Acting(policy, cartpole, "train")
    obs = np.random.default_rng(0).normal(size=(3, 2, 4)).astype(np.float32)
    rewards = []
    for t in range(3):
        _, _, record = acting.act(obs[t])
        acting.observe(np.ones(2), np.zeros(2, bool))
        rewards.append(record["intrinsic_reward"])
        np.testing.assert_allclose(
            record["intrinsic_reward"], record["episodic_reward"] * record["multiplier"], rtol=1e-6
        )
    assert rewards[0].tolist() == [0.0, 0.0]  # nothing to be novel against yet
    assert (rewards[1] > 0).all() and (rewards[2] > 0).all()
    # The previous step's intrinsic reward is part of the recorded state the next step saw.
    np.testing.assert_allclose(record["prev_intrinsic"], rewards[1])


@pytest.mark.parametrize(("distance_mean", "counts"), [("episode", 1), ("lifelong", 11)])
def test_the_episodic_distance_mean_restarts_with_each_episode(distance_mean, counts):
    """Countdown's episodes last 5 steps, and step t of an episode measures t - 1 < k
    neighbours: per episode, d_m^2 has seen 1 distance at the second step of the second
    episode; lifelong, 0 + 1 + 2 + 3 + 4 of the first episode besides."""
    spec = env_spec("shoal.envs.toy:countdown", EnvConfig())
    _, _, policy = _policy(spec, Layout(actors=1, envs_per_actor=2), distance_mean=distance_mean)
    acting = Acting(policy, spec, "train")
    _act(acting, InProcessVectorEnv([lambda: Countdown(5)] * 2, spec, seed=0), 7)
    state = policy.state_dict()
    assert state["slot0/episodic"][1] == state["slot1/episodic"][1] == counts
    assert policy.memory.sizes.tolist() == [2, 2]


def test_policy_state_round_trips_through_a_checkpoint_file(cartpole, tmp_path):
    layout = Layout(actors=2, envs_per_actor=2)
    # Lifelong d_m^2, which outlives the episodes the restored policy starts.
    config, net, policy = _policy(cartpole, layout, distance_mean="lifelong")
    acting = Acting(policy, cartpole, "train", slot_offset=2)  # actor 1: slots 2 and 3
    factory = resolve_env("CartPole-v1", EnvConfig()).factory
    _act(acting, InProcessVectorEnv([factory] * 2, cartpole, seed=0), 300)
    state = policy.state_dict()
    assert {"actor1/bandit", "evaluator/bandit", "actor1/rnd", "slot2/episodic"} <= set(state)
    assert "actor0/bandit" not in state  # keys name what this policy serves: they merge
    torch.save(state, tmp_path / "state.pt")
    loaded = torch.load(tmp_path / "state.pt", weights_only=True)
    again = Agent57Policy(cartpole, config, net, seed=1, layout=layout)
    again.load_state_dict(loaded)
    again_acting = Acting(again, cartpole, "train", slot_offset=2)
    again_acting.act(np.zeros((2, 4), np.float32))  # makes its bandits and statistics
    restored = again.state_dict()
    assert restored["actor1/rnd"]["count"] == state["actor1/rnd"]["count"] + 2
    for key in ("actor1/bandit", "evaluator/bandit"):
        assert restored[key]["arms"] == state[key]["arms"]
        assert restored[key]["num_selections"] == state[key]["num_selections"] + 1
    assert restored["slot3/episodic"][1] >= state["slot3/episodic"][1]


def test_a_single_env_with_an_evaluator_row_is_refused(quiet_run):
    with pytest.raises(shoal.errors.ConfigError, match="--num-envs 2"):
        shoal.train("agent57", "CartPole-v1", run={**quiet_run, "num_envs": 1}, total_steps=10)


def test_an_inline_run_resumes_its_bandits_and_novelty_statistics(quiet_run):
    run = {**quiet_run, "num_envs": 4, "checkpoint_interval": 1000, "log_interval": 1000}
    run["eval_episodes"] = 2
    agent = SMALL | {"min_replay_size": 10, "samples_per_insert": 1.0, "bandit_window": 400}
    agent |= {"distance_mean": "lifelong"}  # a d_m^2 that outlives episodes, to see it continue
    first = shoal.train("agent57", "CartPole-v1", seed=0, run=run, agent=agent, total_steps=2000)
    saved = load_checkpoint(list_checkpoints(first.run_dir / "checkpoints")[-1])
    policies = saved["policies"]
    assert {"actor0/bandit", "evaluator/bandit", "actor0/rnd", "slot0/episodic"} <= set(policies)
    resumed = shoal.train(resume=first.run_dir, run={"total_steps": 3000})
    assert resumed.env_steps >= 3000
    final = load_checkpoint(list_checkpoints(first.run_dir / "checkpoints")[-1])["policies"]
    before, after = policies["actor0/bandit"], final["actor0/bandit"]
    assert after["num_selections"] > before["num_selections"]
    assert after["arms"][: len(before["arms"])] == before["arms"]  # the window goes on
    assert final["actor0/rnd"]["count"] > policies["actor0/rnd"]["count"] > 0
    assert final["slot0/episodic"][1] > policies["slot0/episodic"][1]
    rows = [json.loads(line) for line in (first.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert {"bandit/count_arm00", "intrinsic_reward_mean", "rnd_loss"} <= set(rows[-1])


def test_config_checks_name_what_to_set():
    with pytest.raises(ValueError, match=r"--agent\.num-mixtures"):
        Agent57Config(num_mixtures=1)
    with pytest.raises(ValueError, match="gamma"):
        Agent57Config(gamma_min=0.999, gamma_mid=0.99)
    with pytest.raises(ValueError, match=r"--agent\.burn-in"):
        replace(Agent57Config(), burn_in=20)


def test_a_torso_from_an_import_path_serves_every_network(cartpole, monkeypatch):
    import sys
    import types

    from torch import nn

    module = types.ModuleType("agent57_torsos")
    module.small = lambda space: nn.Sequential(nn.Flatten(), nn.Linear(4, 8), nn.Tanh())
    monkeypatch.setitem(sys.modules, "agent57_torsos", module)
    config = Agent57Config(**(SMALL | {"torso": "agent57_torsos:small"}))
    net = make_networks(cartpole, config)
    for part in (net.extrinsic.torso, net.intrinsic.torso, net.embedding[0], net.rnd_target[0]):
        assert isinstance(part[-1], nn.Tanh)  # each network has its own copy
    assert net.extrinsic.torso is not net.intrinsic.torso
