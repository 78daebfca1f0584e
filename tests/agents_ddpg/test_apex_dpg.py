"""Ape-X DPG: DDPG with a noise scale per actor, n-step transitions and prioritised replay whose
actors give their own transitions their priorities (Horgan et al. 2018). The config's checks,
the noise each actor explores with, the priorities and importance weights, the published
weights, the data path, and learning Pendulum inline here and on ray with two actors and two
replay shards (`integration`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from continuous_helpers import BOX, fake_batch, last_row, step_inputs

import shoal
from shoal.agents.base import Layout
from shoal.agents.common import apex_spread
from shoal.agents.continuous import transitions
from shoal.agents.ddpg import AGENT, DDPGConfig
from shoal.agents.ddpg.actor import DDPGPolicy
from shoal.agents.ddpg.learner import DDPGLearner
from shoal.agents.ddpg.loss import critic_loss, initial_priorities
from shoal.agents.ddpg.networks import make_networks
from shoal.data import Unroll

APEX = DDPGConfig(
    hidden_sizes=(32, 32),
    batch_size=16,
    learning_starts=0,
    noise_schedule="apex",
    exploration_noise=0.3,
    apex_noise_alpha=2.0,
    n_step=3,
    prioritized=True,
)


def test_config_checks_name_the_flag_to_set():
    with pytest.raises(ValueError, match=r"--agent\.noise-schedule"):
        DDPGConfig(noise_schedule="linear")
    with pytest.raises(ValueError, match=r"--agent\.exploration-noise"):
        DDPGConfig(noise_schedule="apex", exploration_noise=1.5)
    with pytest.raises(ValueError, match=r"--agent\.n-step"):
        DDPGConfig(n_step=0)
    with pytest.raises(ValueError, match=r"--agent\.priority-beta"):
        DDPGConfig(priority_beta=1.5)
    with pytest.raises(ValueError, match=r"--agent\.apex-noise-alpha"):
        DDPGConfig(apex_noise_alpha=-1.0)
    with pytest.raises(ValueError, match=r"--agent\.priority-eps"):
        DDPGConfig(priority_eps=float("inf"))


def test_apex_spread_is_apex_epsilons():
    # Ape-X DQN's epsilons (0.4, alpha 7) over 8 actors: 0.4 for the first, 0.4^8 for the last.
    eps = apex_spread(0.4, 7.0, np.arange(8), 8)
    np.testing.assert_allclose(eps[[0, -1]], [0.4, 0.4**8])
    np.testing.assert_allclose(eps, [0.4 ** (1 + 7 * i / 7) for i in range(8)])
    assert np.all(np.diff(eps) < 0)
    np.testing.assert_allclose(apex_spread(0.3, 7.0, np.zeros(3), 1), 0.3)  # one actor


def test_each_actor_explores_with_its_own_noise_scale():
    # 3 actors of 2 envs each, 3000 rows per env slot: the noise of actor i has std
    # 0.3^(1 + 2 i / 2) = 0.3, 0.09, 0.027 (clipping to [-1, 1] at 3.3 sigma hardly shows),
    # and greedy acting has none.
    net = make_networks(BOX, APEX)
    with torch.no_grad():  # the actor at 0: the action is the noise
        net.actor.body[-1].weight.zero_()
        net.actor.body[-1].bias.zero_()
    layout = Layout(actors=3, envs_per_actor=2)
    policy = DDPGPolicy(BOX, APEX, net, seed=0, layout=layout)
    slots = np.repeat(np.arange(6), 3000)
    inputs = step_inputs(np.full(len(slots), 10**6))._replace(slot=slots)
    obs = np.zeros((len(slots), 4))
    action = policy.step(obs, {}, inputs, "train").action
    std = [action[slots // 2 == i].std() for i in range(3)]
    np.testing.assert_allclose(std, [0.3, 0.3**2, 0.3**3], rtol=0.05)
    greedy = policy.step(obs, {}, inputs, "greedy").action
    assert np.all(greedy == 0)
    fixed = DDPGPolicy(BOX, DDPGConfig(hidden_sizes=(32, 32)), net, seed=0, layout=layout)
    action = fixed.step(obs, {}, inputs, "train").action
    np.testing.assert_allclose([action[slots // 2 == i].std() for i in range(3)], 0.1, rtol=0.05)


def test_ou_noise_takes_each_actors_sigma():
    config = DDPGConfig(
        hidden_sizes=(32, 32),
        learning_starts=0,
        noise_type="ornstein_uhlenbeck",
        ou_dt=1.0,
        noise_schedule="apex",
        exploration_noise=0.5,
        apex_noise_alpha=1.0,
    )
    net = make_networks(BOX, config)
    with torch.no_grad():
        net.actor.body[-1].weight.zero_()
        net.actor.body[-1].bias.zero_()
    policy = DDPGPolicy(BOX, config, net, seed=0, layout=Layout(actors=2, envs_per_actor=1))
    slots = np.repeat(np.arange(2), 4000)
    inputs = step_inputs(np.full(len(slots), 10**6))._replace(slot=slots)
    out = policy.step(np.zeros((len(slots), 4)), policy.initial_state(slots), inputs, "train")
    # From x = 0, one step is sigma_i eps: 0.5 for actor 0, 0.25 for actor 1.
    x = out.state["ou_noise"].numpy()
    np.testing.assert_allclose([x[:4000].std(), x[4000:].std()], [0.5, 0.25], rtol=0.05)


def test_actors_prioritise_their_transitions_by_their_own_td_error(pendulum):
    net = make_networks(pendulum, APEX)
    policy = DDPGPolicy(pendulum, APEX, net, seed=0)
    data = fake_batch(pendulum, size=32, seed=3)
    data["obs"] = data["obs"].astype(np.float64)  # straight from an env
    priorities = initial_priorities(policy, APEX, data)
    # |r + discount Q(s', mu(s')) - Q(s, a)| + eps, the actor's network as its own target.
    with torch.no_grad():
        batch = transitions(fake_batch(pendulum, size=32, seed=3), torch.device("cpu"))
        y = batch.reward + batch.discount * net.critic(batch.next_obs, net.actor(batch.next_obs))
        expected = (net.critic(batch.obs, batch.action) - y).abs() + APEX.priority_eps
    assert priorities.shape == (32,) and priorities.dtype == np.float32
    np.testing.assert_allclose(priorities, expected.numpy(), rtol=1e-5)


def test_the_critic_loss_is_importance_weighted_and_updates_give_priorities(pendulum):
    learner = DDPGLearner(pendulum, APEX, make_networks(pendulum, APEX))
    data = fake_batch(pendulum, seed=1)
    batch = transitions(data, torch.device("cpu"))
    args = (learner.net, learner.target_actor, learner.target_critic, batch)
    plain, _, td_abs = critic_loss(*args)
    weights = torch.linspace(0.0, 1.0, 16)
    weighted, _, _ = critic_loss(*args, weights)
    torch.testing.assert_close(weighted, (0.5 * td_abs.square() * weights).mean())
    torch.testing.assert_close(plain, (0.5 * td_abs.square()).mean())
    data["weights"] = weights.numpy()
    update = learner.update(data, 0.0)
    assert update.priorities is not None and update.priorities.shape == (16,)
    np.testing.assert_allclose(update.priorities, td_abs.numpy() + APEX.priority_eps, rtol=1e-5)
    assert update.metrics["importance_weight_mean"] == pytest.approx(0.5)
    # Uniform replay: no priorities, and its weights (all 1) leave the loss as it was.
    uniform = DDPGConfig(hidden_sizes=(32, 32), batch_size=16)
    assert (
        DDPGLearner(pendulum, uniform, make_networks(pendulum, uniform))
        .update(fake_batch(pendulum, seed=1), 0.0)
        .priorities
        is None
    )


def test_prioritised_actors_get_the_critic_with_the_actor(pendulum):
    learner = DDPGLearner(pendulum, APEX, make_networks(pendulum, APEX))
    learner.update(fake_batch(pendulum, seed=1), 0.0)
    weights = learner.weights()
    assert any(k.startswith("critic.") for k in weights)
    assert any(k.startswith("actor.") for k in weights)
    policy = DDPGPolicy(pendulum, APEX, make_networks(pendulum, APEX), seed=0)
    policy.load_weights(weights)
    for a, b in zip(policy.net.parameters(), learner.net.parameters(), strict=True):
        torch.testing.assert_close(a, b.detach())
    plain = DDPGConfig(hidden_sizes=(32, 32), batch_size=16)
    assert not any(
        "critic" in key
        for key in DDPGLearner(pendulum, plain, make_networks(pendulum, plain)).weights()
    )


@pytest.mark.timeout(60)
def test_the_data_path_assembles_n_step_transitions_with_initial_priorities(pendulum):
    net = make_networks(pendulum, APEX)
    policy = DDPGPolicy(pendulum, APEX, net, seed=0)
    path = AGENT.make_data_path(pendulum, APEX, Layout())
    adder = path.make_adder(policy, 0)
    rng = np.random.default_rng(0)
    t, b = 6, 2
    unroll = Unroll(
        obs=rng.normal(size=(t + 1, b, 3)).astype(np.float32),
        actions=rng.uniform(-1, 1, (t, b, 1)).astype(np.float32),
        rewards=np.ones((t, b), np.float32),
        terminated=np.zeros((t, b), bool),
        truncated=np.zeros((t, b), bool),
        extras={},
        final_obs=np.zeros((0, 3), np.float32),
        final_index=np.zeros((0, 2), np.int64),
    )
    items = adder.add(unroll)
    assert items is not None and len(items["reward"]) == 2 * (t - 2)  # 3-step windows filled
    gamma = APEX.gamma
    np.testing.assert_allclose(items["reward"], 1 + gamma + gamma**2, rtol=1e-6)
    np.testing.assert_allclose(items["discount"], gamma**3, rtol=1e-6)
    np.testing.assert_allclose(items["priority"], initial_priorities(policy, APEX, items))
    table = path.make_table(1, 0)
    table.insert(items, 0, block=False)  # no learner here to keep pace with
    sample = table.replay.sample(4, 0.4, np.random.default_rng(0))
    assert np.all(sample["weights"] <= 1) and np.any(sample["weights"] < 1)


# Small networks and an early start (as test_ddpg's fast Pendulum test), with Ape-X DPG's
# settings: 3-step returns, prioritised replay, the noise 0.3 and 0.09 for two actors.
APEX_PENDULUM = {"hidden_sizes": [64, 64], "batch_size": 64, "learning_starts": 1000}
APEX_PENDULUM |= {"gamma": 0.98, "replay_capacity": 20_000, "n_step": 3, "prioritized": True}
APEX_PENDULUM |= {"noise_schedule": "apex", "exploration_noise": 0.3, "unroll_length": 8}


@pytest.mark.integration
def test_apex_dpg_swings_up_pendulum_inline_with_two_actors(quiet_run):
    # Greedy 10-episode means at 8k steps over seeds 0, 1, 2: -108.6, -124.8, -134.8 (at 6k
    # steps seed 2 had not swung up yet: -719.8); -300 leaves a margin on every seed. Inline,
    # the two actors act in turn with the learner, so the result depends on the seed only.
    run = {**quiet_run, "actors": 2, "eval_episodes": 10}
    result = shoal.train(
        "ddpg", "Pendulum-v1", seed=0, total_steps=8_000, agent=APEX_PENDULUM, run=run
    )
    assert result.env_steps == 8_000
    last = last_row(result.run_dir)
    assert 0 < last["importance_weight_mean"] < 1  # prioritised: weights below 1
    assert result.evaluation.mean_return >= -300


@pytest.mark.integration
@pytest.mark.distributed
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_apex_dpg_on_ray_with_two_actors_and_two_replay_shards(ray_cluster, quiet_run, seed):
    # Greedy 10-episode means at 6k steps over seeds 0, 1, 2: -109.2, -122.8, -134.6 here, but
    # -331.7 for seed 1 in one CI run: on ray the order in which the two actors' unrolls reach
    # the shards, and so the data, varies from run to run (the rate limiter fixes only how much
    # is learned per step). 8k steps, as inline, leaves the runs that swing up late the time to:
    # -108.6, -125.0, -132.6 at 8k beside a busy process (a local Ray, 2026-11-28; -110.5,
    # -124.1, -133.2 at 6k in the same runs).
    run = {**quiet_run, "runtime": "ray", "actors": 2, "replay_shards": 2}
    run |= {"eval_episodes": 10, "log_interval": 1000}
    result = shoal.train(
        "ddpg", "Pendulum-v1", seed=seed, total_steps=8_000, agent=APEX_PENDULUM, run=run
    )
    last = last_row(result.run_dir)
    assert last["replay_inserted"] >= 5_000 and last["replay_shards_live"] == 2
    assert 0 < last["importance_weight_mean"] < 1
    assert result.evaluation.mean_return >= -250
