"""R2D2's data path: sequences with stored state and initial priorities into a rate-limited
sequence replay (Kapturowski et al. 2019, section 2.3); R2D3 puts a demonstration replay beside
it (`shoal.data.demos`).

The replay ratio, the minimum replay size and sharding on ray are the replay table's, as for
DQN, counted in sequences instead of transitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import numpy as np

from shoal.agents.base import Layout
from shoal.agents.value.recurrent import R2D2Net
from shoal.agents.value.recurrent_config import R2D2Config
from shoal.agents.value.replay import Adder, packed, replay_table, stored_frame_stack, stored_obs
from shoal.agents.value.sequence_loss import initial_priorities
from shoal.data import DataPath, ReplayTable, SequenceAdder, replay_data_path
from shoal.envs.spec import EnvSpec
from shoal.replay import SequenceReplay, sequence_fields

# The recurrent state the runtime recorded at each step: sequences store their first step's.
STATE_KEYS = ("core_h", "core_c")


def make_replay(
    spec: EnvSpec, config: R2D2Config, shards: int = 1, capacity: int | None = None
) -> SequenceReplay:
    """One of `shards` replays for `spec`, holding `replay_capacity / shards` sequences of
    `sequence_length` steps (`shoal.replay.sequence` says what a sequence stores), or
    `capacity` if given; stacked Atari frames are stored once each."""
    state = ((config.lstm_size,), np.float32)
    fields = sequence_fields(
        *stored_obs(spec),  # a Dict observation (an action mask too) packed
        config.sequence_length,
        start_fields=dict.fromkeys(STATE_KEYS, state),
    )
    if capacity is None:
        capacity = max(1, -(-config.replay_capacity // shards))
    return SequenceReplay(
        capacity,
        fields,
        prioritized=config.prioritized,
        alpha=config.priority_alpha,
        eps=config.priority_eps,
        frame_stack=stored_frame_stack(spec),
    )


def _table(spec: EnvSpec, config: R2D2Config, shards: int, seed: int) -> ReplayTable:
    return replay_table(make_replay(spec, config, shards), config, shards, seed)


def _priorities(net: R2D2Net, config: R2D2Config, data: Mapping[str, np.ndarray]) -> np.ndarray:
    return initial_priorities(net, data, config)


def sequence_adder(spec: EnvSpec, config: R2D2Config, policy: object, actor: int) -> Adder:
    """Actor `actor`'s adder: sequences with the state at their first step, and (prioritised)
    initial priorities from the acting `policy`'s network; a Dict observation (an action mask
    too) packed as the replay stores it."""
    priorities = None
    if config.prioritized:
        priorities = partial(_priorities, policy.net, config)  # type: ignore[attr-defined]
    adder = SequenceAdder(
        config.sequence_length,
        config.sequence_period,
        start_keys=STATE_KEYS,
        priorities=priorities,
    )
    return packed(spec, adder)


def make_data_path(
    spec: EnvSpec,
    config: R2D2Config,
    layout: Layout,
    make_table: Callable[[int, int], ReplayTable] | None = None,
) -> DataPath:
    """R2D2's data path; `make_table(shards, seed)` replaces its replay table (R2D3's)."""
    make_replay(spec, config)  # observations replay cannot store fail before anything runs
    return replay_data_path(
        config.unroll_length,
        make_table or partial(_table, spec, config),
        partial(sequence_adder, spec, config),
        # A sequence starts every sequence_period steps of an env.
        warmup_steps=config.min_replay_size * config.sequence_period,
    )
