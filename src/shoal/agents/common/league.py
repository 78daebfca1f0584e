"""Self-play with a league of past selves, for turn-based games played as rows.

In each game the learner's policy plays one seat (which seat alternates from game to game) and
a *league* member plays the others: a frozen copy of the learner's weights, kept every
`league_interval` weight versions (the newest `league_size` copies), or the current weights
themselves. Only the learner's rows are learned from: the policy marks them in the extra
`learning`, and learners that honour it (PPO) leave the other rows out of the loss, as they
leave out rows whose agent is absent (`active`).

Opponents are drawn per game by prioritised fictitious self-play (PFSP, Vinyals et al. 2019,
"Grandmaster level in StarCraft II using multi-agent reinforcement learning", Nature 575,
"Methods: prioritized fictitious self-play"): member m is drawn with probability proportional
to `f(x_m) = (1 - x_m) ** p`, `x_m` the learner's score against m (wins plus half the draws,
per game) over the last `league_window` games against it, so the opponents that beat the learner
are played most (p = 2, AlphaStar's `f_hard`); members not played yet count as x = 1/2. With
`league_sampling: uniform` every member is equally likely.

The bookkeeping keeps an Elo rating (Elo 1978) for the learner and each member: after a game of
A (score S: 1, 1/2 or 0) against B, `E = 1 / (1 + 10 ** ((R_B - R_A) / 400))`,
`R_A += K (S - E)` and `R_B -= K (S - E)`. A new snapshot starts with the learner's rating.

The league lives on the acting side (`LeaguePolicy`, one per actor, inline or on Ray): it sees
every game's result there (`Policy.observe`), and each actor keeps its own copies of the
weights it acted with. The league is checkpointed with the run (`LeaguePolicy.state_dict`: the
copies travel to the checkpoint only when they change), so a resumed run, or a restarted Ray
actor, continues its league.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from shoal.agents.base import Weights
from shoal.config import param

__all__ = [
    "CURRENT",
    "League",
    "LeagueConfig",
    "elo_expected",
    "elo_from_score",
    "elo_update",
    "pfsp_weights",
]

SelfPlay = Literal["off", "league"]
Sampling = Literal["pfsp", "uniform"]
CURRENT = -1  # the member id of the learner's current weights


@dataclass(frozen=True, kw_only=True)
class LeagueConfig:
    """Settings of self-play with a league (turn-based games of two or more players)."""

    self_play: SelfPlay = param(
        "off",
        "league: the policy plays one seat of each game against a league of its past selves "
        "(turn-based games); off: one policy plays every seat.",
    )
    league_size: int = param(8, "Past selves the league keeps (the oldest leaves first).")
    league_interval: int = param(10, "Weight versions (updates) between copies kept.")
    league_sampling: Sampling = param(
        "pfsp", "pfsp: opponents that beat the learner are drawn more; uniform: all alike."
    )
    pfsp_power: float = param(2.0, "p of PFSP's weight (1 - learner's score) ** p.")
    league_window: int = param(100, "Games against a member its PFSP score counts.")
    league_keep_first: bool = param(
        False, "Keep the first copy (the untrained policy) when the league is full."
    )

    def __post_init__(self) -> None:
        parent = getattr(super(), "__post_init__", None)
        if parent is not None:
            parent()
        if self.self_play not in ("off", "league"):
            raise ValueError(f"self_play must be off or league, got {self.self_play!r}.")
        if self.league_sampling not in ("pfsp", "uniform"):
            raise ValueError(
                f"league_sampling must be pfsp or uniform, got {self.league_sampling!r}."
            )
        for name in ("league_size", "league_interval", "league_window"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if not (self.pfsp_power >= 0 and math.isfinite(self.pfsp_power)):
            raise ValueError(f"pfsp_power must be >= 0, got {self.pfsp_power}.")
        if self.self_play == "league" and getattr(self, "use_lstm", False):
            raise ValueError(
                "self_play league acts with frozen copies of a feed-forward policy; it does "
                "not carry LSTM states for them. Set use_lstm false or self_play off."
            )


def pfsp_weights(scores: np.ndarray, power: float) -> np.ndarray:
    """PFSP's sampling probabilities `(1 - x) ** p / Σ (1 - x) ** p` of members against which
    the learner scored `scores` `[M]` (in [0, 1]); uniform if every weight is 0."""
    weights = (1.0 - np.clip(np.asarray(scores, np.float64), 0.0, 1.0)) ** power
    total = weights.sum()
    if not total > 0:
        return np.full(len(weights), 1.0 / len(weights))
    return np.asarray(weights / total)


def elo_expected(rating_a: float, rating_b: float) -> float:
    """A's expected score against B: `1 / (1 + 10 ** ((R_B - R_A) / 400))`."""
    return float(1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0)))


def elo_update(
    rating_a: float, rating_b: float, score_a: float, k: float = 16.0
) -> tuple[float, float]:
    """Both ratings after a game A scored `score_a` in (1 win, 1/2 draw, 0 loss)."""
    change = k * (score_a - elo_expected(rating_a, rating_b))
    return rating_a + change, rating_b - change


