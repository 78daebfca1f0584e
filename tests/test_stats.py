"""Aggregate statistics against float64 references written from Agarwal et al. 2021 (sec. 4 and
appendix A.4), and against rliable, the paper's implementation."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from shoal.analysis.stats import (
    AGGREGATES,
    iqm,
    mean_of_means,
    median_of_means,
    stratified_bootstrap,
)

# Four games, three seeds each: 12 scores, so the IQM is the mean of the middle 6. Ties, a
# negative score and one far outlier make the trimming matter.
SCORES = [
    [0.10, 0.40, 0.25],
    [1.50, 1.50, 0.90],
    [-0.05, 0.02, 0.30],
    [7.80, 2.10, 2.60],
]
# Ragged: a seed crashed on one game (n = 10 pooled scores, floor(10/4) = 2 dropped each end).
RAGGED = [[0.10, 0.40, 0.25], [1.50, 0.90], [-0.05, 0.02, 0.30], [7.80, 2.60]]


def ref_iqm(tasks: list[list[float]]) -> float:
    """Mean of the middle 50% of all runs' scores, pooled over tasks (scipy's trim_mean(x,
    0.25): floor(n/4) scores dropped from each end)."""
    pooled = sorted(x for task in tasks for x in task)
    cut = len(pooled) // 4
    middle = pooled[cut : len(pooled) - cut]
    return math.fsum(middle) / len(middle)


def ref_median(tasks: list[list[float]]) -> float:
    return statistics.median(math.fsum(t) / len(t) for t in tasks)


def ref_mean(tasks: list[list[float]]) -> float:
    return math.fsum(math.fsum(t) / len(t) for t in tasks) / len(tasks)


REFERENCES = {"IQM": ref_iqm, "median": ref_median, "mean": ref_mean}


def ref_percentile(values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default method)."""
    ordered = sorted(values)
    position = q / 100 * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def ref_stratified_bootstrap(tasks, reference, reps, seed, confidence=0.95):
    """The stratified bootstrap as a loop: resample r takes, for every task m, N_m of its runs
    with replacement (run indices drawn per task, `rng.integers(0, N_m, (reps, N_m))`, tasks in
    order: the documented draw order), then the statistic of the resampled table."""
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(task), size=(reps, len(task))) for task in tasks]
    values = []
    for r in range(reps):
        resampled = [
            [task[int(draws[m][r, i])] for i in range(len(task))] for m, task in enumerate(tasks)
        ]
        values.append(reference(resampled))
    tail = 100 * (1 - confidence) / 2
    return ref_percentile(values, tail), ref_percentile(values, 100 - tail)


def batch(tasks):
    """One resample: the shape every aggregate takes ([R=1, N_m] per task)."""
    return [np.asarray(t, dtype=np.float64)[None] for t in tasks]


@pytest.mark.parametrize("tasks", [SCORES, RAGGED], ids=["equal", "ragged"])
@pytest.mark.parametrize("name", list(AGGREGATES))
def test_point_estimates_match_the_reference(tasks, name):
    assert AGGREGATES[name](batch(tasks))[0] == pytest.approx(REFERENCES[name](tasks), abs=1e-15)


def test_iqm_of_the_fixture_by_hand():
    # sorted: -0.05 0.02 0.10 | 0.25 0.30 0.40 0.90 1.50 1.50 | 2.10 2.60 7.80
    assert iqm(batch(SCORES))[0] == pytest.approx((0.25 + 0.30 + 0.40 + 0.90 + 1.50 + 1.50) / 6)
    # The outlier 7.80 moves the mean of the game means, not the IQM.
    assert mean_of_means(batch(SCORES))[0] > 1.0 > iqm(batch(SCORES))[0]


@pytest.mark.parametrize("tasks", [SCORES, RAGGED], ids=["equal", "ragged"])
@pytest.mark.parametrize("name", list(AGGREGATES))
def test_stratified_bootstrap_matches_the_reference_loop(tasks, name):
    estimate = stratified_bootstrap(tasks, AGGREGATES[name], reps=400, seed=7)
    low, high = ref_stratified_bootstrap(tasks, REFERENCES[name], reps=400, seed=7)
    assert estimate.value == pytest.approx(REFERENCES[name](tasks), abs=1e-15)
    assert estimate.low == pytest.approx(low, abs=1e-12)
    assert estimate.high == pytest.approx(high, abs=1e-12)
    assert estimate.low <= estimate.value <= estimate.high
    assert estimate.low < estimate.high


