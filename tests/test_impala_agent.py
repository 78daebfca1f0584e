"""IMPALA: config checks, learner updates, on-policy V-trace, LSTM state bookkeeping, CartPole."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest
import torch

from shoal import ops
from shoal.agents.impala import AGENT, IMPALAConfig
from shoal.agents.impala.learner import IMPALALearner
from shoal.agents.impala.loss import Batch, impala_loss
from shoal.envs import EnvSpec, InProcessVectorEnv
from shoal.envs.registry import env_spec, make_env_factory
from shoal.envs.toy import Countdown
from shoal.errors import ConfigError
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting

SPEC = EnvSpec.from_env("countdown", Countdown())
# Env 0 is truncated after 3 steps, env 1 terminated after 4: both kinds of end in one unroll.
FACTORIES = [lambda: Countdown(length=3), lambda: Countdown(length=9, terminate_at=4)]


class Forgetful(Acting):
    """Acting rows that are never told which episodes ended, as a loop that did not report
    `terminated | truncated` would leave them."""

    def observe(self, rewards, ended, rows=None):
        super().observe(rewards, np.zeros_like(ended), rows)


def setup(length: int = 7, factories=FACTORIES, sharpen: bool = True, **config):
    """Network, policy and a collector on Countdown envs (the runtime reports episode ends)."""
    torch.manual_seed(0)
    config = IMPALAConfig(unroll_length=length, **config)
    net = AGENT.make_networks(SPEC, config)
    if sharpen:
        # A far-from-uniform policy, so a wrong state or observation shows in the log-ratios.
        with torch.no_grad():
            net.policy_head.linear.weight.mul_(300.0)
    policy = AGENT.make_policy(SPEC, config, net, 0)
    env = InProcessVectorEnv(factories, SPEC, seed=0)
    return config, net, policy, env, UnrollCollector(env, Acting(policy, SPEC), length)


# ---- config and networks ----


@pytest.mark.parametrize(
    ("field", "value", "hint"),
    [
        ("trace_lambda", 1.5, "--agent.trace-lambda"),
        ("rho_bar", 0.0, "--agent.rho-bar"),
        ("unroll_length", 0, "--agent.unroll-length"),
        ("reward_clip", -1.0, "--agent.reward-clip"),
        ("entropy_coef", -0.1, "--agent.entropy-coef"),
    ],
)
def test_config_rejects_bad_values_and_says_what_to_set(field, value, hint):
    with pytest.raises(ValueError, match=field) as info:
        IMPALAConfig(**{field: value})
    assert hint in str(info.value)


def test_continuous_actions_are_rejected_pointing_to_ppo():
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    spec = EnvSpec("box-env", box, box)
    with pytest.raises(ConfigError, match=r"discrete actions.*PPO"):
        AGENT.make_networks(spec, IMPALAConfig())


@pytest.mark.parametrize("use_lstm", [False, True])
def test_unroll_over_t_steps_equals_t_single_steps(use_lstm):
    config = IMPALAConfig(use_lstm=use_lstm, lstm_size=8)
    net = AGENT.make_networks(SPEC, config)
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(6, 3, 1, generator=g)
    first = torch.rand(6, 3, generator=g) < 0.3
    state = net.initial_state(3)
    if use_lstm:
        state = (torch.randn(3, 8, generator=g), torch.randn(3, 8, generator=g))
    logits, values, final_state = net.unroll(obs, first, state)
    step_state = state
    for t in range(6):
        step_logits, step_values, step_state = net.unroll(
            obs[t : t + 1], first[t : t + 1], step_state
        )
        torch.testing.assert_close(step_logits[0], logits[t])
        torch.testing.assert_close(step_values[0], values[t])
    if use_lstm:
        torch.testing.assert_close(step_state, final_state)
        # The state matters: another initial state changes the first step's outputs.
        assert not torch.allclose(net.unroll(obs, first, net.initial_state(3))[1][0], values[0])


# ---- the LSTM policy's state ----


def test_lstm_policy_records_the_state_it_used_at_each_step():
    _, net, _, _, collector = setup(length=5, use_lstm=True, lstm_size=8)
    first_unroll = collector.collect()
    second_unroll = collector.collect()
    # Track the state independently: zero at the start and after every episode end.
    state = net.initial_state(2)
    starts = np.ones(2, bool)
    with torch.no_grad():
        for unroll in (first_unroll, second_unroll):
            for t in range(5):
                h, c = (torch.where(torch.from_numpy(starts)[:, None], 0.0, s) for s in state)
                np.testing.assert_allclose(unroll.extras["core_h"][t], h.numpy(), atol=1e-6)
                np.testing.assert_allclose(unroll.extras["core_c"][t], c.numpy(), atol=1e-6)
                np.testing.assert_array_equal(unroll.extras["first"][t], starts)
                obs = torch.from_numpy(unroll.obs[t : t + 1])
                _, _, state = net.unroll(obs, torch.from_numpy(starts)[None], (h, c))
                starts = unroll.terminated[t] | unroll.truncated[t]
    # The second unroll starts mid-episode, from a state that is not zero.
    assert not second_unroll.extras["first"][0].any()
    assert np.abs(second_unroll.extras["core_h"][0]).sum() > 0


def test_episode_ended_zeroes_the_state_of_that_env_only():
    config = IMPALAConfig(use_lstm=True, lstm_size=8)
    net = AGENT.make_networks(SPEC, config)
    acting = Acting(AGENT.make_policy(SPEC, config, net, 0), SPEC)
    obs = np.array([[1.0], [2.0], [3.0]], np.float32)
    _, _, extras = acting.act(obs)
    assert extras["first"].all() and not extras["core_h"].any()
    _, _, extras = acting.act(obs)
    carried = extras["core_h"].copy()
    assert not extras["first"].any() and (np.abs(carried) > 0).all(axis=1).all()
    _, _, after_step = acting.act(obs)
    acting.observe(np.zeros(3), np.array([False, True, False]))
    _, _, extras = acting.act(obs)
    np.testing.assert_array_equal(extras["first"], [False, True, False])
    assert not extras["core_h"][1].any() and not extras["core_c"][1].any()
    # The other envs carry on from their state: the one after the previous step, not zero.
    assert (np.abs(extras["core_h"][[0, 2]]) > 0).all()
    assert not np.allclose(extras["core_h"][[0, 2]], after_step["core_h"][[0, 2]])
    _, _, extras = acting.act(obs)
    assert not extras["first"].any()


def test_eval_policy_is_greedy_and_resets_when_told():
    config = IMPALAConfig(use_lstm=True, lstm_size=8)
    net = AGENT.make_networks(SPEC, config)
    with torch.no_grad():
        net.policy_head.linear.weight.mul_(300.0)
    greedy = Acting(AGENT.make_policy(SPEC, config, net, 0), SPEC, "greedy")
    behaviour = Acting(AGENT.make_policy(SPEC, config, net, 0), SPEC)
    obs = np.array([[1.0], [4.0]], np.float32)
    for ended in ([False, False], [True, False], [False, False]):
        actions = greedy.act(obs)[0]
        _, _, extras = behaviour.act(obs)
        np.testing.assert_array_equal(actions, extras["logits"].argmax(-1))
        greedy.observe(np.zeros(2), np.array(ended))
        behaviour.observe(np.zeros(2), np.array(ended))


# ---- the loss and the learner ----


@pytest.mark.parametrize("lambda_", [1.0, 0.8])
def test_on_policy_rhos_are_one_and_vs_is_the_lambda_return(lambda_):
    config, net, _, _, collector = setup(trace_lambda=lambda_, gamma=0.9)
    collector.collect()
    unroll = collector.collect()
    result = impala_loss(net, Batch.from_unroll(unroll), config)
    torch.testing.assert_close(result.log_rhos, torch.zeros(7, 2), rtol=0, atol=1e-5)
    torch.testing.assert_close(result.targets.rhos, torch.ones(7, 2))
    assert result.metrics["rho_mean"].item() == pytest.approx(1.0)
    # The reference: values of the next observations, the final observation where truncated.
    with torch.no_grad():
        obs = torch.from_numpy(unroll.obs)
        values = net.unroll(obs, torch.zeros(8, 2, dtype=torch.bool), None)[1]
        v_t = values[1:].clone()
        final_obs = torch.from_numpy(unroll.final_obs)[None]
        final = net.unroll(final_obs, torch.ones(final_obs.shape[:2], dtype=torch.bool), None)
        t, b = torch.from_numpy(unroll.final_index).unbind(1)
        v_t[t, b] = final[1][0]
    # Global steps 7..13: env 0 is truncated at t = 1 and 4, env 1 terminated at t = 0 and 4.
    assert sorted(map(tuple, unroll.final_index.tolist())) == [(1, 0), (4, 0)]
    terminated = torch.from_numpy(unroll.terminated)
    ended = terminated | torch.from_numpy(unroll.truncated)
    assert terminated.any() and (ended & ~terminated).any()
    rewards = torch.from_numpy(unroll.rewards)
    expected = ops.lambda_returns(rewards, 0.9 * (~terminated).float(), v_t, lambda_, ended)
    torch.testing.assert_close(result.targets.vs, expected)
    torch.testing.assert_close(result.v_t, v_t)


def test_recurrent_learner_recomputes_the_behaviour_policy_and_bootstraps_truncations():
    config, net, _, _, collector = setup(use_lstm=True, lstm_size=8, gamma=0.9)
    collector.collect()
    unroll = collector.collect()
    assert unroll.truncated.any() and unroll.extras["core_h"][0].any()
    result = impala_loss(net, Batch.from_unroll(unroll), config)
    # The learner restarted from the recorded state and reset where episodes ended: π = μ.
    torch.testing.assert_close(result.log_rhos, torch.zeros(7, 2), rtol=0, atol=1e-5)
    torch.testing.assert_close(result.targets.rhos, torch.ones(7, 2))
    # A check that can fail: restarting env 1 from a zero state instead gives π != μ.
    zero = tuple(torch.zeros(2, 8) for _ in range(2))
    wrong = impala_loss(net, Batch.from_unroll(unroll)._replace(initial_state=zero), config)
    assert wrong.log_rhos[0, 1].abs() > 1e-3
    # A truncated step's successor value is one more core step on the final observation.
    with torch.no_grad():
        state = tuple(torch.from_numpy(unroll.extras[k][0]) for k in ("core_h", "core_c"))
        first = np.concatenate([unroll.extras["first"][:1], unroll.terminated | unroll.truncated])
        for t in range(7):
            step_first = torch.from_numpy(first[t : t + 1])
            _, _, state = net.unroll(torch.from_numpy(unroll.obs[t : t + 1]), step_first, state)
            for k in np.flatnonzero(unroll.final_index[:, 0] == t):
                b = int(unroll.final_index[k, 1])
                one = (state[0][b : b + 1], state[1][b : b + 1])
                obs = torch.from_numpy(unroll.final_obs[k : k + 1])[None]
                value = net.unroll(obs, torch.zeros(1, 1, dtype=torch.bool), one)[1][0, 0]
                assert result.v_t[t, b].item() == pytest.approx(value.item(), abs=1e-5)


def test_recurrent_learner_refuses_unrolls_from_a_policy_never_told_of_episode_ends():
    config, net, policy, _, _ = setup(use_lstm=True, lstm_size=8)
    env = InProcessVectorEnv(FACTORIES, SPEC, seed=0)
    unroll = UnrollCollector(env, Forgetful(policy, SPEC), 7).collect()
    learner = AGENT.make_learner(SPEC, config, net)
    with pytest.raises(RuntimeError, match="episode_ended"):
        learner.update(unroll, 0.0)


@pytest.mark.parametrize("use_lstm", [False, True])
def test_one_update_changes_the_weights_and_the_version(use_lstm):
    config, net, _, _, collector = setup(use_lstm=use_lstm, lstm_size=8, sharpen=False)
    learner = AGENT.make_learner(SPEC, config, net)
    before = learner.weights()
    metrics = learner.update(collector.collect(), 0.25).metrics
    expected = {"policy_loss", "value_loss", "entropy", "grad_norm", "learning_rate"}
    assert expected | {"rho_mean", "rho_clip_fraction"} <= set(metrics)
    assert all(np.isfinite(v) for v in metrics.values())
    assert metrics["learning_rate"] == pytest.approx(0.75 * config.learning_rate)
    assert learner.version == 1
    after = learner.weights()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    # A list of unrolls is one batch, side by side along B.
    metrics = learner.update([collector.collect(), collector.collect()], 0.5).metrics
    assert learner.version == 2 and all(np.isfinite(v) for v in metrics.values())


def test_unrolls_stack_along_the_batch_axis():
    _, _, _, _, collector = setup(sharpen=False)
    first, second = collector.collect(), collector.collect()
    stacked = IMPALALearner.stack([first, second])
    assert stacked.obs.shape == (8, 4, 1) and stacked.extras["logits"].shape == (7, 4, 2)
    np.testing.assert_array_equal(stacked.rewards[:, 2:], second.rewards)
    expected = np.concatenate([first.final_index, second.final_index + np.array([0, 2])])
    np.testing.assert_array_equal(stacked.final_index, expected)
    with pytest.raises(ValueError, match="same length"):
        IMPALALearner.stack([first, setup(length=3, sharpen=False)[4].collect()])


class DictCountdown(Countdown):
    """Countdown with Dict observations: the count and a uint8 flag vector."""

    def __init__(self) -> None:
        super().__init__(length=3)
        self.observation_space = gym.spaces.Dict(
            {
                "count": gym.spaces.Box(0.0, np.inf, (1,), np.float32),
                "flag": gym.spaces.Box(0, 255, (2,), np.uint8),
            }
        )

    def _dict(self, count):
        return {"count": count, "flag": np.array([count[0] % 2, 1], np.uint8)}

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return self._dict(obs), info

    def step(self, action):
        obs, *rest = super().step(action)
        return self._dict(obs), *rest


@pytest.mark.parametrize("use_lstm", [False, True])
def test_dict_observations_are_learned_from_and_stacked(use_lstm):
    spec = EnvSpec.from_env("dict-countdown", DictCountdown())
    config = IMPALAConfig(unroll_length=5, use_lstm=use_lstm, lstm_size=8)
    net = AGENT.make_networks(spec, config)
    policy = AGENT.make_policy(spec, config, net, 0)
    env = InProcessVectorEnv([DictCountdown] * 2, spec, seed=0)
    collector = UnrollCollector(env, Acting(policy, spec), 5)
    unrolls = [collector.collect(), collector.collect()]
    assert len(unrolls[0].final_index) and unrolls[0].final_obs["flag"].dtype == np.uint8
    stacked = IMPALALearner.stack(unrolls)
    assert stacked.obs["flag"].shape == (6, 4, 2) and stacked.final_obs["count"].shape[1:] == (1,)
    learner = AGENT.make_learner(spec, config, net)
    metrics = learner.update(unrolls, 0.0).metrics
    assert learner.version == 1 and all(np.isfinite(v) for v in metrics.values())


def test_rewards_are_clipped_for_learning_when_asked():
    config, net, _, _, collector = setup(reward_clip=1.0)
    unroll = collector.collect()
    scaled = Batch.from_unroll(unroll)._replace(rewards=torch.from_numpy(unroll.rewards) * 5)
    clipped = impala_loss(net, scaled, config).targets.vs
    torch.testing.assert_close(
        clipped, impala_loss(net, Batch.from_unroll(unroll), config).targets.vs
    )
    unclipped_config = IMPALAConfig(unroll_length=7)
    assert not torch.allclose(impala_loss(net, scaled, unclipped_config).targets.vs, clipped)


def test_normalised_advantages_make_the_policy_loss_independent_of_reward_scale():
    config, net, _, _, collector = setup(normalize_advantages=True)
    with torch.no_grad():  # values 0 everywhere: the advantages are then the scaled rewards
        for param in net.value_head.parameters():
            param.zero_()
    unroll = collector.collect()
    unroll.rewards[:] = np.random.default_rng(0).normal(size=unroll.rewards.shape)
    batch = Batch.from_unroll(unroll)
    scaled = batch._replace(rewards=batch.rewards * 100)
    loss = impala_loss(net, batch, config).metrics["policy_loss"]
    torch.testing.assert_close(impala_loss(net, scaled, config).metrics["policy_loss"], loss)
    raw = IMPALAConfig(unroll_length=7)
    assert not torch.allclose(impala_loss(net, scaled, raw).metrics["policy_loss"], loss)


def test_learner_state_round_trips():
    config, net, _, _, collector = setup(sharpen=False)
    learner = AGENT.make_learner(SPEC, config, net)
    learner.update(collector.collect(), 0.0)
    restored = AGENT.make_learner(SPEC, config, AGENT.make_networks(SPEC, config))
    restored.load_state_dict(learner.state_dict())
    assert restored.version == 1
    for key, value in learner.weights().items():
        torch.testing.assert_close(restored.weights()[key], value)
    unroll = collector.collect()
    torch.testing.assert_close(
        torch.tensor(list(restored.update(unroll, 0.1).metrics.values())),
        torch.tensor(list(learner.update(unroll, 0.1).metrics.values())),
    )


# ---- learning ----


@pytest.fixture
def one_torch_thread():
    """One intra-op thread, as the inline runtime sets it: small nets are fastest so."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.integration
