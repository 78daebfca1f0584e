"""Random and human scores of the 57 Atari games, and human-normalised scores.

The table is `atari_scores.csv` beside this module; its header names the variant and its
sources (DQN Zoo's table, used by R2D2 and Agent57; human scores of Mnih et al. 2015 in the
57-game version of van Hasselt et al. 2016). A human-normalised score is 0 for a uniformly
random policy and 1 for the professional game tester:

    normalised = (agent - random) / (human - random)
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources

__all__ = ["ATARI_57", "GameScores", "game_scores", "human_normalized"]

_TABLE = "atari_scores.csv"


@dataclass(frozen=True)
class GameScores:
    game: str
    random: float
    human: float


def _table() -> dict[str, GameScores]:
    text = resources.files("shoal.envs").joinpath(_TABLE).read_text()
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return {
        row["game"]: GameScores(row["game"], float(row["random"]), float(row["human"]))
        for row in rows
    }


_SCORES = _table()
ATARI_57: tuple[str, ...] = tuple(_SCORES)  # the games, in the table's (alphabetical) order


def game_scores(game: str) -> GameScores | None:
    """The random and human scores of `game` (ale-py's name, e.g. `Pong`), or None for a game
    outside the 57 (ale-py has more, e.g. `Adventure`)."""
    return _SCORES.get(game)


def human_normalized(game: str, score: float) -> float | None:
    """(score - random) / (human - random) for `game`, or None for a game outside the 57."""
    scores = game_scores(game)
    if scores is None:
        return None
    return (score - scores.random) / (scores.human - scores.random)
