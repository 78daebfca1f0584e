"""Unrolls assembled next to the learner from what env-only actors send (central inference)."""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.data import Unroll
from shoal.envs.spec import EnvSpec
from shoal.tree import map_tree


class TrajectoryAssembler:
    """Builds one actor's `[T, E]` unrolls step by step, as `UnrollCollector.collect` would.

    Per step: `observe(obs)` (the first observation, or the one a step led to, via `result`),
    then `acted(actions, extras, version)`, then `result(...)` once the actor stepped its envs.
    Every T results complete an unroll whose last observation starts the next one.
    """

    def __init__(self, spec: EnvSpec, length: int, env_slot: int = 0) -> None:
        self.spec, self.length, self.env_slot = spec, length, env_slot
        self._clear()

    def _clear(self) -> None:
        self._obs: list[Any] = []
        self._actions: list[np.ndarray] = []
        self._extras: list[dict[str, np.ndarray]] = []
        self._rewards: list[np.ndarray] = []
        self._terminated: list[np.ndarray] = []
        self._truncated: list[np.ndarray] = []
        self._final_obs: list[Any] = []
        self._final_index: list[tuple[int, int]] = []
        self._version: int | None = None

    @property
    def steps(self) -> int:
        """Completed steps of the unroll being built."""
        return len(self._rewards)

    def observe(self, obs: Any) -> None:
        if len(self._obs) != self.steps:
            raise RuntimeError("observe() twice without a step result in between")
        self._obs.append(obs)

    def acted(self, actions: np.ndarray, extras: dict[str, np.ndarray], version: int) -> None:
        if len(self._actions) != self.steps or len(self._obs) != self.steps + 1:
            raise RuntimeError("acted() must follow observe() once per step")
        self._actions.append(actions)
        self._extras.append(extras)
        self._version = version if self._version is None else min(self._version, version)

    def result(
        self,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        final_obs: dict[int, Any],
        next_obs: Any,
    ) -> Unroll | None:
        """Record a step's outcome; the finished unroll every `length` steps, else None.

        `final_obs` holds the last observation of each env whose episode was truncated (its
        `next_obs` entry is already the next episode's first).
        """
        if len(self._actions) != self.steps + 1:
            raise RuntimeError("result() must follow acted()")
        t = self.steps
        self._rewards.append(np.asarray(reward, np.float32))
        self._terminated.append(np.asarray(terminated, bool))
        self._truncated.append(np.asarray(truncated, bool))
        for b, last in final_obs.items():
            if truncated[b] and not terminated[b]:
                self._final_obs.append(last)
                self._final_index.append((t, int(b)))
        self._obs.append(next_obs)
        if self.steps < self.length:
            return None
        unroll = self._unroll()
        self._clear()
        self._obs.append(next_obs)
        return unroll

    def _unroll(self) -> Unroll:
        stack = lambda *xs: np.stack(xs)  # noqa: E731
        return Unroll(
            obs=map_tree(stack, *self._obs),
            actions=np.stack(self._actions),
            rewards=np.stack(self._rewards),
            terminated=np.stack(self._terminated),
            truncated=np.stack(self._truncated),
            extras={k: np.stack([e[k] for e in self._extras]) for k in self._extras[0]},
            final_obs=(
                map_tree(stack, *self._final_obs) if self._final_obs else self.spec.allocate_obs(0)
            ),
            final_index=np.array(self._final_index, np.int64).reshape(-1, 2),
            behaviour_version=int(self._version or 0),
            env_slot=self.env_slot,
        )
