"""Two halves of a vector env that step asynchronously: double-buffered sampling.

With one synchronous vector env, the emulator threads idle while Python records a step and the
policy acts, and Python idles while they step. Split into two halves with `send`/`recv` (as
Sample Factory's double-buffered workers do), half B steps while the policy acts on half A, so
the two overlap (`UnrollCollector` pipelines them). `step` still works and steps both halves
together, so every caller of the `VectorEnv` protocol can use the split env unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.envs.vector import VectorStep


def merge_steps(steps: list[VectorStep], offsets: list[int]) -> VectorStep:
    """The halves' steps as one step of all envs (env indices shifted by each half's offset)."""
    final_obs = {
        offset + i: last
        for step, offset in zip(steps, offsets, strict=True)
        for i, last in step.final_obs.items()
    }
    return VectorStep(
        obs=np.concatenate([s.obs for s in steps]),
        reward=np.concatenate([s.reward for s in steps]),
        terminated=np.concatenate([s.terminated for s in steps]),
        truncated=np.concatenate([s.truncated for s in steps]),
        final_obs=final_obs,
        episode_returns=[r for s in steps for r in s.episode_returns],
        episode_lengths=[n for s in steps for n in s.episode_lengths],
    )


class SplitVectorEnv:
    """E envs as two vector envs with `send`/`recv`, envs `[0, E1)` and `[E1, E)`."""

    def __init__(self, halves: list[Any]) -> None:
        if len(halves) != 2:
            raise ValueError(f"SplitVectorEnv takes two halves, got {len(halves)}.")
        self.halves = halves
        self.spec = halves[0].spec
        self.frames_per_step = getattr(halves[0], "frames_per_step", 1)
        sizes = [half.num_envs for half in halves]
        self.num_envs = sum(sizes)
        self.offsets = [0, sizes[0]]
        self.slices = [slice(0, sizes[0]), slice(sizes[0], self.num_envs)]

    def reset(self) -> np.ndarray:
        return np.concatenate([half.reset() for half in self.halves])

    def step(self, actions: np.ndarray) -> VectorStep:
        for half, part in zip(self.halves, self.slices, strict=True):
            half.send(actions[part])
        return merge_steps([half.recv() for half in self.halves], self.offsets)

    def close(self) -> None:
        for half in self.halves:
            half.close()
