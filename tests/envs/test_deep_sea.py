"""DeepSea (Osband et al. 2019): one rewarded action sequence, found at random once in 2^N."""

from __future__ import annotations

import copy
import itertools
import warnings
from dataclasses import dataclass
from fractions import Fraction

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from shoal.envs import make_env
from shoal.envs.config import EnvConfig
from shoal.envs.deep_sea import DeepSea, deep_sea, deep_sea_10, deep_sea_20


@dataclass
class Exploration:
    p_reward: Fraction  # exact probability that a uniformly random policy is rewarded
    ends: set[tuple[int, bool, bool]]  # (step, terminated, truncated) of every episode end
    rights: dict[tuple[int, int], int]  # (row, column) -> the action seen to move right there
    rewards: set[float]  # every reward any transition paid


def _explore(env: DeepSea, seed: int = 0) -> Exploration:
    """Dynamic programming over every reachable state, by stepping copies of `env` itself.

    States are keyed by observation (a one-hot of the cell), and each carries the probability
    that a uniformly random policy reaches it; nothing of the dynamics is re-implemented here.
    """
    obs, info = env.reset(seed=seed)
    frontier = {obs.tobytes(): (env, (info["row"], info["column"]), Fraction(1))}
    result = Exploration(Fraction(0), set(), {}, set())
    for t in itertools.count(1):
        assert t <= 4 * env.size, "an episode outlived any sensible bound"
        if not frontier:
            return result
        following: dict[bytes, tuple[DeepSea, tuple[int, int], Fraction]] = {}
        for state, (row, column), p in frontier.values():
            for action in (0, 1):
                child = copy.deepcopy(state)
                obs, reward, terminated, truncated, info = child.step(action)
                result.rewards.add(reward)
                if reward > 0:
                    result.p_reward += p / 2
                if info["column"] > column or reward > 0:
                    result.rights[(row, column)] = action
                if terminated or truncated:
                    result.ends.add((t, terminated, truncated))
                    continue
                cell = (info["row"], info["column"])
                assert obs.dtype == np.float32 and obs.sum() == 1.0
                assert obs.reshape(env.size, env.size)[cell] == 1.0
                _, _, q = following.get(obs.tobytes(), (child, cell, Fraction(0)))
                following[obs.tobytes()] = (child, cell, q + p / 2)
        frontier = following
    raise AssertionError("unreachable")


def _solution(env: DeepSea) -> tuple[int, ...]:
    """The per-cell "right" actions along the diagonal: the path that goes right every step."""
    return tuple(int(env.right_action[t, t]) for t in range(env.size))


def _play(env: DeepSea, actions, seed: int = 0) -> tuple[list[float], list[bool], list[dict]]:
    _, info = env.reset(seed=seed)
    rewards, ends, infos = [], [], [info]
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        ends.append(terminated or truncated)
        infos.append(info)
    return rewards, ends, infos


@pytest.mark.parametrize("size", [1, 4, 20])
def test_passes_the_gymnasium_env_checker(size):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker reports most problems as warnings
        check_env(DeepSea(size, move_cost=0.01), skip_render_check=True)


def test_exactly_the_per_cell_right_actions_are_rewarded():
    env = DeepSea(10)
    rewarded = []
    for actions in itertools.product((0, 1), repeat=env.size):
        rewards, ends, _ = _play(env, actions)
        assert ends == [False] * (env.size - 1) + [True]
        if sum(rewards) > 0:
            rewarded.append(actions)
    assert rewarded == [_solution(env)]


def test_the_right_path_returns_one_and_terminates_after_size_steps():
    env = deep_sea()
    rewards, ends, infos = _play(env, _solution(env))
    assert rewards == [0.0] * 19 + [1.0]
    assert ends == [False] * 19 + [True]
    assert (infos[-1]["row"], infos[-1]["column"]) == (20, 19)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    # Moving left at the last step from the same cell is not rewarded.
    rewards, _, _ = _play(env, (*_solution(env)[:-1], 1 - _solution(env)[-1]))
    assert rewards == [0.0] * 20


@pytest.mark.parametrize("size", [1, 5, 20])
def test_every_episode_terminates_after_exactly_size_steps(size):
    assert _explore(DeepSea(size)).ends == {(size, True, False)}