def test_the_bootstrap_is_stratified_by_task():
    # One run per task: a resample can only redraw that run, so the interval has no width
    # (a bootstrap that pooled runs over tasks would mix the games up).
    single = [[0.1], [1.5], [-0.05], [7.8]]
    for statistic in AGGREGATES.values():
        estimate = stratified_bootstrap(single, statistic, reps=200, seed=0)
        assert estimate.low == pytest.approx(estimate.value)
        assert estimate.high == pytest.approx(estimate.value)


def test_chunked_resamples_equal_one_pass(monkeypatch):
    import shoal.analysis.stats

    whole = stratified_bootstrap(SCORES, iqm, reps=300, seed=3)
    monkeypatch.setattr(shoal.analysis.stats, "_CHUNK_VALUES", 25)  # two resamples per chunk
    chunked = stratified_bootstrap(SCORES, iqm, reps=300, seed=3)
    np.testing.assert_array_equal(np.array(whole), np.array(chunked))


def test_a_vector_statistic_equals_one_bootstrap_per_column():
    # A learning curve's band: seeds x grid points, the mean over seeds at every point.
    curves = np.array([[0.0, 1.0, 2.0, 4.0], [0.5, 0.5, 3.0, 3.0], [1.0, 2.0, 2.5, 6.0]])
    band = stratified_bootstrap([curves], mean_of_means, reps=500, seed=1)
    for g in range(curves.shape[1]):
        column = stratified_bootstrap([curves[:, g]], mean_of_means, reps=500, seed=1)
        assert band.value[g] == pytest.approx(column.value)
        assert band.low[g] == pytest.approx(column.low)
        assert band.high[g] == pytest.approx(column.high)


def test_fixed_seed_reproduces_and_another_seed_differs():
    first = stratified_bootstrap(SCORES, median_of_means, reps=300, seed=5)
    again = stratified_bootstrap(SCORES, median_of_means, reps=300, seed=5)
    other = stratified_bootstrap(SCORES, median_of_means, reps=300, seed=6)
    assert tuple(first) == tuple(again)
    assert (first.low, first.high) != (other.low, other.high)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="at least one task"):
        stratified_bootstrap([], iqm)
    with pytest.raises(ValueError, match="at least one task"):
        stratified_bootstrap([[1.0], []], iqm)
    with pytest.raises(ValueError, match="reps > 0"):
        stratified_bootstrap(SCORES, iqm, reps=0)


def test_against_scipy():
    """SciPy as a second reference: rliable's IQM is `scipy.stats.trim_mean(scores, 0.25)`, and
    `scipy.stats.bootstrap` over several samples resamples each one independently, which is the
    stratified bootstrap (a task per sample); its intervals agree within Monte Carlo error.
    (rliable itself does not import beside pandas 3: its `arch` dependency fails.)"""
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    tasks = list(rng.gamma(2.0, 0.5, size=(8, 5)))  # 8 tasks x 5 runs, skewed like game scores
    assert iqm(batch(tasks))[0] == pytest.approx(
        scipy_stats.trim_mean(np.concatenate(tasks), 0.25), abs=1e-15
    )

    def theirs(*samples, axis):
        means = np.stack([s.mean(axis=axis) for s in samples], axis=-1)
        pooled = np.sort(np.concatenate(samples, axis=axis), axis=axis)
        return {
            "IQM": scipy_stats.trim_mean(pooled, 0.25, axis=axis),
            "median": np.median(means, axis=-1),
            "mean": means.mean(axis=-1),
        }

    for name in AGGREGATES:
        result = scipy_stats.bootstrap(
            tasks,
            lambda *samples, axis, name=name: theirs(*samples, axis=axis)[name],
            n_resamples=5_000,
            method="percentile",
            random_state=np.random.default_rng(1),
        )
        ours = stratified_bootstrap(tasks, AGGREGATES[name], reps=5_000, seed=0)
        low, high = result.confidence_interval
        width = high - low
        assert ours.low == pytest.approx(low, abs=0.05 * width)
        assert ours.high == pytest.approx(high, abs=0.05 * width)
