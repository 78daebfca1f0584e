"""Agent57's meta-controller: a sliding-window UCB bandit with epsilon-greedy exploration.

Each arm is a mixture index j (see `mixtures.py`); the bandit picks one at the start of an
episode and is paid the episode's undiscounted extrinsic return (Badia et al. 2020, "Agent57:
Outperforming the Atari Human Benchmark", sec. 4 and the appendix on the meta-controller). The
paper simplifies the sliding-window UCB of Garivier & Moulines (2008, "On Upper-Confidence Bound
Policies for Non-Stationary Bandit Problems") by dropping its `log(min(k, tau))` factor:

    A_k = k                                                          0 <= k <= N-1
    A_k = argmax_a  mu_{k-1}(a, tau) + beta sqrt(1 / N_{k-1}(a, tau))  if U_k >= epsilon
    A_k = Y_k ~ Uniform{0, ..., N-1}                                  if U_k < epsilon

with `U_k ~ Uniform[0, 1]`, `N_{k-1}(a, tau)` the number of the last `tau` episodes played with
arm a and `mu_{k-1}(a, tau)` their mean return. Here `beta` is called `bonus` (it is not the
intrinsic-reward weight) and `tau` is `window`.

Choices the paper leaves open:

- Several environments may share one bandit, so selections and updates interleave and k counts
  selections: the first `num_arms` selections go round-robin even before any return arrives.
- The window holds the last `window` *completed* episodes, in the order their updates arrive.
- An arm with no episode in the window scores +inf (it has not been tried lately); ties in the
  argmax, such as several such arms, are broken uniformly at random.

Settings (Agent57 sec. 4): actors `window=160, epsilon=0.5`, the evaluator `window=3600,
epsilon=0.01`, both `bonus=1`. (The hyperparameter table lists a window of 90 for the actors; the
text's 160 is used here.)
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from shoal.errors import CheckpointError

__all__ = ["SlidingWindowUCB"]


class SlidingWindowUCB:
    """Sliding-window UCB over `num_arms` arms with epsilon-greedy exploration (Agent57).

    Args:
        num_arms: number of arms N (Agent57: 32 mixtures).
        window: number of most recent completed episodes the statistics use (tau).
        epsilon: probability of a uniformly random arm once the warm-up is over.
        bonus: weight of the exploration bonus `sqrt(1 / count)` (the paper's beta).
        seed: seed of the bandit's own random generator.
    """

    def __init__(
        self,
        num_arms: int,
        window: int = 160,
        epsilon: float = 0.5,
        bonus: float = 1.0,
        seed: int | None = None,
    ) -> None:
        _check_int("num_arms", num_arms, minimum=1, hint="Agent57 uses one arm per mixture, 32")
        _check_int(
            "window", window, minimum=1, hint="Agent57 uses 160 for actors, 3600 to evaluate"
        )
        if not (isinstance(epsilon, int | float) and 0.0 <= epsilon <= 1.0):
            raise ValueError(
                f"epsilon must be a probability in [0, 1], got {epsilon!r}; Agent57 uses 0.5 for "
                "actors and 0.01 to evaluate."
            )
        if not (isinstance(bonus, int | float) and math.isfinite(bonus) and bonus >= 0.0):
            raise ValueError(f"bonus must be a finite number >= 0, got {bonus!r}; Agent57 uses 1.")
        self._num_arms = int(num_arms)
        self._window = int(window)
        self._epsilon = float(epsilon)
        self._bonus = float(bonus)
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self._history: deque[tuple[int, float]] = deque(maxlen=self._window)
        self._num_selections = 0

    @property
    def num_arms(self) -> int:
        return self._num_arms

    @property
    def window(self) -> int:
        return self._window

    @property
    def epsilon(self) -> float:
        return self._epsilon

    @property
    def bonus(self) -> float:
        return self._bonus

    @property
    def num_selections(self) -> int:
        """Arms selected so far (the paper's k)."""
        return self._num_selections

    def select(self) -> int:
        """The arm for the next episode."""
        k = self._num_selections
        self._num_selections += 1
        if k < self._num_arms:
            return k
        if self._rng.random() < self._epsilon:
            return int(self._rng.integers(self._num_arms))
        scores = self.ucb_scores()
        best = np.flatnonzero(scores == scores.max())
        if best.size == 1:
            return int(best[0])
        return int(self._rng.choice(best))

    def update(self, arm: int, reward: float) -> None:
        """Record a completed episode: the arm it was played with and its undiscounted
        extrinsic return. The oldest episode leaves the window once it holds `window`."""
        if isinstance(arm, bool) or not isinstance(arm, int | np.integer):
            raise TypeError(f"arm must be an int, got {type(arm).__name__}.")
        if not 0 <= arm < self._num_arms:
            raise ValueError(f"arm must be in [0, {self._num_arms}), got {arm}.")
        reward = float(reward)
        if not math.isfinite(reward):
            raise ValueError(
                f"the episode return for arm {arm} is {reward}; the bandit needs finite returns "
                "(check the environment's rewards)."
            )
        self._history.append((int(arm), reward))

    def counts(self) -> np.ndarray:
        """Episodes of each arm in the window, int64 `[N]`."""
        arms = np.fromiter((a for a, _ in self._history), dtype=np.int64, count=len(self._history))
        return np.bincount(arms, minlength=self._num_arms)

    def means(self) -> np.ndarray:
        """Mean return of each arm over the window, float64 `[N]`; NaN where the count is 0."""
        n = len(self._history)
        arms = np.fromiter((a for a, _ in self._history), dtype=np.int64, count=n)
        rewards = np.fromiter((r for _, r in self._history), dtype=np.float64, count=n)
        counts = np.bincount(arms, minlength=self._num_arms)
        sums = np.bincount(arms, weights=rewards, minlength=self._num_arms)
        means = np.full(self._num_arms, np.nan)
        np.divide(sums, counts, out=means, where=counts > 0)
        return means

    def best_arm(self) -> int:
        """The arm with the best mean return in the window, no bonus and no exploration: the
        mixture a greedy evaluation plays (`best_arm` below)."""
        return best_arm(self.counts(), self.means())

    def ucb_scores(self) -> np.ndarray:
        """`mean + bonus * sqrt(1 / count)` of each arm, float64 `[N]`; +inf where count is 0."""
        counts = self.counts()
        scores = np.full(self._num_arms, np.inf)
        seen = counts > 0
        scores[seen] = self.means()[seen] + self._bonus * np.sqrt(1.0 / counts[seen])
        return scores

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly, as plain python values (`weights_only` safe).

        `epsilon` and `bonus` are settings, not state: the loading bandit keeps its own."""
        return {
            "num_arms": self._num_arms,
            "window": self._window,
            "num_selections": self._num_selections,
            "arms": [a for a, _ in self._history],
            "rewards": [r for _, r in self._history],
            "rng": _plain(self._rng.bit_generator.state),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from `state_dict()` of a bandit with the same `num_arms` and `window`."""
        missing = {"num_arms", "window", "num_selections", "arms", "rewards", "rng"} - set(state)
        if missing:
            raise CheckpointError(
                f"not a SlidingWindowUCB state: missing {sorted(missing)}. Pass the dict that "
                "SlidingWindowUCB.state_dict() returned."
            )
        for key, mine in (("num_arms", self._num_arms), ("window", self._window)):
            if int(state[key]) != mine:
                raise CheckpointError(
                    f"the bandit state has {key}={state[key]} but this bandit has {key}={mine}; "
                    f"construct SlidingWindowUCB with {key}={state[key]} to load it."
                )
        arms, rewards = list(state["arms"]), [float(r) for r in state["rewards"]]
        if len(arms) != len(rewards) or len(arms) > self._window:
            raise CheckpointError(
                f"the bandit state holds {len(arms)} arms and {len(rewards)} returns; both must "
                f"have the same length, at most window={self._window}."
            )
        if any(not 0 <= int(a) < self._num_arms for a in arms):
            raise CheckpointError(f"the bandit state has arms outside [0, {self._num_arms}).")
        rng = np.random.Generator(np.random.PCG64())
        rng.bit_generator.state = dict(state["rng"])
        self._rng = rng
        self._history = deque(zip((int(a) for a in arms), rewards, strict=True), self._window)
        self._num_selections = int(state["num_selections"])


def best_arm(counts: np.ndarray, means: np.ndarray) -> int:
    """The played arm of highest mean; ties go to the most played, then the lowest index.

    With nothing played yet, arm 0 (β = 0: the purely exploiting mixture)."""
    played = np.flatnonzero(np.asarray(counts) > 0)
    if played.size == 0:
        return 0
    return int(max(played, key=lambda arm: (means[arm], counts[arm], -arm)))


def _check_int(name: str, value: object, *, minimum: int, hint: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}.")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}; {hint}.")


def _plain(value: Any) -> Any:
    """A copy of nested dicts/lists with numpy scalars turned into python ints and floats."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
