"""Never Give Up's intrinsic reward: episodic k-NN novelty and the lifelong RND multiplier.

Badia et al. 2020, "Never Give Up: Learning Directed Exploration Strategies" (NGU),
arXiv:2002.06038, Section 2 and Algorithm 1 (Appendix). The intrinsic reward of an observation
`x_t` is `r^i_t = r^episodic_t · min(max(α_t, 1), L)`.

The episodic part counts visits to the controllable state `f(x_t)` with a kernel over its k
nearest neighbours `N_k` in the episode's memory `M` (the embeddings of the episode so far):

    d_n      = max(d²(f(x_t), f_i) / d²_m - ξ, 0)         for f_i in N_k
    K        = ε / (d_n + ε)
    s        = sqrt(Σ_{f_i in N_k} K) + c
    r^episodic_t = 0 if s > s_max else 1 / s

with `d²_m` the running mean of the squared k-NN distances, updated with the current distances
before normalising (Algorithm 1, lines 6-7). Section 2 describes `d²_m` as an average over the
k-th neighbours only; Algorithm 1 feeds it all k distances, which is what this module does.
`EpisodicMemory` averages over the distances of the current episode by default
(`distance_mean="episode"`), as DeepMind's rlax does (`episodic_memory_intrinsic_rewards`
keeps the sum and count in the episode's `IntrinsicRewardState`, beside the memory, and the
Acme agents built on it start each episode from a fresh state): the embedding is trained while
the agent acts, so an average over the whole run lags its current scale, and the normalised
distances, hence the rewards, drift as it learns. `"lifelong"` keeps one mean per row over the
whole run. An empty memory (the first step of every episode) has no neighbours, so `s = c` and
the reward is `1 / c`, the formula's own limit. The paper's constants are k = 10, ε = 1e-4,
ξ = 8e-3, c = 1e-3, s_max = 8 and a memory of 30 000 embeddings. With k = 10 the similarity is
at most `sqrt(10) + c < 8`, so the cut-off only fires for k >= 64 or a smaller s_max.

The lifelong part is Random Network Distillation's novelty (Burda et al. 2018, "Exploration by
Random Network Distillation", arXiv:1810.12894), normalised as NGU does:
`α_t = 1 + (err(x_t) - μ_e) / σ_e` with running mean and standard deviation of the errors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

from shoal.ops._checks import (
    check_broadcastable_to,
    check_floating,
    check_nonnegative,
    check_positive,
)

__all__ = ["EpisodicMemory", "RunningMeanStd", "episodic_reward", "lifelong_multiplier"]

# Memories larger than this rank their embeddings with a matrix-vector product instead of
# differences (measured on CPU: the differences stop fitting in cache around here).
_RANK_BY_PRODUCTS_ABOVE = 3000

_Rows = npt.NDArray[np.integer[Any]] | Sequence[int]


def _check_episodic_constants(
    kernel_epsilon: float, cluster_distance: float, pseudo_count: float, max_similarity: float
) -> None:
    check_positive("kernel_epsilon", kernel_epsilon)
    check_nonnegative("cluster_distance", cluster_distance)
    check_positive("pseudo_count", pseudo_count)
    check_positive("max_similarity", max_similarity)


def episodic_reward(
    sq_distances: Tensor,
    mean_sq_distance: Tensor,
    *,
    valid: Tensor | None = None,
    kernel_epsilon: float = 1e-4,
    cluster_distance: float = 8e-3,
    pseudo_count: float = 1e-3,
    max_similarity: float = 8.0,
) -> Tensor:
    """NGU's episodic intrinsic reward `r^episodic_t`, `[B]` (Badia et al. 2020, Algorithm 1).

    Args:
        sq_distances: squared Euclidean distances `d²(f(x_t), f_i)` from each row's embedding
            to its nearest neighbours in the episodic memory, `[B, k]`; k may be 0 (an empty
            memory, where the sum is 0 and the reward is `1 / c`).
        mean_sq_distance: the running mean `d²_m` of squared k-NN distances, already updated
            with this step's distances, `[B]`. Where it is 0 (every distance seen so far was 0)
            a zero distance normalises to 0 and a positive one counts as infinitely far.
        valid: which columns of `sq_distances` are real neighbours, bool `[B, k]`, for rows
            with fewer neighbours than others; None means all. Invalid entries are ignored,
            whatever their value.
        kernel_epsilon: the kernel's `ε` > 0.
        cluster_distance: `ξ` >= 0; normalised distances below it count as the same state.
        pseudo_count: `c` > 0, the minimum pseudo-count.
        max_similarity: `s_max` > 0; a state more similar than this gets reward 0.

    Returns:
        The reward per row, `[B]`, in the dtype of `sq_distances`.
    """
    check_floating("sq_distances", sq_distances)
    if sq_distances.ndim != 2:
        raise ValueError(
            f"sq_distances must be [B, k] (rows by neighbours), got shape "
            f"{tuple(sq_distances.shape)}"
        )
    check_floating("mean_sq_distance", mean_sq_distance)
    if mean_sq_distance.shape != sq_distances.shape[:1]:
        raise ValueError(
            f"mean_sq_distance must be [B] = {[sq_distances.shape[0]]} to match sq_distances "
            f"{tuple(sq_distances.shape)}, got shape {tuple(mean_sq_distance.shape)}"
        )
    if valid is not None and (
        not isinstance(valid, Tensor)
        or valid.dtype != torch.bool
        or valid.shape != sq_distances.shape
    ):
        got = (
            f"dtype {valid.dtype}, shape {tuple(valid.shape)}"
            if isinstance(valid, Tensor)
            else type(valid).__name__
        )
        raise ValueError(
            f"valid must be a bool tensor of the shape {tuple(sq_distances.shape)} of "
            f"sq_distances, got {got}"
        )
    _check_episodic_constants(kernel_epsilon, cluster_distance, pseudo_count, max_similarity)

    d_m2 = mean_sq_distance.to(sq_distances.dtype).unsqueeze(-1)
    # d²_m is 0 only before any distance or when all were 0; the tiny floor keeps 0 / 0 at 0.
    d_n = sq_distances / d_m2.clamp_min(torch.finfo(sq_distances.dtype).tiny)
    d_n = (d_n - cluster_distance).clamp_min(0.0)
    kernel = kernel_epsilon / (d_n + kernel_epsilon)
    if valid is not None:
        kernel = torch.where(valid, kernel, torch.zeros_like(kernel))
    similarity = kernel.sum(-1).sqrt() + pseudo_count
    return torch.where(
        similarity > max_similarity, torch.zeros_like(similarity), similarity.reciprocal()
    )


def _as_rows(name: str, rows: _Rows) -> npt.NDArray[np.int64]:
    array = np.asarray(rows)
    if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(
            f"{name} must be a 1-D array of integer row indices, got dtype {array.dtype} and "
            f"shape {array.shape}"
        )
    return array.astype(np.int64, copy=False)


class _RowMemory:
    """One row's embeddings minus the anchor (its episode's first embedding) and their squared
    norms; `torch.empty` leaves the pages an episode never reaches untouched."""

    __slots__ = ("sq_norms", "store")

    def __init__(self, capacity: int, dim: int) -> None:
        self.store = torch.empty(capacity, dim)
        self.sq_norms = torch.empty(capacity)


class EpisodicMemory:
    """Per-row episodic memories and NGU's episodic reward (Badia et al. 2020, Algorithm 1).

    Row `r` is one environment of a vectorised env: it holds the embeddings `f(x)` of its
    current episode (the last `capacity` of them, as a ring buffer) and the running mean `d²_m`
    of the squared k-NN distances it has computed. `reset` empties the memory at an episode
    start (so the next reward is `1 / c`); with `distance_mean="episode"` (the default) it
    restarts the running mean too, so `d²_m` averages the episode's own distances; with
    `"lifelong"` the mean is kept across episodes. Either way the statistics of the current
    episode survive checkpoints, through `state_dict`. Rows added later come from `grow`. Each
    row's storage is one float32 `[capacity, dim]` tensor, allocated at its first embedding;
    `torch.empty` leaves the pages an episode never reaches untouched. Distances are those of
    the float32 embeddings, measured relative to the episode's first embedding.
    """

    def __init__(
        self,
        rows: int,
        dim: int,
        *,
        capacity: int = 30_000,
        k: int = 10,
        kernel_epsilon: float = 1e-4,
        cluster_distance: float = 8e-3,
        pseudo_count: float = 1e-3,
        max_similarity: float = 8.0,
        distance_mean: Literal["episode", "lifelong"] = "episode",
    ) -> None:
        if distance_mean not in ("episode", "lifelong"):
            raise ValueError(
                f"distance_mean must be 'episode' (d²_m over the current episode, as rlax) or "
                f"'lifelong' (over every episode of the row), got {distance_mean!r}"
            )
        for name, value, low in (("rows", rows, 0), ("dim", dim, 1), ("capacity", capacity, 1)):
            if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
            raise ValueError(f"k (the number of neighbours) must be an integer >= 1, got {k!r}")
        _check_episodic_constants(kernel_epsilon, cluster_distance, pseudo_count, max_similarity)
        self.dim: int = int(dim)
        self.capacity: int = int(capacity)
        self.k: int = int(k)
        self.kernel_epsilon: float = float(kernel_epsilon)
        self.cluster_distance: float = float(cluster_distance)
        self.pseudo_count: float = float(pseudo_count)
        self.max_similarity: float = float(max_similarity)
        self.distance_mean: Literal["episode", "lifelong"] = distance_mean
        self._memory: list[_RowMemory | None] = []
        self._size: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._next: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._sq_sum: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self._sq_count: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._anchor: Tensor = torch.zeros(0, self.dim)
        self.grow(int(rows))

    @property
    def rows(self) -> int:
        """The number of env rows."""
        return len(self._memory)

    @property
    def sizes(self) -> npt.NDArray[np.int64]:
        """How many embeddings each row's memory holds now, `[rows]` (a copy)."""
        return self._size.copy()

    @property
    def mean_sq_distance(self) -> npt.NDArray[np.float64]:
        """Each row's running mean `d²_m` of squared k-NN distances, `[rows]`; 0 before any."""
        return self._sq_sum / np.maximum(self._sq_count, 1)

    def grow(self, rows: int) -> None:
        """Extend the memory to `rows` rows (>= the current number); new rows start empty."""
        if isinstance(rows, bool) or not isinstance(rows, Integral) or rows < self.rows:
            raise ValueError(
                f"grow(rows) takes the new total number of rows, >= the current {self.rows}; "
                f"got {rows!r}"
            )
        extra = int(rows) - self.rows
        self._memory.extend([None] * extra)
        self._size = np.concatenate([self._size, np.zeros(extra, dtype=np.int64)])
        self._next = np.concatenate([self._next, np.zeros(extra, dtype=np.int64)])
        self._sq_sum = np.concatenate([self._sq_sum, np.zeros(extra, dtype=np.float64)])
        self._sq_count = np.concatenate([self._sq_count, np.zeros(extra, dtype=np.int64)])
        self._anchor = torch.cat([self._anchor, torch.zeros(extra, self.dim)])

    def _check_rows(self, rows: _Rows) -> npt.NDArray[np.int64]:
        array = _as_rows("rows", rows)
        if array.size and (array.min() < 0 or array.max() >= self.rows):
            raise ValueError(
                f"rows must lie in [0, {self.rows}), got {array.min()}..{array.max()}; call "
                f"grow({int(array.max()) + 1}) first to add rows"
            )
        return array

    def reset(self, rows: _Rows) -> None:
        """Empty the memories of `rows` (at their episode starts), and restart their running
        means unless `distance_mean` is `"lifelong"`."""
        array = self._check_rows(rows)
        self._size[array] = 0
        self._next[array] = 0
        if self.distance_mean == "episode":
            self._sq_sum[array] = 0.0
            self._sq_count[array] = 0

    def reward(self, rows: _Rows, embeddings: Tensor) -> Tensor:
        """Episodic rewards of one embedding per row, `[n]`, then store the embeddings.

        For each `rows[i]`, finds the k nearest neighbours of `embeddings[i]` among that row's
        stored embeddings (fewer while the memory holds fewer than k), adds their squared
        distances to the row's running mean, computes `episodic_reward` and appends the
        embedding to the row's memory.

        Args:
            rows: distinct row indices, `[n]`.
            embeddings: `f(x_t)` of each row's current observation, `[n, dim]`.

        Returns:
            The rewards `[n]`, on the device and in the dtype of `embeddings`.
        """
        array = self._check_rows(rows)
        check_floating("embeddings", embeddings)
        n = array.shape[0]
        if embeddings.shape != (n, self.dim):
            raise ValueError(
                f"embeddings must be [n, dim] = {[n, self.dim]} for {n} rows, got shape "
                f"{tuple(embeddings.shape)}"
            )
        if np.unique(array).size != n:
            raise ValueError(f"rows must be distinct (one embedding per row per call), got {array}")
        x = embeddings.detach().to("cpu", torch.float32)
        if not bool(torch.isfinite(x).all()):
            raise ValueError("embeddings contain NaN or inf; check the embedding network")

        # Embeddings are stored relative to their episode's first one (see below).
        starts = self._size[array] == 0
        if starts.any():
            self._anchor[array[starts]] = x[torch.from_numpy(starts)]
        f = x - self._anchor[array]
        sq_norms = f.square().sum(-1).tolist()
        neighbours: list[Tensor] = []
        for row, f_x, sq_norm in zip(array.tolist(), f.unbind(0), sq_norms, strict=True):
            size = int(self._size[row])
            memory = self._memory[row]
            if memory is None:
                memory = self._memory[row] = _RowMemory(self.capacity, self.dim)
            stored = memory.store[:size]
            if size <= max(_RANK_BY_PRODUCTS_ABOVE, 2 * self.k):
                d = (stored - f_x).square_().sum(-1)
            else:
                # Rank by |m|² - 2 m·f(x), one matrix-vector product (about twice as fast once
                # the differences no longer fit in cache). Its float32 cancellation is relative
                # to the norms, which the anchor keeps on the episode's scale, so it can only
                # reorder near-ties; the 2k candidates are then measured as differences, so a
                # revisited state still gives exactly 0.
                rank = torch.addmv(memory.sq_norms[:size], stored, f_x, alpha=-2.0)
                candidates = torch.topk(rank, 2 * self.k, largest=False, sorted=False).indices
                d = (stored[candidates] - f_x).square_().sum(-1)
            if size > self.k:
                d = torch.topk(d, self.k, largest=False, sorted=False).values
            neighbours.append(d)
            slot = int(self._next[row])
            memory.store[slot] = f_x
            memory.sq_norms[slot] = sq_norm
            self._next[row] = (slot + 1) % self.capacity
            self._size[row] = min(size + 1, self.capacity)

        counts = torch.tensor([d.shape[0] for d in neighbours], dtype=torch.int64)
        valid = torch.arange(self.k) < counts.unsqueeze(-1)
        sq_distances = torch.zeros(n, self.k, dtype=torch.float32)
        if n and int(counts.max()):
            padded = torch.nn.utils.rnn.pad_sequence(neighbours, batch_first=True)
            sq_distances[:, : padded.shape[1]] = padded
        sq64 = sq_distances.double()
        self._sq_sum[array] += sq64.sum(-1).numpy()
        self._sq_count[array] += counts.numpy()
        d_m2 = torch.from_numpy(self._sq_sum[array] / np.maximum(self._sq_count[array], 1))
        reward = episodic_reward(
            sq64,
            d_m2,
            valid=valid,
            kernel_epsilon=self.kernel_epsilon,
            cluster_distance=self.cluster_distance,
            pseudo_count=self.pseudo_count,
            max_similarity=self.max_similarity,
        )
        return reward.to(embeddings.device, embeddings.dtype)

    def state_dict(self) -> dict[str, list[float] | list[int]]:
        """The running-mean statistics as plain lists (no memories): sums and counts per row."""
        return {
            "sq_distance_sum": [float(v) for v in self._sq_sum],
            "sq_distance_count": [int(v) for v in self._sq_count],
        }

    def load_state_dict(self, state: Mapping[str, Sequence[float] | Sequence[int]]) -> None:
        """Restore `state_dict()`'s statistics; the row count must match (see `grow`)."""
        if set(state) != {"sq_distance_sum", "sq_distance_count"}:
            raise ValueError(
                "EpisodicMemory state must have exactly the keys 'sq_distance_sum' and "
                f"'sq_distance_count' (from EpisodicMemory.state_dict()), got {sorted(state)}"
            )
        sums = np.asarray(state["sq_distance_sum"], dtype=np.float64)
        counts = np.asarray(state["sq_distance_count"])
        if sums.shape != (self.rows,) or counts.shape != (self.rows,):
            raise ValueError(
                f"the state holds {sums.shape} sums and {counts.shape} counts but this memory has "
                f"{self.rows} rows; build it with the checkpoint's number of rows or grow() it"
            )
        if counts.size and not np.issubdtype(counts.dtype, np.integer):
            raise ValueError(f"sq_distance_count must hold integers, got dtype {counts.dtype}")
        if not (np.isfinite(sums).all() and (sums >= 0).all() and (counts >= 0).all()):
            raise ValueError("sq_distance_sum and sq_distance_count must be finite and >= 0")
        self._sq_sum = sums.copy()
        self._sq_count = counts.astype(np.int64)


