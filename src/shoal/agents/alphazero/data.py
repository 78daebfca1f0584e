"""AlphaZero's data path: self-play positions, each with its search's visit distribution and
the game's outcome for the player who moved, in a uniform replay behind a rate limiter.

An actor's rows are the players of its games (`shoal.envs.turn_based`). The adder keeps, per
row, the positions that row's player moved from in the game under way; when the game ends, the
rewards that reached the row (the result, given on the last move of the game, whoever made it)
are the outcome z of every one of them, and they go into replay as
`(observation, action_mask, search_policy, outcome)`. The replay's rate limiter holds learning
at `samples_per_insert` sampled positions per played one (AlphaZero's learner trained on the
newest games of a window of positions in the same way, in parallel with self-play).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from shoal.agents.alphazero.actor import SEARCH_POLICY
from shoal.agents.alphazero.config import AlphaZeroConfig
from shoal.agents.alphazero.networks import board_shape
from shoal.agents.base import DataPath, Layout, Unroll
from shoal.data import ReplayTable, replay_data_path
from shoal.envs.spec import EnvSpec


class PositionReplay:
    """A FIFO of `capacity` positions: `observation [H, W, C]` int8, `action_mask [A]` int8,
    `search_policy [A]` float32 and `outcome` float32; uniform sampling."""

    def __init__(self, capacity: int, board: tuple[int, int, int], actions: int) -> None:
        self.capacity = int(capacity)
        self.data = {
            "observation": np.zeros((capacity, *board), np.int8),
            "action_mask": np.zeros((capacity, actions), np.int8),
            "search_policy": np.zeros((capacity, actions), np.float32),
            "outcome": np.zeros(capacity, np.float32),
        }
        self.size = 0
        self.next = 0

    def __len__(self) -> int:
        return self.size

    def add(self, batch: Mapping[str, np.ndarray]) -> None:
        count = len(batch["outcome"])
        index = (self.next + np.arange(count)) % self.capacity
        for key, store in self.data.items():
            store[index] = batch[key]
        self.next = int((self.next + count) % self.capacity)
        self.size = min(self.capacity, self.size + count)

    def sample(self, batch_size: int, beta: float, rng: np.random.Generator) -> dict[str, Any]:
        index = rng.integers(0, self.size, batch_size)
        out = {key: store[index] for key, store in self.data.items()}
        out["indices"] = index
        out["weights"] = np.ones(batch_size, np.float32)
        return out

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        return None

    @property
    def priority_total(self) -> float:
        return float(self.size)

    def state_dict(self) -> dict[str, Any]:
        return {
            "data": {k: v[: self.capacity] for k, v in self.data.items()},
            "size": self.size,
            "next": self.next,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        data = state["data"]
        for key, store in self.data.items():
            if np.shape(data[key]) != store.shape:
                raise ValueError(
                    f"replay snapshot entry {key!r} has shape {np.shape(data[key])}, this "
                    f"replay's is {store.shape}."
                )
        for key, store in self.data.items():
            store[...] = data[key]
        self.size, self.next = int(state["size"]), int(state["next"])


class OutcomeAdder:
    """Positions of finished games with their outcome (see the module docstring)."""

    def __init__(self) -> None:
        self.pending: dict[int, list[tuple[Any, np.ndarray, np.ndarray]]] = {}
        self.returns: dict[int, float] = {}

    def add(self, unroll: Unroll) -> dict[str, np.ndarray] | None:
        obs = unroll.obs
        planes, masks = obs["observation"], obs["action_mask"]
        policies = unroll.extras[SEARCH_POLICY]
        done = unroll.terminated | unroll.truncated
        out: list[tuple[Any, np.ndarray, np.ndarray, float]] = []
        for t in range(unroll.length):
            for b in range(unroll.batch_size):
                if masks[t, b].any():
                    self.pending.setdefault(b, []).append(
                        (planes[t, b], masks[t, b], policies[t, b])
                    )
                self.returns[b] = self.returns.get(b, 0.0) + float(unroll.rewards[t, b])
                if done[t, b]:
                    z = self.returns.pop(b)
                    out.extend((*position, z) for position in self.pending.pop(b, []))
        if not out:
            return None
        return {
            "observation": np.stack([o[0] for o in out]).astype(np.int8),
            "action_mask": np.stack([o[1] for o in out]).astype(np.int8),
            "search_policy": np.stack([o[2] for o in out]).astype(np.float32),
            "outcome": np.array([o[3] for o in out], np.float32),
        }


def make_replay(spec: EnvSpec, config: AlphaZeroConfig, shards: int = 1) -> PositionReplay:
    rows, cols, planes, actions = board_shape(spec)
    return PositionReplay(
        max(2, -(-config.replay_capacity // shards)), (rows, cols, planes), actions
    )


def _table(spec: EnvSpec, config: AlphaZeroConfig, shards: int, seed: int) -> ReplayTable:
    return ReplayTable(
        make_replay(spec, config, shards),
        batch_size=config.batch_size,
        samples_per_insert=config.samples_per_insert,
        min_size=-(-max(config.learning_starts, config.batch_size) // shards),
        seed=seed,
    )


def _adder(policy: object, actor: int) -> OutcomeAdder:
    return OutcomeAdder()


def make_data_path(spec: EnvSpec, config: AlphaZeroConfig, layout: Layout) -> DataPath:
    board_shape(spec)  # a spec AlphaZero cannot play fails before anything runs
    return replay_data_path(config.unroll_length, partial(_table, spec, config), _adder)
