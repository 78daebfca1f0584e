"""The value family's distributional (C51) and noisy options, as DQN and Ape-X take them: the
categorical network, its loss through the learner (KL priorities, the actors' initial priorities
too), noisy acting (new noise in training, the means when greedy), and short runs of both."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import shoal
from shoal.agents.base import StepInputs
from shoal.agents.value import (
    DQNConfig,
    DQNPolicy,
    QLearner,
    QNet,
    categorical_dqn_loss,
    make_q_networks,
    make_transition_data_path,
)
from shoal.agents.value.policy import initial_priorities
from shoal.data import Layout
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec
from shoal.errors import ShoalError
from shoal.nets import NoisyLinear, noisy_layers

SMALL = {"hidden_sizes": (32, 32), "dueling_hidden": 32, "num_atoms": 11}


def noisy_c51(**fields):
    return DQNConfig(**{**SMALL, "distributional": True, "noisy": True, **fields})


@pytest.fixture
def spec():
    return env_spec("CartPole-v1", EnvConfig())


def test_config_checks_name_the_flag_to_set(quiet_run, tmp_path):
    with pytest.raises(ValueError, match=r"--agent\.num-atoms"):
        DQNConfig(distributional=True, num_atoms=1)
    with pytest.raises(ValueError, match=r"--agent\.v-min and --agent\.v-max"):
        DQNConfig(v_min=10.0, v_max=-10.0)
    with pytest.raises(ValueError, match=r"--agent\.noisy-sigma"):
        DQNConfig(noisy=True, noisy_sigma=0.0)
    for algo in ("dqn", "apex"):
        with pytest.raises(ShoalError, match="v_min must be finite and below v_max"):
            shoal.train(algo, "CartPole-v1", agent={"v_min": 5.0, "v_max": 5.0}, run=quiet_run)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("dueling", [True, False])
def test_c51_network_gives_logits_whose_expectations_are_the_q_values(spec, dueling):
    torch.manual_seed(0)
    config = noisy_c51(dueling=dueling, v_min=-2.0, v_max=3.0)
    net = make_q_networks(spec, config)
    assert torch.equal(net.atoms, torch.linspace(-2.0, 3.0, 11))
    assert noisy_layers(net) and all(isinstance(m, NoisyLinear) for m in noisy_layers(net))
    net.eval()
    obs = torch.randn(5, 4)
    logits = net.logits(obs)
    assert logits.shape == (5, 2, 11)
    expected = (torch.softmax(logits, -1) * torch.linspace(-2.0, 3.0, 11)).sum(-1)
    torch.testing.assert_close(net(obs), expected)
    assert bool((net(obs) >= -2.0).all() and (net(obs) <= 3.0).all())
    # The support is not saved: a plain DQN's checkpoint keys are as they were.
    assert "atoms" not in net.state_dict()
    with pytest.raises(ValueError, match="not distributional"):
        QNet(spec, DQNConfig(**{k: v for k, v in SMALL.items() if k != "num_atoms"})).logits(obs)


def test_noisy_policy_explores_by_noise_in_training_and_acts_on_the_means_when_greedy(spec):
    torch.manual_seed(1)
    config = noisy_c51(noisy_sigma=5.0)  # loud noise: actions flip between draws
    net = make_q_networks(spec, config)
    policy = DQNPolicy(spec, config, net, seed=0)
    obs = np.random.default_rng(0).normal(size=(256, 4)).astype(np.float32)
    inputs = _inputs(256)
    train = [policy.step(obs, {}, inputs, "train").action for _ in range(4)]
    assert any(not np.array_equal(train[0], a) for a in train[1:])
    greedy = [policy.step(obs, {}, inputs, "greedy").action for _ in range(3)]
    assert all(np.array_equal(greedy[0], a) for a in greedy[1:])
    net.eval()
    with torch.no_grad():
        means = net(torch.from_numpy(obs)).argmax(-1).numpy()
    np.testing.assert_array_equal(greedy[0], means)
    net.train()
    assert all(layer.training for layer in noisy_layers(net))  # greedy left the flags as they were


def _inputs(width):
    return StepInputs(
        slot=np.arange(width),
        steps=np.full(width, 10**6),
        prev_action=np.zeros(width, np.int64),
        prev_reward=np.zeros(width, np.float32),
        first=np.zeros(width, bool),
    )


def _batch(count, seed=0):
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(count, 4)).astype(np.float32)
    steps = rng.integers(1, 4, count)
    return {
        "obs": obs,
        "next_obs": obs + 0.1,
        "action": rng.integers(0, 2, count),
        "reward": rng.normal(size=count).astype(np.float32),
        "discount": (0.99**steps * (rng.random(count) > 0.2)).astype(np.float32),
        "weights": np.ones(count, np.float32),
    }


def test_learner_steps_on_the_cross_entropy_and_returns_kl_priorities(spec):
    torch.manual_seed(2)
    config = noisy_c51(learning_rate=1e-3)
    learner = QLearner(spec, config, make_q_networks(spec, config))
    batch = _batch(32)
    before = [p.clone() for p in learner.net.parameters()]
    update = learner.update(batch, 0.0)
    assert {"loss", "q_mean", "kl_mean", "grad_norm"} <= set(update.metrics)
    assert all(not torch.equal(a, b) for a, b in zip(before, learner.net.parameters(), strict=True))
    assert update.priorities.shape == (32,) and bool(
        (update.priorities >= config.priority_eps).all()
    )
    assert update.metrics["kl_mean"] == pytest.approx(
        float(np.mean(update.priorities - config.priority_eps)), rel=1e-4
    )
    # The loss is the weighted cross-entropy: zero weights leave nothing to learn from.
    zero = {**batch, "weights": np.zeros(32, np.float32)}
    assert learner.update(zero, 0.0).metrics["loss"] == 0.0
    # Without noise the priorities are exactly the op's KL of this batch (online net at s and
    # s' for double Q, the target net's distribution at the chosen action).
    quiet = DQNConfig(**SMALL, distributional=True)
    net = make_q_networks(spec, quiet)
    result = categorical_dqn_loss(net, net, batch, quiet)
    kl = initial_priorities(net, quiet, batch) - quiet.priority_eps
    np.testing.assert_allclose(result.td_abs.numpy(), kl, rtol=1e-4, atol=1e-6)


def test_actors_send_transitions_with_kl_priorities(spec):
    config = noisy_c51()
    net = make_q_networks(spec, config)
    policy = DQNPolicy(spec, config, net, seed=0)
    adder = make_transition_data_path(spec, config, Layout()).make_adder(policy, 0)
    assert adder.priorities is not None
    priorities = initial_priorities(net, config, _batch(16))
    assert priorities.shape == (16,) and bool((priorities >= config.priority_eps).all())


# Small and quick: acting waits for learning (in turn, inline), so only the seed decides.
FAST = {"hidden_sizes": [64, 64], "dueling_hidden": 64, "learning_rate": 0.001}
FAST |= {"batch_size": 64, "samples_per_insert": 16, "target_update_period": 200}
FAST |= {"min_replay_size": 500, "v_min": 0.0, "v_max": 100.0}


@pytest.mark.parametrize("algo", ["dqn", "apex"])
def test_dqn_and_apex_take_the_distributional_and_noisy_options(algo, quiet_run):
    agent = {**FAST, "distributional": True, "num_atoms": 21, "noisy": True}
    run = {**quiet_run, "eval_episodes": 1, "log_interval": 500}
    result = shoal.train(algo, "CartPole-v1", seed=0, total_steps=1_200, agent=agent, run=run)
    last = _last(result.run_dir)
    assert last["gradient_steps"] > 0 and "kl_mean" in last and last["replay_size"] > 1000
    net = shoal.load(result.run_dir)
    assert net.act(np.zeros((3, 4), np.float32)).shape == (3,)


def _last(run_dir):
    return json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
