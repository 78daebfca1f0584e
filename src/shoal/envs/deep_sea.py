"""DeepSea, a hard-exploration problem: `--env shoal.envs.deep_sea:deep_sea` (size 20).

From Osband et al., "Deep Exploration via Randomized Value Functions" (JMLR 2019) and
"Behaviour Suite for Reinforcement Learning" (bsuite, ICLR 2020), with bsuite's dynamics.

Factories (the registry calls them with no arguments, and has no syntax for passing any):
- `shoal.envs.deep_sea:deep_sea`, size 20, no move cost;
- `shoal.envs.deep_sea:deep_sea_10` and `shoal.envs.deep_sea:deep_sea_20`;
- other sizes, costs or mappings: a one-line factory of your own calling `deep_sea(...)`.

Importing this module also registers the Gymnasium ids `shoal/DeepSea-v0` (size 20) and
`shoal/DeepSea10-v0` (size 10): `gym.make("shoal.envs.deep_sea:shoal/DeepSea-v0")`, or in shoal
`--env shoal/DeepSea-v0 --env.import-module shoal.envs.deep_sea`, for envs stepped in the main
process only: subprocess and Ray workers never import this module, so there use a factory string.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["DeepSea", "deep_sea", "deep_sea_10", "deep_sea_20"]


class DeepSea(gym.Env):
    """An N x N grid: start top-left, each step go down one row and left or right one column.

    Which action index means "right" is drawn for every cell from `mapping_seed`, once, at
    construction: the problem is the same in every episode, under every reset seed, in every
    run, and no fixed action sequence solves every mapping. Moves are clipped at the walls.
    The N-th action is taken on the bottom row and ends the episode (`terminated`, never
    `truncated`); it earns 1 if it is "right" taken in the bottom-right cell. So exactly one
    action sequence, N rights, is rewarded, and a uniformly random policy finds it with
    probability 2^-N per episode (9.5e-7 for N = 20). Every right action costs
    `move_cost / N` (bsuite uses 0.01), so the optimal return is `1 - move_cost` while
    never going right earns 0: with a cost, dithering exploration is discouraged from the
    one path that pays.

    Observations are float32 one-hots of the agent's cell, flattened to [N * N]; after the
    last step the agent has left the grid and the observation is all zeros. `info` holds the
    agent's `row` and `column` (row N after the last step).
    """

    def __init__(self, size: int = 20, move_cost: float = 0.0, mapping_seed: int = 0) -> None:
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
            raise ValueError(f"DeepSea size must be an int >= 1, got {size!r}; the default is 20.")
        if not np.isfinite(move_cost) or move_cost < 0:
            raise ValueError(
                f"DeepSea move_cost must be finite and >= 0, got {move_cost!r}; bsuite uses 0.01."
            )
        self.size = int(size)
        self.move_cost = float(move_cost)
        self.mapping_seed = int(mapping_seed)
        cells = self.size * self.size
        self.observation_space = gym.spaces.Box(0.0, 1.0, (cells,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        # Its own generator, not `np_random`: reset seeds must not change the problem.
        right = np.random.default_rng(self.mapping_seed).integers(0, 2, (self.size, self.size))
        right.flags.writeable = False
        self.right_action = right
        """[N, N]: the action index that moves right in cell (row, column)."""
        self._right = right.ravel().tolist()  # a list, so a step does no numpy indexing
        self._cost = self.move_cost / self.size
        self._row = self._column = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.size * self.size, np.float32)
        if self._row < self.size:
            obs[self._row * self.size + self._column] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._row = self._column = 0
        return self._obs(), {"row": 0, "column": 0}

    def step(self, action: int):
        size, row, column = self.size, self._row, self._column
        if row >= size:
            raise RuntimeError(
                f"DeepSea.step was called after the episode ended (all {size} steps taken); "
                "call reset() first."
            )
        a = int(action)
        if a != 0 and a != 1:
            raise ValueError(f"DeepSea actions are 0 or 1, got {action!r}.")
        reward = 0.0
        if a == self._right[row * size + column]:
            if column == size - 1:  # only reachable on the bottom row, by N - 1 rights
                reward = 1.0
            else:
                column += 1
            reward -= self._cost
        elif column > 0:
            column -= 1
        self._row, self._column = row + 1, column
        return self._obs(), reward, row + 1 == size, False, {"row": row + 1, "column": column}


def deep_sea(size: int = 20, move_cost: float = 0.0, mapping_seed: int = 0) -> gym.Env:
    """DeepSea with a random policy rewarded once in 2^size episodes (size 20 by default)."""
    return DeepSea(size, move_cost, mapping_seed)


def deep_sea_10() -> gym.Env:
    """DeepSea of size 10 (random policy: 1 in 1024): `--env shoal.envs.deep_sea:deep_sea_10`."""
    return DeepSea(10)


def deep_sea_20() -> gym.Env:
    """DeepSea of size 20 (random policy: 1 in 2^20): `--env shoal.envs.deep_sea:deep_sea_20`."""
    return DeepSea(20)


def _register_ids() -> None:
    # Guarded: a second import (a reload, say) would otherwise warn about overriding the ids.
    for env_id, size in (("shoal/DeepSea-v0", 20), ("shoal/DeepSea10-v0", 10)):
        if env_id not in gym.registry:
            gym.register(env_id, entry_point="shoal.envs.deep_sea:DeepSea", kwargs={"size": size})


_register_ids()
