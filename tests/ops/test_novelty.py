"""NGU's episodic reward and lifelong multiplier against a float64 loop written from Badia et al.
2020 (Algorithm 1), hand-computed cases, and RunningMeanStd against numpy."""

from __future__ import annotations

import collections
import io
import math

import numpy as np
import pytest
import torch

from shoal.ops.novelty import (
    EpisodicMemory,
    RunningMeanStd,
    episodic_reward,
    lifelong_multiplier,
)

# The paper's constants (Badia et al. 2020, Table of hyperparameters).
EPSILON, XI, C, S_MAX = 1e-4, 8e-3, 1e-3, 8.0


class _Algorithm1:
    """One env row of NGU's episodic novelty, in the paper's notation, in float64.

    `M` is the episodic memory (a list of embeddings, the oldest dropped past the capacity);
    `sum_d2` and `n_d2` make `d_m^2`, the running average of the squared k-NN distances: of
    the episode's (`per_episode`, as rlax keeps them in the episode's state) or of every one.
    `seen` counts which branches the inputs reached.
    """

    def __init__(self, k, epsilon, xi, c, s_max, capacity, seen, per_episode=True):
        self.k, self.epsilon, self.xi, self.c, self.s_max = k, epsilon, xi, c, s_max
        self.capacity, self.seen, self.per_episode = capacity, seen, per_episode
        self.M = []
        self.sum_d2, self.n_d2 = 0.0, 0

    def reset(self):
        self.M = []
        if self.per_episode:
            self.sum_d2, self.n_d2 = 0.0, 0

    def step(self, f_x):
        # 1-5: the k nearest neighbours N_k of f(x_t) in M and their squared distances d_k.
        all_d2 = np.sort(np.sum((np.array(self.M) - f_x) ** 2, axis=1)) if self.M else []
        d_k = [float(d) for d in all_d2[: self.k]]
        self.seen["empty memory"] += not d_k
        self.seen["fewer than k neighbours"] += 0 < len(d_k) < self.k
        self.seen["revisit (distance 0)"] += 0.0 in d_k
        # 6: update the running average d_m^2 with d_k.
        self.sum_d2 += sum(d_k)
        self.n_d2 += len(d_k)
        d_m2 = self.sum_d2 / self.n_d2 if self.n_d2 else 0.0
        self.seen["d_m^2 = 0 with neighbours"] += bool(d_k) and d_m2 == 0.0
        # 7: normalise (d_m^2 is 0 only if every distance so far was 0, and then d / d_m^2 := 0).
        d_n = [d / d_m2 if d_m2 > 0 else 0.0 for d in d_k]
        self.seen["inside the cluster distance"] += any(0 < d <= self.xi for d in d_n)
        self.seen["just outside the cluster distance"] += any(
            self.xi < d < 3 * self.xi for d in d_n
        )
        # 8: cluster.
        d_n = [max(d - self.xi, 0.0) for d in d_n]
        # 9: kernel.
        K_v = [self.epsilon / (d + self.epsilon) for d in d_n]
        # 10: similarity.
        s = math.sqrt(sum(K_v)) + self.c
        # 11-15: reward, with the max-similarity cut-off.
        if s > self.s_max:
            self.seen["max-similarity cut-off"] += 1
            r = 0.0
        else:
            r = 1.0 / s
        # The embedding joins the memory after the reward.
        self.M.append(f_x)
        if len(self.M) > self.capacity:
            self.M.pop(0)
            self.seen["memory full (ring wraps)"] += 1
        return r