@pytest.mark.parametrize("lag", [0, 10])
def test_feed_forward_impala_learns_cartpole(one_torch_thread, lag):
    """Acting and learning alternate, as the inline runtime runs them.

    `lag=0`: actor and learner share one network, so the data is on-policy. `lag=10`: the actor
    has a network of its own and gets the learner's weights every 10 updates, so V-trace has
    real importance weights to correct for.
    """
    torch.manual_seed(0)
    spec = env_spec("CartPole-v1")
    config = IMPALAConfig(unroll_length=20, learning_rate=1e-3, anneal_lr=False)
    net = AGENT.make_networks(spec, config)
    learner = AGENT.make_learner(spec, config, net)
    actor_net = AGENT.make_networks(spec, config) if lag else net
    acting = Acting(AGENT.make_policy(spec, config, actor_net, 0), spec)
    acting.load_weights(learner.weights(), 1)
    env = InProcessVectorEnv([make_env_factory("CartPole-v1")] * 8, spec, seed=0)
    collector = UnrollCollector(env, acting, config.unroll_length)
    start, steps, returns, rhos = time.perf_counter(), 0, [], []
    while steps < 150_000 and (len(returns) < 20 or np.mean(returns[-20:]) < 150):
        unroll = collector.collect()
        steps += unroll.rewards.size
        metrics = learner.update(unroll, steps / 150_000).metrics
        rhos.append(metrics["rho_mean"])
        if lag and learner.version % lag == 0:
            acting.load_weights(learner.weights(), learner.version)
        returns += collector.drain_episodes()[0]
    seconds = time.perf_counter() - start
    mean = np.mean(returns[-20:])
    print(f"IMPALA CartPole, lag {lag}: mean return {mean:.1f} of the last 20 episodes after")
    print(f"{steps} steps ({seconds:.1f} s), mean rho {np.mean(rhos):.3f}")
    assert mean >= 150
    assert (np.mean(rhos) < 0.99) if lag else np.allclose(rhos, 1.0, atol=1e-4)
