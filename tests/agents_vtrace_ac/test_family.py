"""The V-trace family's agents pinned to their numbers: IMPALA's and APPO's losses equal, to
the bit, the step by step composition of `shoal.ops` written out here; and checkpoints written
before the agents shared a loss and a learner (`data/main-1733e9e`, by `fixtures.py`) still
load, act and learn as they did."""

from __future__ import annotations

import functools
import json
import math
import shutil

import numpy as np
import pytest
import torch

import shoal
from shoal import ops
from shoal.agents.appo import AGENT as APPO
from shoal.agents.appo import APPOConfig
from shoal.agents.appo.loss import appo_loss
from shoal.agents.impala import AGENT as IMPALA
from shoal.agents.impala import IMPALAConfig
from shoal.agents.impala.loss import impala_loss
from shoal.agents.vtrace_ac import Batch, VTracePolicy, evaluate, make_networks, masked_mean
from shoal.envs import EnvSpec, InProcessVectorEnv
from shoal.envs.toy import Countdown
from shoal.run.checkpoints import load_latest
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting

from .fixtures import DATA, learner_update, policy_logits

SPEC = EnvSpec.from_env("countdown", Countdown())
# Env 0 is truncated after 3 steps, env 1 terminated after 4: both kinds of end in one unroll.
FACTORIES = [lambda: Countdown(length=3), lambda: Countdown(length=9, terminate_at=4)]
OLD = DATA / "main-1733e9e"


def off_policy_batch(agent, config, masked: bool) -> tuple[torch.nn.Module, Batch]:
    """A seeded network and an unroll of it whose behaviour logits are pushed off the
    network's (so ratios, ρ and the clip all bite), with absent rows when `masked`."""
    torch.manual_seed(0)
    net = agent.make_networks(SPEC, config)
    policy = agent.make_policy(SPEC, config, net, 0, None)
    env = InProcessVectorEnv(FACTORIES, SPEC, seed=0)
    unroll = UnrollCollector(env, Acting(policy, SPEC), config.unroll_length).collect()
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 2, unroll.extras["logits"].shape).astype(np.float32)
    unroll.extras["logits"] = unroll.extras["logits"] + noise
    unroll.rewards[:] = rng.normal(0, 3, unroll.rewards.shape).astype(np.float32)
    batch = Batch.from_unroll(unroll)
    if masked:
        active = torch.from_numpy(rng.random(batch.rewards.shape) < 0.7)
        batch = batch._replace(active=active)
    return net, batch


def vtrace_targets(config, batch, v_tm1, v_t, log_rhos) -> ops.VTraceReturns:
    rewards = batch.rewards
    if config.reward_clip is not None:
        rewards = rewards.clamp(-config.reward_clip, config.reward_clip)
    return ops.vtrace(
        v_tm1.detach(),
        v_t,
        rewards,
        config.gamma * (~batch.terminated).to(rewards.dtype),
        log_rhos,
        rho_bar=config.rho_bar,
        c_bar=config.c_bar,
        pg_rho_bar=config.pg_rho_bar,
        lambda_=config.trace_lambda,
        end_t=batch.terminated | batch.truncated,
    )


def impala_reference(net, batch, config):
    """IMPALA's loss and metrics (Espeholt et al. 2018, Section 4) from the ops, step by step."""
    logits, v_tm1, v_t = evaluate(net, batch)
    mean = functools.partial(masked_mean, active=batch.active)
    log_pi_a = ops.categorical_log_prob(logits, batch.actions)
    log_mu_a = ops.categorical_log_prob(batch.behaviour_logits, batch.actions)
    log_rhos = log_pi_a.detach() - log_mu_a
    targets = vtrace_targets(config, batch, v_tm1, v_t, log_rhos)
    adv = targets.pg_advantages
    if config.normalize_advantages and batch.active is None:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)  # Bessel's std without a mask
    elif config.normalize_advantages:
        centred = adv - mean(adv)
        adv = centred / (mean(centred.square()).sqrt() + 1e-8)
    policy_loss = mean(ops.vtrace_policy_gradient_loss(log_pi_a, adv))
    value_loss = mean(ops.value_loss(v_tm1, targets.vs))
    entropy = mean(ops.categorical_entropy(logits))
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    metrics = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "rho_mean": targets.rhos.mean(),
        "rho_clip_fraction": (log_rhos > math.log(config.rho_bar) + 1e-4).float().mean(),
    }
    return loss, metrics


