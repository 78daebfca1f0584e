"""Actors' steps cut into overlapping, fixed-length sequences with their stored state (R2D2).

What a sequence holds, and why, is in `shoal.replay.sequence`; this module builds them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from shoal.replay.sequence import sequence_fields

__all__ = ["SequenceAccumulator"]


class SequenceAccumulator:
    """Turns actors' `[T, E]` steps into overlapping sequences, one stream per env.

    Each env's stream emits the sequence of entries `[s, s + L]` (module docstring) for
    `s = 0, period, 2 period, ...` as soon as entry `s + L` has arrived, so adjacent sequences
    overlap by `L - period` entries. Entries not yet part of an emitted sequence stay in the
    stream's tail across calls (unrolls are usually shorter than sequences). A stream whose
    episode is cut without an end (an actor that reconnected, so `first` follows a step that did
    not end) drops its tail: no sequence mixes steps of an unfinished episode with the next.
    """

    def __init__(self, num_envs: int, length: int, period: int) -> None:
        if num_envs < 1 or length < 1 or not 1 <= period <= length:
            raise ValueError(
                f"need num_envs >= 1, length >= 1 and 1 <= period <= length; got {num_envs}, "
                f"{length}, {period}."
            )
        self.num_envs, self.length, self.period = int(num_envs), int(length), int(period)
        self._tails: list[dict[str, np.ndarray] | None] = [None] * num_envs
        self._last: list[tuple[np.ndarray, float, bool] | None] = [None] * num_envs
        self._step_names: tuple[str, ...] = ()
        self._start_names: tuple[str, ...] = ()

    def extend(
        self,
        obs: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        first: np.ndarray,
        final_obs: np.ndarray | None = None,
        final_index: np.ndarray | None = None,
        *,
        step_fields: Mapping[str, np.ndarray] | None = None,
        start_fields: Mapping[str, np.ndarray] | None = None,
    ) -> dict[str, np.ndarray]:
        """Record `T` steps of the E envs; return the sequences they complete, `[M, ...]`.

        Args:
            obs: `[T, E, ...]` observations acted on (not the one after the last step: it comes
                as the next call's `obs[0]`).
            action: `[T, E, ...]`; reward, terminated, truncated: `[T, E]`.
            first: `[T, E]` bool, `obs[t]` starts an episode (the runtime's `first` extra).
            final_obs, final_index: `[K, ...]` and `[K, 2]` `(t, env)`: the last observation of
                each episode truncated (and not terminated) at step t, as in `Unroll`.
            step_fields: `{name: [T, E, ...]}` stored for every step of a sequence.
            start_fields: `{name: [T, E, ...]}` of which a sequence stores its first entry's
                (R2D2: the LSTM state each step started from, `core_h` and `core_c`).

        Returns:
            `sequence_fields(...)` arrays with a leading `M >= 0`.
        """
        obs, action = np.asarray(obs), np.asarray(action)
        steps, width = np.shape(reward)
        if width != self.num_envs or obs.shape[:2] != (steps, width):
            raise ValueError(
                f"expected [T, E] = [{steps}, {self.num_envs}] steps, got obs {obs.shape} and "
                f"reward {np.shape(reward)}."
            )
        step_fields = {k: np.asarray(v) for k, v in (step_fields or {}).items()}
        start_fields = {k: np.asarray(v) for k, v in (start_fields or {}).items()}
        finals: dict[tuple[int, int], np.ndarray] = {}
        if final_index is not None and final_obs is not None:
            for k, (t, b) in enumerate(np.asarray(final_index).reshape(-1, 2)):
                finals[int(t), int(b)] = final_obs[k]
        fields = sequence_fields(
            obs.shape[2:],
            obs.dtype,
            self.length,
            action_shape=action.shape[2:],
            action_dtype=action.dtype,
            step_fields={k: (v.shape[2:], v.dtype) for k, v in step_fields.items()},
            start_fields={k: (v.shape[2:], v.dtype) for k, v in start_fields.items()},
        )
        self._step_names, self._start_names = tuple(step_fields), tuple(start_fields)
        out: dict[str, list[np.ndarray]] = {name: [] for name in fields}
        core = {"obs": obs, "action": action, "reward": reward, "terminated": terminated}
        core |= {"truncated": truncated, "first": first}
        for b in range(width):
            column = self._column(
                b,
                {k: np.asarray(v)[:, b] for k, v in core.items()},
                {k: v[:, b] for k, v in {**step_fields, **start_fields}.items()},
                finals,
            )
            for sequence in self._emit(b, column):
                for name, value in sequence.items():
                    out[name].append(value)
        return {
            name: np.stack(out[name]) if out[name] else np.zeros((0, *shape), dtype)
            for name, (shape, dtype) in fields.items()
        }

    def _column(
        self,
        b: int,
        core: Mapping[str, np.ndarray],
        declared: Mapping[str, np.ndarray],
        finals: Mapping[tuple[int, int], np.ndarray],
    ) -> dict[str, np.ndarray]:
        """One env's `T` steps as stream entries, a final-observation entry after truncations."""
        terminated, first = np.asarray(core["terminated"], bool), np.asarray(core["first"], bool)
        action = np.asarray(core["action"])
        cut = np.asarray(core["truncated"], bool) & ~terminated
        pos = np.arange(len(first)) + np.cumsum(cut) - cut  # entry of each step
        extra = pos[cut] + 1  # entries holding a truncated episode's final observation
        size = len(first) + len(extra)

        def spread(values: np.ndarray, fill: float | bool) -> np.ndarray:
            entries = np.full((size, *values.shape[1:]), fill, values.dtype)
            entries[pos] = values
            return entries

        entries = {
            "obs": spread(np.asarray(core["obs"]), 0),
            "first": spread(first, False),
            "action": spread(action, 0),
            "reward": spread(np.asarray(core["reward"], np.float32), 0.0),
            "terminated": spread(terminated, False),
            "end": spread(terminated | cut, True),
            "acted": spread(np.ones(len(first), bool), False),
        }
        # Declared fields are zero at final-observation entries (no step was taken there; a
        # sequence starting at one starts from a zero state).
        entries |= {name: spread(values, 0) for name, values in declared.items()}
        for t in np.flatnonzero(cut):
            if (int(t), b) not in finals:
                raise ValueError(
                    f"Env {b} was truncated at step {t} but final_obs has no entry for it; pass "
                    "the last observation of each truncated episode (Unroll.final_obs)."
                )
            entries["obs"][pos[t] + 1] = finals[int(t), b]
        # The network's inputs at each entry: the previous entry's action and reward.
        last = self._last[b]
        no_action = np.zeros((1, *action.shape[1:]), action.dtype)
        before = no_action if last is None else np.asarray(last[0])[None]
        prev_action = np.concatenate([before, entries["action"][:-1]])
        prev_reward = np.concatenate([[0.0 if last is None else last[1]], entries["reward"][:-1]])
        starts = entries["first"].reshape(-1, *([1] * (action.ndim - 1)))
        entries["prev_action"] = np.where(starts, 0, prev_action).astype(action.dtype)
        entries["prev_reward"] = np.where(entries["first"], 0.0, prev_reward).astype(np.float32)
        return entries

    def _emit(self, b: int, column: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """Append `column` to stream b's tail and cut the sequences it completes."""
        # An episode start after a step that did not end the episode: the episode was cut.
        ended_before = np.concatenate(
            [[True if self._last[b] is None else self._last[b][2]], column["end"][:-1]]
        )
        cuts = np.flatnonzero(column["first"] & ~ended_before)
        self._last[b] = (column["action"][-1], float(column["reward"][-1]), bool(column["end"][-1]))
        sequences = []
        for start, stop in zip(np.r_[0, cuts], np.r_[cuts, len(column["first"])], strict=True):
            if start == stop:
                continue
            if start in cuts:
                self._tails[b] = None
            piece = {k: v[start:stop] for k, v in column.items()}
            tail = self._tails[b]
            stream = (
                piece if tail is None else {k: np.concatenate([tail[k], piece[k]]) for k in piece}
            )
            s, length = 0, self.length
            while len(stream["first"]) - s >= length + 1:
                sequences.append(self._sequence(stream, s))
                s += self.period
            self._tails[b] = {k: v[s:] for k, v in stream.items()}
        return sequences

    def _sequence(self, stream: Mapping[str, np.ndarray], s: int) -> dict[str, np.ndarray]:
        inputs, steps = slice(s, s + self.length + 1), slice(s, s + self.length)
        # Views: `extend` stacks them into new arrays.
        out = {k: stream[k][inputs] for k in ("obs", "first", "prev_action", "prev_reward")}
        per_step = ("action", "reward", "terminated", "end", "acted", *self._step_names)
        out |= {k: stream[k][steps] for k in per_step}
        out |= {k: stream[k][s] for k in self._start_names}
        return out
