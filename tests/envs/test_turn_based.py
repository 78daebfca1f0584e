"""Turn-based PettingZoo games: shoal's game states agree with PettingZoo move by move, and the
classic games run as rows of a vector env."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo.classic")

import pettingzoo

from shoal.envs.board_games import ConnectFour, TicTacToe
from shoal.envs.config import EnvConfig
from shoal.envs.registry import make_vector_env, resolve_env, spec_of_source

CASES = [("classic/tictactoe-v3", TicTacToe), ("classic/connect_four-v3", ConnectFour)]


@pytest.mark.parametrize(("module", "cls"), CASES, ids=["tictactoe", "connect_four"])
def test_game_states_agree_with_pettingzoo_on_random_games(module, cls):
    rng = np.random.default_rng(0)
    results = set()
    for game_index in range(60):
        env = pettingzoo.make("aec", module)
        env.reset(seed=game_index)
        game = cls()
        while True:
            mover = env.agent_selection
            obs = env.observe(mover)
            mine = game.observation()
            np.testing.assert_array_equal(mine["observation"], obs["observation"])
            np.testing.assert_array_equal(mine["action_mask"], obs["action_mask"])
            rebuilt = cls.from_observation(obs)
            np.testing.assert_array_equal(rebuilt.board, game.board)
            assert rebuilt.terminal_value() == game.terminal_value() is None
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            env.step(action)
            game = game.apply(action)
            if all(env.terminations.values()):
                # the player to move in `game` is the one who did not make the last move
                other = next(a for a in env.agents if a != mover)
                assert game.terminal_value() == env.rewards[other]
                assert env.rewards[mover] == -env.rewards[other]
                assert not game.legal_actions().any()
                results.add(env.rewards[mover])
                break
            assert game.terminal_value() is None
        env.close()
    assert results >= {1, 0} or results >= {1}  # wins were seen (draws in tic-tac-toe too)


def test_apply_refuses_an_occupied_cell_and_a_full_column():
    game = TicTacToe().apply(4)
    with pytest.raises(ValueError, match="taken"):
        game.apply(4)
    c4 = ConnectFour()
    for _ in range(6):
        c4 = c4.apply(3)
    assert not c4.legal_actions()[3]
    with pytest.raises(ValueError, match="full"):
        c4.apply(3)


def test_from_observation_sees_a_finished_game():
    game = TicTacToe()
    for action in (0, 3, 1, 4, 2):  # the first player completes the top row
        game = game.apply(action)
    rebuilt = TicTacToe.from_observation(game.observation())
    assert rebuilt.terminal_value() == -1.0 and rebuilt.last_won


@pytest.mark.parametrize("env_id", ["tictactoe", "connect_four", "pettingzoo:classic.tictactoe_v3"])
def test_classic_ids_run_as_rows_with_rewards_to_each_player(env_id):
    source = resolve_env(env_id)
    spec = spec_of_source(source)
    assert spec.num_agents == 2 and spec.dict_obs
    assert set(spec.observation_space.spaces) == {"observation", "action_mask"}
    env = make_vector_env(source, spec, EnvConfig(), num_envs=3, seed=0)
    obs = env.reset()
    rng = np.random.default_rng(1)
    ended = 0
    for _ in range(200):
        mask = obs["action_mask"]
        # one mover per game; the other row's mask is all zeros
        assert np.array_equal(mask.any(axis=1), env.active)
        assert env.active.reshape(3, 2).sum(axis=1).tolist() == [1, 1, 1]
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in mask])
        step = env.step(actions)
        done = step.terminated.reshape(3, 2)
        assert (done[:, 0] == done[:, 1]).all()  # both players' episodes end with the game
        for g in np.flatnonzero(done[:, 0]):
            r = step.reward.reshape(3, 2)[g]
            assert r[0] == -r[1] and abs(r[0]) in (0.0, 1.0)
            ended += 1
        # zero-sum: each finished game's players' returns cancel, the loser's counted too
        assert step.episode_metrics.get("team_return", []) == [0.0] * int(done[:, 0].sum())
        players = [v for k, v in step.episode_metrics.items() if k.startswith("return_")]
        if done.any():
            assert len(players) == 2 and [-x for x in players[0]] == players[1]
        obs = step.obs
    env.close()
    assert ended > 10