def appo_reference(net, batch, config, kl_coeff, target):
    """APPO's loss and metrics from the ops, step by step: PPO's clipped surrogate on V-trace
    advantages, the anchor being `target`'s policy (IMPACT's capped ratio) or μ's."""
    logits, v_tm1, v_t = evaluate(net, batch)
    mean = functools.partial(masked_mean, active=batch.active)
    log_pi_a = ops.categorical_log_prob(logits, batch.actions)
    log_mu_a = ops.categorical_log_prob(batch.behaviour_logits, batch.actions)
    if target is None:
        old_logits = batch.behaviour_logits
        log_ratio = log_pi_a - log_mu_a
        log_rhos = log_pi_a.detach() - log_mu_a
    else:
        with torch.no_grad():
            old_logits = target.unroll(batch.obs, batch.first, batch.initial_state)[0]
        old_logits = old_logits[: logits.shape[0]]
        log_old_a = ops.categorical_log_prob(old_logits, batch.actions)
        log_ratio = ops.target_clipped_log_ratio(
            log_pi_a, log_mu_a, log_old_a, max_weight=config.target_max_weight
        )
        log_rhos = log_old_a - log_mu_a
    targets = vtrace_targets(config, batch, v_tm1, v_t, log_rhos)
    adv = targets.pg_advantages
    if config.normalize_advantages:  # the population std, with a mask or without
        centred = adv - mean(adv)
        adv = centred / (mean(centred.square()).sqrt() + 1e-8)
    policy_loss = mean(ops.clipped_surrogate_loss(log_ratio, adv, config.clip_eps))
    value_loss = mean(ops.value_loss(v_tm1, targets.vs))
    entropy = mean(ops.categorical_entropy(logits))
    kl = mean(ops.categorical_kl(old_logits.detach(), logits))
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    if config.use_kl_loss:
        loss = loss + kl_coeff * kl
    ratio = log_ratio.detach().exp()
    metrics = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "kl": kl,
        "clip_fraction": mean((ratio - 1.0).abs().gt(config.clip_eps).float()),
        "rho_mean": targets.rhos.mean(),
        "rho_clip_fraction": (log_rhos > math.log(config.rho_bar) + 1e-4).float().mean(),
    }
    return loss, metrics


def gradients(net, loss) -> list[torch.Tensor]:
    net.zero_grad()
    loss.backward()
    return [p.grad.clone() for p in net.parameters() if p.grad is not None]


def assert_same(net, result, reference) -> None:
    """The same loss, metrics (in the same order) and gradients, to the bit."""
    loss, metrics = reference
    assert list(result.metrics) == list(metrics)
    for key, value in metrics.items():
        assert torch.equal(result.metrics[key], value.detach()), key
    assert torch.equal(result.loss, loss)
    for got, want in zip(gradients(net, result.loss), gradients(net, loss), strict=True):
        assert torch.equal(got, want)


# ---- the losses are the ops' composition ----


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize(
    "fields", [{}, {"normalize_advantages": True}, {"reward_clip": 1.0, "rho_bar": 0.5}]
)
def test_impala_loss_is_the_v_trace_policy_gradient_composed_from_the_ops(fields, masked):
    config = IMPALAConfig(unroll_length=7, hidden_sizes=(16,), **fields)
    net, batch = off_policy_batch(IMPALA, config, masked)
    result = impala_loss(net, batch, config)
    assert float(result.metrics["rho_clip_fraction"]) > 0  # off-policy: the clip bites
    assert_same(net, result, impala_reference(net, batch, config))


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"normalize_advantages": False, "clip_eps": 0.1},
        {"use_kl_loss": True},
        {"use_target_network": True, "target_max_weight": 1.5},
        {"use_target_network": True, "use_kl_loss": True, "reward_clip": 1.0},
    ],
)
def test_appo_loss_is_the_clipped_surrogate_composed_from_the_ops(fields, masked):
    config = APPOConfig(unroll_length=7, hidden_sizes=(16,), **fields)
    net, batch = off_policy_batch(APPO, config, masked)
    target = APPO.make_learner(SPEC, config, net).target
    if target is not None:
        with torch.no_grad():
            target.policy_head.linear.weight[0].add_(0.5)  # target ≠ learner ≠ behaviour
    result = appo_loss(net, batch, config, 2.0, target)
    assert float(result.metrics["clip_fraction"]) > 0  # off-policy: the clip bites
    assert_same(net, result, appo_reference(net, batch, config, 2.0, target))
    assert torch.equal(result.kl, result.metrics["kl"])


