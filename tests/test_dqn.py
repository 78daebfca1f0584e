"""DQN: targets, exploration, actor-side n-step transitions, the replay ratio, and CartPole."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import shoal
from shoal.agents.dqn import AGENT, DQNConfig
from shoal.agents.dqn.actor import DQNPolicy
from shoal.agents.dqn.learner import DQNLearner
from shoal.agents.dqn.loss import td_errors
from shoal.agents.dqn.networks import QNet, make_networks
from shoal.data import Layout, NStepAdder, Unroll
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec
from shoal.errors import ShoalError
from shoal.runtime.learning import LearnerLoop


@pytest.fixture
def spec():
    return env_spec("CartPole-v1", EnvConfig())


class TableQ(torch.nn.Module):
    """Q-values read from a table by the observation's first entry (an integer state)."""

    def __init__(self, table):
        super().__init__()
        self.table = torch.nn.Parameter(torch.tensor(table, dtype=torch.float32))
        self.num_actions = self.table.shape[1]

    def forward(self, obs):
        return self.table[obs[:, 0].long()]


def _batch(states, actions, rewards, discounts, next_states):
    def obs(xs):
        return np.array([[s, 0, 0, 0] for s in xs], np.float32)

    return {
        "obs": obs(states),
        "action": np.array(actions),
        "reward": np.array(rewards, np.float32),
        "discount": np.array(discounts, np.float32),
        "next_obs": obs(next_states),
    }


def test_double_q_bootstraps_the_target_net_at_the_online_argmax():
    online = TableQ([[0.0, 0.0], [5.0, 1.0]])  # online prefers action 0 in state 1
    target = TableQ([[0.0, 0.0], [2.0, 7.0]])  # target prefers action 1 in state 1
    data = _batch([0], [1], [1.0], [0.5], [1])
    double = td_errors(online, target, data, DQNConfig(double_q=True))
    plain = td_errors(online, target, data, DQNConfig(double_q=False))
    # y = r + discount * Q_target(s', a*), minus Q_online(s, a) = 0.
    assert double.item() == pytest.approx(1.0 + 0.5 * 2.0)
    assert plain.item() == pytest.approx(1.0 + 0.5 * 7.0)


def test_terminal_transitions_do_not_bootstrap_and_rewards_clip():
    q = TableQ([[3.0, 0.0], [9.0, 9.0]])
    data = _batch([0], [0], [5.0], [0.0], [1])
    assert td_errors(q, q, data, DQNConfig(reward_clip=1.0)).item() == pytest.approx(1.0 - 3.0)


def test_apex_epsilons_follow_the_paper_and_linear_decays():
    config = DQNConfig(exploration="apex", apex_epsilon=0.4, apex_alpha=7.0)
    eps = [config.epsilon(0, i, 4) for i in range(4)]
    assert eps == pytest.approx([0.4 ** (1 + 7 * i / 3) for i in range(4)])
    assert eps[0] == pytest.approx(0.4) and eps[-1] == pytest.approx(0.4**8)
    linear = DQNConfig(epsilon_start=1.0, epsilon_end=0.1, epsilon_decay_steps=100)
    assert [linear.epsilon(s, 0, 1) for s in (0, 50, 100, 1000)] == pytest.approx(
        [1.0, 0.55, 0.1, 0.1]
    )


def _unroll(rewards, terminated, obs_values, final_obs=None, final_index=None):
    """A [T, 1] unroll whose observations carry their step number in every entry."""
    length = len(rewards)
    obs = np.repeat(np.array(obs_values, np.float32)[:, None, None], 4, axis=2)
    return Unroll(
        obs=obs,
        actions=np.zeros((length, 1), np.int64),
        rewards=np.array(rewards, np.float32)[:, None],
        terminated=np.array(terminated)[:, None],
        truncated=np.zeros((length, 1), bool),
        extras={},
        final_obs=np.zeros((0, 4), np.float32) if final_obs is None else final_obs,
        final_index=np.zeros((0, 2), np.int64) if final_index is None else final_index,
    )


def _adder(spec, config, net):
    """Actor 0's adder, as DQN's data path makes it for the policy acting with `net`."""
    policy = DQNPolicy(spec, config, net, seed=0)
    return AGENT.make_data_path(spec, config, Layout()).make_adder(policy, 0)


def test_adder_sends_each_step_once_as_an_n_step_transition_across_unrolls(spec):
    config = DQNConfig(n_step=3, gamma=0.5, prioritized=False)
    adder = _adder(spec, config, make_networks(spec, config))
    assert isinstance(adder, NStepAdder) and adder.priorities is None
    first = adder.add(_unroll([1, 1, 1, 1], [False] * 4, [0, 1, 2, 3, 4]))
    # Steps 0 and 1 have their 3 rewards; steps 2 and 3 wait for the next unroll.
    assert len(first["reward"]) == 2
    second = adder.add(_unroll([1, 1], [False, True], [4, 5, 6]))
    data = {k: np.concatenate([first[k], second[k]]) for k in first}
    # Every step 0..5 once, in order; the episode end flushes the last ones with shorter m.
    assert data["obs"][:, 0].tolist() == [0, 1, 2, 3, 4, 5]
    assert data["steps"].tolist() == [3, 3, 3, 3, 2, 1]
    assert data["reward"].tolist() == pytest.approx([1.75, 1.75, 1.75, 1.75, 1.5, 1.0])
    # Step 3's three rewards reach the termination: nothing to bootstrap from.
    assert data["discount"].tolist() == pytest.approx([0.125] * 3 + [0.0] * 3)
    assert data["next_obs"][:3, 0].tolist() == [3, 4, 5]


