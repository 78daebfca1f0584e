"""The continuous-control family's data path (SAC's, TD3's and DDPG's): n-step transitions
(one-step unless a config sets `n_step`) into a uniform or prioritised replay behind a rate
limiter.

Each actor turns its unrolls into transitions (`NStepAdder`); with `prioritized` (DDPG's Ape-X
DPG) it gives them their initial priorities with its own networks, the agent's `priorities`
function (Horgan et al. 2018). The replay table keeps
the learner at `samples_per_insert` sampled transitions per inserted one (one gradient step of
`batch_size` per agent step by default, SB3's `train_freq=1, gradient_steps=1`), and lets it
start once `learning_starts` transitions are in. On ray the replay is sharded over
`--replay-shards` processes that actors fill directly. `transitions` turns a sampled batch into
tensors for the learners.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch

from shoal.agents.base import Layout
from shoal.data import DataPath, NStepAdder, ReplayTable, replay_data_path
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.replay import TransitionReplay


class ReplaySettings(Protocol):
    """The replay settings SAC's and TD3's configs share."""

    replay_capacity: int
    batch_size: int
    learning_starts: int
    gamma: float
    unroll_length: int

    @property
    def samples_per_insert(self) -> float: ...


# (policy, config, items) -> initial priorities `|δ| + ε` [M] under the acting network.
PriorityFunction = Callable[[Any, Any, Mapping[str, np.ndarray]], np.ndarray]


class ReplayOptions(NamedTuple):
    """The n-step and prioritised-replay settings, read from a config that has them (DDPG's);
    SAC's and TD3's have none: one-step transitions, uniform replay."""

    n_step: int = 1
    prioritized: bool = False
    priority_alpha: float = 0.6
    priority_beta: float = 0.4
    priority_beta_end: float = 1.0
    priority_eps: float = 1e-6


def replay_options(config: object) -> ReplayOptions:
    """The config's n-step and priority settings, the defaults for those it lacks."""
    found: dict[str, Any] = {
        name: getattr(config, name, default) for name, default in ReplayOptions()._asdict().items()
    }
    return ReplayOptions(**found)


def make_replay(spec: EnvSpec, config: ReplaySettings, shards: int = 1) -> TransitionReplay:
    """One of `shards` replays, holding `replay_capacity / shards` transitions. float64
    observations (MuJoCo's) are stored as float32, which the networks compute in anyway:
    half the memory of a million transitions."""
    if spec.dict_obs:
        raise ConfigError(
            f"The replay of transitions stores Box observations; {spec.env_id} has Dict "
            "observations. Flatten the observation in your env factory "
            "(gymnasium.wrappers.FlattenObservation)."
        )
    obs_dtype = np.float32 if spec.obs_dtype == np.float64 else spec.obs_dtype
    options = replay_options(config)
    return TransitionReplay(
        max(2, -(-config.replay_capacity // shards)),
        spec.obs_shape,
        obs_dtype,
        action_shape=spec.action_shape,
        action_dtype=np.float32,
        prioritized=options.prioritized,
        alpha=options.priority_alpha,
        eps=options.priority_eps,
    )


def _table(spec: EnvSpec, config: ReplaySettings, shards: int, seed: int) -> ReplayTable:
    options = replay_options(config)
    return ReplayTable(
        make_replay(spec, config, shards),
        batch_size=config.batch_size,
        samples_per_insert=config.samples_per_insert,
        min_size=-(-config.learning_starts // shards),
        beta=options.priority_beta,
        beta_end=options.priority_beta_end,
        seed=seed,
    )


def _adder(
    config: ReplaySettings, priorities: PriorityFunction | None, policy: object, actor: int
) -> NStepAdder:
    options = replay_options(config)
    initial = None
    if options.prioritized and priorities is not None:
        initial = partial(priorities, policy, config)
    return NStepAdder(options.n_step, config.gamma, actor, initial)


def make_data_path(
    spec: EnvSpec,
    config: ReplaySettings,
    layout: Layout,
    priorities: PriorityFunction | None = None,
) -> DataPath:
    """The family's data path; `priorities` gives prioritised transitions their initial
    priorities on the actor (without it they enter at the largest priority so far)."""
    make_replay(spec, config)  # observations replay cannot store fail before anything runs
    # Sharded over --replay-shards on ray; inline, acting and learning in turn.
    return replay_data_path(
        config.unroll_length,
        partial(_table, spec, config),
        partial(_adder, config, priorities),
        warmup_steps=config.learning_starts,
    )


class Transitions(NamedTuple):
    """A sampled batch as tensors on the learner's device, `[B, ...]` each."""

    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    discount: torch.Tensor
    next_obs: torch.Tensor


def transitions(data: Mapping[str, np.ndarray], device: torch.device) -> Transitions:
    def tensor(key: str) -> torch.Tensor:
        return torch.from_numpy(np.asarray(data[key])).to(device, non_blocking=True)

    return Transitions(*(tensor(key) for key in Transitions._fields))
