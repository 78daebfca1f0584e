"""Agent57's data path: R2D2's sequence replay, with the fields NGU and the mixtures add.

Sequences store both Q-networks' LSTM states at their first step, and per step the mixture
index j, the intrinsic reward r^i_t with its two factors (for metrics), and the previous
intrinsic reward the networks saw. New sequences enter with the largest priority so far
(computing an informed one would take both Q-networks on the actor).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from shoal.agents.agent57.config import Agent57Config
from shoal.agents.agent57.loss import STATE_KEYS, STEP_KEYS
from shoal.agents.base import Layout
from shoal.agents.value.replay import Adder, packed, replay_table, stored_frame_stack, stored_obs
from shoal.data import DataPath, ReplayTable, SequenceAdder, replay_data_path
from shoal.envs.spec import EnvSpec
from shoal.replay import SequenceReplay, sequence_fields

_STEP_DTYPES = {
    "mixture": np.int64,
    "intrinsic_reward": np.float32,
    "prev_intrinsic": np.float32,
    "episodic_reward": np.float32,
    "multiplier": np.float32,
}


def replay_fields(spec: EnvSpec, config: Agent57Config) -> dict:
    """`{name: (shape, dtype)}` of one stored sequence (`shoal.replay.sequence_fields`)."""
    state = ((config.lstm_size,), np.float32)
    return sequence_fields(
        *stored_obs(spec),  # a Dict observation (an action mask too) packed
        config.sequence_length,
        step_fields={key: ((), _STEP_DTYPES[key]) for key in STEP_KEYS},
        start_fields=dict.fromkeys(STATE_KEYS, state),
    )


def make_replay(spec: EnvSpec, config: Agent57Config, shards: int = 1) -> SequenceReplay:
    return SequenceReplay(
        max(1, -(-config.replay_capacity // shards)),
        replay_fields(spec, config),
        prioritized=config.prioritized,
        alpha=config.priority_alpha,
        eps=config.priority_eps,
        frame_stack=stored_frame_stack(spec),
    )


def _table(spec: EnvSpec, config: Agent57Config, shards: int, seed: int) -> ReplayTable:
    return replay_table(make_replay(spec, config, shards), config, shards, seed)


def _adder(spec: EnvSpec, config: Agent57Config, policy: object, actor: int) -> Adder:
    adder = SequenceAdder(
        config.sequence_length,
        config.sequence_period,
        step_keys=STEP_KEYS,
        start_keys=STATE_KEYS,
    )
    return packed(spec, adder)


def make_data_path(spec: EnvSpec, config: Agent57Config, layout: Layout) -> DataPath:
    make_replay(spec, config)  # observations replay cannot store fail before anything runs
    return replay_data_path(
        config.unroll_length,
        partial(_table, spec, config),
        partial(_adder, spec, config),
        # A sequence starts every sequence_period steps of an env.
        warmup_steps=config.min_replay_size * config.sequence_period,
    )
