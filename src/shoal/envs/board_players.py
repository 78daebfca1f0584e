"""Fixed opponents for the board games of `shoal.envs.board_games`, and matches between players.

A *player* is anything with `act(game) -> action` for a game state seen by the player to move
(`BoardGame`): a learned policy wrapped so, `RandomPlayer`, or `RolloutMCTS`, a pure Monte-Carlo
tree search (UCT, Kocsis & Szepesvári 2006) whose leaves are valued by random playouts, the
usual yardstick of game-playing agents (AlphaZero's connect-four reproductions compare with
MCTS of 200 to 1000 rollouts a move).

`play_match(a, b, game_class, games, seed)` plays `a` against `b`, `a` moving first in the even
games and second in the odd ones, and returns `a`'s wins, draws and losses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from shoal.envs.board_games import BoardGame

__all__ = ["MatchResult", "Player", "RandomPlayer", "RolloutMCTS", "play_match"]


class Player(Protocol):
    def act(self, game: BoardGame) -> int:
        """A legal action of the player to move in `game` (which has not ended)."""
        ...


class RandomPlayer:
    """Uniform among the legal moves."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, game: BoardGame) -> int:
        return int(self.rng.choice(np.flatnonzero(game.legal_actions())))


class _Node:
    __slots__ = ("children", "game", "untried", "value_sum", "visits")

    def __init__(self, game: BoardGame, rng: np.random.Generator) -> None:
        self.game = game
        self.children: dict[int, _Node] = {}
        legal = np.flatnonzero(game.legal_actions())
        self.untried = [int(a) for a in rng.permutation(legal)]
        self.visits = 0
        self.value_sum = 0.0  # for the player who moved into this node


class RolloutMCTS:
    """Pure MCTS: UCT selection (`c` the exploration constant, sqrt 2 by default), one node
    added per rollout, the leaf valued by a uniformly random playout to the end of the game
    (+1 win, 0 draw, -1 loss), `num_rollouts` rollouts a move; the most visited move is played.

    `act(game)` searches from `game` (a fresh tree each move) with the player's own generator,
    so a seeded player repeats its games."""

    def __init__(self, num_rollouts: int = 200, seed: int = 0, c: float = math.sqrt(2)) -> None:
        if num_rollouts < 1:
            raise ValueError(f"num_rollouts must be >= 1, got {num_rollouts}.")
        self.num_rollouts, self.c = num_rollouts, c
        self.rng = np.random.default_rng(seed)

    def act(self, game: BoardGame) -> int:
        root = _Node(game, self.rng)
        if not root.untried:
            raise ValueError("RolloutMCTS.act: the game has ended; there is no move to make.")
        for _ in range(self.num_rollouts):
            path = [root]
            node = root
            # Selection: down fully expanded nodes by UCT.
            while not node.untried and node.children:
                log_n = math.log(node.visits)
                node = max(
                    node.children.values(),
                    key=lambda child: (
                        child.value_sum / child.visits + self.c * math.sqrt(log_n / child.visits)
                    ),
                )
                path.append(node)
            # Expansion: one new child, unless the game ended here.
            if node.untried:
                action = node.untried.pop()
                child = _Node(node.game.apply(action), self.rng)
                node.children[action] = child
                node = child
                path.append(node)
            value = self._playout(node.game)  # for the player to move at `node`
            # Backup: each node holds the value for the player who moved into it.
            for visited in reversed(path):
                value = -value
                visited.visits += 1
                visited.value_sum += value
        best = max(root.children.items(), key=lambda item: item[1].visits)
        return best[0]

    def _playout(self, game: BoardGame) -> float:
        """The result of uniformly random play from `game` for its player to move."""
        sign = 1.0
        while True:
            result = game.terminal_value()
            if result is not None:
                return sign * result
            legal = np.flatnonzero(game.legal_actions())
            game = game.apply(int(legal[self.rng.integers(len(legal))]))
            sign = -sign


@dataclass(frozen=True)
class MatchResult:
    """Player a's results over `games` games."""

    wins: int
    draws: int
    losses: int

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """Wins plus half the draws, per game."""
        return (self.wins + 0.5 * self.draws) / max(self.games, 1)


def play_match(
    a: Player, b: Player, game_class: type[BoardGame], games: int, first: int = 0
) -> MatchResult:
    """`games` games of `a` against `b`; `a` moves first in games `first, first + 2, ...` (so
    half the games each, alternating). Returns `a`'s results."""
    wins = draws = losses = 0
    for g in range(games):
        a_to_move = (g + first) % 2 == 0
        game = game_class()
        while True:
            result = game.terminal_value()
            if result is not None:
                break
            player = a if a_to_move else b
            game = game.apply(player.act(game))
            a_to_move = not a_to_move
        # `result` is for the player to move now; a draw is 0 for both.
        if result == 0:
            draws += 1
        elif (result > 0) == a_to_move:
            wins += 1
        else:
            losses += 1
    return MatchResult(wins, draws, losses)
