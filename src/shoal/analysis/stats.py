"""Aggregate scores over runs and tasks, with stratified bootstrap confidence intervals.

After Agarwal et al. 2021, "Deep Reinforcement Learning at the Edge of the Statistical
Precipice" (NeurIPS), whose reference implementation is the `rliable` library. Scores come as
one 1-D array of run scores per task (runs are seeds; tasks are games); tasks may have
different numbers of runs. Each aggregate is written for a batch of resamples, so the point
estimate and every bootstrap resample go through the same code:

    statistic(tasks) -> [R, ...], where tasks[m] is [R, N_m, ...] (R resamples of task m).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "AGGREGATES",
    "Estimate",
    "Statistic",
    "iqm",
    "mean_of_means",
    "median_of_means",
    "stratified_bootstrap",
]

Statistic = Callable[[list[np.ndarray]], np.ndarray]

# Resamples are evaluated in chunks of about this many values, so 50,000 resamples of a
# 57-game, 10-seed table need tens of megabytes rather than gigabytes.
_CHUNK_VALUES = 4_000_000


class Estimate(NamedTuple):
    """A point estimate and its confidence interval (each a float, or an array for vector
    statistics such as a learning curve)."""

    value: np.ndarray
    low: np.ndarray
    high: np.ndarray


def _task_means(tasks: list[np.ndarray]) -> np.ndarray:
    """[R, M]: each task's mean over its runs."""
    return np.stack([t.mean(axis=1) for t in tasks], axis=1)


def mean_of_means(tasks: list[np.ndarray]) -> np.ndarray:
    """[R]: the mean over tasks of each task's mean run score (Agarwal et al. 2021, sec. 4)."""
    return _task_means(tasks).mean(axis=1)


def median_of_means(tasks: list[np.ndarray]) -> np.ndarray:
    """[R]: the median over tasks of each task's mean run score (the DQN-era Atari aggregate;
    Agarwal et al. 2021, sec. 4)."""
    return np.median(_task_means(tasks), axis=1)


def iqm(tasks: list[np.ndarray]) -> np.ndarray:
    """[R]: the interquartile mean, the mean of the middle 50% of all run scores pooled over
    tasks (Agarwal et al. 2021, sec. 4). Like `scipy.stats.trim_mean(x, 0.25)`, it drops
    floor(n / 4) scores from each end of the n pooled scores."""
    pooled = np.sort(np.concatenate(tasks, axis=1), axis=1)
    cut = pooled.shape[1] // 4
    return pooled[:, cut : pooled.shape[1] - cut].mean(axis=1)


AGGREGATES: dict[str, Statistic] = {
    "median": median_of_means,
    "IQM": iqm,
    "mean": mean_of_means,
}


def stratified_bootstrap(
    scores: Sequence[ArrayLike],
    statistic: Statistic,
    *,
    reps: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Estimate:
    """`statistic` of `scores` with a percentile confidence interval from the stratified
    bootstrap (Agarwal et al. 2021, sec. 4 and appendix A.4): each resample draws, for every
    task m, N_m runs with replacement from that task's N_m runs, so every resample keeps every
    task. With one task it is the ordinary bootstrap over runs.

    `scores[m]` is [N_m, ...]. Task m's draws are `rng.integers(0, N_m, (reps, N_m))`, tasks in
    order, from `np.random.default_rng(seed)`.
    """
    tasks = [np.asarray(s, dtype=np.float64) for s in scores]
    if not tasks or any(t.ndim == 0 or t.shape[0] == 0 for t in tasks):
        raise ValueError("stratified_bootstrap needs at least one task, each with runs.")
    if reps <= 0 or not 0 < confidence < 1:
        raise ValueError(f"Need reps > 0 and 0 < confidence < 1, got {reps} and {confidence}.")
    value = statistic([t[None] for t in tasks])[0]
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, t.shape[0], size=(reps, t.shape[0])) for t in tasks]
    per_resample = sum(t.size for t in tasks)
    chunk = max(1, _CHUNK_VALUES // per_resample)
    resampled = np.concatenate(
        [
            statistic([t[d[start : start + chunk]] for t, d in zip(tasks, draws, strict=True)])
            for start in range(0, reps, chunk)
        ]
    )
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(resampled, [tail, 100 - tail], axis=0)
    return Estimate(value, low, high)