def test_actor_priorities_are_the_absolute_td_errors(spec):
    config = DQNConfig(n_step=1, gamma=0.9)
    net = make_networks(spec, config)
    out = _adder(spec, config, net).add(
        _unroll([1.0, 0.0, 2.0], [False, False, True], [0, 1, 2, 3])
    )
    expected = td_errors(net, net, out, config).abs() + config.priority_eps
    assert out["priority"] == pytest.approx(expected.numpy(), rel=1e-5)


def _transitions(spec, count, rng):
    obs = rng.normal(size=(count, 4)).astype(np.float32)
    data = {
        "obs": obs,
        "next_obs": obs + 0.1,
        "action": rng.integers(0, 2, count),
        "reward": np.ones(count, np.float32),
        "discount": np.full(count, 0.99, np.float32),
        "first": np.zeros(count, bool),
        "last": np.zeros(count, bool),
        "stream": np.zeros(count, np.int64),
    }
    data["first"][0] = True
    return data


def _learn(learner, config, spec, inserts):
    """Insert each of `inserts` transition counts, learning in turn as far as the table lets."""
    table = AGENT.make_data_path(spec, config, Layout()).make_table(1, 0)
    loop, rng = LearnerLoop(learner, table), np.random.default_rng(0)
    for count in inserts:
        table.insert(_transitions(spec, count, rng), 0, block=False)
        while table.can_sample():
            loop.try_update(0.0)
    return table


def test_learner_waits_for_min_size_then_keeps_the_replay_ratio(spec):
    config = DQNConfig(min_replay_size=100, batch_size=10, samples_per_insert=4.0)
    learner = DQNLearner(spec, config, make_networks(spec, config))
    table = _learn(learner, config, spec, [60])
    assert learner.gradient_steps == 0 and table.stats()["replay_size"] < 100
    table = _learn(
        learner := DQNLearner(spec, config, make_networks(spec, config)),
        config,
        spec,
        [60, 60, 50, 50],
    )
    # Inserts since learning started: those past the first 100 (the ratio line of the rate
    # limiter starts there); sampled = 10 * steps <= 4 * inserted, within one batch of it.
    inserted, sampled = table.limiter.inserts - 100, table.limiter.samples
    assert sampled <= 4 * inserted < sampled + 10
    assert learner.gradient_steps == sampled // 10 > 0


def test_polyak_target_moves_by_tau_and_periodic_copies(spec):
    for tau, period in ((0.5, 1000), (1.0, 1)):
        config = DQNConfig(min_replay_size=10, batch_size=10, target_tau=tau)
        config = DQNConfig(**{**config.__dict__, "target_update_period": period})
        learner = DQNLearner(spec, config, make_networks(spec, config))
        before = [p.clone() for p in learner.target.parameters()]
        _learn(learner, config, spec, [30])
        assert learner.gradient_steps >= 1
        if tau == 1.0:
            pairs = zip(learner.target.parameters(), learner.net.parameters(), strict=True)
            assert all(torch.equal(t, o) for t, o in pairs)
        else:
            pairs = zip(learner.target.parameters(), before, strict=True)
            moved = [not torch.equal(t, b) for t, b in pairs]
            assert any(moved)


def test_dueling_and_plain_heads_and_dict_obs_rejected(spec):
    assert QNet(spec, DQNConfig(dueling=False))(torch.zeros(3, 4)).shape == (3, 2)
    assert QNet(spec, DQNConfig(dueling=True))(torch.zeros(3, 4)).shape == (3, 2)
    with pytest.raises(ShoalError, match="discrete actions"):
        shoal.train("dqn", "Pendulum-v1", total_steps=10)


def test_bad_dqn_values_are_refused_before_a_run_starts(quiet_run, tmp_path):
    with pytest.raises(ShoalError, match="min_replay_size"):
        shoal.train("dqn", "CartPole-v1", agent={"min_replay_size": 10**9}, run=quiet_run)
    with pytest.raises(ShoalError, match="exploration"):
        shoal.train("dqn", "CartPole-v1", agent={"exploration": "boltzmann"}, run=quiet_run)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.integration
def test_dqn_solves_cartpole_inline(quiet_run):
    result = shoal.train("dqn", "CartPole-v1", seed=0, run={**quiet_run, "stop_at_return": 475})
    assert result.stop_reason == "stop_at_return" and result.train_return_mean >= 475
    assert result.evaluation.mean_return >= 400
    rows = [json.loads(line) for line in (result.run_dir / "metrics.jsonl").open()]
    last = rows[-1]
    assert last["replay_size"] > 1000 and 0 < last["replay_ratio"] <= 16 + 1
    # A resumed DQN restores its target network with the online one.
    loaded = shoal.load(result.run_dir)
    assert loaded.act(np.zeros((1, 4), np.float32)).shape == (1,)
