"""The data path of ES and ARS: finished episodes as scalars, gathered in mirrored pairs.

The adder turns an actor's unrolls into one item per finished episode: its perturbation
(noise offset, sign, version of θ, as the policy's state recorded them) and its return and
length, plus the moments of the observations acted on (for the observation normalisation).
Nothing in an item grows with the network. The table is on-policy: it keeps the episodes of
the learner's current θ (older ones are dropped and counted), pairs the two signs of each
offset, and hands the learner an iteration once it holds `pairs` complete pairs (and at least
`min_steps` env steps in them). An actor inserting while a full iteration waits to be learned
from waits until it has been, so it acts next with the new θ; the learner never waits for a
particular actor, so a dead or slow one only delays the iteration by its share.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any, Protocol

import numpy as np

from shoal.data import Batch, DataPath, Layout, Unroll
from shoal.data.queue import NoSnapshot
from shoal.envs.spec import EnvSpec

__all__ = ["EpisodeAdder", "IterationSettings", "PairTable", "make_data_path"]

EPISODE_KEYS = ("noise_offset", "noise_sign", "noise_version", "return", "length")


class EpisodeAdder:
    """One actor's unrolls as finished episodes (see the module's docstring)."""

    def __init__(self) -> None:
        self._returns: np.ndarray | None = None  # [B] running return of each env's episode
        self._lengths: np.ndarray | None = None

    def add(self, unroll: Unroll) -> dict[str, np.ndarray]:
        width = unroll.batch_size
        if self._returns is None or len(self._returns) != width:
            self._returns, self._lengths = np.zeros(width), np.zeros(width, np.int64)
        lengths = self._lengths
        assert lengths is not None
        extras = unroll.extras
        ended = unroll.terminated | unroll.truncated
        found: dict[str, list] = {key: [] for key in EPISODE_KEYS}
        for t in range(unroll.length):
            self._returns += unroll.rewards[t]
            lengths += 1
            for b in np.flatnonzero(ended[t]).tolist():
                # The perturbation is constant over an episode: its last step's is the one.
                found["noise_offset"].append(extras["noise_offset"][t, b])
                found["noise_sign"].append(extras["noise_sign"][t, b])
                found["noise_version"].append(extras["noise_version"][t, b])
                found["return"].append(self._returns[b])
                found["length"].append(lengths[b])
                self._returns[b], lengths[b] = 0.0, 0
        dtypes = (np.int64, np.float32, np.int64, np.float64, np.int64)
        items = {
            key: np.asarray(found[key], dtype)
            for key, dtype in zip(EPISODE_KEYS, dtypes, strict=True)
        }
        obs = np.asarray(unroll.obs[:-1], np.float64).reshape(unroll.length * width, -1)
        items["obs_sum"] = obs.sum(0)
        items["obs_sumsq"] = np.square(obs).sum(0)
        items["obs_count"] = np.array(float(len(obs)))
        return items


class PairTable(NoSnapshot):
    """Mirrored episode pairs of the learner's current θ, an iteration at a time."""

    def __init__(self, pairs: int, min_steps: int = 0) -> None:
        if pairs < 1:
            raise ValueError(f"need pairs >= 1 per iteration, got {pairs}.")
        self.pairs, self.min_steps = int(pairs), int(min_steps)
        self._version = 0  # the learner's, after its last update
        self._half: dict[tuple[int, int], tuple[float, float, int]] = {}  # (version, offset)
        self._done: dict[int, list[tuple[int, float, float, int, int]]] = {}  # by version
        self._moments: list[np.ndarray] = []  # obs sum, sum of squares, count since a batch
        self._steps = 0
        self._episodes = self._stale = 0
        self._closed = False
        self._cond = threading.Condition()

    def insert(self, items: Any, version: int, block: bool = True, steps: int = 0) -> bool:
        with self._cond:
            self._steps += steps
            if self._closed:
                return False
            if items is None:
                return True
            self._add_moments(items)
            if len(items["noise_version"]):
                # No θ acts before the learner has it: a newer version than the table heard of
                # (a resumed learner's) is the learner's.
                self._advance(int(items["noise_version"].max()))
            for offset, sign, ver, ret, length in zip(
                *(items[key].tolist() for key in EPISODE_KEYS), strict=True
            ):
                self._add_episode(int(offset), float(sign), int(ver), float(ret), int(length))
            self._cond.notify_all()
            if block and self._full():
                # Act next with the θ this iteration leads to, not the one it evaluated.
                full = self._version
                self._cond.wait_for(lambda: self._closed or self._version > full)
            return not self._closed

    def _add_moments(self, items: dict[str, np.ndarray]) -> None:
        part = [items["obs_sum"], items["obs_sumsq"], np.asarray(items["obs_count"])]
        if not self._moments:
            self._moments = [np.array(x, np.float64) for x in part]
        else:
            for have, more in zip(self._moments, part, strict=True):
                have += more

    def _add_episode(self, offset: int, sign: float, ver: int, ret: float, length: int) -> None:
        self._episodes += 1
        if ver < self._version:
            self._stale += 1  # evaluated a θ the learner has moved past
            return
        other = self._half.pop((ver, offset), None)
        if other is None or other[0] == sign:
            self._half[(ver, offset)] = (sign, ret, length)
            return
        pos, neg = ((ret, length), other[1:]) if sign > 0 else (other[1:], (ret, length))
        self._done.setdefault(ver, []).append((offset, pos[0], neg[0], pos[1], neg[1]))

    def _full(self) -> bool:
        done = self._done.get(self._version, [])
        return len(done) >= self.pairs and sum(p[3] + p[4] for p in done) >= self.min_steps

    def can_sample(self) -> bool:
        with self._cond:
            return self._full()

    def sample(self, progress: float, timeout: float | None) -> Batch | None:
        with self._cond:
            ready = self._cond.wait_for(lambda: self._closed or self._full(), timeout)
            if not ready or self._closed:
                return None
            done = self._done.pop(self._version)
            moments, self._moments = self._moments, []
            version, steps = self._version, self._steps
        columns = list(zip(*done, strict=True))
        data = {
            "noise_offset": np.asarray(columns[0], np.int64),
            "return_pos": np.asarray(columns[1], np.float64),
            "return_neg": np.asarray(columns[2], np.float64),
            "length_pos": np.asarray(columns[3], np.int64),
            "length_neg": np.asarray(columns[4], np.int64),
        }
        if moments:
            data |= {"obs_sum": moments[0], "obs_sumsq": moments[1], "obs_count": moments[2]}
        return Batch(data, version, steps=steps)

    def after_update(self, batch: Batch, priorities: np.ndarray | None, version: int) -> None:
        with self._cond:
            self._advance(int(version))
            self._cond.notify_all()

    def _advance(self, version: int) -> None:
        if version <= self._version:
            return
        self._version = version
        self._half = {k: v for k, v in self._half.items() if k[0] >= version}
        self._done = {k: v for k, v in self._done.items() if k >= version}

    def stats(self) -> dict[str, float]:
        return {"episodes_evaluated": float(self._episodes), "episodes_stale": float(self._stale)}

    @property
    def sample_weight(self) -> float:
        return float(len(self._done.get(self._version, [])))

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class IterationSettings(Protocol):
    unroll_length: int
    pairs_per_iteration: int
    steps_per_iteration: int


def _table(pairs: int, min_steps: int, shards: int, seed: int) -> PairTable:
    return PairTable(pairs, min_steps)


def make_data_path(spec: EnvSpec, config: IterationSettings, layout: Layout) -> DataPath:
    """Episodes to one table next to the learner; inline, act and learn in turn (one unroll,
    then an update if it completed the iteration), reproducible under a seed."""
    return DataPath(
        unroll_length=config.unroll_length,
        make_table=partial(_table, config.pairs_per_iteration, config.steps_per_iteration),
        make_adder=lambda policy, actor: EpisodeAdder(),
        overlap=False,
    )
