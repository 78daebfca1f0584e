"""Transition replay that stores every frame once: uniform or prioritised, FIFO, many env streams.

Storage (the DQN-replay trick of Mnih et al. 2015 and Dopamine). One global FIFO ring of
`capacity` rows. A row holds one frame (the newest frame `obs[-1]` of a stacked observation, or the
whole observation when `frame_stack=1`) and its transition's action, reward, discount and step
count `m`; an episode's end adds one row for its final observation, which holds no transition.
Many envs feed one replay: each row links to the previous and next row *of its stream* (`stream`
in `add`), so a stack is rebuilt by walking `frame_stack - 1` links back (stopping at the episode's
first row, repeated (`padding="reset"`, gymnasium's `FrameStackObservation` default) or replaced by
zeros (`"zero"`)), and `next_obs` of an m-step transition is the row m links forward.

Rows carry a global insert id (`row = id % capacity`), so liveness is a range check. A transition
can be sampled once its `next_obs` row has arrived and until its row, or a frame of its stack, is
overwritten. `sample` returns these ids as `indices`; `update_priorities` drops ids overwritten
(or invalidated) since, so a slow learner never re-prioritises the transition that replaced one.

Contract for `add` (what `NStepAccumulator` emits): per stream, transitions come in step order with
no gaps; `first` marks one whose `obs` starts an episode, `last` one whose episode ended at that
step (`next_obs` is the final observation). A `first` in a stream whose episode did not end cuts
that episode; its unfinished transitions are never sampled. Priorities: Schaul et al. 2016, Ape-X
(Horgan et al. 2018; actors may send an initial `priority`), see `shoal.replay.prioritized`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from shoal.replay.prioritized import PrioritizedSampler
from shoal.replay.snapshot import restore_rows, rows_used

__all__ = ["TransitionReplay"]

_PER_ROW: dict[str, npt.DTypeLike] = {"reward": np.float32, "discount": np.float32}
_PER_ROW |= {"stream": np.int64, "first": bool, "last": bool, "steps": np.int64}
_PER_ROW["priority"] = np.float32
_FIELDS = ("obs", "next_obs", "action", *_PER_ROW)
_DEFAULTS = {"steps": 1, "priority": np.nan}


class TransitionReplay:
    """A FIFO replay of (obs, action, reward, discount, next_obs) transitions, frames stored once.

    `obs_shape` is the shape the env emits: `(frame_stack, *frame_shape)` when stacking, e.g.
    `(4, 84, 84)`. `capacity` counts rows: one per transition plus one per finished episode.
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        obs_dtype: npt.DTypeLike = np.uint8,
        *,
        action_shape: tuple[int, ...] = (),
        action_dtype: npt.DTypeLike = np.int64,
        frame_stack: int = 1,
        padding: Literal["reset", "zero"] = "reset",
        prioritized: bool = False,
        alpha: float = 0.6,
        eps: float = 1e-6,
    ) -> None:
        self.obs_shape = tuple(int(d) for d in obs_shape)
        if capacity < 2 or frame_stack < 1 or padding not in ("reset", "zero"):
            raise ValueError(
                "TransitionReplay needs capacity >= 2, frame_stack >= 1 and padding 'reset' or "
                f"'zero'; got {capacity}, {frame_stack}, {padding!r}."
            )
        if frame_stack > 1 and self.obs_shape[:1] != (frame_stack,):
            raise ValueError(
                f"With frame_stack={frame_stack} the observation must be stacked on its first "
                f"axis, shape ({frame_stack}, ...); got {self.obs_shape}."
            )
        self.capacity, self.frame_stack = int(capacity), int(frame_stack)
        self.padding, self.prioritized = padding, bool(prioritized)
        self.action_shape = tuple(int(d) for d in action_shape)
        frame_shape = self.obs_shape[1:] if frame_stack > 1 else self.obs_shape
        c = self.capacity
        self._frames = np.zeros((c, *frame_shape), dtype=obs_dtype)
        self._action = np.zeros((c, *self.action_shape), dtype=action_dtype)
        self._reward, self._discount = np.zeros(c, np.float32), np.zeros(c, np.float32)
        self._steps = np.zeros(c, np.uint8)  # m of the row's transition; 0: a final-obs row
        self._priority = np.full(c, np.nan, np.float32)  # from the actor; NaN: the max so far
        self._prev = np.full(c, -1, np.int64)  # id of the stream's previous row; -1: episode start
        self._next = np.full(c, -1, np.int64)  # id of the stream's next row; -1: none (yet)
        self._valid = np.zeros(c, bool)  # sampleable
        self._sampler = PrioritizedSampler(c, alpha if prioritized else 0.0, eps)
        self._written = 0  # rows ever written; the next row's id
        self._added = 0  # transitions ever added
        self._max_steps = 1
        self._streams: dict[int, tuple[int, bool]] = {}  # stream -> (newest row id, ended)
        # After `load_state_dict`: the streams that have added since (see `_add`).
        self._since_restore: set[int] | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Transitions that can be sampled now."""
        return int(np.count_nonzero(self._valid))

    @property
    def num_added(self) -> int:
        """Transitions added since construction."""
        return self._added

    @property
    def priority_total(self) -> float:
        """Σ p^α over sampleable transitions (their count without prioritisation)."""
        return float(self._sampler.total)

    def memory_bytes(self) -> int:
        """Bytes of numpy storage held: frames, per-row fields and the priority trees."""
        return sum(a.nbytes for a in self._rows().values()) + self._sampler.nbytes

    def _rows(self) -> dict[str, np.ndarray]:
        """The per-row storage, by name."""
        return {
            "frames": self._frames,
            "action": self._action,
            "reward": self._reward,
            "discount": self._discount,
            "steps": self._steps,
            "priority": self._priority,
            "prev": self._prev,
            "next": self._next,
            "valid": self._valid,
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything the replay holds: the rows in use (each frame once; views, so writers
        must wait while they are read), the priority trees, each stream's newest row and the
        counters. `load_state_dict` restores it."""
        used = min(self._written, self.capacity)
        streams = [(s, row, ended) for s, (row, ended) in self._streams.items()]
        return {
            "capacity": self.capacity,
            "written": self._written,
            "added": self._added,
            "max_steps": self._max_steps,
            "rows": {name: array[:used] for name, array in self._rows().items()},
            "streams": np.array(streams, np.int64).reshape(-1, 3),
            "sampler": self._sampler.state_dict(used),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict` into this new replay of the same capacity and shapes; a
        ValueError says what does not fit, and then nothing has changed."""
        with self._lock:
            used = rows_used(state, self.capacity, self._written)
            copy_rows = restore_rows(self._rows(), state["rows"], used)
            streams = np.asarray(state["streams"], np.int64).reshape(-1, 3)
            self._sampler.load_state_dict(state["sampler"], used)
            copy_rows()
            self._streams = {int(s): (int(row), bool(end)) for s, row, end in streams}
            self._written, self._added = int(state["written"]), int(state["added"])
            self._max_steps = int(state["max_steps"])
            self._since_restore = set()

    def add(self, batch: Mapping[str, np.ndarray]) -> None:
        """Add `N` transitions, each field `[N, ...]`: `obs`, `next_obs` `[N, *obs_shape]`,
        `action [N, *action_shape]`, `reward`, `discount` (`γ^m`, 0 if terminated), `stream`,
        `first`, `last` `[N]`, optionally `steps` (`m`, default 1) and `priority` (`|δ|` from
        the actor, default: the largest priority so far)."""
        data = self._checked(batch)
        with self._lock:
            n = len(data["reward"])
            chunk = self.capacity // 2  # a transition takes at most two rows
            for start in range(0, n, chunk):
                self._add({k: v[start : start + chunk] for k, v in data.items()})
            self._added += n

    def sample(
        self, batch_size: int, beta: float, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """`batch_size` transitions: `obs`, `next_obs` `[B, *obs_shape]`, `action`, `reward`,
        `discount` `[B]`, `indices [B]` int64 (insert ids for `update_priorities`) and
        importance `weights [B]` float32 (all 1 without prioritisation)."""
        with self._lock:
            if self._sampler.total <= 0.0:
                raise ValueError(
                    "Cannot sample: the replay holds no complete transition yet. Wait until it "
                    "has enough (a RateLimiter with min_size_to_sample does this)."
                )
            rows, weights = self._sampler.sample(batch_size, beta, rng)
            ids = (self._written - 1) - (self._written - 1 - rows) % self.capacity
            nxt = ids.copy()  # next_obs: m links forward
            for j in range(1, self._max_steps + 1):
                nxt = np.where(self._steps[rows] >= j, self._next[nxt % self.capacity], nxt)
            return {
                "obs": self._stack(ids),
                "action": self._action[rows],
                "reward": self._reward[rows],
                "discount": self._discount[rows],
                "next_obs": self._stack(nxt),
                "indices": ids,
                "weights": weights,
            }

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Set priorities `|δ| [K]` of sampled `indices [K]`; ids overwritten since are ignored."""
        ids = np.asarray(indices, dtype=np.int64)
        pri = np.asarray(priorities, dtype=np.float64)
        if ids.shape != pri.shape or ids.ndim != 1:
            raise ValueError(f"indices {ids.shape} and priorities {pri.shape} must be [K] both.")
        if not self.prioritized:
            return
        with self._lock:
            rows = ids % self.capacity
            live = (ids >= 0) & self._alive(ids) & (ids < self._written) & self._valid[rows]
            self._sampler.set_priorities(rows[live], pri[live])

    def _alive(self, ids: np.ndarray) -> np.ndarray:
        return ids >= self._written - self.capacity

    def _lookback(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row ids `[B, k]` of the stacks ending at `ids [B]` (the episode's first row repeated
        before its start) and where they are before the start `[B, k]`."""
        k = self.frame_stack
        out, before = np.empty((len(ids), k), np.int64), np.zeros((len(ids), k), bool)
        out[:, -1], started = ids, np.zeros(len(ids), bool)
        for j in range(k - 2, -1, -1):
            prev = self._prev[out[:, j + 1] % self.capacity]
            started |= prev < 0
            out[:, j], before[:, j] = np.where(started, out[:, j + 1], prev), started
        return out, before

    def _stack(self, ids: np.ndarray) -> np.ndarray:
        """Observations `[B, *obs_shape]` ending at row ids `[B]`, rebuilt from single frames."""
        if self.frame_stack == 1:
            return np.asarray(self._frames[ids % self.capacity])
        rows, before_start = self._lookback(ids)
        frames: np.ndarray = self._frames[rows % self.capacity]
        if self.padding == "zero":
            frames[before_start] = 0
        return frames

    def _add(self, data: dict[str, np.ndarray]) -> None:
        c, last, n = self.capacity, data["last"], len(data["last"])
        pos = np.arange(n) + np.cumsum(last) - last  # row offset of each transition
        fin = pos[last] + 1  # row offsets of final observations
        n_rows = n + len(fin)
        ids = self._written + np.arange(n_rows)
        stream = np.empty(n_rows, np.int64)
        stream[pos], stream[fin] = data["stream"], data["stream"][last]
        first, is_final = np.zeros(n_rows, bool), np.zeros(n_rows, bool)
        first[pos], is_final[fin] = data["first"], True

        # Link each row to its stream's previous and next rows, in this batch or an earlier one.
        prev, nxt = np.full(n_rows, -1, np.int64), np.full(n_rows, -1, np.int64)
        pred_final = np.zeros(n_rows, bool)  # the previous row of the stream ended an episode
        earlier, newest = [], {}  # (old row id, its new successor); stream -> (id, ended)
        for s in np.unique(stream).tolist():
            r = np.flatnonzero(stream == s)
            old, ended = self._streams.get(s, (-1, True))
            if self._since_restore is not None and s not in self._since_restore:
                # A stream's first add since a restore goes on from steps this replay never
                # saw (a restarted shard's actors kept acting; a resumed run's actors start
                # afresh): it starts a new chain, padded like an episode start, rather than
                # link back across the gap or be refused for not being flagged first.
                self._since_restore.add(s)
                old, ended = -1, False
            prev[r], pred_final[r] = np.r_[old, ids[r[:-1]]], np.r_[ended, is_final[r[:-1]]]
            nxt[r[:-1]] = np.where(first[r[1:]], -1, ids[r[1:]])  # no link into a new episode
            if not (first[r[0]] or ended) and old >= 0:
                earlier.append((old, int(ids[r[0]])))
            newest[s] = (int(ids[r[-1]]), bool(is_final[r[-1]]))
        if (bad := np.flatnonzero(~first & pred_final)).size:
            raise ValueError(
                f"Stream {stream[bad[0]]}: a transition not flagged `first` follows an episode end "
                "or is the stream's first. Add each stream's steps in order; flag episode starts."
            )
        prev[first] = -1

        # Rows about to be overwritten, and the transitions whose stacks reach back into them.
        gone = ids[ids >= c] - c
        doomed = [gone]
        for _ in range(self.frame_stack - 1):
            gone = self._next[gone % c]
            doomed.append(gone := gone[gone >= 0])
        rows = np.concatenate(doomed) % c
        self._valid[rows] = False
        self._sampler.remove(rows)

        rows = ids % c
        tpos = rows[pos]
        self._frames[tpos] = data["obs"][:, -1] if self.frame_stack > 1 else data["obs"]
        final = data["next_obs"][last]
        self._frames[rows[fin]] = final[:, -1] if self.frame_stack > 1 else final
        self._action[tpos], self._priority[tpos] = data["action"], data["priority"]
        self._reward[tpos], self._discount[tpos] = data["reward"], data["discount"]
        self._steps[rows], self._steps[tpos] = 0, data["steps"]
        self._prev[rows], self._next[rows] = prev, nxt
        self._written += n_rows
        for old, new in earlier:
            if old >= self._written - c:  # else its row now holds a newer transition
                self._next[old % c] = new
        self._streams.update(newest)
        self._max_steps = max(self._max_steps, int(data["steps"].max()))

        # Transitions whose next_obs row has now arrived: the row m links back from a new row.
        ready, cur = [], ids
        for j in range(1, self._max_steps + 1):
            cur = self._prev[cur % c]
            cur = cur[(cur >= 0) & self._alive(cur)]
            ready.append(cur[self._steps[cur % c] == j])
        done = np.concatenate(ready)
        # Ids only decrease along a stack, so a dead frame is seen before any garbage link.
        rows = done[self._alive(self._lookback(done)[0]).all(axis=1)] % c
        self._valid[rows] = True
        self._sampler.insert(rows, self._priority[rows].astype(np.float64))

    def _checked(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The batch as arrays of the stored dtypes, with shapes checked."""
        unknown, missing = set(batch) - set(_FIELDS), set(_FIELDS) - set(batch) - set(_DEFAULTS)
        if unknown or missing:
            raise ValueError(
                f"TransitionReplay.add got unknown fields {sorted(unknown)} and lacks "
                f"{sorted(missing)}; it takes {sorted(_FIELDS)} ({sorted(_DEFAULTS)} optional)."
            )
        n = len(batch["reward"])
        dtypes = _PER_ROW | {"obs": self._frames.dtype, "next_obs": self._frames.dtype}
        dtypes["action"] = self._action.dtype
        data = {
            k: np.asarray(batch[k] if k in batch else np.full(n, _DEFAULTS[k]), t)
            for k, t in dtypes.items()
        }
        shapes = {"obs": self.obs_shape, "next_obs": self.obs_shape, "action": self.action_shape}
        for key, value in data.items():
            if value.shape != (want := (n, *shapes.get(key, ()))):
                raise ValueError(f"add: `{key}` must have shape {want}, got {value.shape}.")
        if n and not 1 <= data["steps"].min() <= data["steps"].max() <= 255:
            raise ValueError("add: `steps` (m of an m-step transition) must lie in [1, 255].")
        if self.frame_stack == 1:
            return data
        starts = data["obs"][data["first"]]
        pad = starts[:, -1:] if self.padding == "reset" else np.zeros_like(starts[:, -1:])
        if not (starts[:, :-1] == pad).all():
            raise ValueError(
                f"add: an episode's first stacked observation is not padded as this replay "
                f"rebuilds stacks (padding={self.padding!r}: "
                f"{'the first frame repeated' if self.padding == 'reset' else 'zeros'}). "
                "Set `padding` to match the env's frame stack."
            )
        return data
