"""TD3: config checks, noisy and greedy acting, delayed actor and target updates, its data path,
runs inline and on ray (the Pendulum learning target: test_learning_slow.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from continuous_helpers import BOX, fake_batch, last_row, params, step_inputs, unchanged

import shoal
from shoal.agents.td3 import AGENT, TD3Config
from shoal.agents.td3.actor import TD3Policy
from shoal.agents.td3.learner import TD3Learner
from shoal.agents.td3.networks import make_networks
from shoal.data import Layout, Unroll
from shoal.errors import ShoalError

SMALL = TD3Config(hidden_sizes=(32, 32), batch_size=16, learning_starts=0)


def test_config_checks_name_the_flag_to_set(quiet_run, tmp_path):
    with pytest.raises(ValueError, match=r"--agent\.policy-delay"):
        TD3Config(policy_delay=0)
    with pytest.raises(ValueError, match=r"--agent\.target-noise-clip"):
        TD3Config(target_noise_clip=-0.5)
    with pytest.raises(ValueError, match=r"--agent\.exploration-noise"):
        TD3Config(exploration_noise=float("inf"))
    with pytest.raises(ValueError, match=r"--agent\.tau"):
        TD3Config(tau=1.5)
    with pytest.raises(ValueError, match=r"--agent\.learning-starts"):
        TD3Config(learning_starts=500, replay_capacity=300)
    with pytest.raises(ShoalError, match="policy-delay"):
        shoal.train("td3", "Pendulum-v1", agent={"policy_delay": 0}, run=quiet_run)
    with pytest.raises(ShoalError, match="continuous"):
        shoal.train("td3", "CartPole-v1", total_steps=10, run=quiet_run)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_actions_stay_in_bounds_and_greedy_is_the_actor_without_noise():
    net = make_networks(BOX, SMALL)
    with torch.no_grad():  # the actor at tanh(±4): noise would push it out of [-1, 1]
        net.actor.body[-1].bias.copy_(torch.tensor([4.0, -4.0]))
    policy = TD3Policy(BOX, SMALL, net, seed=0)
    obs = np.random.default_rng(0).normal(size=(500, 4))
    low, high = BOX.action_space.low, BOX.action_space.high
    with torch.no_grad():
        actor = net.actor(torch.from_numpy(obs)).numpy()
    for mode in ("train", "sample", "greedy"):
        out = policy.step(obs, {}, step_inputs(np.full(500, 10**6)), mode)
        assert out.action.shape == (500, 2) and out.action.dtype == np.float32
        assert np.all(np.abs(out.action) <= 1.0)
        assert np.all(out.env_action >= low) and np.all(out.env_action <= high)
        np.testing.assert_allclose(out.env_action, low + (out.action + 1) / 2 * (high - low))
        if mode == "greedy":
            np.testing.assert_allclose(out.action, actor, rtol=1e-6)
        else:  # N(0, 0.1²) noise, then clipped: the first entry is often pushed to 1
            noise = out.action - actor
            assert 0.05 < noise[:, 1].std() < 0.15 and (out.action[:, 0] == 1.0).any()
    greedy = [policy.step(obs, {}, step_inputs(np.zeros(500)), "greedy").action for _ in range(2)]
    np.testing.assert_array_equal(greedy[0], greedy[1])


def test_warm_up_acts_uniformly_until_learning_starts(pendulum):
    config = TD3Config(hidden_sizes=(32, 32), learning_starts=100, exploration_noise=0.0)
    net = make_networks(pendulum, config)
    with torch.no_grad():
        net.actor.body[-1].bias.fill_(8.0)  # the actor itself would act at tanh(8) ~ 1
    # 4 envs: a row that took 24 steps is within the run's first 96 < 100; at 25 it is past.
    policy = TD3Policy(pendulum, config, net, seed=0, layout=Layout(actors=2, envs_per_actor=2))
    steps = np.where(np.arange(2000) % 2 == 0, 24, 25)
    action = policy.step(np.zeros((2000, 3), np.float32), {}, step_inputs(steps), "train").action
    warm, learned = action[steps == 24, 0], action[steps == 25, 0]
    assert warm.min() < -0.9 and warm.max() > 0.9 and abs(warm.mean()) < 0.1
    assert learned.min() > 0.99


def test_actor_and_targets_move_only_every_policy_delay_updates(pendulum):
    config = TD3Config(hidden_sizes=(32, 32), batch_size=16, tau=0.1, policy_delay=3)
    learner = TD3Learner(pendulum, config, make_networks(pendulum, config))
    net = learner.net
    for update in (1, 2, 3, 4, 5, 6):
        actor, critic = params(net.actor), params(net.critic)
        target_actor, target_critic = params(learner.target_actor), params(learner.target_critic)
        metrics = learner.update(fake_batch(pendulum, seed=update), 0.0).metrics
        assert learner.version == learner.gradient_steps == update
        assert not any(unchanged(critic, net.critic))  # the critics learn every update
        delayed = update % 3 == 0
        assert metrics["actor_steps"] == update // 3
        for before, module in (
            (actor, net.actor),
            (target_actor, learner.target_actor),
            (target_critic, learner.target_critic),
        ):
            assert all(unchanged(before, module)) is not delayed
        if delayed:  # target <- (1 - tau) target + tau online, after the online step
            pairs = [
                (target_actor, learner.target_actor, net.actor),
                (target_critic, learner.target_critic, net.critic),
            ]
            for befores, target, online in pairs:
                moved = zip(befores, target.parameters(), online.parameters(), strict=True)
                for before, after, now in moved:
                    torch.testing.assert_close(after, before + 0.1 * (now.detach() - before))


def test_state_dict_round_trips_and_learning_continues_identically(pendulum):
    config = TD3Config(hidden_sizes=(32, 32), batch_size=16)
    learner = TD3Learner(pendulum, config, make_networks(pendulum, config))
    for seed in range(3):
        learner.update(fake_batch(pendulum, seed=seed), 0.0)
    state = learner.state_dict()
    make_networks(pendulum, config).load_state_dict(state["network"])  # as shoal.load does
    copy = TD3Learner(pendulum, config, make_networks(pendulum, config))
    copy.load_state_dict(state)
    assert copy.version == 3 and copy.actor_steps == learner.actor_steps == 1
    for name in ("network", "target_actor", "target_critic"):
        for key, value in state[name].items():
            torch.testing.assert_close(copy.state_dict()[name][key], value, rtol=0, atol=0)
    batch = fake_batch(pendulum, seed=9)
    torch.manual_seed(5)
    first = learner.update(batch, 0.0).metrics  # the 4th: the actor steps too
    torch.manual_seed(5)
    second = copy.update(batch, 0.0).metrics
    assert first == second and first["actor_steps"] == 2
    for a, b in zip(learner.net.parameters(), copy.net.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_data_path_stores_continuous_transitions():
    config = TD3Config(hidden_sizes=(16,), batch_size=4, learning_starts=3)
    data_path = AGENT.make_data_path(BOX, config, Layout())
    policy = TD3Policy(BOX, config, make_networks(BOX, config), seed=0)
    adder, table = data_path.make_adder(policy, 0), data_path.make_table(1, 0)
    rng = np.random.default_rng(1)
    actions = rng.uniform(-1, 1, (4, 1, 2)).astype(np.float32)
    unroll = Unroll(
        obs=rng.normal(size=(5, 1, 4)),
        actions=actions,
        rewards=np.ones((4, 1), np.float32),
        terminated=np.zeros((4, 1), bool),
        truncated=np.array([False, True, False, False])[:, None],
        extras={},
        final_obs=np.full((1, 4), 7.0),
        final_index=np.array([[1, 0]]),
    )
    items = adder.add(unroll)
    np.testing.assert_array_equal(items["action"], actions[:, 0])  # one-step: every step at once
    # A truncated episode still bootstraps, from its final observation, not the next's first.
    np.testing.assert_allclose(items["discount"], [0.99] * 4)
    np.testing.assert_array_equal(items["next_obs"][1], np.full(4, 7.0))
    np.testing.assert_array_equal(items["obs"][2], unroll.obs[2, 0])
    assert table.insert(items, 0, block=False)
    batch = table.sample(0.0, timeout=0.0)
    assert batch is not None and batch.data["action"].shape == (4, 2)
    assert batch.data["obs"].dtype == np.float32


# Overrides the Pendulum preset's 200-step unrolls, so these short runs insert as they go.
TINY = {"hidden_sizes": [32, 32], "batch_size": 32, "learning_starts": 200, "unroll_length": 2}


def test_td3_runs_with_central_inference_and_loads(quiet_run):
    run = {**quiet_run, "inference": "central", "actors": 2, "num_envs": 2, "eval_episodes": 1}
    run |= {"log_interval": 200}
    result = shoal.train("td3", "Pendulum-v1", seed=0, total_steps=800, agent=TINY, run=run)
    last = last_row(result.run_dir)
    assert last["replay_inserted"] >= 600 and last["inference_batch_size"] > 0
    assert last["gradient_steps"] > 0 and last["replay_sampled"] == 32 * last["gradient_steps"]
    assert last["actor_steps"] == last["gradient_steps"] // 2
    loaded = shoal.load(result.run_dir)
    obs = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    actions = loaded.act(obs)
    assert actions.shape == (64, 1) and np.all(np.abs(actions) <= 2.0)
    np.testing.assert_array_equal(actions, loaded.act(obs))


@pytest.mark.distributed
@pytest.mark.timeout(900)
@pytest.mark.integration
def test_td3_runs_on_ray_with_replay_shards(ray_cluster, quiet_run):
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 2, "replay_shards": 2}
    run |= {"eval_episodes": 1, "log_interval": 200}
    agent = {**TINY, "unroll_length": 8}
    result = shoal.train("td3", "Pendulum-v1", seed=0, total_steps=1_200, agent=agent, run=run)
    last = last_row(result.run_dir)
    assert last["replay_inserted"] >= 800 and last["replay_size"] > 0
    assert last["gradient_steps"] > 0 and last["actor_steps"] > 0
    actions = shoal.load(result.run_dir).act(np.zeros((5, 3), np.float32))
    assert actions.shape == (5, 1) and np.all(np.abs(actions) <= 2.0)