@pytest.mark.parametrize(("size", "mapping_seed"), [(1, 0), (3, 0), (8, 5), (20, 0), (20, 1)])
def test_a_random_policy_is_rewarded_with_probability_two_to_minus_size(size, mapping_seed):
    explored = _explore(DeepSea(size, mapping_seed=mapping_seed))
    assert explored.rewards == {0.0, 1.0}
    assert explored.p_reward == Fraction(1, 2**size)


def test_the_default_size_is_rewarded_at_random_less_than_once_in_a_million_episodes():
    env = deep_sea()
    assert env.size == 20
    assert float(_explore(env).p_reward) < 1e-6


def test_a_random_policy_is_rewarded_about_once_in_sixteen_episodes_of_size_4():
    env, episodes = DeepSea(4), 20_000
    actions = np.random.default_rng(0).integers(0, 2, (episodes, 4))
    rewarded = 0
    for i in range(episodes):
        rewards, ends, _ = _play(env, actions[i], seed=i)
        assert ends == [False, False, False, True]
        rewarded += sum(rewards) > 0
    # Standard error 0.0017: 1/8 or 1/32 (one row too few or too many) are far outside.
    assert abs(rewarded / episodes - 1 / 16) < 0.008


def test_the_mapping_is_fixed_by_mapping_seed_alone():
    env = DeepSea(20)
    rights = _explore(env, seed=0).rights
    assert len(rights) == 20 * 21 // 2  # every cell on or below the diagonal is reachable
    assert rights == {cell: int(env.right_action[cell]) for cell in rights}
    for seed in (1, 123, None):
        assert _explore(env, seed=seed).rights == rights
        assert _explore(DeepSea(20), seed=seed).rights == rights
    # Drawn per cell, not per row: some row has both actions meaning "right".
    assert any(len({rights[(r, c)] for c in range(r + 1)}) == 2 for r in range(20))
    other = DeepSea(20, mapping_seed=1)
    assert _explore(other).rights != rights
    assert sum(_play(other, _solution(env))[0]) == 0.0
    # No fixed sequence solves every mapping: eight seeds, eight different solutions.
    assert len({_solution(DeepSea(20, mapping_seed=s)) for s in range(8)}) == 8


def test_the_default_mapping_is_the_same_in_every_run():
    # A change here (numpy's generator stream, say) makes results incomparable across versions.
    assert "".join(map(str, _solution(deep_sea()))) == "11001111010101101111"


def test_move_cost_is_charged_on_right_moves_only():
    env = DeepSea(4, move_cost=0.4)
    for actions in itertools.product((0, 1), repeat=4):
        rewards, _, infos = _play(env, actions)
        # infos[i] is where action i was taken (infos[0] comes from reset).
        for action, reward, before in zip(actions, rewards, infos, strict=False):
            if action == env.right_action[before["row"], before["column"]]:
                bonus = 1.0 if before == {"row": 3, "column": 3} else 0.0
                assert reward == pytest.approx(bonus - 0.1)
            else:
                assert reward == 0.0
    assert sum(_play(env, _solution(env))[0]) == pytest.approx(1.0 - 0.4)
    lefts = [1 - int(env.right_action[t, 0]) for t in range(4)]  # hugging the left wall
    assert _play(env, lefts)[0] == [0.0] * 4


def test_factories_and_gymnasium_ids_build_the_right_sizes():
    env = make_env("shoal.envs.deep_sea:deep_sea")
    assert isinstance(env, DeepSea)
    assert (env.size, env.move_cost, env.mapping_seed) == (20, 0.0, 0)
    assert env.observation_space.shape == (400,) and env.action_space.n == 2
    assert make_env("shoal.envs.deep_sea:deep_sea_10").size == 10
    assert deep_sea_10().size == 10 and deep_sea_20().size == 20
    assert gym.make("shoal/DeepSea-v0").unwrapped.size == 20
    assert gym.make("shoal/DeepSea10-v0").unwrapped.size == 10
    config = EnvConfig(import_module="shoal.envs.deep_sea")
    assert make_env("shoal/DeepSea10-v0", config).unwrapped.size == 10


def test_bad_arguments_and_actions_are_explained():
    with pytest.raises(ValueError, match="size must be an int >= 1"):
        DeepSea(0)
    with pytest.raises(ValueError, match="move_cost must be finite and >= 0"):
        DeepSea(4, move_cost=-0.01)
    with pytest.raises(ValueError, match="move_cost must be finite"):
        DeepSea(4, move_cost=float("nan"))
    env = DeepSea(4)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="actions are 0 or 1, got 2"):
        env.step(2)
