"""Grid mazes with one far reward: `--env shoal.envs.maze:snake_maze`.

A hard-exploration problem where the novelty of a state within an episode matters (Never Give
Up's episodic reward), beside DeepSea (`shoal.envs.deep_sea`) where every state of an episode
is new. `snake_maze` is four corridors of nine cells joined at alternate ends: the goal is 38
steps from the start, an episode ends after 100 steps, and a uniformly random policy reaches
the goal with probability 8.3e-8 per episode (`random_success_probability` computes it).

`comb_maze` starts each episode at the dead end of one of 12 side corridors, drawn at random:
a few demonstrations cover only some of them, so copying them (behavioural cloning) is not
enough, while an agent that also learns from its own play can learn the rest (R2D3's claim).

Factories (the registry calls them with no arguments):
- `shoal.envs.maze:snake_maze`, the maze above;
- `shoal.envs.maze:comb_maze`, the random-start comb;
- `shortest_path_policy(maze)`: a scripted optimal policy (demonstrations for R2D3, recorded
  with `shoal.record.record_scripted`);
- other layouts: a one-line factory of your own calling `GridMaze(layout, max_steps)`, or
  `snake_layout(width, corridors)` for other snakes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

__all__ = [
    "GridMaze",
    "comb_layout",
    "comb_maze",
    "random_success_probability",
    "shortest_path_policy",
    "snake_layout",
    "snake_maze",
]

# Up, down, left, right: (row, column) steps for action indices 0-3.
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))


class GridMaze(gym.Env):
    """A maze drawn in text: `#` wall, `.` floor, `S` a start, `G` the goal.

    With several `S`, each episode starts on one of them, drawn uniformly with the env's seeded
    generator (`reset(seed=...)`); `start` is the first of them in reading order. Four actions
    move up, down, left or right; a move into a wall stays put. Reaching the goal earns 1 and
    ends the episode (`terminated`); after `max_steps` steps without it the episode is
    `truncated` with nothing earned. Observations are float32 one-hots of the
    agent's cell, flattened to [rows * columns]; `info` holds its `row` and `column`.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}

    def __init__(self, layout: list[str] | tuple[str, ...], max_steps: int) -> None:
        rows = [str(line) for line in layout]
        if not rows or any(len(line) != len(rows[0]) for line in rows):
            raise ValueError("GridMaze layout must be a non-empty list of equally long strings.")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"GridMaze max_steps must be an int >= 1, got {max_steps!r}.")
        text = "".join(rows)
        if set(text) - set("#.SG") or text.count("S") < 1 or text.count("G") != 1:
            raise ValueError(
                "GridMaze layout may hold only '#', '.', one or more 'S' and one 'G'; got "
                f"{sorted(set(text))} with {text.count('S')} S and {text.count('G')} G."
            )
        self.layout = tuple(rows)
        self.max_steps = int(max_steps)
        self.shape = (len(rows), len(rows[0]))
        self.starts = tuple(
            divmod(index, self.shape[1]) for index, mark in enumerate(text) if mark == "S"
        )
        self.start = self.starts[0]
        self.goal = divmod(text.index("G"), self.shape[1])
        self.observation_space = gym.spaces.Box(0.0, 1.0, (len(text),), np.float32)
        self.action_space = gym.spaces.Discrete(4)
        self._cell = self.start
        self._steps = 0

    def _open(self, row: int, column: int) -> bool:
        inside = 0 <= row < self.shape[0] and 0 <= column < self.shape[1]
        return inside and self.layout[row][column] != "#"

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.shape[0] * self.shape[1], np.float32)
        obs[self._cell[0] * self.shape[1] + self._cell[1]] = 1.0
        return obs

    def _info(self) -> dict[str, int]:
        return {"row": self._cell[0], "column": self._cell[1]}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        # One start: no draw, so a single-start maze's episodes do not depend on the seed.
        start = 0 if len(self.starts) == 1 else int(self.np_random.integers(len(self.starts)))
        self._cell, self._steps = self.starts[start], 0
        return self._obs(), self._info()

    def step(self, action: int):
        a = int(action)
        if not 0 <= a < 4:
            raise ValueError(
                f"GridMaze actions are 0 (up), 1 (down), 2 (left), 3 (right); got {a}."
            )
        if self._cell == self.goal or self._steps >= self.max_steps:
            raise RuntimeError("GridMaze.step was called after the episode ended; call reset().")
        row, column = self._cell[0] + MOVES[a][0], self._cell[1] + MOVES[a][1]
        if self._open(row, column):
            self._cell = (row, column)
        self._steps += 1
        reached = self._cell == self.goal
        truncated = not reached and self._steps >= self.max_steps
        return self._obs(), float(reached), reached, truncated, self._info()

    def render(self) -> str:
        lines = [list(line) for line in self.layout]
        lines[self._cell[0]][self._cell[1]] = "A"
        return "\n".join("".join(line) for line in lines)


