"""Every agent in the catalog keeps the contract of DESIGN.md, through the runtime's own parts.

For each algorithm: its networks are built for the env's spec; its policy takes one step
through the row store (`Acting`); actors fill its own data path's table until the learner can
sample; one learner update from that batch gives finite metrics and new weights; and the
learner's state survives a checkpoint round trip (saved with `save_checkpoint`, read back with
`load_checkpoint`, loaded into a fresh learner that then holds the same weights). A new agent
added to `catalog.py` is checked here without a line of this file changing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from shoal import catalog, experiment
from shoal.envs.registry import make_vector_env
from shoal.run.checkpoints import load_checkpoint, save_checkpoint
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.rows import Acting

# Small settings so that one update comes within seconds; each agent's own fields only.
SMALL = {
    "batch_size": 8,
    "min_replay_size": 64,
    "learning_starts": 64,
    "sequence_length": 12,
    "sequence_period": 6,
    "burn_in": 2,
    "unroll_length": 8,
    "minibatch_size": 16,
    "population_size": 4,
    "num_directions": 2,
    "top_directions": 2,
    "num_simulations": 8,
}


def _env_for(algo: str) -> str:
    continuous_only = {"sac", "td3", "ddpg", "qtopt"}
    board_games_only = {"alphazero"}  # searches with the game's rules: a two-player board game
    if algo in board_games_only:
        return "tictactoe"
    return "Pendulum-v1" if algo in continuous_only else "CartPole-v1"


def _small_overrides(config_cls: type) -> dict:
    fields = {name for name in config_cls.__dataclass_fields__}
    return {key: value for key, value in SMALL.items() if key in fields}


def _inputs_for(algo: str, config_cls: type, tmp_path) -> dict:
    """What an agent needs beyond settings: agents that learn from a dataset of demonstrations
    (a `dataset` field: bc) get a small one of random episodes on the env, made here."""
    if "dataset" not in config_cls.__dataclass_fields__:
        return {}
    pytest.importorskip("minari")
    from dataset_helpers import random_dataset

    return {"dataset": str(random_dataset(tmp_path / "datasets", _env_for(algo)))}


@pytest.mark.parametrize("algo", sorted(catalog.AGENTS))
def test_agent_keeps_the_contract(algo, tmp_path):
    agent = catalog.get_agent(algo)
    resolved = experiment.resolve(
        algo,
        _env_for(algo),
        agent_overrides={
            **_small_overrides(agent.config_cls),
            **_inputs_for(algo, agent.config_cls, tmp_path),
        },
        run_overrides={"num_envs": 4, "runs_dir": str(tmp_path), "actors": 2},
    )
    config, spec = resolved.agent_config, experiment.spec_of(resolved)
    program = experiment.program(resolved, tmp_path, spec)
    torch.manual_seed(0)

    # 1. networks, and a policy step through the runtime's row store
    net = agent.make_networks(spec, config)
    assert isinstance(net, torch.nn.Module) and sum(p.numel() for p in net.parameters()) > 0
    acting_net = agent.make_networks(spec, config)
    acting_net.load_state_dict(net.state_dict())
    acting = Acting(agent.make_policy(spec, config, acting_net, 0, program.layout), spec)
    env = make_vector_env(resolved.source, spec, resolved.env_config, 4, 0)

    # 2. its own data path, filled by an actor until the learner can sample
    learner = agent.make_learner(spec, config, net)
    data_path = program.data_path()
    table = data_path.make_table(1, 0)
    adder = data_path.make_adder(acting.policy, 0)
    collector = UnrollCollector(env, acting, max(getattr(config, "unroll_length", 8), 8))
    for _ in range(400):
        if table.can_sample():
            break
        unroll = collector.collect()
        # As the runtime's actors do: inserted with its step count even when the adder made
        # no items (an offline agent's table counts the steps its actors play).
        table.insert(adder.add(unroll), 0, block=False, steps=unroll.length * unroll.batch_size)
    env.close()
    assert table.can_sample(), f"{algo}: 400 unrolls did not fill its table"
    batch = table.sample(0.0, 1.0)
    assert batch is not None

    # 3. updates give finite metrics and publish new acting weights (TD3 updates its actor
    # every second update: its published weights are the actor's)
    before = {k: v.clone() for k, v in learner.weights().items()}
    for _ in range(2):
        update = learner.update(batch.data, 0.0)
        assert update.metrics and all(math.isfinite(float(v)) for v in update.metrics.values())
    after = learner.weights()
    assert any(not torch.equal(before[k], after[k]) for k in before), f"{algo}: nothing learned"
    table.close()

    # 4. a checkpoint round trip of the learner's state
    path = save_checkpoint(
        tmp_path / "checkpoints", 1, {"algo": algo, "learner": learner.state_dict()}, 1
    )
    restored = agent.make_learner(spec, config, agent.make_networks(spec, config))
    restored.load_state_dict(load_checkpoint(path, algo)["learner"])
    for name, value in learner.weights().items():
        np.testing.assert_array_equal(
            restored.weights()[name].cpu().numpy(), value.cpu().numpy(), err_msg=name
        )
