"""Sequence replay for recurrent agents: fixed-length, overlapping sequences with stored state.

R2D2 (Kapturowski et al. 2019, section 2.3 and section 3) replays sequences of `L` steps
instead of transitions. Adjacent sequences of one env overlap by `L - period` steps, may cross
episode boundaries (the network resets its state at `first` steps, targets stop at `end`
steps), and carry the recurrent state the actor had at their first step ("stored state",
section 3), which the learner warms further by unrolling the first `burn_in` steps.

A stored sequence holds, for steps `t = 0 .. L` (`L + 1` entries):

    obs, first, prev_action, prev_reward            the network's inputs at step t

and for the `L` steps `t = 0 .. L - 1`:

    action, reward, terminated, end, acted          what happened at step t

plus the per-step fields the agent declares (`[L, ...]`) and the start fields, stored as they were
at entry 0: R2D2's are `core_h`, `core_c` `[H]`, the LSTM state before step 0 (zero when step 0
starts an episode). Agent57 adds its own per-step fields the same way.

Decisions:
- L + 1 observations. The last step's target bootstraps from `obs[L]`, so every step of a
  sequence gets a target (the last n - 1 with fewer than n rewards), at the cost of one more
  observation per sequence than its steps; the alternative, L observations, loses the last
  step's target. `obs[L]` is the next sequence's entry `L - period`, so it is always known.
- Truncation bootstraps from the true final observation. Where an episode is truncated at step
  t (a time limit), the stream gets an extra entry after t holding the final observation, with
  `acted=False` (no action was taken there; the learner trains no target on it), `end=True`,
  and a zero stored state. Step t's target then reads `Q(obs[t + 1])`, the final observation,
  with the LSTM state carried from t, exactly as for any other step. Entries are counted in
  `period` and `L` like steps.
- `prev_action` and `prev_reward` are zero where `first` is set (section 2.3: the LSTM takes
  the previous action and reward; a new episode has none).
- Stacked frames (Atari) can be stored once each (`frame_stack=k`, `shoal.replay.frames`):
  `L + k` frames per sequence instead of `(L + 1) k`.

`SequenceAccumulator` (`shoal.replay.sequence_accumulator`) cuts actors' steps into these
sequences. `SequenceReplay` has the methods of `TransitionReplay` (`add`, `sample`,
`update_priorities`, `__len__`, `priority_total`, `memory_bytes`), so replay shards and the
replay-ratio learner take either. Priorities (`p = η max_t |δ_t| + (1 - η) mean_t |δ_t|`,
section 2.3) are computed by the agent and fed to the same `PrioritizedSampler` as transitions.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from shoal.replay.frames import Padding, pack_stacks, unpack_stacks
from shoal.replay.prioritized import PrioritizedSampler
from shoal.replay.snapshot import restore_rows, rows_used

__all__ = ["SequenceReplay", "sequence_fields"]

Fields = dict[str, tuple[tuple[int, ...], np.dtype]]


def sequence_fields(
    obs_shape: tuple[int, ...],
    obs_dtype: npt.DTypeLike,
    length: int,
    *,
    action_shape: tuple[int, ...] = (),
    action_dtype: npt.DTypeLike = np.int64,
    step_fields: Mapping[str, tuple[tuple[int, ...], npt.DTypeLike]] | None = None,
    start_fields: Mapping[str, tuple[tuple[int, ...], npt.DTypeLike]] | None = None,
) -> Fields:
    """The `{name: (shape, dtype)}` of one stored sequence of `length` steps (module docstring).

    `step_fields` are per-step fields the agent declares (stored `[L, *shape]`, zero at a
    final-observation entry), `start_fields` are stored once, as they were at the sequence's
    first entry (R2D2: the LSTM state `core_h`, `core_c` `(H,)`).
    """
    steps, inputs = (length,), (length + 1,)
    action_shape = tuple(action_shape)
    fields: dict[str, tuple[tuple[int, ...], npt.DTypeLike]] = {
        "obs": ((length + 1, *obs_shape), obs_dtype),
        "first": (inputs, bool),
        "prev_action": ((length + 1, *action_shape), action_dtype),
        "prev_reward": (inputs, np.float32),
        "action": ((length, *action_shape), action_dtype),
        "reward": (steps, np.float32),
        "terminated": (steps, bool),
        "end": (steps, bool),
        "acted": (steps, bool),
    }
    for name, (shape, dtype) in (step_fields or {}).items():
        fields[name] = ((length, *shape), dtype)
    for name, (shape, dtype) in (start_fields or {}).items():
        fields[name] = (tuple(shape), dtype)
    return {k: (tuple(int(d) for d in shape), np.dtype(dt)) for k, (shape, dt) in fields.items()}


class SequenceReplay:
    """A FIFO ring of `capacity` sequences with proportional prioritised (or uniform) sampling.

    `fields` is `{name: (shape, dtype)}` per sequence (`sequence_fields` gives R2D2's); without
    it, storage is laid out from the first `add`. Items carry insert ids (`row = id % capacity`)
    so priorities sent back for a sequence that was overwritten since are dropped.

    With `frame_stack=k > 1`, `obs [M, L + 1, k, ...]` are stacks of k frames that are stored
    once each and rebuilt when sampled, with the env's `padding` at episode starts (which
    needs the `first` field); `add` refuses observations that do not rebuild exactly.
    """

    def __init__(
        self,
        capacity: int,
        fields: Mapping[str, tuple[tuple[int, ...], npt.DTypeLike]] | None = None,
        *,
        prioritized: bool = True,
        alpha: float = 0.9,
        eps: float = 1e-6,
        frame_stack: int = 1,
        padding: Padding = "reset",
    ) -> None:
        if capacity < 1 or frame_stack < 1 or padding not in ("reset", "zero"):
            raise ValueError(
                "SequenceReplay needs capacity >= 1, frame_stack >= 1 and padding 'reset' or "
                f"'zero'; got {capacity}, {frame_stack}, {padding!r}."
            )
        self.capacity, self.prioritized = int(capacity), bool(prioritized)
        self.frame_stack, self.padding = int(frame_stack), padding
        self._sampler = PrioritizedSampler(self.capacity, alpha if prioritized else 0.0, eps)
        self._ids = np.full(self.capacity, -1, np.int64)  # insert id held by each row
        self._written = 0  # sequences ever added; the next one's id
        self._store: dict[str, np.ndarray] = {}
        self._shapes: dict[str, tuple[int, ...]] = {}  # per sequence, as added and sampled
        self._lock = threading.Lock()
        if fields is not None:
            self._allocate(fields)

    def _allocate(self, fields: Mapping[str, tuple[tuple[int, ...], npt.DTypeLike]]) -> None:
        if "priority" in fields or "indices" in fields or "weights" in fields:
            raise ValueError("'priority', 'indices' and 'weights' are reserved field names.")
        self._shapes = {name: tuple(shape) for name, (shape, _) in fields.items()}
        stored = dict(self._shapes)
        if self.frame_stack > 1:
            obs = self._shapes.get("obs", ())
            if "first" not in fields or len(obs) < 2 or obs[1] != self.frame_stack:
                raise ValueError(
                    f"frame_stack={self.frame_stack} needs 'first' and 'obs' fields with obs "
                    f"[L + 1, {self.frame_stack}, ...] per sequence; got obs {list(obs)}."
                )
            stored["obs"] = (obs[0] + self.frame_stack - 1, *obs[2:])
        self._store = {
            name: np.zeros((self.capacity, *stored[name]), dtype)
            for name, (_, dtype) in fields.items()
        }

    def __len__(self) -> int:
        """Sequences that can be sampled now."""
        return min(self._written, self.capacity)

    @property
    def num_added(self) -> int:
        return self._written

    @property
    def priority_total(self) -> float:
        """Σ p^α over stored sequences (their count without prioritisation)."""
        return float(self._sampler.total)

    def memory_bytes(self) -> int:
        """Bytes of numpy storage held: the sequences, their ids and the priority trees."""
        return sum(a.nbytes for a in self._store.values()) + self._ids.nbytes + self._sampler.nbytes

    def state_dict(self) -> dict[str, Any]:
        """Everything the replay holds: the sequences in use (stacked frames once each; views,
        so writers must wait while they are read), their insert ids, the priority trees and
        the count. `load_state_dict` restores it."""
        used = min(self._written, self.capacity)
        return {
            "capacity": self.capacity,
            "written": self._written,
            "ids": self._ids[:used],
            "fields": {name: store[:used] for name, store in self._store.items()},
            "sampler": self._sampler.state_dict(used),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a `state_dict` into this new replay of the same capacity and fields; a
        ValueError says what does not fit, and then nothing has changed."""
        with self._lock:
            used = rows_used(state, self.capacity, self._written)
            copies = [restore_rows({"ids": self._ids}, {"ids": state["ids"]}, used)]
            copies.append(restore_rows(self._store, state.get("fields", {}), used))
            self._sampler.load_state_dict(state["sampler"], used)
            for copy in copies:
                copy()
            self._written = int(state["written"])

    def add(self, batch: Mapping[str, np.ndarray]) -> None:
        """Add `M` sequences: each field `[M, *shape]`, optionally `priority [M]` (the actor's
        initial priority; NaN or absent: the largest priority so far)."""
        data = {k: np.asarray(v) for k, v in batch.items() if k != "priority"}
        with self._lock:
            if not self._store:
                self._allocate({k: (v.shape[1:], v.dtype) for k, v in data.items()})
            self._check(data)
            m = len(next(iter(data.values())))
            priority = batch.get("priority")
            priority = None if priority is None else np.asarray(priority, np.float64)
            if priority is not None and priority.shape != (m,):
                raise ValueError(f"priority must have shape [M] = ({m},), got {priority.shape}.")
            keep = slice(max(0, m - self.capacity), m)  # more than fit: the newest survive
            data = {name: value[keep] for name, value in data.items()}
            if self.frame_stack > 1:
                data["obs"] = self._packed(data["obs"], data["first"])
            ids = self._written + np.arange(m)[keep]
            rows = ids % self.capacity
            for name, store in self._store.items():
                store[rows] = data[name]
            self._ids[rows] = ids
            self._sampler.insert(rows, None if priority is None else priority[keep])
            self._written += m

    def _check(self, data: Mapping[str, np.ndarray]) -> None:
        if set(data) != set(self._store):
            missing, unknown = set(self._store) - set(data), set(data) - set(self._store)
            raise ValueError(
                f"Sequences must have exactly the fields {sorted(self._store)}; missing "
                f"{sorted(missing)}, unknown {sorted(unknown)}."
            )
        sizes = {len(v) for v in data.values()}
        if len(sizes) != 1:
            raise ValueError(f"Every field must hold the same number M of sequences; got {sizes}.")
        for name, value in data.items():
            expected = self._shapes[name]
            if value.shape[1:] != expected:
                raise ValueError(
                    f"Field {name!r} must be [M, *{list(expected)}], got {list(value.shape)}."
                )

    def _packed(self, obs: np.ndarray, first: np.ndarray) -> np.ndarray:
        frames = pack_stacks(obs)
        if not np.array_equal(unpack_stacks(frames, first, self.frame_stack, self.padding), obs):
            raise ValueError(
                f"These stacked observations do not rebuild from single frames with "
                f"padding={self.padding!r} (the first frame repeated at an episode start, or "
                "zeros): each stack must be the previous one shifted by one frame within an "
                "episode. Set `padding` to match the env's frame stack, or frame_stack=1."
            )
        return frames

    def sample(
        self, batch_size: int, beta: float, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """`batch_size` sequences: every field `[B, ...]`, `indices [B]` int64 (insert ids for
        `update_priorities`) and importance `weights [B]` float32 (all 1 when uniform)."""
        with self._lock:
            if self._sampler.total <= 0.0:
                raise ValueError(
                    "Cannot sample: the replay holds no sequence yet. Wait until it has enough "
                    "(min_replay_size)."
                )
            rows, weights = self._sampler.sample(batch_size, beta, rng)
            out = {name: store[rows] for name, store in self._store.items()}
            if self.frame_stack > 1:
                out["obs"] = unpack_stacks(out["obs"], out["first"], self.frame_stack, self.padding)
            out["indices"] = self._ids[rows].copy()
            out["weights"] = weights
            return out

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Set priorities `[K]` of sampled `indices [K]`; ids overwritten since are ignored."""
        ids = np.asarray(indices, dtype=np.int64)
        pri = np.asarray(priorities, dtype=np.float64)
        if ids.shape != pri.shape or ids.ndim != 1:
            raise ValueError(f"indices {ids.shape} and priorities {pri.shape} must be [K] both.")
        if not self.prioritized:
            return
        with self._lock:
            rows = ids % self.capacity
            live = (ids >= 0) & (self._ids[rows] == ids)
            self._sampler.set_priorities(rows[live], pri[live])