def _stream(
    memory, reference, rng, steps, rows_at, dim, seen, offset=0.0, scale=1.0, reset_prob=0.05
):
    """Drive `memory` and the per-row references with the same random embeddings and resets:
    points `offset + scale N(0, 1)`, exact revisits, and revisits with small and medium noise."""
    for step in range(steps):
        active = rows_at(step)
        chosen = rng.permutation(active)[: rng.integers(1, len(active) + 1)]
        embeddings = np.empty((len(chosen), dim), dtype=np.float32)
        for i, row in enumerate(chosen):
            if rng.random() < reset_prob:
                memory.reset([row])
                reference[row].reset()
                seen["reset"] += 1
            M = reference[row].M
            u = rng.random()
            if M and u < 0.25:  # an exact revisit
                e = M[rng.integers(len(M))]
            elif M and u < 0.5:  # well inside the cluster distance
                e = M[rng.integers(len(M))] + rng.normal(size=dim) * 0.005 * scale
            elif M and u < 0.65:  # around the cluster distance
                e = M[rng.integers(len(M))] + rng.normal(size=dim) * 0.15 * scale
            else:
                e = offset + scale * rng.normal(size=dim)
            embeddings[i] = e
        expected = [
            reference[row].step(embeddings[i].astype(np.float64)) for i, row in enumerate(chosen)
        ]
        got = memory.reward(chosen, torch.from_numpy(embeddings))
        assert got.dtype == torch.float32 and got.shape == (len(chosen),)
        np.testing.assert_allclose(got.numpy(), expected, rtol=2e-5, atol=0)


@pytest.mark.parametrize("distance_mean", ["episode", "lifelong"])
@pytest.mark.parametrize(
    ("k", "capacity", "s_max"),
    [(10, 15, S_MAX), (4, 7, 1.9)],
    ids=["paper-constants", "small-k-and-s_max"],
)
def test_episodic_memory_matches_algorithm_1(k, capacity, s_max, distance_mean):
    dim = 4
    rng = np.random.default_rng(0)
    seen = dict.fromkeys(
        [
            "empty memory",
            "fewer than k neighbours",
            "revisit (distance 0)",
            "d_m^2 = 0 with neighbours",
            "inside the cluster distance",
            "just outside the cluster distance",
            "max-similarity cut-off",
            "memory full (ring wraps)",
            "reset",
        ],
        0,
    )
    per_episode = distance_mean == "episode"
    reference = [
        _Algorithm1(k, EPSILON, XI, C, s_max, capacity, seen, per_episode) for _ in range(3)
    ]
    memory = EpisodicMemory(
        2, dim, capacity=capacity, k=k, max_similarity=s_max, distance_mean=distance_mean
    )

    # The first distance ever is 0: d_m^2 = 0 must not divide 0 by 0.
    first = torch.tensor([[0.5, -1.0, 2.0, 0.25]])
    expected = [reference[0].step(first[0].double().numpy()) for _ in range(2)]
    got = [memory.reward([0], first).item() for _ in range(2)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)

    _stream(memory, reference, rng, 150, lambda _: [0, 1], dim, seen)
    memory.grow(3)  # a row added later
    _stream(memory, reference, rng, 250, lambda _: [0, 1, 2], dim, seen)

    np.testing.assert_allclose(
        memory.mean_sq_distance, [r.sum_d2 / r.n_d2 for r in reference], rtol=1e-6
    )
    assert memory.sizes.tolist() == [len(r.M) for r in reference]
    # With k = 10 the similarity is at most sqrt(10) + c < 8 = s_max: no cut-off is possible.
    required = [name for name in seen if k < 10 or name != "max-similarity cut-off"]
    assert all(seen[name] > 0 for name in required), seen


@pytest.mark.parametrize("capacity", [40, 3200], ids=["small-memory", "large-memory"])
def test_episodic_memory_is_exact_far_from_the_origin(capacity):
    # Embeddings of norm ~3000 that differ by ~0.01: |a|² + |b|² - 2ab in float32 would lose
    # every digit of the distances; the memory must still match Algorithm 1, also once it holds
    # thousands of embeddings (where it may search them differently) and wraps.
    dim, k = 8, 10
    rng = np.random.default_rng(5)
    seen = collections.Counter()
    reference = [_Algorithm1(k, EPSILON, XI, C, S_MAX, capacity, seen)]
    memory = EpisodicMemory(1, dim, capacity=capacity, k=k)
    steps = capacity + 200
    _stream(memory, reference, rng, steps, lambda _: [0], dim, seen, 1000.0, 0.01, reset_prob=0)
    assert seen["memory full (ring wraps)"] == 200
    assert seen["revisit (distance 0)"] > 0 and seen["inside the cluster distance"] > 0


