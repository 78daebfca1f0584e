"""Tic-tac-toe and connect four as clonable game states for tree search (AlphaZero).

A search needs to play moves ahead of the real game and take them back, which a PettingZoo env
cannot do cheaply (no cloning, a dict per step). These states are small numpy boards that
follow PettingZoo's rules exactly (`classic.tictactoe_v3`, `classic.connect_four_v3`; the tests
play both side by side on random games), seen from the player to move:

- `board` `[H, W]` int8: 1 for the mover's stones, -1 for the opponent's, 0 empty;
- `observation()` is what PettingZoo's `observe(agent_selection)` gives, the dict of
  `observation` `[H, W, 2]` int8 (plane 0 the mover's stones, plane 1 the opponent's) and
  `action_mask` `[A]` int8;
- `from_observation(obs)` rebuilds the state from such an observation: the canonical board holds
  everything about a position in these games, so a policy handed PettingZoo's observation can
  search from it.

`apply(action)` returns the state after the move (the mover changes); `terminal_value()` is
the game's result for the player to move once it has ended (-1: the opponent's last move won;
0: a draw), else None.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

__all__ = ["BoardGame", "ConnectFour", "TicTacToe", "game_class"]


class BoardGame:
    """A two-player, zero-sum, turn-based board game seen by the player to move."""

    rows: ClassVar[int]
    cols: ClassVar[int]
    num_actions: ClassVar[int]
    name: ClassVar[str]

    __slots__ = ("board", "last_won", "moves")

    def __init__(self, board: np.ndarray | None = None, last_won: bool = False) -> None:
        if board is None:
            board = np.zeros((self.rows, self.cols), np.int8)
        self.board = board
        self.last_won = last_won  # the move that led here completed a line of the opponent's
        self.moves = int(np.count_nonzero(board))

    @classmethod
    def from_observation(cls, obs: Any) -> BoardGame:
        """The state PettingZoo's observation `{"observation": [H, W, 2], ...}` shows (whether
        the previous move won is read off the board)."""
        planes = np.asarray(obs["observation"] if isinstance(obs, dict) else obs)
        if planes.shape != (cls.rows, cls.cols, 2):
            raise ValueError(
                f"A {cls.name} observation has shape {(cls.rows, cls.cols, 2)}, got {planes.shape}."
            )
        board = (planes[..., 0] != 0).astype(np.int8) - (planes[..., 1] != 0).astype(np.int8)
        game = cls(board)
        game.last_won = game._has_line(-1)
        return game

    def clone(self) -> BoardGame:
        game = type(self)(self.board.copy(), self.last_won)
        return game

    def legal_actions(self) -> np.ndarray:
        """`[A]` bool: the moves the player to move may make (none once the game has ended)."""
        raise NotImplementedError

    def apply(self, action: int) -> BoardGame:
        """The state after the player to move plays `action` (a legal one), seen by the other."""
        raise NotImplementedError

    def terminal_value(self) -> float | None:
        """The result for the player to move if the game has ended (-1 lost, 0 drawn)."""
        if self.last_won:
            return -1.0
        if self.moves == self.rows * self.cols:
            return 0.0
        return None

    def observation(self) -> dict[str, np.ndarray]:
        """PettingZoo's observation of the player to move."""
        planes = np.stack([self.board == 1, self.board == -1], axis=-1).astype(np.int8)
        return {"observation": planes, "action_mask": self.legal_actions().astype(np.int8)}

    def _has_line(self, stone: int) -> bool:
        raise NotImplementedError


_TTT_LINES = np.array(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]]
)


class TicTacToe(BoardGame):
    """PettingZoo's tic-tac-toe: action a marks cell `(a // 3, a % 3)` of the observation."""

    rows, cols, num_actions, name = 3, 3, 9, "tictactoe"
    __slots__ = ()

    def legal_actions(self) -> np.ndarray:
        if self.terminal_value() is not None:
            return np.zeros(9, bool)
        empty: np.ndarray = self.board.reshape(9) == 0
        return empty

    def apply(self, action: int) -> TicTacToe:
        board = self.board.copy()
        flat = board.reshape(9)
        if flat[action] != 0:
            raise ValueError(f"tictactoe: cell {action} is taken.")
        flat[action] = 1
        won = bool((flat[_TTT_LINES] == 1).all(axis=1).any())
        return TicTacToe(-board, won)

    def _has_line(self, stone: int) -> bool:
        return bool((self.board.reshape(9)[_TTT_LINES] == stone).all(axis=1).any())


class ConnectFour(BoardGame):
    """PettingZoo's connect four: action c drops a stone into column c; row 0 is the top."""

    rows, cols, num_actions, name = 6, 7, 7, "connect_four"
    __slots__ = ()

    def legal_actions(self) -> np.ndarray:
        if self.terminal_value() is not None:
            return np.zeros(7, bool)
        open_columns: np.ndarray = self.board[0] == 0
        return open_columns

    def apply(self, action: int) -> ConnectFour:
        board = self.board.copy()
        empty = np.flatnonzero(board[:, action] == 0)
        if len(empty) == 0:
            raise ValueError(f"connect_four: column {action} is full.")
        row = int(empty[-1])
        board[row, action] = 1
        return ConnectFour(-board, _four_through(board, row, action))

    def _has_line(self, stone: int) -> bool:
        rows, cols = np.nonzero(self.board == stone)
        return any(
            _four_through(self.board * stone, int(r), int(c))
            for r, c in zip(rows, cols, strict=True)
        )


def _four_through(board: np.ndarray, row: int, col: int) -> bool:
    """Whether the stone (1) at `(row, col)` is part of four in a row."""
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        count = 1
        for sign in (1, -1):
            r, c = row + sign * dr, col + sign * dc
            while 0 <= r < 6 and 0 <= c < 7 and board[r, c] == 1:
                count += 1
                r, c = r + sign * dr, c + sign * dc
        if count >= 4:
            return True
    return False


_GAMES: dict[str, type[BoardGame]] = {"tictactoe": TicTacToe, "connect_four": ConnectFour}


def game_class(name: str) -> type[BoardGame]:
    """The game state class of shoal's env id `name` (`tictactoe`, `connect_four`)."""
    if name not in _GAMES:
        raise KeyError(f"No game state for {name!r}; games: {', '.join(_GAMES)}.")
    return _GAMES[name]
