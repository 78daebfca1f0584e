"""R2D2's data path: sequences with stored state and initial priorities into a rate-limited
sequence replay (Kapturowski et al. 2019, section 2.3).

The replay ratio, the minimum replay size and sharding on ray are the replay table's, as for
DQN, counted in sequences instead of transitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np

from shoal.agents.base import Layout
from shoal.agents.r2d2.config import R2D2Config
from shoal.agents.r2d2.loss import initial_priorities
from shoal.agents.r2d2.networks import R2D2Net
from shoal.agents.value.replay import Adder, packed, replay_table, stored_frame_stack, stored_obs
from shoal.data import DataPath, ReplayTable, SequenceAdder, replay_data_path
from shoal.envs.spec import EnvSpec
from shoal.replay import SequenceReplay, sequence_fields

# The recurrent state the runtime recorded at each step: sequences store their first step's.
STATE_KEYS = ("core_h", "core_c")


def make_replay(spec: EnvSpec, config: R2D2Config, shards: int = 1) -> SequenceReplay:
    """One of `shards` replays for `spec`, holding `replay_capacity / shards` sequences of
    `sequence_length` steps (`shoal.replay.sequence` says what a sequence stores); stacked
    Atari frames are stored once each."""
    state = ((config.lstm_size,), np.float32)
    fields = sequence_fields(
        *stored_obs(spec),  # a Dict observation (an action mask too) packed
        config.sequence_length,
        start_fields=dict.fromkeys(STATE_KEYS, state),
    )
    return SequenceReplay(
        max(1, -(-config.replay_capacity // shards)),
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


def _adder(spec: EnvSpec, config: R2D2Config, policy: object, actor: int) -> Adder:
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


def make_data_path(spec: EnvSpec, config: R2D2Config, layout: Layout) -> DataPath:
    make_replay(spec, config)  # observations replay cannot store fail before anything runs
    return replay_data_path(
        config.unroll_length,
        partial(_table, spec, config),
        partial(_adder, spec, config),
        # A sequence starts every sequence_period steps of an env.
        warmup_steps=config.min_replay_size * config.sequence_period,
    )
