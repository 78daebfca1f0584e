"""Agent57's sliding-window UCB meta-controller."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch

from shoal.agents.agent57.bandit import SlidingWindowUCB, best_arm
from shoal.errors import CheckpointError


def warm_up(bandit: SlidingWindowUCB) -> None:
    for _ in range(bandit.num_arms):
        bandit.select()


def test_warm_up_is_round_robin_by_selections():
    # epsilon 1 would pick at random; the warm-up ignores it, and needs no update between picks.
    bandit = SlidingWindowUCB(num_arms=5, window=10, epsilon=1.0, bonus=1.0, seed=0)
    assert [bandit.select() for _ in range(5)] == [0, 1, 2, 3, 4]
    assert bandit.num_selections == 5


def test_warm_up_order_does_not_depend_on_returns():
    bandit = SlidingWindowUCB(num_arms=4, window=10, epsilon=0.0, bonus=0.0, seed=0)
    picks = []
    for reward in (0.0, 100.0, -5.0, 3.0):
        arm = bandit.select()
        picks.append(arm)
        bandit.update(arm, reward)
    assert picks == [0, 1, 2, 3]
    assert bandit.select() == 1  # then the best mean


def test_counts_means_and_scores_over_the_window():
    bandit = SlidingWindowUCB(num_arms=3, window=4, epsilon=0.0, bonus=2.0, seed=0)
    for arm, reward in [(0, 1.0), (0, 3.0), (1, 5.0), (0, 5.0)]:
        bandit.update(arm, reward)
    np.testing.assert_array_equal(bandit.counts(), [3, 1, 0])
    means = bandit.means()
    assert means[0] == pytest.approx(3.0) and means[1] == pytest.approx(5.0)
    assert math.isnan(means[2])
    scores = bandit.ucb_scores()
    assert scores[0] == pytest.approx(3.0 + 2.0 * math.sqrt(1 / 3))
    assert scores[1] == pytest.approx(5.0 + 2.0)
    assert scores[2] == math.inf


def test_window_forgets_old_episodes():
    """Arm 0 was best; once its good episode leaves the window it stops being chosen."""
    history = [(0, 10.0), (1, 1.0), (0, 0.0), (0, 0.0)]
    wide = SlidingWindowUCB(num_arms=2, window=4, epsilon=0.0, bonus=0.0, seed=0)
    narrow = SlidingWindowUCB(num_arms=2, window=3, epsilon=0.0, bonus=0.0, seed=0)
    for bandit in (wide, narrow):
        warm_up(bandit)
        for arm, reward in history:
            bandit.update(arm, reward)
    # All four episodes: arm 0's mean is 10/3 > 1.
    assert wide.means()[0] == pytest.approx(10.0 / 3.0)
    assert [wide.select() for _ in range(20)] == [0] * 20
    # The last three: arm 0's 10 is gone, its mean is 0 < 1.
    np.testing.assert_array_equal(narrow.counts(), [2, 1])
    assert narrow.means()[0] == 0.0
    assert [narrow.select() for _ in range(20)] == [1] * 20


def test_an_arm_that_leaves_the_window_scores_infinite():
    bandit = SlidingWindowUCB(num_arms=2, window=2, epsilon=0.0, bonus=0.0, seed=0)
    warm_up(bandit)
    bandit.update(0, 10.0)
    bandit.update(1, -1.0)
    assert bandit.select() == 0
    bandit.update(0, 10.0)
    bandit.update(0, 10.0)  # arm 1's only episode leaves the window
    np.testing.assert_array_equal(bandit.counts(), [2, 0])
    assert bandit.select() == 1  # untried lately: +inf beats any mean


def test_epsilon_zero_picks_the_ucb_argmax_not_the_plain_mean():
    # Arm 0: four episodes of 1.0 -> 1 + sqrt(1/4) = 1.5; arm 1: one of 0.8 -> 0.8 + 1 = 1.8.
    def run(bonus: float) -> list[int]:
        bandit = SlidingWindowUCB(num_arms=2, window=100, epsilon=0.0, bonus=bonus, seed=3)
        warm_up(bandit)
        for _ in range(4):
            bandit.update(0, 1.0)
        bandit.update(1, 0.8)
        return [bandit.select() for _ in range(50)]

    assert run(bonus=1.0) == [1] * 50
    assert run(bonus=0.0) == [0] * 50


def test_ties_are_broken_at_random():
    bandit = SlidingWindowUCB(num_arms=4, window=10, epsilon=0.0, bonus=1.0, seed=0)
    warm_up(bandit)  # no returns yet: every arm scores +inf
    picks = [bandit.select() for _ in range(400)]
    counts = np.bincount(picks, minlength=4)
    assert np.all(counts > 60), counts


def test_epsilon_one_is_uniform():
    n, draws = 4, 8000
    bandit = SlidingWindowUCB(num_arms=n, window=100, epsilon=1.0, bonus=1.0, seed=7)
    warm_up(bandit)
    for _ in range(20):
        bandit.update(2, 100.0)  # the UCB rule would always pick arm 2
    for arm in (0, 1, 3):
        bandit.update(arm, 0.0)
    counts = np.bincount([bandit.select() for _ in range(draws)], minlength=n)
    expected = draws / n
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    assert chi2 < 16.27, (counts, chi2)  # chi-square, 3 degrees of freedom, p = 0.001


def test_evaluation_settings_settle_on_the_best_arm():
    true_means = np.array([0.0, 1.0, 2.0, 2.5, 1.5, 3.0, 0.5, 2.0])
    best = int(np.argmax(true_means))
    bandit = SlidingWindowUCB(num_arms=8, window=3600, epsilon=0.01, bonus=1.0, seed=11)
    env_rng = np.random.default_rng(12)
    picks = []
    for _ in range(3000):
        arm = bandit.select()
        picks.append(arm)
        bandit.update(arm, true_means[arm] + env_rng.normal(scale=0.5))
    late = np.array(picks[-1000:])
    assert np.mean(late == best) > 0.95
    assert int(np.nanargmax(bandit.means())) == best


def test_shared_bandit_interleaves_selections_and_updates():
    """Three envs share the bandit: three selections, then their three returns."""
    bandit = SlidingWindowUCB(num_arms=4, window=50, epsilon=0.0, bonus=0.0, seed=0)
    first = [bandit.select() for _ in range(3)]
    assert first == [0, 1, 2]
    for arm, reward in zip(first, (1.0, 2.0, 3.0), strict=True):
        bandit.update(arm, reward)
    assert bandit.select() == 3  # warm-up continues by selections
    assert bandit.select() == 3  # arm 3 has no return yet: +inf


def _run(bandit: SlidingWindowUCB, steps: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    picks = []
    pending: list[int] = []
    for _ in range(steps):
        pending.append(bandit.select())
        if len(pending) == 3:  # three envs finishing together
            for arm in pending:
                bandit.update(arm, float(arm % 3) + float(rng.normal()))
            picks += pending
            pending = []
    return picks + pending


def _assert_plain(value):
    if isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, str)
            _assert_plain(v)
    elif isinstance(value, list):
        for v in value:
            _assert_plain(v)
    else:
        assert type(value) in (int, float, str, bool), type(value)


def test_state_dict_round_trip_continues_exactly():
    original = SlidingWindowUCB(num_arms=6, window=20, epsilon=0.3, bonus=1.0, seed=5)
    _run(original, 61, seed=0)  # a pending selection is part of the state
    state = original.state_dict()
    _assert_plain(state)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)

    restored = SlidingWindowUCB(num_arms=6, window=20, epsilon=0.3, bonus=1.0, seed=999)
    restored.load_state_dict(loaded)
    assert restored.num_selections == original.num_selections
    np.testing.assert_array_equal(restored.counts(), original.counts())
    np.testing.assert_array_equal(restored.means(), original.means())
    after_original = _run(original, 300, seed=1)
    after_restored = _run(restored, 300, seed=1)
    assert after_restored == after_original
    # The other seed alone would have chosen differently.
    fresh = SlidingWindowUCB(num_arms=6, window=20, epsilon=0.3, bonus=1.0, seed=999)
    assert _run(fresh, 300, seed=1) != after_original


def test_load_state_dict_rejects_another_bandit():
    state = SlidingWindowUCB(num_arms=4, window=10, seed=0).state_dict()
    with pytest.raises(CheckpointError, match="num_arms"):
        SlidingWindowUCB(num_arms=5, window=10).load_state_dict(state)
    with pytest.raises(CheckpointError, match="window"):
        SlidingWindowUCB(num_arms=4, window=11).load_state_dict(state)
    with pytest.raises(CheckpointError, match="missing"):
        SlidingWindowUCB(num_arms=4, window=10).load_state_dict({"num_arms": 4})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_arms": 0},
        {"num_arms": 4, "window": 0},
        {"num_arms": 4, "epsilon": 1.5},
        {"num_arms": 4, "epsilon": -0.1},
        {"num_arms": 4, "bonus": -1.0},
        {"num_arms": 4, "bonus": math.inf},
    ],
)
def test_bad_arguments_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        SlidingWindowUCB(**kwargs)


def test_bad_updates_raise():
    bandit = SlidingWindowUCB(num_arms=3, seed=0)
    with pytest.raises(ValueError):
        bandit.update(3, 1.0)
    with pytest.raises(ValueError):
        bandit.update(-1, 1.0)
    with pytest.raises(ValueError, match="finite"):
        bandit.update(0, math.nan)
    np.testing.assert_array_equal(bandit.counts(), [0, 0, 0])


def test_the_best_arm_is_the_best_windowed_mean_without_bonus():
    bandit = SlidingWindowUCB(num_arms=4, window=6, epsilon=0.0, bonus=1.0, seed=0)
    assert bandit.best_arm() == 0  # nothing played: the exploiting mixture
    for arm, reward in [(1, 0.9), (1, 0.8), (2, 0.0), (3, 1.0), (2, 0.0), (1, 0.9)]:
        bandit.update(arm, reward)
    warm_up(bandit)
    assert bandit.best_arm() == 3  # mean 1.0 from one episode beats 0.87 from three
    assert bandit.select() == 0  # while UCB still tries the arm it has never played
    bandit.update(3, 0.0)  # arm 1's first 0.9 leaves the window; arm 3 now averages 0.5
    assert bandit.best_arm() == 1
    # Ties go to the most played arm, then to the lowest index.
    assert best_arm(np.array([2, 3, 0]), np.array([0.5, 0.5, np.nan])) == 1
    assert best_arm(np.array([2, 2, 1]), np.array([0.5, 0.5, 0.1])) == 0