@pytest.mark.parametrize("distance_mean", ["episode", "lifelong"])
def test_episodic_memory_first_reward_is_one_over_c_and_reset_restarts_the_mean(distance_mean):
    memory = EpisodicMemory(2, 3, capacity=5, distance_mean=distance_mean)
    e = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    # An empty memory has no neighbours: s = sqrt(0) + c.
    assert memory.reward([0, 1], e).tolist() == pytest.approx([1 / C, 1 / C], rel=1e-6)
    # Row 1 alone: its only neighbour is at squared distance 1 + 1 + 1 = 3.
    memory.reward([1], torch.tensor([[1.0, 1.0, 1.0]]))
    assert memory.mean_sq_distance.tolist() == [0.0, 3.0]
    assert memory.sizes.tolist() == [1, 2]
    memory.reset([1])
    assert memory.sizes.tolist() == [1, 0]
    # Per episode, d_m^2 restarts with the memory; lifelong, it keeps the earlier episodes'.
    assert memory.mean_sq_distance.tolist() == [0.0, 0.0 if distance_mean == "episode" else 3.0]
    assert memory.reward([1], e[1:]).item() == pytest.approx(1 / C, rel=1e-6)
    # The next squared distance, 12, is normalised by itself in a new episode's mean, but by
    # (3 + 12) / 2 = 7.5 in the lifelong one.
    got = memory.reward([1], torch.tensor([[2.0, 2.0, 2.0]])).item()
    d_m2 = 12.0 if distance_mean == "episode" else 7.5
    assert memory.mean_sq_distance[1] == d_m2
    kernel = EPSILON / (12.0 / d_m2 - XI + EPSILON)
    assert got == pytest.approx(1 / (math.sqrt(kernel) + C), rel=1e-6)
    assert memory.mean_sq_distance[0] == 0.0  # row 0 untouched


def test_episodic_memory_state_dict_round_trips_through_weights_only_load():
    rng = np.random.default_rng(3)
    # Lifelong, where the loaded means outlive the reset below and must match.
    memory = EpisodicMemory(3, 5, capacity=20, distance_mean="lifelong")
    for _ in range(30):
        memory.reward(np.array([2, 0, 1]), torch.from_numpy(rng.normal(size=(3, 5))).float())
    buffer = io.BytesIO()
    torch.save(memory.state_dict(), buffer)
    buffer.seek(0)
    restored = EpisodicMemory(3, 5, capacity=20, distance_mean="lifelong")
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    np.testing.assert_array_equal(restored.mean_sq_distance, memory.mean_sq_distance)
    assert restored.sizes.tolist() == [0, 0, 0]  # the memories themselves are not saved
    memory.reset([0, 1, 2])
    for _ in range(5):
        e = torch.from_numpy(rng.normal(size=(3, 5))).float()
        torch.testing.assert_close(restored.reward([0, 1, 2], e), memory.reward([0, 1, 2], e))
    with pytest.raises(ValueError, match="grow"):
        EpisodicMemory(2, 5).load_state_dict(memory.state_dict())


def test_episodic_memory_rejects_bad_rows_and_embeddings():
    memory = EpisodicMemory(2, 3)
    with pytest.raises(ValueError, match=r"grow\(3\)"):
        memory.reward([2], torch.zeros(1, 3))
    with pytest.raises(ValueError, match="distinct"):
        memory.reward([1, 1], torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"\[n, dim\]"):
        memory.reward([0], torch.zeros(1, 4))
    with pytest.raises(ValueError, match="NaN"):
        memory.reward([0], torch.tensor([[0.0, float("nan"), 0.0]]))
    with pytest.raises(ValueError, match="grow"):
        memory.grow(1)
    with pytest.raises(ValueError, match="distance_mean"):
        EpisodicMemory(1, 3, distance_mean="run")
    assert memory.sizes.tolist() == [0, 0]  # nothing was stored by the failed calls


