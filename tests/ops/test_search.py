"""PUCT tree search (Silver et al. 2018) on small trees whose values are known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from shoal.ops import (
    dirichlet_noise,
    policy_value_loss,
    puct_scores,
    run_searches,
    visit_policy,
)


class TreeGame:
    """An explicit game tree: a node is a list of children or a float, the result for the
    player to move there (two players alternate; 3 actions everywhere, some illegal)."""

    def __init__(self, node, actions: int = 3) -> None:
        self.node, self.actions = node, actions

    def legal_actions(self) -> np.ndarray:
        legal = np.zeros(self.actions, bool)
        if isinstance(self.node, list):
            legal[: len(self.node)] = True
        return legal

    def apply(self, action: int) -> TreeGame:
        return TreeGame(self.node[action], self.actions)

    def terminal_value(self) -> float | None:
        return None if isinstance(self.node, list) else float(self.node)

    def observation(self):
        return self


def uniform(observations):
    n = len(observations)
    return np.ones((n, observations[0].actions if n else 3)), np.zeros(n)


def negamax(node) -> float:
    if not isinstance(node, list):
        return float(node)
    return max(-negamax(child) for child in node)


def test_puct_scores_match_the_papers_formula_in_float64():
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = int(rng.integers(1, 6))
        prior = rng.dirichlet(np.ones(a))
        visits = rng.integers(0, 30, a).astype(np.float64)
        visits[rng.random(a) < 0.3] = 0
        value_sum = rng.uniform(-1, 1, a) * visits
        c_init, c_base = rng.uniform(0.5, 3), rng.choice([1.0, 50.0, 19652.0])
        got = puct_scores(prior, visits, value_sum, c_init, c_base)
        total = sum(visits)
        c = math.log((1 + total + c_base) / c_base) + c_init
        for i in range(a):
            q = value_sum[i] / visits[i] if visits[i] > 0 else 0.0
            u = c * prior[i] * math.sqrt(max(total, 1)) / (1 + visits[i])
            assert got[i] == pytest.approx(q + u, rel=1e-12, abs=1e-12)


def test_two_armed_tree_visits_follow_the_hand_derived_sequence():
    # Priors 1/2 each, a win (+1) and a loss (-1) for the root's player, c = 1 (c_base huge):
    # the unvisited loss scores 0.5 sqrt(N), the win 1 + 0.5 sqrt(N) / (1 + N); the loss is
    # first ahead at N = 6 (1.225 > 1.175; at N = 5: 1.118 < 1.186), so 7 simulations visit
    # them 6 and 1 times; then its Q = -1 keeps it behind for long.
    game = TreeGame([-1.0, 1.0], actions=2)  # leaves hold the result for the player to move
    for sims, expected in ((6, [6, 0]), (7, [6, 1]), (8, [7, 1])):
        result = run_searches([game], uniform, sims, c_init=1.0, c_base=1e12)
        np.testing.assert_array_equal(result.visit_counts[0], expected)
    assert result.root_values[0] == pytest.approx((7 - 1) / 8)


@pytest.mark.parametrize(
    "tree",
    [
        [[1.0, -1.0], [-1.0, 0.0], [0.0]],  # the root's player draws at best (last move)
        [[[1.0, -1.0], [-1.0]], [[-1.0, 1.0], [1.0, 1.0]], [-1.0, [1.0, -1.0]]],
        [[-1.0, -1.0], [1.0, [-1.0, -1.0]], [[1.0], 1.0]],
    ],
)
def test_search_finds_the_minimax_move_and_value(tree):
    game = TreeGame(tree)
    value = negamax(tree)
    best = [a for a, child in enumerate(tree) if -negamax(child) == value]
    result = run_searches([game, game], uniform, 800)
    for row in range(2):
        assert int(np.argmax(result.visit_counts[row])) in best
        assert result.root_values[row] == pytest.approx(value, abs=0.1)
        assert result.visit_counts[row].sum() == 800


def test_batched_searches_equal_searches_one_by_one():
    games = [TreeGame([[1.0, -1.0], [-1.0, 0.0], [0.0]]), TreeGame([[1.0], [-1.0, 1.0]])]
    together = run_searches(games, uniform, 40)
    for i, game in enumerate(games):
        alone = run_searches([game], uniform, 40)
        np.testing.assert_array_equal(alone.visit_counts[0], together.visit_counts[i])
        assert alone.root_values[0] == together.root_values[i]


def test_illegal_moves_are_never_visited_and_an_ended_root_is_refused():
    result = run_searches([TreeGame([1.0, -1.0])], uniform, 30)  # action 2 is illegal
    assert result.visit_counts[0, 2] == 0 and result.priors[0, 2] == 0
    with pytest.raises(ValueError, match="already ended"):
        run_searches([TreeGame(1.0)], uniform, 3)


def test_root_noise_is_a_dirichlet_mixture_over_legal_moves():
    rng = np.random.default_rng(0)
    prior = np.array([0.5, 0.5, 0.0, 0.0])
    legal = np.array([True, True, False, True])
    mixed = np.stack([dirichlet_noise(prior, legal, 0.3, 0.25, rng) for _ in range(4000)])
    assert np.allclose(mixed.sum(axis=1), 1.0)
    assert (mixed[:, 2] == 0).all()
    # E[eta] is uniform over the 3 legal moves
    expected = 0.75 * prior + 0.25 * legal / 3
    np.testing.assert_allclose(mixed.mean(axis=0), expected, atol=0.01)
    np.testing.assert_array_equal(dirichlet_noise(prior, legal, 0.3, 0.0, rng), prior)
    noisy = run_searches([TreeGame([1.0, -1.0])], uniform, 1, noise_fraction=0.5, rng=rng)
    assert noisy.priors[0, :2].sum() == pytest.approx(1) and noisy.priors[0, 0] != 0.5


def test_visit_policy_temperatures():
    counts = np.array([[1.0, 3.0, 0.0, 4.0], [2.0, 2.0, 1.0, 0.0]])
    np.testing.assert_allclose(visit_policy(counts, 1.0), counts / counts.sum(1, keepdims=True))
    squared = counts**2
    np.testing.assert_allclose(visit_policy(counts, 0.5), squared / squared.sum(1, keepdims=True))
    np.testing.assert_array_equal(visit_policy(counts, 0.0), [[0, 0, 0, 1], [0.5, 0.5, 0, 0]])
    assert np.isfinite(visit_policy(np.array([1e6, 1.0]), 0.01)).all()
    with pytest.raises(ValueError, match="temperature"):
        visit_policy(counts, -1.0)


def test_policy_value_loss_is_squared_error_plus_cross_entropy():
    torch.manual_seed(0)
    logits = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    value = torch.tanh(torch.randn(5, dtype=torch.float64))
    pi = torch.softmax(torch.randn(5, 4, dtype=torch.float64), -1)
    z = torch.tensor([1.0, -1.0, 0.0, 1.0, -1.0], dtype=torch.float64)
    out = policy_value_loss(logits, value, pi, z)
    ref_v = sum((z[b] - value[b]) ** 2 for b in range(5)) / 5
    ref_p = 0.0
    for b in range(5):
        norm = math.log(sum(math.exp(x) for x in logits[b].tolist()))
        ref_p -= sum(pi[b, a].item() * (logits[b, a].item() - norm) for a in range(4))
    assert out.value_loss.item() == pytest.approx(float(ref_v))
    assert out.policy_loss.item() == pytest.approx(ref_p / 5)
    legal = torch.tensor([[True, True, False, True]] * 5)
    masked = policy_value_loss(logits, value, pi * legal / (pi * legal).sum(-1, True), z, legal)
    masked.loss.backward()
    assert logits.grad is not None and (logits.grad[:, 2] == 0).all()