def lifelong_multiplier(
    error: Tensor,
    mean: float | Tensor,
    std: float | Tensor,
    max_multiplier: float = 5.0,
) -> Tensor:
    """NGU's lifelong novelty multiplier `min(max(α_t, 1), L)`, in the shape of `error`.

    `α_t = 1 + (err(x_t) - μ_e) / σ_e` (Badia et al. 2020, Section 2; the error is Random
    Network Distillation's, Burda et al. 2018), with `μ_e`, `σ_e` running statistics of the
    errors. Where `σ_e` is 0 (one distinct error seen so far) the z-score is undefined and the
    multiplier is 1. The result carries no gradient.

    Args:
        error: the RND prediction errors `err(x_t)`, any shape.
        mean: `μ_e`, a float or a tensor broadcasting to `error`.
        std: `σ_e` >= 0, a float or a tensor broadcasting to `error`.
        max_multiplier: `L` >= 1 (NGU uses 5).
    """
    check_floating("error", error)
    if not _finite(max_multiplier) or max_multiplier < 1.0:
        raise ValueError(f"max_multiplier (L) must be a finite number >= 1, got {max_multiplier!r}")
    if not isinstance(std, Tensor):
        check_nonnegative("std", std)
    mu = torch.as_tensor(mean, dtype=error.dtype, device=error.device)
    sigma = torch.as_tensor(std, dtype=error.dtype, device=error.device)
    check_broadcastable_to("mean", mu, "error", error)
    check_broadcastable_to("std", sigma, "error", error)
    # A reward: no gradient flows back into the RND predictor through it.
    with torch.no_grad():
        z = (error - mu) / sigma
        alpha = torch.where(sigma > 0, 1.0 + z, torch.ones_like(z))
        return alpha.clamp(1.0, float(max_multiplier))