def _reward(d, mean, **kwargs):
    return episodic_reward(
        torch.tensor(d, dtype=torch.float64), torch.tensor(mean, dtype=torch.float64), **kwargs
    )


def test_episodic_reward_hand_computed():
    # Paper constants, four revisits: d_n = 0, K = 1 each, s = sqrt(4) + 0.001.
    assert _reward([[0.0, 0.0, 0.0, 0.0]], [1.0]).item() == pytest.approx(1 / 2.001, rel=1e-12)
    # Ten revisits are as similar as k = 10 allows: s = sqrt(10) + c stays under s_max = 8.
    assert _reward([[0.0] * 10], [1.0]).item() == pytest.approx(1 / (math.sqrt(10) + C), rel=1e-12)
    # eps = 1, xi = 0.5, c = 0.5: d / d_m^2 = [0.5, 0.2, 3.5] -> clustered [0, 0, 3]
    # -> K = [1, 1, 1/4] -> s = sqrt(2.25) + 0.5 = 2 -> r = 1/2.
    constants = {"kernel_epsilon": 1.0, "cluster_distance": 0.5, "pseudo_count": 0.5}
    d = [[1.0, 0.4, 7.0]]
    assert _reward(d, [2.0], **constants).item() == 0.5
    assert _reward(d, [2.0], max_similarity=2.0, **constants).item() == 0.5  # s > s_max only
    assert _reward(d, [2.0], max_similarity=1.99, **constants).item() == 0.0
    # Rows are independent: the second row's d_m^2 = 4 gives d_n = [0.25, 0.1, 1.75]
    # -> [0, 0, 1.25] -> K = [1, 1, 1/2.25] -> s = sqrt(2 + 4/9) + 0.5.
    got = _reward([d[0], d[0]], [2.0, 4.0], **constants)
    assert got.tolist() == pytest.approx([0.5, 1 / (math.sqrt(22 / 9) + 0.5)], rel=1e-12)


def test_episodic_reward_with_no_or_masked_neighbours():
    # No neighbours at all (an empty memory): s = c.
    empty = episodic_reward(torch.zeros(2, 0), torch.zeros(2))
    assert empty.shape == (2,) and empty.tolist() == pytest.approx([1 / C, 1 / C], rel=1e-6)
    # Masked columns are ignored whatever they hold; row 1 keeps only d = 1 with d_m^2 = 2,
    # so K = [1] (eps = 1, xi = 0.5) and s = 1 + 0.5.
    d = [[1.0, 0.4, 7.0], [1.0, float("nan"), float("inf")]]
    valid = torch.tensor([[True, True, True], [True, False, False]])
    got = _reward(
        d, [2.0, 2.0], valid=valid, kernel_epsilon=1.0, cluster_distance=0.5, pseudo_count=0.5
    )
    assert got.tolist() == pytest.approx([0.5, 1 / 1.5], rel=1e-12)


def test_episodic_reward_guards_a_zero_running_mean():
    # Every distance so far was 0: both revisits count fully, s = sqrt(2) + c.
    assert _reward([[0.0, 0.0]], [0.0]).item() == pytest.approx(1 / (math.sqrt(2) + C))
    # A positive distance with d_m^2 = 0 counts as infinitely far (K = 0), not NaN.
    assert _reward([[0.0, 5.0]], [0.0]).item() == pytest.approx(1 / (1 + C))


