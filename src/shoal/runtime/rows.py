"""The one store of per-env recurrent state: a policy acting for many env rows.

Every place that acts (the actor loop, the central inference server, the evaluator and
`shoal.load`) holds an `Acting`: the agent's pure `Policy.step` plus, for each row (one
environment), its recurrent state, whether its next observation starts an episode, its previous
action and reward, and how many actions it took. A row starts an episode when it is first named
and after `observe` reports its episode ended: its state is then made afresh by the policy's
`initial_state` and its previous action and reward are zero. Rows are independent, so any
subset may act in any order (central inference serves many actors' rows in one call; a
double-buffered actor acts on half its rows at a time).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shoal.agents.base import ActMode, Policy, State, StepInputs
from shoal.envs.spec import EnvSpec
from shoal.tree import leaves

__all__ = ["Acting"]


class Acting:
    """`policy` acting in `mode` for rows `0, 1, ...`; row r is env slot `slot_offset + r`.

    `start_steps`: actions each row counts as taken before (a resumed run's share per env), so
    schedules over a row's steps (DQN's epsilon decay) go on rather than start again."""

    def __init__(
        self,
        policy: Policy,
        spec: EnvSpec,
        mode: ActMode = "train",
        slot_offset: int = 0,
        start_steps: int = 0,
    ) -> None:
        self.policy, self.mode, self.slot_offset = policy, mode, int(slot_offset)
        self.version = -1  # learner version of the weights the policy holds; -1: none yet
        self._action_shape, self._action_dtype = spec.action_shape, spec.action_dtype
        self._state: State = {}
        self._first = np.zeros(0, bool)
        self._fresh = np.zeros(0, bool)  # the row's state was just made by `initial_state`
        self._prev_action = np.zeros((0, *self._action_shape), self._action_dtype)
        self._prev_reward = np.zeros(0, np.float32)
        self._steps = np.zeros(0, np.int64)
        self._start_steps = int(start_steps)
        self._slot_cache: dict[tuple[int, int], np.ndarray] = {}

    @property
    def rows(self) -> int:
        """Rows seen so far."""
        return int(self._first.shape[0])

    def load_weights(self, weights: Any, version: int) -> None:
        """Weights the learner published as `version`."""
        self.policy.load_weights(weights)
        self.version = int(version)

    def act(
        self, obs: Any, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Act for `rows` (default `0..n-1`) on their observations `obs [n, ...]`.

        Returns the env actions, the actions as the policy chose them, and what to record with
        the step: the policy's extras, `first`, and the state the step started from.
        """
        n = leaves(obs)[0].shape[0]
        index = self._index(n, rows)
        first = self._first[index].copy()
        stale = first & ~self._fresh[index]
        if stale.any():
            at = np.arange(self.rows)[index][stale]
            self._reset(at, self.slot_offset + at)
        slots = self._slots(index)
        at_rows = index if isinstance(index, slice) else torch.from_numpy(index)
        # Copies: a slice would be a view that what is written below overwrites, and the step
        # must record the state it started from (and its inputs stay what it was given).
        state = {key: value[at_rows].clone() for key, value in self._state.items()}
        inputs = StepInputs(
            first,
            self._prev_action[index].copy(),
            self._prev_reward[index].copy(),
            slots,
            self._steps[index].copy(),
        )
        out = self.policy.step(obs, state, inputs, self.mode)
        if out.state.keys() != self._state.keys():
            raise RuntimeError(
                f"{type(self.policy).__name__}.step returned state {sorted(out.state)}; its "
                f"initial_state has {sorted(self._state)}."
            )
        for key, value in out.state.items():
            self._state[key][at_rows] = value.detach()
        record = dict(out.extras)
        record["first"] = first
        for key, value in state.items():
            if key in record:
                raise RuntimeError(f"state {key!r} and an extra of the same name collide.")
            record[key] = value.detach().cpu().numpy()
        self._prev_action[index] = out.action
        self._prev_reward[index] = 0.0  # until `observe` reports this step's reward
        self._first[index] = False
        self._fresh[index] = False
        self._steps[index] += 1
        env_action = out.action if out.env_action is None else out.env_action
        return env_action, out.action, record

    def _index(self, n: int, rows: np.ndarray | None) -> slice | np.ndarray:
        """`rows` as an index into the store (a slice when they are `0..n-1`, the common case
        of an actor acting on all its envs), growing the store to hold them."""
        if rows is None:
            self._grow(n)
            return slice(0, n)
        index = np.asarray(rows, np.int64)
        if index.shape != (n,):
            raise ValueError(f"act got {n} observations for {index.shape[0]} rows.")
        self._grow(int(index.max()) + 1 if n else 0)
        return index

    def _slots(self, index: slice | np.ndarray) -> np.ndarray:
        if isinstance(index, slice):
            key = (index.start, index.stop)
            slots = self._slot_cache.get(key)
            if slots is None:
                slots = self._slot_cache[key] = self.slot_offset + np.arange(*key)
            return slots
        return self.slot_offset + index

    def observe(
        self, rewards: np.ndarray, ended: np.ndarray, rows: np.ndarray | None = None
    ) -> None:
        """What the rows' last actions led to: `rewards [n]` and which episodes ended there
        (`terminated | truncated`); those rows start afresh at their next `act`."""
        rewards, ended = np.asarray(rewards, np.float32), np.asarray(ended, bool)
        if rows is None:  # all rows `0..n-1`, the common case: slices, no index arrays
            n = rewards.shape[0]
            self._grow(n)
            self._prev_reward[:n] = rewards
            self._first[:n] |= ended
            self.policy.observe(self._slots(slice(0, n)), rewards, ended)
            return
        index = np.asarray(rows, np.int64)
        self._grow(int(index.max()) + 1 if index.size else 0)
        self._prev_reward[index] = rewards
        self._first[index[ended]] = True
        self.policy.observe(self._slots(index), rewards, ended)

    def restart(self, rows: np.ndarray) -> None:
        """These rows start a new episode at their next `act` (e.g. a reconnected actor)."""
        index = np.asarray(rows, np.int64)
        self._grow(int(index.max()) + 1 if index.size else 0)
        self._first[index] = True

    def _grow(self, needed: int) -> None:
        have = self.rows
        if needed <= have:
            return
        extra = needed - have
        new = self.policy.initial_state(self.slot_offset + np.arange(have, needed))
        for key, value in new.items():
            old = self._state.get(key)
            self._state[key] = value if old is None else torch.cat([old, value.to(old.device)])
        self._first = np.concatenate([self._first, np.ones(extra, bool)])
        self._fresh = np.concatenate([self._fresh, np.ones(extra, bool)])
        zeros = np.zeros((extra, *self._action_shape), self._action_dtype)
        self._prev_action = np.concatenate([self._prev_action, zeros])
        self._prev_reward = np.concatenate([self._prev_reward, np.zeros(extra, np.float32)])
        self._steps = np.concatenate([self._steps, np.full(extra, self._start_steps, np.int64)])

    def _reset(self, index: np.ndarray, slots: np.ndarray) -> None:
        """Rows `index` start an episode: fresh state, no previous action or reward."""
        fresh = self.policy.initial_state(slots)
        at = torch.from_numpy(index)
        for key, value in fresh.items():
            self._state[key][at] = value.to(self._state[key].device)
        self._prev_action[index] = 0
        self._prev_reward[index] = 0.0