def snake_layout(width: int, corridors: int) -> list[str]:
    """Corridors of `width` cells joined at alternate ends; S at the top left, G at the far end."""
    if width < 2 or corridors < 1:
        raise ValueError(
            f"snake_layout needs width >= 2 and corridors >= 1, got {width}, {corridors}"
        )
    rows = [list("#" * (width + 2))]
    for corridor in range(corridors):
        rows.append(list("#" + "." * width + "#"))
        if corridor < corridors - 1:  # the wall to the next corridor, open at this one's far end
            rows.append(list("#" * (width + 2)))
            rows[-1][width if corridor % 2 == 0 else 1] = "."
    rows.append(list("#" * (width + 2)))
    rows[1][1] = "S"
    rows[-2][width if corridors % 2 == 1 else 1] = "G"
    return ["".join(row) for row in rows]


def snake_maze() -> gym.Env:
    """Four corridors of nine cells, 100 steps: a random policy succeeds with p = 8.3e-8."""
    return GridMaze(snake_layout(9, 4), max_steps=100)


def comb_layout(teeth: int, depth: int) -> list[str]:
    """A corridor along the top with `teeth` dead-end side corridors of `depth` cells hanging
    from it, one every other column; an `S` at the bottom of each, the `G` at the corridor's
    right end."""
    if teeth < 1 or depth < 1:
        raise ValueError(f"comb_layout needs teeth >= 1 and depth >= 1, got {teeth}, {depth}")
    width = 2 * teeth + 1  # a tooth on every odd column, the goal one beyond the last
    rows = [list("#" * (width + 2)), list("#" + "." * width + "#")]
    for level in range(depth):
        row = list("#" * (width + 2))
        for tooth in range(teeth):
            row[1 + 2 * tooth] = "S" if level == depth - 1 else "."
        rows.append(row)
    rows.append(list("#" * (width + 2)))
    rows[1][width] = "G"
    return ["".join(row) for row in rows]


def comb_maze() -> gym.Env:
    """12 teeth 6 deep, 100 steps: each episode starts at a random tooth's dead end, 8 to 30
    steps from the goal (a uniformly random policy reaches it with p = 0.047 per episode)."""
    return GridMaze(comb_layout(12, 6), max_steps=100)


def random_success_probability(maze: GridMaze) -> float:
    """The exact probability that uniformly random actions reach the goal within `max_steps`,
    from a start drawn uniformly among the maze's starts.

    The distribution over cells after each step, with the goal absorbing, in float64.
    """
    rows, columns = maze.shape
    cells = rows * columns
    move = np.zeros((cells, cells))
    for row in range(rows):
        for column in range(columns):
            here = row * columns + column
            for d_row, d_column in MOVES:
                to_row, to_column = row + d_row, column + d_column
                if not maze._open(to_row, to_column):
                    to_row, to_column = row, column
                move[here, to_row * columns + to_column] += 0.25
    goal = maze.goal[0] * columns + maze.goal[1]
    move[goal] = 0.0
    move[goal, goal] = 1.0
    where = np.zeros(cells)
    for row, column in maze.starts:
        where[row * columns + column] += 1.0 / len(maze.starts)
    for _ in range(maze.max_steps):
        where = where @ move
    return float(where[goal])


def shortest_path_policy(maze: GridMaze) -> Callable[[np.ndarray], int]:
    """A scripted optimal policy for `maze`: from the cell its observation's one-hot names, the
    first of up, down, left, right that leads one step closer to the goal (distances by
    breadth-first search from the goal). It reaches the goal in the fewest steps."""
    rows, columns = maze.shape
    distance = np.full((rows, columns), -1, np.int64)
    distance[maze.goal] = 0
    frontier = deque([maze.goal])
    while frontier:
        row, column = frontier.popleft()
        for d_row, d_column in MOVES:
            near = (row + d_row, column + d_column)
            if maze._open(*near) and distance[near] < 0:
                distance[near] = distance[row, column] + 1
                frontier.append(near)
    if any(distance[start] < 0 for start in maze.starts):
        raise ValueError("The maze's goal cannot be reached from each of its starts.")

    def act(obs: np.ndarray) -> int:
        row, column = divmod(int(np.argmax(obs)), columns)
        for action, (d_row, d_column) in enumerate(MOVES):
            near = (row + d_row, column + d_column)
            if maze._open(*near) and distance[near] == distance[row, column] - 1:
                return action
        raise ValueError(f"No move leads closer to the goal from cell {(row, column)}.")

    return act