def _finite(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, Real) and math.isfinite(value)


class RunningMeanStd:
    """Running mean and (population) standard deviation of a stream of scalars.

    Batches merge with the parallel formula of Chan, Golub and LeVeque 1979 ("Updating formulae
    and a pairwise algorithm for computing sample variances"), in float64:
    `n = n_a + n_b`, `δ = μ_b - μ_a`, `μ = μ_a + δ n_b / n`, `M2 = M2_a + M2_b + δ² n_a n_b / n`,
    `σ = sqrt(M2 / n)`. NGU normalises RND's errors with it (Badia et al. 2020, Section 2).
    """

    def __init__(self) -> None:
        self._count = 0
        self._mean = 0.0
        self._m2 = 0.0

    @property
    def count(self) -> int:
        """How many scalars have been seen."""
        return self._count

    @property
    def mean(self) -> float:
        """Their mean; 0 before any."""
        return self._mean

    @property
    def std(self) -> float:
        """Their population standard deviation (ddof = 0); 0 before two."""
        return math.sqrt(self._m2 / self._count) if self._count else 0.0

    def update(self, x: Tensor) -> None:
        """Add every element of `x` (any shape; empty is a no-op) to the statistics."""
        check_floating("x", x)
        values = x.detach().to("cpu", torch.float64).reshape(-1)
        n_b = values.numel()
        if n_b == 0:
            return
        if not bool(torch.isfinite(values).all()):
            raise ValueError("RunningMeanStd.update got NaN or inf; the statistics would be lost")
        mean_b = float(values.mean())
        m2_b = float((values - mean_b).square().sum())
        n = self._count + n_b
        delta = mean_b - self._mean
        self._mean += delta * n_b / n
        self._m2 += m2_b + delta * delta * self._count * n_b / n
        self._count = n

    def state_dict(self) -> dict[str, float | int]:
        """The statistics as plain numbers."""
        return {"count": self._count, "mean": self._mean, "m2": self._m2}

    def load_state_dict(self, state: Mapping[str, float | int]) -> None:
        """Restore `state_dict()`'s statistics."""
        if set(state) != {"count", "mean", "m2"}:
            raise ValueError(
                "RunningMeanStd state must have exactly the keys 'count', 'mean' and 'm2' "
                f"(from RunningMeanStd.state_dict()), got {sorted(state)}"
            )
        count, mean, m2 = state["count"], state["mean"], state["m2"]
        if isinstance(count, bool) or not isinstance(count, Integral) or count < 0:
            raise ValueError(f"count must be an integer >= 0, got {count!r}")
        if not (_finite(mean) and _finite(m2) and m2 >= 0):
            raise ValueError(f"mean and m2 must be finite numbers, m2 >= 0; got {mean!r}, {m2!r}")
        self._count, self._mean, self._m2 = int(count), float(mean), float(m2)