def elo_from_score(score: float, games: int, opponent_rating: float = 0.0) -> float:
    """The rating whose expected score against `opponent_rating` is `score`, the score kept
    half a game inside (0, 1) so that a clean sweep gives a finite (lower or upper) bound."""
    half = 0.5 / max(games, 1)
    s = min(max(score, half), 1.0 - half)
    return opponent_rating + 400.0 * math.log10(s / (1.0 - s))


class League:
    """The league's members and results: copies of the learner's weights every `interval`
    versions (at most `size`), each member's last `window` results, and Elo ratings."""

    def __init__(
        self,
        size: int,
        interval: int,
        sampling: Sampling = "pfsp",
        power: float = 2.0,
        window: int = 100,
        seed: int = 0,
        k: float = 16.0,
        keep_first: bool = False,
    ) -> None:
        self.size, self.interval, self.sampling, self.power = size, interval, sampling, power
        self.keep_first = keep_first
        self.window, self.k = window, k
        self.rng = np.random.default_rng(seed)
        self.snapshots: dict[int, Weights] = {}  # member id -> weights, oldest first
        self.versions: dict[int, int] = {}  # member id -> the version it is a copy of
        self._last_kept: int | None = None
        self.results: dict[int, deque[float]] = {CURRENT: deque(maxlen=window)}
        self.ratings: dict[int, float] = {CURRENT: 0.0}
        self.learner_rating = 0.0
        self.games = 0
        self._next_id = 0

    @property
    def members(self) -> list[int]:
        """Member ids: the past selves, oldest first, then `CURRENT`."""
        return [*self.snapshots, CURRENT]

    def add_version(self, weights: Weights, version: int) -> int | None:
        """The learner's weights of `version`: keep a copy if it is the first seen or
        `interval` versions after the last copy kept. Returns the new member's id, or None."""
        if self._last_kept is not None and version < self._last_kept + self.interval:
            return None
        self._last_kept = version
        member = self._next_id
        self._next_id += 1
        self.snapshots[member] = {k: v.detach().to("cpu", copy=True) for k, v in weights.items()}
        self.versions[member] = version
        self.results[member] = deque(maxlen=self.window)
        self.ratings[member] = self.learner_rating
        while len(self.snapshots) > self.size:
            oldest = list(self.snapshots)[1 if self.keep_first and self.size > 1 else 0]
            self.drop(oldest)
        return member

    def drop(self, member: int) -> None:
        del self.snapshots[member], self.versions[member]
        del self.results[member], self.ratings[member]

    def scores(self) -> np.ndarray:
        """The learner's score against each member (`members` order); 1/2 where unplayed."""
        return np.array(
            [float(np.mean(self.results[m])) if self.results[m] else 0.5 for m in self.members]
        )

    def probabilities(self) -> np.ndarray:
        members = self.members
        if self.sampling == "uniform":
            return np.full(len(members), 1.0 / len(members))
        return pfsp_weights(self.scores(), self.power)

    def sample(self) -> int:
        """An opponent for the next game."""
        members = self.members
        return members[int(self.rng.choice(len(members), p=self.probabilities()))]

    def record(self, member: int, score: float) -> None:
        """The learner scored `score` (1, 1/2, 0) in a game against `member`."""
        self.games += 1
        if member not in self.results:  # dropped while the game was played
            return
        self.results[member].append(score)
        self.learner_rating, self.ratings[member] = elo_update(
            self.learner_rating, self.ratings[member], score, self.k
        )

    def state_dict(self, with_snapshots: bool = True) -> dict[str, Any]:
        """Everything a resumed league continues from, as plain values and CPU tensors (a
        checkpoint holds nothing else): the members' results, ratings and versions, the
        sampler's generator and, with `with_snapshots`, the copies' weights."""
        state: dict[str, Any] = {
            "versions": dict(self.versions),
            "results": {m: list(r) for m, r in self.results.items()},
            "ratings": dict(self.ratings),
            "learner_rating": self.learner_rating,
            "games": self.games,
            "next_id": self._next_id,
            "last_kept": self._last_kept,
            "rng": self.rng.bit_generator.state,
        }
        if with_snapshots:
            state["snapshots"] = dict(self.snapshots)
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from `state_dict()`'s values (the snapshots included)."""
        self.snapshots = {int(m): dict(w) for m, w in state["snapshots"].items()}
        self.versions = {int(m): int(v) for m, v in state["versions"].items()}
        self.results = {int(m): deque(r, maxlen=self.window) for m, r in state["results"].items()}
        self.ratings = {int(m): float(r) for m, r in state["ratings"].items()}
        self.learner_rating = float(state["learner_rating"])
        self.games, self._next_id = int(state["games"]), int(state["next_id"])
        self._last_kept = state["last_kept"]
        self.rng.bit_generator.state = state["rng"]

    def summary(self) -> dict[str, Any]:
        """Plain values for metrics: size, games, the learner's score against the past selves
        over their windows, and its Elo rating minus the mean of the past selves'."""
        past = [m for m in self.snapshots if self.results[m]]
        played = [x for m in past for x in self.results[m]]
        ratings = [self.ratings[m] for m in self.snapshots]
        return {
            "size": len(self.snapshots),
            "games": self.games,
            "score": float(np.mean(played)) if played else float("nan"),
            "elo_gap": self.learner_rating - float(np.mean(ratings)) if ratings else 0.0,
        }
