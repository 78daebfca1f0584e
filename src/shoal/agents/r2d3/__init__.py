"""R2D3 (Paine et al. 2019, "Making Efficient Use of Demonstrations to Solve Hard Exploration
Problems"): R2D2 with a second replay of demonstrations.

Actors, network, loss and agent replay are R2D2's (`shoal.agents.value`: recurrent Q-network,
epsilon-greedy Ape-X exploration, sequences with stored state, burn-in, transformed n-step
double-Q targets, prioritised replay). The demonstrations, a Minari dataset (`--dataset`, e.g.
one written by `shoal record`), are cut into R2D2 sequences with zero recurrent state
(`demos.py`) and put once, before the run starts, into a demo replay beside the agent replay
(`shoal.data.demos`): each element of a batch comes from it with probability `demo_ratio`
(the paper's 1/256), and the learner's TD errors set the priorities of both replays.

The dataset must have been recorded on the env the run names (`--env`, with its spaces);
both are checked before anything is written. On Ray each replay shard reads the dataset and
holds the whole demo replay (so each batch still mixes element by element).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from shoal.agents.base import Agent, Layout
from shoal.agents.r2d3.config import R2D3Config
from shoal.agents.r2d3.demos import demo_episodes, demo_sequences
from shoal.agents.r2d3.learner import R2D3Learner
from shoal.agents.r2d3.networks import make_networks
from shoal.agents.value.recurrent_policy import R2D2Policy
from shoal.agents.value.sequences import make_data_path as sequence_data_path
from shoal.agents.value.sequences import make_replay
from shoal.data import DataPath
from shoal.data.datasets import check_fits, open_dataset
from shoal.data.demos import DemoReplayTable
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError


def _table(spec: EnvSpec, config: R2D3Config, shards: int, seed: int) -> DemoReplayTable:
    """One of `shards` agent replays with the whole demo replay beside it."""
    assert config.dataset is not None
    sequences = demo_sequences(demo_episodes(open_dataset(config.dataset), spec), config)
    demos = make_replay(spec, config, capacity=len(sequences["reward"]))
    demos.add(sequences)  # no priority: each enters with the largest so far
    return DemoReplayTable(
        make_replay(spec, config, shards),
        demos,
        demo_ratio=config.demo_ratio,
        batch_size=config.batch_size,
        samples_per_insert=config.samples_per_insert,
        min_size=-(-config.min_replay_size // shards),
        beta=config.priority_beta,
        beta_end=config.priority_beta_end,
        seed=seed,
    )


def make_data_path(spec: EnvSpec, config: R2D3Config, layout: Layout) -> DataPath:
    """R2D2's data path with the demo replay in its table; the dataset is opened and checked
    against `spec` here (before a run directory is written) and read by each table."""
    name = config.dataset
    if name is None:
        raise ConfigError(
            "r2d3 learns from demonstrations beside its own experience: pass --dataset with a "
            "Minari dataset's id or folder (Python: agent={'dataset': ...}), e.g. one written "
            "by `shoal record RUN_DIR --episodes 10 --out maze/expert-v0`."
        )
    check_fits(open_dataset(name), spec, name)
    path = sequence_data_path(spec, config, layout, partial(_table, spec, config))
    return replace(path, merge_stats=DemoReplayTable.merge_stats)


AGENT = Agent(
    name="r2d3",
    config_cls=R2D3Config,
    make_networks=make_networks,
    make_policy=R2D2Policy,
    make_learner=R2D3Learner,
    make_data_path=make_data_path,
)

__all__ = ["AGENT", "R2D3Config", "R2D3Learner"]
