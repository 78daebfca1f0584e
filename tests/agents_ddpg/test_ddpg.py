"""DDPG: config checks, Gaussian and Ornstein-Uhlenbeck acting (the process held per row by the
runtime), one update, the learner's state round trip, runs inline with central inference, on ray
and resumed, and Pendulum learned (a short run here; the preset's 20k steps are `slow`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from continuous_helpers import BOX, fake_batch, last_row, params, step_inputs

import shoal
from shoal.agents.ddpg import DDPGConfig
from shoal.agents.ddpg.actor import DDPGPolicy
from shoal.agents.ddpg.learner import DDPGLearner
from shoal.agents.ddpg.networks import make_networks
from shoal.errors import ShoalError
from shoal.runtime.rows import Acting

SMALL = DDPGConfig(hidden_sizes=(32, 32), batch_size=16, learning_starts=0)
OU = DDPGConfig(
    hidden_sizes=(32, 32), learning_starts=0, noise_type="ornstein_uhlenbeck", ou_dt=1.0
)


def test_config_checks_name_the_flag_to_set(quiet_run, tmp_path):
    with pytest.raises(ValueError, match=r"--agent\.noise-type"):
        DDPGConfig(noise_type="pink")
    with pytest.raises(ValueError, match=r"--agent\.ou-theta"):
        DDPGConfig(ou_theta=3.0, ou_dt=1.0)
    with pytest.raises(ValueError, match=r"--agent\.ou-dt"):
        DDPGConfig(ou_dt=0.0)
    with pytest.raises(ValueError, match=r"--agent\.exploration-noise"):
        DDPGConfig(exploration_noise=float("inf"))
    with pytest.raises(ValueError, match=r"--agent\.target-tau"):
        DDPGConfig(tau=1.5)
    with pytest.raises(ValueError, match=r"--agent\.learning-starts"):
        DDPGConfig(learning_starts=500, replay_capacity=300)
    with pytest.raises(ShoalError, match=r"noise.type"):
        shoal.train("ddpg", "Pendulum-v1", agent={"noise_type": "pink"}, run=quiet_run)
    with pytest.raises(ShoalError, match="continuous"):
        shoal.train("ddpg", "CartPole-v1", total_steps=10, run=quiet_run)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_gaussian_acting_stays_in_bounds_and_greedy_is_the_actor():
    net = make_networks(BOX, SMALL)
    policy = DDPGPolicy(BOX, SMALL, net, seed=0)
    assert policy.initial_state(np.arange(3)) == {}  # Gaussian noise keeps no state
    obs = np.random.default_rng(0).normal(size=(500, 4))
    with torch.no_grad():
        actor = net.actor(torch.from_numpy(obs)).numpy()
    low, high = BOX.action_space.low, BOX.action_space.high
    for mode in ("train", "sample", "greedy"):
        out = policy.step(obs, {}, step_inputs(np.full(500, 10**6)), mode)
        assert out.action.shape == (500, 2) and out.action.dtype == np.float32
        assert np.all(np.abs(out.action) <= 1.0) and dict(out.state) == {}
        assert np.all(out.env_action >= low) and np.all(out.env_action <= high)
        if mode == "greedy":
            np.testing.assert_allclose(out.action, actor, rtol=1e-6)
        else:
            assert 0.08 < (out.action - actor).std() < 0.12


def test_ou_noise_is_a_process_per_row_that_the_runtime_keeps_and_resets():
    net = make_networks(BOX, OU)
    with torch.no_grad():  # the actor at 0: the action is the noise
        net.actor.body[-1].weight.zero_()
        net.actor.body[-1].bias.zero_()
    policy = DDPGPolicy(BOX, OU, net, seed=0)
    state = policy.initial_state(np.arange(2000))
    assert set(state) == {"ou_noise"} and torch.equal(state["ou_noise"], torch.zeros(2000, 2))
    # The policy is pure: the runtime's rows (`Acting`) hold the process, step after step.
    acting = Acting(policy, BOX)
    obs = np.zeros((2000, 4))
    noise = []
    for _ in range(3):
        _, action, record = acting.act(obs)
        acting.observe(np.zeros(2000), np.zeros(2000, bool))
        noise.append(action)
    # x_1 = σ ε_1, x_2 = (1 - θ) x_1 + σ ε_2, x_3 = ...: the record holds the state each step
    # started from, and the variance grows as σ² (1 + (1 - θ)² + ...).
    np.testing.assert_allclose(record["ou_noise"], noise[1], rtol=1e-6)
    var = [float(np.var(x)) for x in noise]
    expected = [0.01, 0.01 * (1 + 0.85**2), 0.01 * (1 + 0.85**2 + 0.85**4)]
    np.testing.assert_allclose(var, expected, rtol=0.08)
    # Temporally correlated, unlike Gaussian noise: corr(x_2, x_3) = 0.85 · sd(x_2) / sd(x_3).
    corr = np.corrcoef(noise[1].ravel(), noise[2].ravel())[0, 1]
    assert abs(corr - 0.85 * np.sqrt(var[1] / var[2])) < 0.03
    # An episode ending resets that row's process to 0: its next noise is σ ε again.
    ended = np.arange(2000) < 1000
    acting.observe(np.zeros(2000), ended)
    after = acting.act(obs)[2]["ou_noise"]
    assert np.all(after[:1000] == 0) and np.all(after[1000:] != 0)
    # Greedy acts with the actor alone and leaves the process as it is.
    x = torch.full((2, 2), 0.5)
    out = policy.step(np.zeros((2, 4)), {"ou_noise": x}, step_inputs([5, 5]), "greedy")
    assert np.all(out.action == 0) and torch.equal(out.state["ou_noise"], x)


def test_one_update_moves_the_critic_the_actor_and_both_targets_by_tau(pendulum):
    config = DDPGConfig(hidden_sizes=(32, 32), batch_size=16, target_tau=0.1)
    learner = DDPGLearner(pendulum, config, make_networks(pendulum, config))
    net = learner.net
    before = {
        "actor": params(net.actor),
        "critic": params(net.critic),
        "target_actor": params(learner.target_actor),
        "target_critic": params(learner.target_critic),
    }
    metrics = learner.update(fake_batch(pendulum, seed=1), 0.0).metrics
    assert learner.version == learner.gradient_steps == 1
    assert {"critic_loss", "actor_loss", "q_mean", "gradient_steps"} <= set(metrics)
    for name, module in (("actor", net.actor), ("critic", net.critic)):
        pairs = zip(before[name], module.parameters(), strict=True)
        assert all(not torch.equal(a, b) for a, b in pairs), name  # every layer learned
    # target <- (1 - tau) target + tau online, after the online step, every update.
    for name, online in (("target_actor", net.actor), ("target_critic", net.critic)):
        target = getattr(learner, name)
        pairs = zip(before[name], target.parameters(), online.parameters(), strict=True)
        for old, new, now in pairs:
            torch.testing.assert_close(new, old + 0.1 * (now.detach() - old))


def test_anneal_lr_decays_both_optimisers_with_the_budget(pendulum):
    # DDPG takes anneal_lr from the continuous family's config section, as SAC and TD3 do.
    config = DDPGConfig(hidden_sizes=(32, 32), batch_size=16, anneal_lr=True)
    learner = DDPGLearner(pendulum, config, make_networks(pendulum, config))
    learner.update(fake_batch(pendulum, seed=1), 0.75)
    for optimizer in (learner.actor_optimizer, learner.critic_optimizer):
        assert optimizer.lr == pytest.approx(0.25 * config.learning_rate)
    plain = DDPGLearner(pendulum, DDPGConfig(hidden_sizes=(32, 32), batch_size=16), learner.net)
    plain.update(fake_batch(pendulum, seed=1), 0.75)
    assert plain.actor_optimizer.lr == config.learning_rate


def test_state_dict_round_trips_and_learning_continues_identically(pendulum):
    config = DDPGConfig(hidden_sizes=(32, 32), batch_size=16)
    learner = DDPGLearner(pendulum, config, make_networks(pendulum, config))
    for seed in range(3):
        learner.update(fake_batch(pendulum, seed=seed), 0.0)
    state = learner.state_dict()
    assert {"network", "target_actor", "target_critic", "actor_optimizer"} <= set(state)
    make_networks(pendulum, config).load_state_dict(state["network"])  # as shoal.load does
    copy = DDPGLearner(pendulum, config, make_networks(pendulum, config))
    copy.load_state_dict(state)
    assert copy.version == copy.gradient_steps == 3
    batch = fake_batch(pendulum, seed=9)
    first, second = learner.update(batch, 0.0).metrics, copy.update(batch, 0.0).metrics
    assert first == second
    for a, b in zip(learner.net.parameters(), copy.net.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


# Overrides the Pendulum preset's warm-up, so these short runs learn as they go.
TINY = {"hidden_sizes": [32, 32], "batch_size": 32, "learning_starts": 200, "unroll_length": 2}


def test_ddpg_with_ou_noise_runs_with_central_inference_and_loads(quiet_run):
    run = {**quiet_run, "inference": "central", "actors": 2, "num_envs": 2, "eval_episodes": 1}
    run |= {"log_interval": 200}
    agent = {**TINY, "noise_type": "ornstein_uhlenbeck"}
    result = shoal.train("ddpg", "Pendulum-v1", seed=0, total_steps=800, agent=agent, run=run)
    last = last_row(result.run_dir)
    assert last["replay_inserted"] >= 600 and last["inference_batch_size"] > 0
    assert last["gradient_steps"] > 0 and last["replay_sampled"] == 32 * last["gradient_steps"]
    loaded = shoal.load(result.run_dir)
    obs = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    actions = loaded.act(obs)
    assert actions.shape == (64, 1) and np.all(np.abs(actions) <= 2.0)
    # The OU noise is per-env state, so `act` wants each step's result before the next call.
    loaded.step_result(np.zeros(64), np.zeros(64, bool))
    np.testing.assert_array_equal(actions, loaded.act(obs))  # greedy: no noise in the action


def test_a_resumed_run_continues_the_learner(quiet_run):
    run = {**quiet_run, "eval_episodes": 0, "log_interval": 200, "checkpoint_interval": 400}
    first = shoal.train("ddpg", "Pendulum-v1", seed=0, total_steps=400, agent=TINY, run=run)
    steps = last_row(first.run_dir)["gradient_steps"]
    resumed = shoal.train(resume=first.run_dir, run={"total_steps": 800})
    assert resumed.run_dir == first.run_dir and resumed.env_steps >= 800
    # ~200 gradient steps in the first run, ~400 more after: counted on from the checkpoint.
    assert last_row(resumed.run_dir)["gradient_steps"] > steps + 300


@pytest.mark.distributed
@pytest.mark.timeout(900)
@pytest.mark.integration
def test_ddpg_runs_on_ray_with_replay_shards(ray_cluster, quiet_run):
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 2, "replay_shards": 2}
    run |= {"eval_episodes": 1, "log_interval": 200}
    agent = {**TINY, "unroll_length": 8, "noise_type": "ornstein_uhlenbeck"}
    result = shoal.train("ddpg", "Pendulum-v1", seed=0, total_steps=1_200, agent=agent, run=run)
    last = last_row(result.run_dir)
    assert last["replay_inserted"] >= 800 and last["replay_size"] > 0
    assert last["gradient_steps"] > 0
    actions = shoal.load(result.run_dir).act(np.zeros((5, 3), np.float32))
    assert actions.shape == (5, 1) and np.all(np.abs(actions) <= 2.0)


# Small networks and an early start, so that Pendulum is swung up in a fast test. Inline, acting
# and learning take turns (the replay's rate limiter: one gradient step per agent step), so the
# result depends on the seed only, not on how busy the machine is.
FAST = {"hidden_sizes": [64, 64], "batch_size": 64, "learning_starts": 1000}
FAST |= {"gamma": 0.98, "replay_capacity": 20_000}


@pytest.mark.integration
def test_ddpg_swings_up_pendulum_in_5k_steps(quiet_run):
    # Greedy 10-episode means over seeds 0, 1, 2: -179.3, -125.4, -142.5 (a random policy: about
    # -1200); -400 leaves a margin on every seed.
    result = shoal.train(
        "ddpg", "Pendulum-v1", seed=0, total_steps=5_000, agent=FAST, run=quiet_run
    )
    assert result.env_steps == 5_000
    assert result.evaluation.mean_return >= -400


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ddpg_preset_swings_up_pendulum_within_20k_steps(quiet_run, seed):
    run = {**quiet_run, "eval_episodes": 10}
    result = shoal.train("ddpg", "Pendulum-v1", seed=seed, total_steps=20_000, run=run)
    assert result.env_steps == 20_000
    assert result.evaluation.mean_return >= -200
