"""ES on the agent seam: perturbed acting, scalar items, the pair table, the update, learning."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import shoal
from shoal import ops
from shoal.agents.es import AGENT, ESConfig
from shoal.agents.evolution import EpisodeAdder, PairTable, noise_table, perturbations
from shoal.envs import EnvSpec, InProcessVectorEnv, make_env
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting

SMALL = {"noise_table_size": 100_000, "unroll_length": 40, "hidden_sizes": (8,)}


def _cartpole(config: ESConfig, envs: int = 4):
    spec = EnvSpec.from_env("CartPole-v1", make_env("CartPole-v1"))
    net = AGENT.make_networks(spec, config)
    vector = InProcessVectorEnv([lambda: make_env("CartPole-v1")] * envs, spec, seed=0)
    policy = AGENT.make_policy(spec, config, net, 0, None)
    collector = UnrollCollector(vector, Acting(policy, spec), config.unroll_length)
    return spec, net, policy, collector


def test_each_env_acts_with_its_own_perturbation_and_mirrors_it_next():
    config = ESConfig(**SMALL)
    _, net, policy, collector = _cartpole(config)
    unroll = collector.collect()
    offsets, signs = unroll.extras["noise_offset"], unroll.extras["noise_sign"]
    assert len(set(offsets[0].tolist())) == 4 and np.all(signs[0] == 1.0)
    # An env's next episode evaluates the same offset with the other sign.
    for b in range(4):
        ends = np.flatnonzero(unroll.terminated[:, b] | unroll.truncated[:, b])
        if len(ends) and ends[0] + 1 < unroll.length:
            assert offsets[ends[0] + 1, b] == offsets[0, b] and signs[ends[0] + 1, b] == -1.0
    # Acting row i with θ + σ s ε is acting with a network holding those parameters.
    obs = np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32)
    eps = torch.from_numpy(perturbations(policy.noise, offsets[0], net.num_params))
    params = net.flat_params() + config.noise_std * eps
    batched = net.batched(torch.from_numpy(obs), params)
    for i in range(4):
        single = AGENT.make_networks(collector.env.spec, config)
        single.load_state_dict(net.state_dict())
        single.add_to_params(params[i] - single.flat_params())
        torch.testing.assert_close(single(torch.from_numpy(obs[i : i + 1]))[0], batched[i])


def test_acting_follows_every_change_of_theta_moments_and_perturbation():
    # The policy reuses θ + σ s ε and the normalisation from step to step: after each change,
    # its (continuous, unclipped) actions must be those rebuilt from scratch, and differ.
    config = ESConfig(**SMALL)
    spec = EnvSpec.from_env("Pendulum-v1", make_env("Pendulum-v1"))
    net = AGENT.make_networks(spec, config)
    policy = AGENT.make_policy(spec, config, net, 0, None)
    obs = np.random.default_rng(1).normal(size=(2, 3)).astype(np.float32)
    state = policy.initial_state(np.array([0, 1]))

    def acted() -> torch.Tensor:
        return torch.from_numpy(policy.step(obs, state, None, "train").action).reshape(2, -1)

    def rebuilt() -> torch.Tensor:  # from scratch, as the network and state stand now
        offsets = state["noise_offset"].numpy()
        eps = torch.from_numpy(perturbations(policy.noise, offsets, net.num_params))
        params = net.flat_params() + config.noise_std * state["noise_sign"].unsqueeze(1) * eps
        return net.batched(torch.from_numpy(obs), params)

    fresh = AGENT.make_networks(spec, config).state_dict()
    changes = {
        "θ": lambda: net.add_to_params(torch.randn(net.num_params)),
        "moments": lambda: net.merge_obs_moments(obs.sum(0) * 5, np.square(obs).sum(0) * 9, 4.0),
        "weights loaded": lambda: net.load_state_dict(fresh),
        "mirrored": lambda: state.update(policy.initial_state(np.array([0, 1]))),
    }
    torch.testing.assert_close(acted(), rebuilt(), rtol=0, atol=0)
    for name, change in changes.items():
        before = acted()
        change()
        after = acted()
        torch.testing.assert_close(after, rebuilt(), rtol=0, atol=0, msg=name)
        assert not torch.equal(before, after), name


def test_items_are_scalars_whose_size_does_not_grow_with_the_network():
    sizes = {}
    for hidden in ((8,), (100,)):
        config = ESConfig(**{**SMALL, "hidden_sizes": hidden})
        _, net, _, collector = _cartpole(config)
        adder = EpisodeAdder()
        unroll = collector.collect()
        items = adder.add(unroll)
        per_episode = sum(items[k].nbytes for k in items if not k.startswith("obs_"))
        episodes = len(items["return"])
        assert episodes > 0
        sizes[net.num_params] = (
            per_episode // episodes,
            sum(items[k].nbytes for k in items if k.startswith("obs_")),
        )
    small, large = sorted(sizes)
    assert large >= 10 * small
    assert sizes[small] == sizes[large]  # bytes per episode, and the observation moments


def test_the_adder_reports_each_episode_with_its_return_across_unrolls():
    config = ESConfig(**{**SMALL, "unroll_length": 7})
    _, _, _, collector = _cartpole(config, envs=2)
    adder = EpisodeAdder()
    found = []
    while len(found) < 3:
        unroll = collector.collect()
        items = adder.add(unroll)
        found += items["return"].tolist()
        returns, _ = collector.drain_episodes()
        assert items["return"].tolist() == returns  # CartPole: return == length
        assert items["length"].tolist() == returns


def _items(episodes):
    keys = ("noise_offset", "noise_sign", "noise_version", "return", "length")
    columns = list(zip(*episodes, strict=True))
    items = {k: np.asarray(c) for k, c in zip(keys, columns, strict=True)}
    return items | {"obs_sum": np.ones(2), "obs_sumsq": np.ones(2), "obs_count": np.array(1.0)}


def test_the_pair_table_pairs_mirrors_drops_stale_episodes_and_hands_out_iterations():
    table = PairTable(pairs=2)
    table.insert(_items([(5, 1.0, 0, 10.0, 10), (7, 1.0, 0, 3.0, 3)]), 0, block=False)
    assert not table.can_sample()
    table.insert(_items([(5, -1.0, 0, 20.0, 20)]), 0, block=False)
    assert not table.can_sample()  # one pair complete
    table.insert(_items([(7, -1.0, 0, 4.0, 4), (9, 1.0, 0, 1.0, 1)]), 0, block=False)
    batch = table.sample(0.0, timeout=0)
    assert batch is not None and batch.behaviour_version == 0
    assert sorted(batch.data["noise_offset"].tolist()) == [5, 7]
    pairs = dict(zip(batch.data["noise_offset"].tolist(), batch.data["return_neg"], strict=True))
    assert pairs == {5: 20.0, 7: 4.0}
    assert float(batch.data["obs_count"]) == 3.0
    table.after_update(batch, None, 1)
    # Episodes of θ_0 are stale once the learner is at version 1; offset 9 never pairs.
    table.insert(_items([(9, -1.0, 0, 1.0, 1)]), 0, block=False)
    assert table.stats()["episodes_stale"] == 1.0 and not table.can_sample()


def test_one_update_follows_the_es_estimate_with_adam_and_l2():
    config = ESConfig(**{**SMALL, "l2_coef": 0.0})
    spec, net, _, _ = _cartpole(config)
    learner = AGENT.make_learner(spec, config, net)
    theta = net.flat_params()
    batch = {
        "noise_offset": np.array([0, 1000, 2000]),
        "return_pos": np.array([10.0, 30.0, 20.0]),
        "return_neg": np.array([20.0, 10.0, 20.0]),
        "length_pos": np.array([10, 30, 20]),
        "length_neg": np.array([20, 10, 20]),
        "obs_sum": np.full(4, 6.0),
        "obs_sumsq": np.full(4, 12.0),
        "obs_count": np.array(3.0),
    }
    update = learner.update(batch, 0.0)
    eps = torch.from_numpy(perturbations(learner.noise, batch["noise_offset"], net.num_params))
    ranks = ops.centered_ranks(torch.tensor([10.0, 30.0, 20.0, 20.0, 10.0, 20.0]).double())
    g = ops.es_gradient(eps, ranks[:3], ranks[3:], config.noise_std)
    # Adam's first step moves each parameter by lr in the direction of sign(g).
    step = net.flat_params() - theta
    nonzero = g.abs() > 1e-6
    torch.testing.assert_close(
        step[nonzero], config.learning_rate * torch.sign(g[nonzero]), atol=1e-6, rtol=1e-3
    )
    assert learner.version == 1 and int(net.iteration) == 1
    assert float(net.obs_count) == pytest.approx(3.01)
    assert update.metrics["pairs"] == 3.0


def test_the_noise_table_is_built_once_per_process_from_its_seed():
    a, b = noise_table(7, 1000), noise_table(7, 1000)
    assert a is b and not a.flags.writeable
    np.testing.assert_array_equal(a, np.random.default_rng(7).standard_normal(1000, np.float32))


def test_image_observations_are_refused_with_advice():
    from gymnasium.spaces import Box, Discrete

    from shoal.errors import ConfigError

    spec = EnvSpec("img", Box(0, 255, (3, 8, 8), np.uint8), Discrete(2))
    with pytest.raises(ConfigError, match="flat float vector"):
        AGENT.make_networks(spec, ESConfig())


def _stop_at_500():
    class StopAt(shoal.Callback):
        def on_evaluation(self, evaluation):
            return evaluation.final or evaluation.mean_return < 500

    return StopAt()


@pytest.mark.integration
def test_es_solves_cartpole_with_its_preset(quiet_run):
    run = {**quiet_run, "eval_every": 20_000, "eval_every_episodes": 10}
    result = shoal.train("es", "CartPole-v1", seed=0, run=run, callbacks=[_stop_at_500()])
    assert result.stop_reason == "callback"
    assert result.evaluation.mean_return == 500.0


def test_a_run_checkpoints_resumes_and_loads_as_a_policy(quiet_run):
    from shoal.run.checkpoints import list_checkpoints, load_checkpoint

    agent = {"pairs_per_iteration": 4, "noise_table_size": 100_000}
    run = {**quiet_run, "eval_episodes": 1, "checkpoint_interval": 2000}
    first = shoal.train("es", "CartPole-v1", seed=1, total_steps=3000, agent=agent, run=run)
    saved = load_checkpoint(list_checkpoints(first.run_dir / "checkpoints")[-1])
    resumed = shoal.train(resume=first.run_dir, run={"total_steps": 6000})
    later = load_checkpoint(list_checkpoints(first.run_dir / "checkpoints")[-1])
    assert resumed.env_steps >= 6000 and later["updates"] > saved["updates"] > 0
    policy = shoal.load(first.run_dir)
    assert policy.act(np.zeros(4, np.float32)) in (0, 1)


def test_a_fresh_table_follows_a_resumed_learners_version():
    table = PairTable(pairs=1)
    table.insert(_items([(5, 1.0, 3, 10.0, 10), (5, -1.0, 3, 12.0, 12)]), 3, block=False)
    batch = table.sample(0.0, timeout=0)
    assert batch is not None and batch.behaviour_version == 3
