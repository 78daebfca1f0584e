"""QR-DQN as the value family's quantile option (`--agent.quantile true` on dqn and apex): its
config checks, the network's quantiles and means, the loss through the learner (priorities the
per-transition losses, actors' initial ones too), a run resumed with central inference, and
CartPole learned in a fast test."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import shoal
from shoal.agents.value import DQNConfig, make_q_networks, quantile_dqn_loss, transition_loss
from shoal.agents.value.policy import initial_priorities
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec
from shoal.errors import ShoalError

SMALL = {"hidden_sizes": (32, 32), "dueling_hidden": 32, "quantile": True, "num_quantiles": 8}


@pytest.fixture
def spec():
    return env_spec("CartPole-v1", EnvConfig())


def _last_row(run_dir):
    return json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])


def _batch(spec, size=16, seed=0):
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(size, *spec.obs_shape)).astype(np.float32)
    return {
        "obs": obs,
        "next_obs": obs + 0.1,
        "action": rng.integers(0, spec.num_actions, size).astype(np.int64),
        "reward": np.ones(size, np.float32),
        "discount": np.full(size, 0.99, np.float32) * (rng.random(size) > 0.1),
        "weights": rng.uniform(0.2, 1.0, size).astype(np.float32),
    }


def test_config_checks_name_the_flag_to_set(quiet_run, tmp_path):
    with pytest.raises(ValueError, match=r"--agent\.distributional false or --agent\.quantile"):
        DQNConfig(distributional=True, quantile=True)
    with pytest.raises(ValueError, match=r"--agent\.num-quantiles"):
        DQNConfig(quantile=True, num_quantiles=0)
    with pytest.raises(ValueError, match=r"--agent\.huber-delta 1\.0"):
        DQNConfig(quantile=True, huber_delta=float("inf"))
    with pytest.raises(ShoalError, match="pick one"):
        shoal.train("rainbow", "CartPole-v1", agent={"quantile": True}, run=quiet_run)
    assert DQNConfig(quantile=True).atoms == 200 and DQNConfig().atoms == 1
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("dueling", [True, False])
def test_the_network_gives_quantiles_and_acts_on_their_means(spec, dueling):
    net = make_q_networks(spec, DQNConfig(**SMALL, dueling=dueling))
    obs = torch.randn(5, *spec.obs_shape)
    theta = net.quantiles(obs)
    assert theta.shape == (5, spec.num_actions, 8)
    torch.testing.assert_close(net(obs), theta.mean(-1))
    plain = make_q_networks(spec, DQNConfig(hidden_sizes=(32, 32)))
    with pytest.raises(ValueError, match="quantiles"):
        plain.quantiles(obs)


def test_the_loss_is_the_weighted_quantile_loss_and_its_priorities_the_per_item_losses(spec):
    config = DQNConfig(**SMALL)
    online, target = make_q_networks(spec, config), make_q_networks(spec, config)
    data = _batch(spec)
    out = transition_loss(online, target, data, config)
    direct = quantile_dqn_loss(online, target, data, config)
    torch.testing.assert_close(out.loss, direct.loss)
    # The importance-weighted mean of the priorities is the loss.
    torch.testing.assert_close(
        out.loss.detach(), (torch.from_numpy(data["weights"]) * out.td_abs).mean()
    )
    assert (out.td_abs >= 0).all() and out.td_abs.shape == (16,)
    out.loss.backward()
    assert all(p.grad is not None for p in online.parameters() if p.requires_grad)
    assert all(p.grad is None for p in target.parameters())
    first = initial_priorities(online, config, data)
    assert first.shape == (16,) and (first > 0).all()


def test_gradient_steps_fit_fixed_targets(spec):
    # Online and target apart, a fixed batch: 200 Adam steps lower the loss a lot.
    config = DQNConfig(**SMALL)
    online, target = make_q_networks(spec, config), make_q_networks(spec, config)
    data = _batch(spec, 64)
    optimiser = torch.optim.Adam(online.parameters(), lr=1e-2)
    first = quantile_dqn_loss(online, target, data, config).loss.detach().item()
    for _ in range(200):
        optimiser.zero_grad()
        quantile_dqn_loss(online, target, data, config).loss.backward()
        optimiser.step()
    assert quantile_dqn_loss(online, target, data, config).loss.detach().item() < 0.2 * first


def test_a_run_with_central_inference_resumes_and_loads(quiet_run):
    agent = {**SMALL, "min_replay_size": 100, "batch_size": 16}
    run = {**quiet_run, "inference": "central", "actors": 2, "num_envs": 2, "eval_episodes": 1}
    run |= {"log_interval": 300, "checkpoint_interval": 600}
    first = shoal.train("dqn", "CartPole-v1", seed=0, total_steps=900, agent=agent, run=run)
    last = _last_row(first.run_dir)
    assert last["inference_batch_size"] > 0 and last["gradient_steps"] > 0
    assert np.isfinite(last["loss"])
    resumed = shoal.train(resume=first.run_dir, run={"total_steps": 1_800})
    assert resumed.run_dir == first.run_dir and resumed.env_steps >= 1_800
    assert _last_row(resumed.run_dir)["gradient_steps"] > last["gradient_steps"]
    loaded = shoal.load(resumed.run_dir)
    assert loaded.config.quantile and loaded.config.num_quantiles == 8
    obs = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.act(obs), loaded.act(obs))  # greedy on the means


# Small and quick: acting waits for learning (in turn, inline), so only the seed decides.
FAST = {"hidden_sizes": [64, 64], "dueling_hidden": 64, "learning_rate": 0.001}
FAST |= {"batch_size": 64, "samples_per_insert": 16, "target_update_period": 200}
FAST |= {"min_replay_size": 500, "quantile": True, "num_quantiles": 32}
FAST |= {"epsilon_decay_steps": 5_000, "epsilon_end": 0.02}  # dqn; apex keeps its own


@pytest.mark.integration  # as Rainbow's: learning tests keep make test under 10 minutes
@pytest.mark.timeout(900)
def test_qr_dqn_learns_cartpole_in_10k_steps(quiet_run):
    # Greedy 10-episode means after 10k steps over seeds 0, 1, 2: 394.3, 340.4, 431.8 (22-26 s
    # each beside another run; a random policy: about 22); 200 leaves a margin on every seed.
    run = {**quiet_run, "eval_episodes": 10}
    result = shoal.train("dqn", "CartPole-v1", seed=0, total_steps=10_000, agent=FAST, run=run)
    assert result.env_steps >= 10_000
    assert result.evaluation.mean_return >= 200


@pytest.mark.integration
@pytest.mark.distributed
@pytest.mark.timeout(900)
def test_apex_with_quantiles_runs_on_ray_with_replay_shards(ray_cluster, quiet_run):
    # Ape-X's actors give their transitions initial priorities: with quantiles, their losses.
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 2, "replay_shards": 2}
    run |= {"eval_episodes": 1, "log_interval": 500}
    agent = {**FAST, "min_replay_size": 200}
    result = shoal.train("apex", "CartPole-v1", seed=0, total_steps=2_000, agent=agent, run=run)
    last = _last_row(result.run_dir)
    assert last["replay_inserted"] >= 1_500 and last["gradient_steps"] > 0
    assert np.isfinite(last["quantile_loss_mean"]) and 0 < last["importance_weight_mean"] <= 1
    assert shoal.load(result.run_dir).act(np.zeros((2, 4), np.float32)).shape == (2,)
