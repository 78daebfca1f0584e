"""Prioritised sampling: frequencies (chi-square), uniform alpha = 0, importance weights."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.replay import LinearSchedule, PrioritizedSampler

N_ITEMS = 50
# Upper 0.1% point of the chi-square distribution with N_ITEMS - 1 = 49 degrees of freedom
# (scipy.stats.chi2.ppf(0.999, 49) = 85.35). Stratified draws are less variable than independent
# ones, which only lowers the statistic, so a correct sampler passes with margin at any seed.
CHI2_49_P001 = 85.35


def chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    expected = counts.sum() * probs
    return float(((counts - expected) ** 2 / expected).sum())


def draw_counts(sampler: PrioritizedSampler, batches: int, batch_size: int, seed: int):
    rng = np.random.default_rng(seed)
    counts = np.zeros(sampler.capacity, np.int64)
    for _ in range(batches):
        idx, _ = sampler.sample(batch_size, 0.4, rng)
        np.add.at(counts, idx, 1)
    return counts


def test_frequencies_follow_p_alpha_chi_square() -> None:
    alpha, eps = 0.7, 1e-6
    td = np.random.default_rng(0).uniform(0.05, 5.0, size=N_ITEMS)
    sampler = PrioritizedSampler(N_ITEMS, alpha, eps)
    sampler.set_priorities(np.arange(N_ITEMS), td)
    counts = draw_counts(sampler, batches=1000, batch_size=64, seed=1)
    p = (td + eps) ** alpha
    assert chi_square(counts, p / p.sum()) < CHI2_49_P001
    # The same data are far from the distribution without the exponent: the test has power.
    assert chi_square(counts, (td + eps) / (td + eps).sum()) > 10 * CHI2_49_P001


def test_alpha_zero_samples_uniformly() -> None:
    td = np.random.default_rng(2).uniform(0.0, 100.0, size=N_ITEMS)
    sampler = PrioritizedSampler(N_ITEMS, alpha=0.0)
    sampler.set_priorities(np.arange(N_ITEMS), td)
    counts = draw_counts(sampler, batches=500, batch_size=64, seed=3)
    assert chi_square(counts, np.full(N_ITEMS, 1.0 / N_ITEMS)) < CHI2_49_P001
    _, weights = sampler.sample(16, 1.0, np.random.default_rng(4))
    np.testing.assert_array_equal(weights, np.ones(16, np.float32))


@pytest.mark.parametrize("beta", [0.0, 0.4, 1.0])
def test_importance_weights_follow_schaul_et_al(beta: float) -> None:
    capacity, alpha, eps = 40, 0.6, 1e-3
    rng = np.random.default_rng(5)
    active = np.sort(rng.choice(capacity, size=25, replace=False))  # a partly filled buffer
    td = rng.uniform(0.0, 3.0, size=25)
    sampler = PrioritizedSampler(capacity, alpha, eps)
    sampler.set_priorities(active, td)
    idx, weights = sampler.sample(32, beta, rng)
    assert weights.dtype == np.float32
    # w_i = (N P(i))^-beta / max_j (N P(j))^-beta, N = 25 stored items, j over the batch.
    p = (np.abs(td) + eps) ** alpha
    prob = dict(zip(active.tolist(), p / p.sum(), strict=True))
    w = np.array([(len(active) * prob[i]) ** -beta for i in idx])
    np.testing.assert_allclose(weights, w / w.max(), rtol=1e-6)
    assert weights.max() == 1.0
    assert set(idx.tolist()) <= set(active.tolist())


def test_sampling_is_stratified_one_draw_per_segment() -> None:
    sampler = PrioritizedSampler(8, alpha=1.0)
    sampler.set_priorities(np.arange(8), np.full(8, 1.0))
    for seed in range(20):
        idx, _ = sampler.sample(8, 1.0, np.random.default_rng(seed))
        np.testing.assert_array_equal(idx, np.arange(8))  # equal priorities: one per segment


def test_new_items_get_the_largest_priority_seen() -> None:
    sampler = PrioritizedSampler(4, alpha=1.0, eps=0.0 + 1e-6)
    sampler.insert(np.array([0]))
    assert sampler.max_priority == 1.0
    sampler.set_priorities(np.array([0]), np.array([3.0]))
    sampler.set_priorities(np.array([0]), np.array([0.5]))  # lower later: the max stays
    sampler.insert(np.array([1, 2]))
    probs = sampler.probabilities(np.array([0, 1, 2]))
    np.testing.assert_allclose(probs * sampler.total, [0.5 + 1e-6, 3.0 + 1e-6, 3.0 + 1e-6])
    sampler.insert(np.array([3]), np.array([0.25]))  # an Ape-X actor's own priority
    assert sampler.probabilities(np.array([3]))[0] * sampler.total == pytest.approx(0.25 + 1e-6)


def test_removed_slots_are_not_drawn() -> None:
    sampler = PrioritizedSampler(10, alpha=0.5)
    sampler.insert(np.arange(10))
    sampler.remove(np.arange(5))
    idx, weights = sampler.sample(500, 1.0, np.random.default_rng(0))
    assert idx.min() >= 5
    np.testing.assert_array_equal(weights, 1.0)
    sampler.remove(np.arange(10))
    with pytest.raises(ValueError, match="no slot is active"):
        sampler.sample(1, 1.0, np.random.default_rng(0))


def test_nan_td_errors_are_rejected() -> None:
    sampler = PrioritizedSampler(4, alpha=0.5)
    with pytest.raises(ValueError, match="finite"):
        sampler.set_priorities(np.array([0]), np.array([np.nan]))


def test_linear_schedule() -> None:
    beta = LinearSchedule(start=0.4, end=1.0, steps=100)
    assert beta.value(0) == pytest.approx(0.4)
    assert beta.value(50) == pytest.approx(0.7)
    assert beta.value(100) == pytest.approx(1.0)
    assert beta.value(10_000) == pytest.approx(1.0)
    assert LinearSchedule(start=0.4, end=1.0, steps=0).value(0) == 1.0


def test_one_item_with_a_near_zero_td_error_does_not_shrink_every_weight() -> None:
    # Normalised over the whole buffer, the item with |delta| = 0 (priority eps) would set the
    # scale: every other weight (eps / p)^(alpha beta), here about 1e-4, below Adam's epsilon
    # once the loss is multiplied by it (Ape-X CartPole learned nothing late in its runs).
    sampler = PrioritizedSampler(1_000, alpha=0.6, eps=1e-6)
    td = np.random.default_rng(7).uniform(0.5, 2.0, size=1_000)
    td[123] = 0.0
    sampler.set_priorities(np.arange(1_000), td)
    rng = np.random.default_rng(8)
    batches = [sampler.sample(64, 1.0, rng) for _ in range(50)]
    assert not any(123 in idx for idx, _ in batches)  # too unlikely to be drawn
    mean = np.mean([w.mean() for _, w in batches])
    assert mean > 0.3  # the batch's least likely item weighs 1; the rest at most 4x less
    assert all(w.max() == 1.0 for _, w in batches)
