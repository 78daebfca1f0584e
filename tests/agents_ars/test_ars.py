"""ARS V2-t on the agent seam: a linear policy, the top-b update, CartPole solved."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import shoal
from shoal import ops
from shoal.agents.ars import AGENT, ARSConfig
from shoal.agents.evolution import perturbations
from shoal.envs import EnvSpec, make_env


def test_the_policy_is_linear_without_bias_and_starts_at_zero():
    spec = EnvSpec.from_env("CartPole-v1", make_env("CartPole-v1"))
    net = AGENT.make_networks(spec, ARSConfig())
    assert net.num_params == 4 * 2 and torch.all(net.flat_params() == 0)


def test_one_update_moves_m_by_the_top_b_direction():
    config = ARSConfig(noise_table_size=10_000, pairs_per_iteration=3, top_directions=2)
    spec = EnvSpec.from_env("CartPole-v1", make_env("CartPole-v1"))
    net = AGENT.make_networks(spec, config)
    learner = AGENT.make_learner(spec, config, net)
    batch = {
        "noise_offset": np.array([0, 100, 200]),
        "return_pos": np.array([1.0, 9.0, 1.0]),
        "return_neg": np.array([0.0, 0.0, 5.0]),
        "length_pos": np.array([1, 9, 1]),
        "length_neg": np.array([1, 1, 5]),
        "obs_sum": np.zeros(4),
        "obs_sumsq": np.full(4, 4.0),
        "obs_count": np.array(4.0),
    }
    update = learner.update(batch, 0.0)
    eps = torch.from_numpy(perturbations(learner.noise, batch["noise_offset"], 8)).double()
    found = ops.ars_direction(
        eps, torch.tensor([1.0, 9.0, 1.0]).double(), torch.tensor([0.0, 0.0, 5.0]).double(), 2
    )
    torch.testing.assert_close(
        net.flat_params().double(), config.step_size * found.direction, rtol=1e-5, atol=1e-7
    )
    assert learner.version == 1 and update.metrics["reward_std"] == pytest.approx(12.6875**0.5)
    # V2: the states' moments were merged into the normalisation.
    assert float(net.obs_count) == pytest.approx(4.01)
    state = learner.state_dict()
    other = AGENT.make_learner(spec, config, AGENT.make_networks(spec, config))
    other.load_state_dict(state)
    assert other.version == 1 and torch.equal(other.net.flat_params(), net.flat_params())


def test_top_directions_cannot_exceed_the_directions():
    with pytest.raises(ValueError, match=r"--agent\.top-directions"):
        ARSConfig(pairs_per_iteration=4, top_directions=5)


@pytest.mark.integration
def test_ars_solves_cartpole_with_its_preset(quiet_run):
    class StopAt500(shoal.Callback):
        def on_evaluation(self, evaluation):
            return evaluation.final or evaluation.mean_return < 500

    run = {**quiet_run, "eval_every": 20_000, "eval_every_episodes": 10}
    result = shoal.train("ars", "CartPole-v1", seed=0, run=run, callbacks=[StopAt500()])
    assert result.stop_reason == "callback"
    assert result.evaluation.mean_return == 500.0