# ---- the agent records ----


def test_both_agents_are_the_familys_record_with_their_own_learner_and_mutable_fields():
    family = {"learning_rate", "entropy_coef", "value_coef", "gamma", "trace_lambda"}
    family |= {"rho_bar", "c_bar", "pg_rho_bar", "max_grad_norm", "reward_clip"}
    assert IMPALA.mutable == family
    assert APPO.mutable == family | {"clip_eps", "kl_target"}
    for agent in (IMPALA, APPO):
        assert agent.mutable <= set(agent.config_cls.__dataclass_fields__)
        assert agent.make_policy is VTracePolicy and agent.make_networks is make_networks
    layout = shoal.agents.base.Layout()
    impala_queue = IMPALA.make_data_path(SPEC, IMPALAConfig(batch_size=3), layout).make_table(1, 0)
    appo_config = APPOConfig(batch_size=3, max_policy_lag=5)
    appo_queue = APPO.make_data_path(SPEC, appo_config, layout).make_table(1, 0)
    assert (impala_queue.batch, impala_queue.max_lag) == (3, None)
    assert (appo_queue.batch, appo_queue.max_lag) == (3, 5)


# ---- checkpoints from before the shared loss and learner ----


@pytest.mark.parametrize("algo", ["impala", "appo"])
def test_checkpoints_from_before_the_shared_learner_load_act_and_learn_as_they_did(algo):
    expected = json.loads((OLD / "expected.json").read_text())
    obs = np.asarray(expected["obs"], np.float32)
    run_dir = OLD / f"{algo}-run"
    policy = shoal.load(run_dir)
    assert policy.act(obs).tolist() == expected["greedy_actions"][algo]
    torch.testing.assert_close(
        policy_logits(policy, obs), torch.tensor(expected["logits"][algo]), rtol=1e-5, atol=1e-7
    )
    # The learner takes the old state as it is (strict: no key missing or new) and its next
    # update on a fixed off-policy batch gives the old code's numbers.
    old = expected["update"][algo]
    checkpoint = load_latest(run_dir / "checkpoints")
    assert sorted(checkpoint["learner"]) == old["state_keys"]
    update = learner_update(run_dir)
    assert update["state_keys"] == old["state_keys"]
    assert list(update["metrics"]) == list(old["metrics"])
    # abs 1e-6: float32 sums of O(1) terms round differently on other CPUs' vector kernels (on an
    # AMD EPYC, APPO's policy loss of -8.39e-4 came out 2.0e-7 lower, every other figure equal).
    for key, value in old["metrics"].items():
        assert update["metrics"][key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    for key, value in old["weight_sums"].items():
        assert update["weight_sums"][key] == pytest.approx(value, rel=1e-5, abs=1e-6), key


@pytest.mark.parametrize("algo", ["impala", "appo"])
def test_runs_from_before_the_shared_learner_resume(algo, tmp_path):
    run_dir = tmp_path / f"{algo}-run"
    shutil.copytree(OLD / f"{algo}-run", run_dir)
    resumed = shoal.train(
        resume=run_dir, run={"total_steps": 1024, "eval_episodes": 0, "progress": False}
    )
    assert resumed.env_steps >= 1024
    assert torch.isfinite(torch.tensor(resumed.train_return_mean))
