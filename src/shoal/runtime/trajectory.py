"""Unrolls assembled step by step: one assembler for every place that makes them.

`Steps` holds one `[T, E]` unroll being assembled, and is where the rule for a step's outcome
is written once: a truncated (not terminated) episode's last observation is kept beside the
unroll (`final_obs`, `final_index`), so a learner can bootstrap from it, while the unroll's
next observation of that env is already the next episode's first. The actor loop
(`UnrollCollector`, all envs at once or half at a time) fills it directly; `TrajectoryAssembler`
fills it from what env-only actors send (central inference), one call at a time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.data import Unroll
from shoal.envs.spec import EnvSpec
from shoal.tree import assign, leaves, map_tree

__all__ = ["Steps", "TrajectoryAssembler"]


class Steps:
    """One `[T, E]` unroll of `width` envs, written step by step (a step's envs may come in
    parts, e.g. the halves of a double-buffered env), then stacked by `unroll`."""

    def __init__(self, spec: EnvSpec, length: int, width: int) -> None:
        self.spec = spec
        self.obs = spec.allocate_obs(length + 1, width)
        self.rewards = np.empty((length, width), np.float32)
        self.terminated = np.empty((length, width), bool)
        self.truncated = np.empty((length, width), bool)
        self.actions: list[list[np.ndarray]] = [[] for _ in range(length)]
        self.extras: list[list[dict[str, np.ndarray]]] = [[] for _ in range(length)]
        self.final_obs: list[Any] = []
        self.final_index: list[tuple[int, int]] = []

    def acted(self, t: int, actions: np.ndarray, extras: dict[str, np.ndarray]) -> None:
        """What the policy chose at step t for the next part of the envs."""
        self.actions[t].append(actions)
        self.extras[t].append(extras)

    def result(
        self,
        t: int,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        final_obs: dict[int, Any],
        offset: int = 0,
    ) -> None:
        """Step t's outcome for envs `[offset, offset + len(reward))`. `final_obs` holds the
        last observation of each of them whose episode ended (by index within the part)."""
        part = slice(offset, offset + len(reward))
        self.rewards[t, part] = reward
        self.terminated[t, part] = terminated
        self.truncated[t, part] = truncated
        for b, last in final_obs.items():
            if truncated[b] and not terminated[b]:
                self.final_obs.append(last)
                self.final_index.append((t, offset + b))

    def unroll(self, version: int, env_slot: int) -> Unroll:
        def joined(parts: list[np.ndarray]) -> np.ndarray:
            return parts[0] if len(parts) == 1 else np.concatenate(parts)

        extras = {
            k: np.stack([joined([e[k] for e in step]) for step in self.extras])
            for k in self.extras[0][0]
        }
        return Unroll(
            obs=self.obs,
            actions=np.stack([joined(a) for a in self.actions]),
            rewards=self.rewards,
            terminated=self.terminated,
            truncated=self.truncated,
            extras=extras,
            final_obs=(
                map_tree(lambda *xs: np.stack(xs), *self.final_obs)
                if self.final_obs
                else self.spec.allocate_obs(0)
            ),
            final_index=np.array(self.final_index, np.int64).reshape(-1, 2),
            behaviour_version=version,
            env_slot=env_slot,
        )


class TrajectoryAssembler:
    """Builds one actor's `[T, E]` unrolls step by step, as `UnrollCollector.collect` would.

    Per step: `observe(obs)` (the first observation, or the one a step led to, via `result`),
    then `acted(actions, extras, version)`, then `result(...)` once the actor stepped its envs.
    Every T results complete an unroll whose last observation starts the next one.
    """

    def __init__(self, spec: EnvSpec, length: int, env_slot: int = 0) -> None:
        self.spec, self.length, self.env_slot = spec, length, env_slot
        self._steps: Steps | None = None  # made at the first observation, which gives E
        self._t = 0
        self._observed = False  # the observation of step t is in
        self._acted = False  # the actions of step t are in
        self._version: int | None = None

    @property
    def steps(self) -> int:
        """Completed steps of the unroll being built."""
        return self._t

    def observe(self, obs: Any) -> None:
        if self._observed:
            raise RuntimeError("observe() twice without a step result in between")
        if self._steps is None:
            self._steps = Steps(self.spec, self.length, leaves(obs)[0].shape[0])
        assign(self._steps.obs, self._t, obs)
        self._observed = True

    def acted(self, actions: np.ndarray, extras: dict[str, np.ndarray], version: int) -> None:
        if self._acted or not self._observed:
            raise RuntimeError("acted() must follow observe() once per step")
        assert self._steps is not None
        self._steps.acted(self._t, actions, extras)
        self._acted = True
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
        if not self._acted:
            raise RuntimeError("result() must follow acted()")
        steps = self._steps
        assert steps is not None
        steps.result(self._t, reward, terminated, truncated, final_obs)
        self._t += 1
        self._acted = False
        assign(steps.obs, self._t, next_obs)
        if self._t < self.length:
            return None
        unroll = steps.unroll(int(self._version or 0), self.env_slot)
        self._steps = Steps(self.spec, self.length, leaves(next_obs)[0].shape[0])
        assign(self._steps.obs, 0, next_obs)
        self._t, self._version = 0, None
        return unroll
