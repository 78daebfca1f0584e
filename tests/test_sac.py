"""SAC: config checks, squashed acting and warm-up, one learner step, its data path, runs inline
and on ray (the Pendulum learning target: test_learning_slow.py)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from continuous_helpers import BOX, fake_batch, last_row, params, step_inputs, unchanged

import shoal
from shoal.agents.sac import AGENT, SACConfig
from shoal.agents.sac.actor import SACPolicy
from shoal.agents.sac.learner import SACLearner
from shoal.agents.sac.networks import make_networks
from shoal.data import Layout, Unroll
from shoal.envs.spec import EnvSpec
from shoal.errors import ShoalError

SMALL = SACConfig(hidden_sizes=(32, 32), batch_size=16, learning_starts=0)


def test_config_checks_name_the_flag_to_set(quiet_run, tmp_path):
    with pytest.raises(ValueError, match=r"--agent\.tau"):
        SACConfig(tau=0.0)
    with pytest.raises(ValueError, match=r"--agent\.gamma"):
        SACConfig(gamma=1.5)
    with pytest.raises(ValueError, match=r"--agent\.learning-starts"):
        SACConfig(learning_starts=2_000_000)
    with pytest.raises(ValueError, match=r"--agent\.batch-size"):
        SACConfig(batch_size=512, replay_capacity=256)
    with pytest.raises(ValueError, match=r"--agent\.target-entropy"):
        SACConfig(target_entropy=float("nan"))
    with pytest.raises(ValueError, match=r"--agent\.init-alpha"):
        SACConfig(init_alpha=0.0)
    with pytest.raises(ShoalError, match="updates-per-step"):
        shoal.train("sac", "Pendulum-v1", agent={"updates_per_step": -1}, run=quiet_run)
    assert SACConfig(batch_size=64, updates_per_step=0.5).samples_per_insert == 32
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_discrete_and_unbounded_actions_are_refused(quiet_run):
    with pytest.raises(ShoalError, match="continuous"):
        shoal.train("sac", "CartPole-v1", total_steps=10, run=quiet_run)
    unbounded = EnvSpec("free", BOX.observation_space, gym.spaces.Box(-np.inf, np.inf, (2,)))
    with pytest.raises(ShoalError, match="unbounded"):
        make_networks(unbounded, SMALL)


def test_actions_stay_in_bounds_and_greedy_is_deterministic():
    net = make_networks(BOX, SMALL)
    with torch.no_grad():  # a far-off mean, so that squashing is what keeps actions in bounds
        net.actor.body[-1].bias.copy_(torch.tensor([8.0, -8.0, 1.0, 1.0]))
    policy = SACPolicy(BOX, SMALL, net, seed=0)
    obs = np.random.default_rng(0).normal(size=(500, 4))
    low, high = BOX.action_space.low, BOX.action_space.high
    for mode in ("train", "sample", "greedy"):
        out = policy.step(obs, {}, step_inputs(np.full(500, 10**6)), mode)
        assert out.action.shape == (500, 2) and out.action.dtype == np.float32
        assert np.all(np.abs(out.action) <= 1.0)
        assert np.all(out.env_action >= low) and np.all(out.env_action <= high)
        # The env gets [-1, 1] rescaled to [low, high].
        np.testing.assert_allclose(out.env_action, low + (out.action + 1) / 2 * (high - low))
    first = policy.step(obs, {}, step_inputs(np.zeros(500)), "greedy").action
    again = policy.step(obs, {}, step_inputs(np.zeros(500)), "greedy").action
    np.testing.assert_array_equal(first, again)
    with torch.no_grad():
        mean, _ = net.actor(torch.from_numpy(obs))
    np.testing.assert_allclose(first, torch.tanh(mean).numpy(), rtol=1e-6)
    sampled = [policy.step(obs, {}, step_inputs(np.zeros(500)), "sample").action for _ in range(2)]
    assert not np.array_equal(sampled[0], sampled[1])


def test_warm_up_acts_uniformly_until_learning_starts(pendulum):
    config = SACConfig(hidden_sizes=(32, 32), learning_starts=100)
    net = make_networks(pendulum, config)
    with torch.no_grad():  # the policy itself would act at tanh(8) ~ 1
        net.actor.body[-1].bias.copy_(torch.tensor([8.0, -20.0]))
    # 4 envs: a row that took 24 steps is within the run's first 96 < 100; at 25 it is past.
    policy = SACPolicy(pendulum, config, net, seed=0, layout=Layout(actors=2, envs_per_actor=2))
    steps = np.where(np.arange(2000) % 2 == 0, 24, 25)
    obs = np.zeros((2000, 3), np.float32)
    action = policy.step(obs, {}, step_inputs(steps), "train").action[:, 0]
    warm, learned = action[steps == 24], action[steps == 25]
    assert warm.min() < -0.9 and warm.max() > 0.9 and abs(warm.mean()) < 0.1
    assert learned.min() > 0.99
    # Evaluation never warms up.
    greedy = policy.step(obs, {}, step_inputs(np.zeros(2000)), "greedy").action
    assert greedy.min() > 0.99


def test_one_update_changes_the_weights_and_moves_targets_by_tau(pendulum):
    config = SACConfig(hidden_sizes=(32, 32), batch_size=16, tau=0.1)
    learner = SACLearner(pendulum, config, make_networks(pendulum, config))
    actor, critic = params(learner.net.actor), params(learner.net.critic)
    target = params(learner.target_critic)
    alpha = learner.log_alpha.item()
    update = learner.update(fake_batch(pendulum), 0.0)
    assert learner.version == 1 and update.metrics["gradient_steps"] == 1
    assert {"critic_loss", "actor_loss", "alpha", "alpha_loss", "entropy"} <= set(update.metrics)
    assert update.priorities is None
    assert not any(unchanged(actor, learner.net.actor))
    assert not any(unchanged(critic, learner.net.critic))
    assert learner.log_alpha.item() != alpha
    # target <- (1 - tau) target + tau online, with the online critics after their step.
    online = learner.net.critic.parameters()
    for before, after, now in zip(target, learner.target_critic.parameters(), online, strict=True):
        torch.testing.assert_close(after, before + 0.1 * (now.detach() - before))
        assert not torch.equal(after, before)


def test_fixed_temperature_and_target_update_period(pendulum):
    config = SACConfig(
        hidden_sizes=(16,),
        batch_size=8,
        autotune_alpha=False,
        init_alpha=0.3,
        target_update_period=2,
    )
    learner = SACLearner(pendulum, config, make_networks(pendulum, config))
    target = params(learner.target_critic)
    metrics = learner.update(fake_batch(pendulum, 8), 0.0).metrics
    assert metrics["alpha"] == pytest.approx(0.3) and "alpha_loss" not in metrics
    assert all(unchanged(target, learner.target_critic))
    learner.update(fake_batch(pendulum, 8, seed=1), 0.0)
    assert learner.log_alpha.exp().item() == pytest.approx(0.3)
    assert not any(unchanged(target, learner.target_critic))


def test_state_dict_round_trips_and_learning_continues_identically(pendulum):
    config = SACConfig(hidden_sizes=(32, 32), batch_size=16)
    learner = SACLearner(pendulum, config, make_networks(pendulum, config))
    for seed in range(3):
        learner.update(fake_batch(pendulum, seed=seed), 0.0)
    state = learner.state_dict()
    # What shoal.load rebuilds: make_networks(spec, config) loading state["network"].
    make_networks(pendulum, config).load_state_dict(state["network"])
    copy = SACLearner(pendulum, config, make_networks(pendulum, config))
    copy.load_state_dict(state)
    assert copy.version == learner.version == 3 and copy.gradient_steps == 3
    for name in ("network", "target_critic"):
        for key, value in state[name].items():
            torch.testing.assert_close(copy.state_dict()[name][key], value, rtol=0, atol=0)
    batch = fake_batch(pendulum, seed=9)
    torch.manual_seed(5)
    first = learner.update(batch, 0.0).metrics
    torch.manual_seed(5)
    second = copy.update(batch, 0.0).metrics
    assert first == second
    for a, b in zip(learner.net.parameters(), copy.net.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_data_path_stores_continuous_transitions_and_float32_observations():
    config = SACConfig(hidden_sizes=(16,), batch_size=4, learning_starts=3)
    data_path = AGENT.make_data_path(BOX, config, Layout())
    assert not data_path.overlap and data_path.sharded
    policy = SACPolicy(BOX, config, make_networks(BOX, config), seed=0)
    adder, table = data_path.make_adder(policy, 0), data_path.make_table(1, 0)
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (4, 1, 2)).astype(np.float32)
    unroll = Unroll(
        obs=rng.normal(size=(5, 1, 4)),  # float64, like MuJoCo's
        actions=actions,
        rewards=np.arange(4, dtype=np.float32)[:, None],
        terminated=np.array([False, False, False, True])[:, None],
        truncated=np.zeros((4, 1), bool),
        extras={},
        final_obs=np.zeros((0, 4)),
        final_index=np.zeros((0, 2), np.int64),
    )
    items = adder.add(unroll)
    np.testing.assert_array_equal(items["action"], actions[:, 0])
    np.testing.assert_allclose(items["discount"], [0.99, 0.99, 0.99, 0.0])
    assert table.insert(items, 0, block=False)
    batch = table.sample(0.0, timeout=0.0)
    assert batch is not None and batch.data["obs"].dtype == np.float32
    assert batch.data["action"].dtype == np.float32 and batch.data["action"].shape == (4, 2)
    for row, index in zip(batch.data["action"], batch.data["indices"], strict=True):
        np.testing.assert_array_equal(row, actions[int(index) % 4, 0])


TINY = {"hidden_sizes": [32, 32], "batch_size": 32, "learning_starts": 200}


def test_sac_runs_with_central_inference_and_loads(quiet_run):
    run = {**quiet_run, "inference": "central", "actors": 2, "num_envs": 2, "eval_episodes": 1}
    run |= {"log_interval": 200}
    result = shoal.train("sac", "Pendulum-v1", seed=0, total_steps=800, agent=TINY, run=run)
    last = last_row(result.run_dir)
    assert last["replay_inserted"] >= 600 and last["inference_batch_size"] > 0
    # One gradient step of 32 per inserted transition once 200 are in (within one batch).
    assert last["gradient_steps"] > 0 and last["replay_sampled"] == 32 * last["gradient_steps"]
    assert last["replay_sampled"] <= 32 * (last["replay_inserted"] - 200)
    assert result.evaluation is not None and result.evaluation.mean_length == 200
    loaded = shoal.load(result.run_dir)
    obs = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    actions = loaded.act(obs)
    assert actions.shape == (64, 1) and np.all(np.abs(actions) <= 2.0)
    np.testing.assert_array_equal(actions, loaded.act(obs))  # greedy: deterministic
    assert loaded.act(obs[0]).shape == (1,)


@pytest.mark.distributed
@pytest.mark.timeout(900)
def test_sac_runs_on_ray_with_replay_shards(ray_cluster, quiet_run):
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 2, "replay_shards": 2}
    run |= {"eval_episodes": 1, "log_interval": 200}
    agent = {**TINY, "unroll_length": 8}
    result = shoal.train("sac", "Pendulum-v1", seed=0, total_steps=1_200, agent=agent, run=run)
    last = last_row(result.run_dir)
    assert last["replay_inserted"] >= 800 and last["replay_size"] > 0
    assert last["gradient_steps"] > 0 and last["replay_sampled"] > 0
    actions = shoal.load(result.run_dir).act(np.zeros((5, 3), np.float32))
    assert actions.shape == (5, 1) and np.all(np.abs(actions) <= 2.0)
