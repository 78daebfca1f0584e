"""QT-Opt's data path: the continuous family's replay of one-step transitions, seeded from a
Minari dataset before training (`--dataset`), or the dataset alone (`--agent.offline`).

Kalashnikov et al. 2018 (section 4.3 and 5) train from a large off-policy dataset and go on
to mix in on-policy data; here the dataset's transitions are put into each replay table when
it is made, before any actor inserts. They are not counted by the rate limiter, so
`learning_starts` and the replay ratio count the run's own transitions; the replay evicts them
first-in first-out like any other once it is full. On ray each of the `--replay-shards`
tables holds the whole dataset (so each shard samples it in the same proportion).

Offline (`--agent.offline`), the table is `shoal.data.offline.DatasetTable`: minibatches of
the dataset's transitions, `updates_per_step` per env step the actors play, which never reach
it (as `bc`'s); the actors' play is the run's clock and learning curve.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from shoal.agents.base import Layout
from shoal.agents.continuous import make_data_path as continuous_data_path
from shoal.agents.qtopt.config import QTOptConfig
from shoal.data import DataPath, ReplayTable
from shoal.data.datasets import check_fits, open_dataset
from shoal.data.offline import DatasetTable, offline_data_path
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError

DATASET_STREAM = -1  # the replay stream of the dataset's episodes (actors' streams are >= 0)


def dataset_transitions(dataset: Any, spec: EnvSpec, gamma: float) -> dict[str, np.ndarray]:
    """The dataset's episodes as `TransitionReplay.add`'s fields `[N, ...]`, one stream laid
    end to end: actions rescaled from the env's bounds to [-1, 1] (what the policy records),
    `discount` γ, 0 after a termination (a truncated episode bootstraps from its last obs)."""
    low = spec.action_space.low.astype(np.float64)
    high = spec.action_space.high.astype(np.float64)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "next_obs", "action")}
    parts |= {k: [] for k in ("reward", "discount", "first", "last")}
    for episode in dataset.iterate_episodes():
        steps = len(episode.rewards)
        if steps == 0:
            continue
        observations = np.asarray(episode.observations)
        if observations.dtype == np.float64:
            observations = observations.astype(np.float32)
        actions = np.asarray(episode.actions, np.float64).reshape(steps, *spec.action_shape)
        scaled = np.clip(2.0 * (actions - low) / (high - low) - 1.0, -1.0, 1.0)
        terminated = np.asarray(episode.terminations, bool)
        ended = terminated | np.asarray(episode.truncations, bool)
        parts["obs"].append(observations[:steps])
        parts["next_obs"].append(observations[1 : steps + 1])
        parts["action"].append(scaled.astype(np.float32))
        parts["reward"].append(np.asarray(episode.rewards, np.float32))
        parts["discount"].append(np.where(terminated, 0.0, gamma).astype(np.float32))
        parts["first"].append(np.arange(steps) == 0)
        # An episode cut short by the recorder (neither flag at its end) ends here too.
        parts["last"].append(ended | (np.arange(steps) == steps - 1))
    if not parts["reward"]:
        raise ConfigError(f"The dataset {dataset.id!r} holds no steps to learn from.")
    out = {key: np.concatenate(value) for key, value in parts.items()}
    out["stream"] = np.full(len(out["reward"]), DATASET_STREAM, np.int64)
    return out


def make_data_path(spec: EnvSpec, config: QTOptConfig, layout: Layout) -> DataPath:
    """The family's data path, its tables seeded from `config.dataset` when set; the dataset
    alone with `config.offline`. The dataset is opened and checked against `spec` here,
    before a run directory is written."""
    name = config.dataset
    if name is None:
        return continuous_data_path(spec, config, layout)
    check_fits(open_dataset(name), spec, name)
    if config.offline:
        return offline_data_path(
            config.unroll_length, lambda shards, seed: _offline(spec, config, layout, seed)
        )
    path = continuous_data_path(spec, config, layout)
    make_table = path.make_table

    def seeded_table(shards: int, seed: int) -> ReplayTable:
        assert name is not None
        items = dataset_transitions(open_dataset(name), spec, config.gamma)
        rows = len(items["reward"]) + int(items["last"].sum())  # a row per final obs too
        capacity = -(-config.replay_capacity // shards)
        if rows > capacity:
            raise ConfigError(
                f"The dataset {name!r} takes {rows} replay rows, and each of the {shards} "
                f"replay tables holds {capacity} (--agent.replay-capacity / --replay-shards): "
                "the replay would evict part of the dataset before training. Set "
                f"--agent.replay-capacity to at least {rows * shards}."
            )
        table = make_table(shards, seed)
        table.replay.add(items)
        return table

    return replace(path, make_table=seeded_table)


def _offline(spec: EnvSpec, config: QTOptConfig, layout: Layout, seed: int) -> DatasetTable:
    assert config.dataset is not None
    items = dataset_transitions(open_dataset(config.dataset), spec, config.gamma)
    data = {key: items[key] for key in ("obs", "next_obs", "action", "reward", "discount")}
    data["actions"] = data["action"]  # DatasetTable counts the dataset by its "actions"
    return DatasetTable(
        data,
        batch_size=config.batch_size,
        updates_per_step=config.updates_per_step,
        max_insert=layout.total_envs * config.unroll_length,
        seed=seed,
    )
