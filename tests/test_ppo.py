"""PPO learns, handles continuous actions and normalisation, and its runs load back."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import shoal
from shoal.agents.ppo import AGENT, PPOConfig
from shoal.envs import EnvSpec, InProcessVectorEnv, make_env
from shoal.envs.toy import Countdown
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting


@pytest.mark.integration
def test_ppo_solves_cartpole_with_its_preset(quiet_run):
    result = shoal.train("ppo", "CartPole-v1", seed=0, run={**quiet_run, "stop_at_return": 475})
    assert result.stop_reason == "stop_at_return"
    assert result.train_return_mean >= 475
    assert result.evaluation.mean_return >= 475


def test_continuous_actions_with_normalisation_and_value_clipping(quiet_run):
    agent = {
        "normalize_obs": True,
        "normalize_reward": True,
        "clip_value": True,
        "unroll_length": 64,
        "minibatch_size": 64,
    }
    result = shoal.train(
        "ppo",
        "Pendulum-v1",
        seed=1,
        total_steps=1024,
        agent=agent,
        run={**quiet_run, "eval_episodes": 1},
    )
    policy = shoal.load(result.run_dir)
    # The observation statistics were learned and travel with the checkpoint.
    assert policy.net.obs_norm.count > 1000
    assert not torch.allclose(policy.net.obs_norm.mean, torch.zeros(3, dtype=torch.float64))
    action = policy.act(np.array([1.0, 0.0, 0.0], np.float32))
    assert action.shape == (1,) and -2.0 <= action[0] <= 2.0
    assert np.isfinite(result.evaluation.mean_return)


def test_truncated_steps_carry_their_final_observation():
    env = Countdown(length=3)
    spec = EnvSpec.from_env("countdown", env)
    config = PPOConfig(unroll_length=7)
    net = AGENT.make_networks(spec, config)
    vector = InProcessVectorEnv([lambda: Countdown(length=3)] * 2, spec, seed=0)
    policy = AGENT.make_policy(spec, config, net, 0)
    unroll = UnrollCollector(vector, Acting(policy, spec), 7).collect()
    assert unroll.obs.shape == (8, 2, 1) and unroll.rewards.shape == (7, 2)
    # Episodes of 3 steps truncate at t = 2 and t = 5 in both envs.
    assert sorted(map(tuple, unroll.final_index)) == [(2, 0), (2, 1), (5, 0), (5, 1)]
    assert np.all(unroll.final_obs == 3.0)
    assert np.array_equal(unroll.truncated[:, 0], [0, 0, 1, 0, 0, 1, 0])
    assert unroll.extras["log_prob"].shape == (7, 2)


def test_learner_bootstraps_truncation_but_not_termination():
    """A truncated episode's value target includes the final observation's value."""
    from shoal.agents.ppo.loss import rollout_targets

    config = PPOConfig(gamma=0.5, gae_lambda=1.0)
    rewards = torch.ones(2, 1)
    v_tm1 = torch.zeros(2, 1)
    v_t = torch.tensor([[0.0], [4.0]])  # V(s_1) = v_tm1[1]; then the final observation's value
    ended = torch.tensor([[False], [True]])
    _, truncated_returns = rollout_targets(config, rewards, ~ended & False, ended, v_tm1, v_t)
    _, terminated_returns = rollout_targets(config, rewards, ended, ~ended & False, v_tm1, v_t)
    # Step 1 ends the episode: truncation bootstraps 1 + 0.5 * 4, termination stops at 1.
    assert truncated_returns[1, 0].item() == pytest.approx(3.0)
    assert terminated_returns[1, 0].item() == pytest.approx(1.0)
    # Step 0 sees the next step's return through the lambda = 1 trace: 1 + 0.5 * G_1.
    assert truncated_returns[0, 0].item() == pytest.approx(2.5)
    assert terminated_returns[0, 0].item() == pytest.approx(1.5)


def test_reward_clip_bounds_the_rewards_the_targets_see():
    from shoal.agents.ppo.loss import rollout_targets

    rewards = torch.tensor([[5.0], [-3.0], [0.5]])
    values = torch.zeros(3, 1)
    never = torch.zeros(3, 1, dtype=torch.bool)
    clipped = PPOConfig(gamma=0.0, gae_lambda=1.0, reward_clip=1.0)
    _, returns = rollout_targets(clipped, rewards, never, never, values, values)
    assert returns[:, 0].tolist() == pytest.approx([1.0, -1.0, 0.5])
    _, raw = rollout_targets(PPOConfig(gamma=0.0), rewards, never, never, values, values)
    assert raw[:, 0].tolist() == pytest.approx([5.0, -3.0, 0.5])
    with pytest.raises(ValueError, match="reward_clip"):
        PPOConfig(reward_clip=0.0)


def test_loaded_policy_acts_on_one_observation_or_a_batch(quiet_run):
    result = shoal.train(
        "ppo", "CartPole-v1", total_steps=512, run={**quiet_run, "eval_episodes": 0}
    )
    policy = shoal.load(result.run_dir)
    obs, _ = make_env("CartPole-v1").reset(seed=0)
    single = policy.act(obs)
    assert single.shape == () and int(single) in (0, 1)
    assert policy.act(np.stack([obs, obs, obs])).shape == (3,)


def tuple_network(observation_space):
    """A user torso whose output is not [B, F]: shoal must reject it before training."""
    return _TupleOut()


class _TupleOut(torch.nn.Module):
    out_features = 4

    def forward(self, obs):
        return torch.zeros(obs.shape[0], 4, 2)


def test_a_network_that_does_not_fit_is_rejected_before_anything_is_written(tmp_path):
    from shoal.errors import ConfigError

    with pytest.raises(ConfigError, match="tuple_network"):
        shoal.train(
            "ppo",
            "CartPole-v1",
            agent={"torso": f"{__name__}:tuple_network"},
            run={"runs_dir": str(tmp_path / "runs"), "progress": False},
        )
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_unrolls_from_two_actors_concatenate_along_the_batch():
    from shoal.data import concat_unrolls

    env = Countdown(length=3)
    spec = EnvSpec.from_env("countdown", env)
    config = PPOConfig(unroll_length=4)
    net = AGENT.make_networks(spec, config)
    unrolls = []
    for width in (1, 2):
        vector = InProcessVectorEnv([lambda: Countdown(length=3)] * width, spec, seed=0)
        acting = Acting(AGENT.make_policy(spec, config, net, 0), spec)
        unrolls.append(UnrollCollector(vector, acting, 4).collect())
    joined = concat_unrolls(unrolls)
    assert joined.obs.shape == (5, 3, 1) and joined.extras["log_prob"].shape == (4, 3)
    # Truncations at t = 2 in every column; the second actor's columns are shifted by one.
    assert sorted(map(tuple, joined.final_index)) == [(2, 0), (2, 1), (2, 2)]
    assert np.array_equal(joined.rewards[:, 1:], unrolls[1].rewards)


@pytest.mark.parametrize("envs", ["num_envs", "vector env"])
def test_the_cartpole_preset_trains_with_four_envs(quiet_run, envs):
    # Issue 35, item 12: the preset's minibatch of 256 was refused with fewer than 8 envs.
    import gymnasium as gym

    run = {**quiet_run, "eval_episodes": 0, "total_steps": 256}
    if envs == "num_envs":
        result = shoal.train("ppo", "CartPole-v1", run={**run, "num_envs": 4})
    else:
        result = shoal.train("ppo", gym.make_vec("CartPole-v1", num_envs=4), run=run)
        assert "CartPole-v1" in result.summary["env"]  # its registered id: the preset applies
    assert result.env_steps >= 256 and result.summary["updates"] >= 2


def test_the_cartpole_preset_with_eight_envs_updates_as_minibatches_of_256_did(quiet_run):
    # The preset now takes the whole batch (32 x 8 = 256) per minibatch: the same updates as
    # its old minibatch_size 256, weight for weight.
    run = {**quiet_run, "eval_episodes": 0, "total_steps": 512}
    now = shoal.train("ppo", "CartPole-v1", seed=3, run=run)
    before = shoal.train("ppo", "CartPole-v1", seed=3, run=run, agent={"minibatch_size": 256})
    ours, theirs = shoal.load(now.run_dir).net.state_dict(), shoal.load(before.run_dir).net
    for key, value in theirs.state_dict().items():
        assert torch.equal(ours[key], value), key
