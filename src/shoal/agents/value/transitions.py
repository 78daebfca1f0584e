"""The transition data path (DQN, Ape-X): n-step transitions with initial priorities into a
rate-limited replay.

Actors assemble n-step transitions and compute their initial priorities with their own network
(Ape-X, Horgan et al. 2018); the replay table keeps the learner at `samples_per_insert` sampled
transitions per inserted one, whatever the speeds of actors and learner. On ray the replay is
sharded over `--replay-shards` processes that actors fill directly.
"""

from __future__ import annotations

from functools import partial

from shoal.agents.base import Layout
from shoal.agents.value.config import DQNConfig
from shoal.agents.value.policy import initial_priorities
from shoal.agents.value.replay import Adder, packed, replay_table, stored_frame_stack, stored_obs
from shoal.data import DataPath, NStepAdder, ReplayTable, replay_data_path
from shoal.envs.spec import EnvSpec
from shoal.replay import TransitionReplay


def make_replay(spec: EnvSpec, config: DQNConfig, shards: int = 1) -> TransitionReplay:
    """One of `shards` replays for `spec`'s observations, holding `replay_capacity / shards`
    transitions; stacked Atari frames are stored once each."""
    obs_shape, obs_dtype = stored_obs(spec)  # a Dict (an action mask too) packed
    return TransitionReplay(
        max(2, -(-config.replay_capacity // shards)),
        obs_shape,
        obs_dtype,
        action_shape=spec.action_shape,
        action_dtype=spec.action_dtype,
        frame_stack=stored_frame_stack(spec),
        prioritized=config.prioritized,
        alpha=config.priority_alpha,
        eps=config.priority_eps,
    )


def _table(spec: EnvSpec, config: DQNConfig, shards: int, seed: int) -> ReplayTable:
    return replay_table(make_replay(spec, config, shards), config, shards, seed)


def _adder(spec: EnvSpec, config: DQNConfig, policy: object, actor: int) -> Adder:
    priorities = None
    if config.prioritized:
        priorities = partial(initial_priorities, policy.net, config)  # type: ignore[attr-defined]
    return packed(spec, NStepAdder(config.n_step, config.gamma, actor, priorities))


def make_data_path(spec: EnvSpec, config: DQNConfig, layout: Layout) -> DataPath:
    make_replay(spec, config)  # observations replay cannot store fail before anything runs
    return replay_data_path(
        config.unroll_length,
        partial(_table, spec, config),
        partial(_adder, spec, config),
        warmup_steps=config.min_replay_size,  # about one transition per env step
    )