def test_episodic_reward_rejects_bad_shapes_and_constants():
    with pytest.raises(ValueError, match="mean_sq_distance"):
        episodic_reward(torch.zeros(3, 2), torch.zeros(2))
    with pytest.raises(ValueError, match=r"\[B, k\]"):
        episodic_reward(torch.zeros(3), torch.zeros(3))
    with pytest.raises(ValueError, match="valid"):
        episodic_reward(torch.zeros(3, 2), torch.zeros(3), valid=torch.ones(3, 2))
    with pytest.raises(ValueError, match="pseudo_count"):
        episodic_reward(torch.zeros(3, 2), torch.zeros(3), pseudo_count=0.0)


def test_lifelong_multiplier_hits_both_clip_bounds():
    error = torch.tensor([0.0, 1.0, 2.0, 3.0, 10.0], dtype=torch.float64)
    # alpha = 1 + (err - 1) / 2 = [0.5, 1, 1.5, 2, 5.5] -> clipped to [1, 5].
    assert lifelong_multiplier(error, 1.0, 2.0).tolist() == [1.0, 1.0, 1.5, 2.0, 5.0]
    assert lifelong_multiplier(error, 1.0, 2.0, max_multiplier=1.75).tolist() == [
        1.0,
        1.0,
        1.5,
        1.75,
        1.75,
    ]
    # Per-element statistics broadcast; std = 0 (one distinct error seen) gives 1, not inf/NaN.
    mean = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    std = torch.tensor([[0.0], [4.0]], dtype=torch.float64)
    got = lifelong_multiplier(error.expand(2, 5), mean, std)
    assert got.tolist() == [[1.0] * 5, [1.0, 1.0, 1.25, 1.5, 3.25]]
    # A reward: the RND predictor's error keeps its graph, the multiplier has none.
    assert not lifelong_multiplier(error.clone().requires_grad_(), 1.0, 2.0).requires_grad
    with pytest.raises(ValueError, match="max_multiplier"):
        lifelong_multiplier(error, 0.0, 1.0, max_multiplier=0.5)
    with pytest.raises(ValueError, match="std"):
        lifelong_multiplier(error, 0.0, torch.ones(3))


def test_running_mean_std_matches_numpy_over_batches():
    rng = np.random.default_rng(7)
    stats = RunningMeanStd()
    assert (stats.count, stats.mean, stats.std) == (0, 0.0, 0.0)
    # A large offset checks the merge does not cancel; sizes include 1 and a 2-D batch.
    batches = [rng.normal(size=n) * 3 + 1e6 for n in (1, 5, 1, 64)] + [rng.normal(size=(4, 8))]
    seen = []
    for batch in batches:
        stats.update(torch.from_numpy(batch))
        stats.update(torch.zeros(0, dtype=torch.float64))  # a no-op
        seen.extend(batch.ravel().tolist())
        assert stats.count == len(seen)
        assert stats.mean == pytest.approx(np.mean(seen), rel=1e-12)
        assert stats.std == pytest.approx(np.std(seen), rel=1e-9)
    with pytest.raises(ValueError, match="NaN"):
        stats.update(torch.tensor([1.0, float("nan")]))
    assert stats.count == len(seen)


def test_running_mean_std_state_dict_round_trips_through_weights_only_load():
    stats = RunningMeanStd()
    stats.update(torch.tensor([1.0, 2.0, 4.0]))
    buffer = io.BytesIO()
    torch.save(stats.state_dict(), buffer)
    buffer.seek(0)
    restored = RunningMeanStd()
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    for s in (stats, restored):
        s.update(torch.tensor([8.0, -3.0]))
    values = [1.0, 2.0, 4.0, 8.0, -3.0]
    assert (restored.count, restored.mean, restored.std) == (stats.count, stats.mean, stats.std)
    assert restored.count == 5 and restored.mean == pytest.approx(np.mean(values), rel=1e-15)
    assert restored.std == pytest.approx(np.std(values), rel=1e-12)
    with pytest.raises(ValueError, match="keys"):
        restored.load_state_dict({"count": 1, "mean": 0.0})
