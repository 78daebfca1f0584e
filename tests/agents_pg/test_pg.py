"""REINFORCE (`pg`): its returns over cut episodes, its config checks, and its runs: CartPole
learned in the fast tier, Gaussian actions with central inference, a resumed run, and Ray."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import shoal
from shoal import ops
from shoal.agents.pg import AGENT, PGConfig
from shoal.agents.pg.loss import reinforce_loss
from shoal.envs import EnvSpec, InProcessVectorEnv
from shoal.envs.toy import Countdown
from shoal.errors import ConfigError
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting

GAMMA = 0.9


def _setup(config: PGConfig, length: int = 5, terminate_at: int | None = 3):
    """Two Countdown envs that terminate at step 3 (ends at t = 2 and 5 of a 7-step unroll, so
    t = 6 is the start of an episode the unroll cuts), a network and one unroll."""

    def env():
        return Countdown(length=length, terminate_at=terminate_at)

    spec = EnvSpec.from_env("countdown", env())
    torch.manual_seed(0)
    net = AGENT.make_networks(spec, config)
    vector = InProcessVectorEnv([env] * 2, spec, seed=0)
    policy = AGENT.make_policy(spec, config, net, 0, None)
    unroll = UnrollCollector(vector, Acting(policy, spec), config.unroll_length).collect()
    return spec, net, unroll


def _copy(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def _unchanged(before: list[torch.Tensor], module: torch.nn.Module) -> list[bool]:
    return [torch.equal(a, b) for a, b in zip(before, module.parameters(), strict=True)]


def _policy_loss(config: PGConfig, net, unroll) -> float:
    return reinforce_loss(net, unroll, config)[1]["policy_loss"]


def test_without_a_baseline_each_step_is_weighted_by_its_whole_return_and_cut_tails_by_none():
    config = PGConfig(
        unroll_length=7, baseline=False, normalize_advantages=False, gamma=GAMMA, hidden_sizes=(8,)
    )
    _, net, unroll = _setup(config)
    assert unroll.terminated[[2, 5]].all() and not unroll.terminated[[0, 1, 3, 4, 6]].any()
    # REINFORCE by hand: G_t = 1 + γ + γ² at the first step of each episode, 1 + γ, then 1; the
    # cut step t = 6 has no return and weighs nothing; the mean is over all 14 steps.
    g = torch.tensor([1 + GAMMA + GAMMA**2, 1 + GAMMA, 1.0] * 2)
    with torch.no_grad():
        obs = torch.from_numpy(unroll.obs[:6]).flatten(0, 1)
        log_prob = ops.categorical_log_prob(
            net.policy(obs), torch.from_numpy(unroll.actions[:6]).flatten()
        )
    expected = float(-(log_prob * g.repeat_interleave(2)).sum() / 14)
    metrics = reinforce_loss(net, unroll, config)[1]
    assert metrics["policy_loss"] == pytest.approx(expected, rel=1e-5)
    assert metrics["complete_fraction"] == pytest.approx(12 / 14)
    assert "value_loss" not in metrics
    # A reward in the cut tail changes nothing; one inside a whole episode does.
    unroll.rewards[6] += 10.0
    assert _policy_loss(config, net, unroll) == pytest.approx(expected, rel=1e-5)
    unroll.rewards[4] += 10.0
    assert _policy_loss(config, net, unroll) != pytest.approx(expected, rel=1e-3)


def test_with_a_baseline_cut_tails_bootstrap_and_the_baseline_learns():
    config = PGConfig(unroll_length=7, hidden_sizes=(8,), normalize_advantages=False)
    spec, net, unroll = _setup(config)
    value_before = _copy(net.value_head)
    learner = AGENT.make_learner(spec, config, net)
    metrics = learner.update(unroll, 0.0).metrics
    assert metrics["complete_fraction"] == 1.0  # every step teaches
    for key in ("policy_loss", "value_loss", "explained_variance", "entropy", "return_mean"):
        assert np.isfinite(metrics[key]), key
    assert not any(_unchanged(value_before, net.value_head))
    # The cut tail's return r + γ V(s_7) enters the loss.
    before = _policy_loss(config, net, unroll)
    unroll.rewards[6] += 10.0
    assert _policy_loss(config, net, unroll) != pytest.approx(before, rel=1e-3)


def test_without_a_baseline_the_value_head_never_moves_and_an_unroll_of_no_ending_teaches_nothing():
    config = PGConfig(unroll_length=2, hidden_sizes=(8,), baseline=False)
    spec, net, unroll = _setup(config, length=5, terminate_at=None)  # no end in 2 steps
    before = _copy(net)
    metrics = AGENT.make_learner(spec, config, net).update(unroll, 0.0).metrics
    assert metrics["complete_fraction"] == 0.0 and metrics["policy_loss"] == 0.0
    assert all(np.isfinite(v) for v in metrics.values())
    assert all(_unchanged(before, net))
    # With an ending, the policy moves and the value head still does not.
    config = PGConfig(unroll_length=7, hidden_sizes=(8,), baseline=False)
    spec, net, unroll = _setup(config)
    value_before, policy_before = _copy(net.value_head), _copy(net.policy_head)
    AGENT.make_learner(spec, config, net).update(unroll, 0.0)
    assert all(_unchanged(value_before, net.value_head))
    assert not any(_unchanged(policy_before, net.policy_head))


@pytest.mark.parametrize(
    ("fields", "flag"),
    [
        ({"unroll_length": 0}, "unroll-length"),
        ({"learning_rate": -1.0}, "learning-rate"),
        ({"gamma": 1.5}, "gamma"),
        ({"entropy_coef": -0.1}, "entropy-coef"),
        ({"value_coef": float("inf")}, "value-coef"),
        ({"max_grad_norm": -1.0}, "max-grad-norm"),
        ({"value_coef": 0.0}, "value-coef"),  # a baseline that never learns
        ({"hidden_sizes": (64, 0)}, "hidden-sizes"),
    ],
)
def test_config_errors_name_the_flag(fields, flag):
    with pytest.raises(ValueError, match=rf"--agent\.{flag}"):
        PGConfig(**fields)


def test_a_bad_setting_is_one_config_error_before_any_run_directory(tmp_path, quiet_run):
    with pytest.raises(ConfigError, match=r"--agent\.baseline false"):
        shoal.train("pg", "CartPole-v1", agent={"value_coef": 0.0}, run=quiet_run)
    with pytest.raises(ConfigError, match="torso"):
        shoal.train("pg", "CartPole-v1", agent={"torso": "no_such_torso"}, run=quiet_run)
    assert not (tmp_path / "runs").exists()
    PGConfig(baseline=False, value_coef=0.0)  # without a baseline its weight is unused


@pytest.mark.integration
def test_pg_learns_cartpole_with_its_preset_in_100k_steps(quiet_run):
    # Inline, acting and learning take turns, so the result depends on the seed only. Greedy
    # 10-episode means at 100k steps, seeds 0-4: 488.1, 481.1, 479.0, 500, 500 (a random
    # policy: about 20), each run 22-34 s at a load average of 18-21 on the 2-core machine.
    result = shoal.train("pg", "CartPole-v1", seed=0, total_steps=100_000, run=quiet_run)
    assert result.evaluation.mean_return >= 400


def _last_row(run_dir):
    return json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])


def test_gaussian_actions_with_central_inference_and_the_run_loads(quiet_run):
    run = {**quiet_run, "inference": "central", "actors": 2, "num_envs": 2, "eval_episodes": 1}
    run |= {"log_interval": 256}
    agent = {"unroll_length": 64, "baseline": False, "entropy_coef": 0.01, "normalize_obs": True}
    result = shoal.train("pg", "Pendulum-v1", seed=0, total_steps=1024, agent=agent, run=run)
    rows = [json.loads(line) for line in (result.run_dir / "metrics.jsonl").open()]
    assert rows[-1]["inference_batch_size"] > 0 and rows[-1]["updates"] >= 3
    # Pendulum's episodes all last 200 steps: of the 64-step unrolls only the one holding step
    # 200 teaches (its first 8 steps), and none teaches every step.
    kept = [row["complete_fraction"] for row in rows if "complete_fraction" in row]
    assert max(kept) == pytest.approx(8 / 64) and min(kept) == 0.0
    policy = shoal.load(result.run_dir)
    assert policy.net.obs_norm.count > 500
    actions = policy.act(np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32))
    assert actions.shape == (5, 1) and np.all(np.abs(actions) <= 2.0)


def test_a_resumed_run_continues_the_learner(quiet_run):
    run = {**quiet_run, "eval_episodes": 0, "checkpoint_interval": 4096, "log_interval": 2048}
    agent = {"unroll_length": 64}
    first = shoal.train("pg", "CartPole-v1", seed=0, total_steps=4096, agent=agent, run=run)
    updates = _last_row(first.run_dir)["updates"]
    resumed = shoal.train(resume=first.run_dir, run={"total_steps": 8192})
    assert resumed.run_dir == first.run_dir and resumed.env_steps >= 8192
    assert _last_row(resumed.run_dir)["updates"] >= updates + 8  # 8 envs x 64 steps an update


@pytest.mark.distributed
@pytest.mark.timeout(900)
def test_pg_runs_on_ray_with_two_actors(ray_cluster, quiet_run):
    run = {**quiet_run, "runtime": "ray", "actors": 2, "num_envs": 4, "eval_episodes": 2}
    run |= {"log_interval": 1024}
    result = shoal.train("pg", "CartPole-v1", seed=0, total_steps=6144, run=run)
    last = _last_row(result.run_dir)
    # One update per round of both actors' 4 x 256-step unrolls, each acted by the newest
    # weights; how many rounds the last row has seen learned when the actors' steps end the run
    # depends on the load (2 idle, 1 once in `make test` on this machine).
    assert last["updates"] >= 1 and last["policy_lag"] == 0.0
    assert np.isfinite(result.evaluation.mean_return)
    assert shoal.load(result.run_dir).act(np.zeros((3, 4), np.float32)).shape == (3,)
