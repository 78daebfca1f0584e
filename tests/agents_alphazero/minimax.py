"""A perfect tic-tac-toe player: negamax over every position (5478 of them), memoised."""

from __future__ import annotations

import functools

import numpy as np

from shoal.envs.board_games import TicTacToe


@functools.cache
def value(board: bytes) -> float:
    """The game's value for the player to move on `board` (1: mover's stones, -1: the other's)
    under perfect play by both."""
    game = TicTacToe(np.frombuffer(board, np.int8).reshape(3, 3).copy())
    game.last_won = bool(
        (
            game.board.reshape(9)[
                [
                    [0, 1, 2],
                    [3, 4, 5],
                    [6, 7, 8],
                    [0, 3, 6],
                    [1, 4, 7],
                    [2, 5, 8],
                    [0, 4, 8],
                    [2, 4, 6],
                ]
            ]
            == -1
        )
        .all(axis=1)
        .any()
    )
    result = game.terminal_value()
    if result is not None:
        return result
    return max(
        -value(game.apply(int(a)).board.tobytes()) for a in np.flatnonzero(game.legal_actions())
    )


def move_values(obs: dict) -> dict[int, float]:
    """Each legal move's value for the player to move in PettingZoo's observation `obs`."""
    game = TicTacToe.from_observation(obs)
    return {
        int(a): -value(game.apply(int(a)).board.tobytes())
        for a in np.flatnonzero(obs["action_mask"])
    }


def perfect_move(obs: dict, rng: np.random.Generator) -> int:
    """One of the optimal moves, uniformly."""
    values = move_values(obs)
    best = max(values.values())
    return int(rng.choice([a for a, v in values.items() if v == best]))
