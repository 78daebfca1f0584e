"""Grid mazes: the snake maze's goal is far, and a random policy almost never reaches it."""

from __future__ import annotations

import copy
import itertools
from collections import deque

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from shoal.envs import make_env
from shoal.envs.maze import (
    GridMaze,
    comb_maze,
    random_success_probability,
    shortest_path_policy,
    snake_layout,
    snake_maze,
)


def _shortest_actions(env: GridMaze) -> list[int]:
    """Breadth-first search over cells by stepping copies of the env itself."""
    env.reset(seed=0)
    seen = {env.start}
    queue = deque([(env, [])])
    while queue:
        state, actions = queue.popleft()
        for action in range(4):
            child = copy.deepcopy(state)
            _, reward, terminated, _, info = child.step(action)
            if reward > 0:
                return [*actions, action]
            cell = (info["row"], info["column"])
            if not terminated and cell not in seen:
                seen.add(cell)
                queue.append((child, [*actions, action]))
    raise AssertionError("the goal is unreachable")


def test_snake_maze_is_four_corridors_with_the_goal_38_steps_away():
    env = snake_maze()
    assert env.render().splitlines() == [
        "###########",
        "#A........#",
        "#########.#",
        "#.........#",
        "#.#########",
        "#.........#",
        "#########.#",
        "#G........#",
        "###########",
    ]
    solution = _shortest_actions(env)
    assert len(solution) == 38
    env.reset(seed=0)
    for t, action in enumerate(solution, 1):
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs.dtype == np.float32 and obs.sum() == 1.0
        assert obs.reshape(env.shape)[info["row"], info["column"]] == 1.0
        assert (reward, terminated, truncated) == (
            (1.0, True, False) if t == 38 else (0, False, False)
        )
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(0)


def test_walls_stop_moves_and_the_step_limit_truncates_without_reward():
    env = snake_maze()
    env.reset(seed=0)
    for t in range(1, 101):
        _, reward, terminated, truncated, info = env.step(0)  # up, into the wall every time
        assert (info["row"], info["column"]) == env.start
        assert reward == 0.0 and not terminated and truncated == (t == 100)


def test_random_success_probability_equals_counting_every_action_sequence():
    # A small maze, every one of the 4^6 action sequences played on the env itself.
    maze = GridMaze(snake_layout(3, 2), max_steps=6)
    successes = 0
    for actions in itertools.product(range(4), repeat=maze.max_steps):
        maze.reset(seed=0)
        for action in actions:
            _, reward, terminated, truncated, _ = maze.step(action)
            if terminated or truncated:
                successes += reward > 0
                break
    assert successes > 0
    assert random_success_probability(maze) == pytest.approx(successes / 4**6, rel=1e-12)


def test_the_snake_maze_is_a_hard_exploration_problem():
    p = random_success_probability(snake_maze())
    assert 1e-8 < p < 1e-6  # 8.3e-8: under the bound of one in a million


def test_gymnasium_checker_and_the_registry_accept_it():
    check_env(snake_maze(), skip_render_check=True)
    env = make_env("shoal.envs.maze:snake_maze")
    assert isinstance(env, GridMaze)
    assert env.observation_space.shape == (99,) and env.action_space.n == 4


@pytest.mark.parametrize(
    ("layout", "max_steps", "message"),
    [
        (["#S#", "#G"], 10, "equally long"),
        (["S..", "..."], 10, "one or more 'S' and one 'G'"),
        (["S.x", "..G"], 10, "may hold only"),
        (["S.G"], 0, "max_steps must be an int >= 1"),
    ],
)
def test_bad_layouts_are_explained(layout, max_steps, message):
    with pytest.raises(ValueError, match=message):
        GridMaze(layout, max_steps)


def test_bad_actions_are_explained():
    env = snake_maze()
    env.reset(seed=0)
    with pytest.raises(
        ValueError, match=r"actions are 0 \(up\), 1 \(down\), 2 \(left\), 3 \(right\)"
    ):
        env.step(4)


def test_the_comb_maze_starts_at_a_random_tooth_and_its_seed_fixes_which():
    env = comb_maze()
    assert len(env.starts) == 12 and all(row == 7 for row, _ in env.starts)
    drawn = set()
    for seed in range(200):
        env.reset(seed=seed)
        first = env._cell
        env.reset(seed=seed)
        assert env._cell == first  # the same seed, the same tooth
        drawn.add(first)
    assert drawn == set(env.starts)
    # A single-start maze ignores the seed, as before.
    snake = snake_maze()
    assert {snake.reset(seed=seed)[1]["row"] for seed in range(20)} == {snake.start[0]}


def test_the_comb_maze_shortest_paths_run_up_the_tooth_then_right():
    env = comb_maze()
    act = shortest_path_policy(env)
    for seed in range(40):
        obs, info = env.reset(seed=seed)
        column, steps, reward = info["column"], 0, 0.0
        terminated = truncated = False
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(act(obs))
            steps += 1
        assert reward == 1.0 and steps == 6 + (25 - column)  # 8 to 30 steps


def test_the_comb_maze_random_success_probability_averages_its_starts():
    env = comb_maze()
    per_start = []
    for start in env.starts:
        layout = [line.replace("S", ".") for line in env.layout]
        row = list(layout[start[0]])
        row[start[1]] = "S"
        layout[start[0]] = "".join(row)
        per_start.append(random_success_probability(GridMaze(layout, env.max_steps)))
    p = random_success_probability(env)
    assert p == pytest.approx(sum(per_start) / len(per_start), rel=1e-12)
    assert 0.01 < p < 0.1  # 0.047: easy to stumble on, hard to copy from 10 episodes
