"""Monte-Carlo tree search with PUCT (AlphaZero) and its training targets.

Silver et al. 2018, "A general reinforcement learning algorithm that masters chess, shogi, and
Go through self-play" (Science 362), and its pseudocode (supplementary materials):

- selection: in state s, take `argmax_a Q(s, a) + U(s, a)` with
  `U(s, a) = C(s) P(s, a) sqrt(N(s)) / (1 + N(s, a))` and
  `C(s) = log((1 + N(s) + c_base) / c_base) + c_init` (`puct_scores`);
- expansion and evaluation: a leaf is evaluated once by the network, `(p, v) = f(s)`, its priors
  the policy over legal moves;
- backup: each edge on the path gets `N += 1` and `W += v` with v from the point of view of the
  player who chose the edge (negated at each ply of a two-player zero-sum game), `Q = W / N`;
- at the root, Dirichlet noise: `P(s, a) = (1 - eps) p_a + eps eta_a`, `eta ~ Dir(alpha)` over
  the legal moves (`dirichlet_noise`);
- the move played and the policy target: visit counts raised to `1 / temperature`
  (`visit_policy`).

The search runs on any two-player zero-sum game state with `legal_actions() -> [A] bool`,
`apply(action) -> state` (the next player's view), `terminal_value() -> float | None` (the
result for the player to move once the game has ended) and `observation()` (what the
evaluator takes): `shoal.envs.board_games` holds tic-tac-toe and connect four. Several searches
run side by side, one simulation of each per evaluator call, so the network sees a batch.

`U` uses `sqrt(max(N(s), 1))`: with `N(s) = 0` (the first simulation from a new root) every
`U` would be 0 and the first move would be picked by index, not by its prior.

This module is numpy; `policy_value_loss` is the torch loss of the network's outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch
import torch.nn.functional as F

__all__ = [
    "AlphaZeroLoss",
    "Game",
    "SearchResult",
    "dirichlet_noise",
    "policy_value_loss",
    "puct_scores",
    "run_searches",
    "visit_policy",
]


def _same_shape(**arrays: Any) -> None:
    shapes = {name: tuple(a.shape) for name, a in arrays.items()}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"Shapes must match: {shapes}.")


def _rank(x: torch.Tensor, rank: int, name: str) -> None:
    if x.dim() != rank:
        raise ValueError(f"{name} must have rank {rank}, got shape {tuple(x.shape)}.")


class Game(Protocol):
    """A state of a two-player zero-sum turn-based game, seen by the player to move."""

    def legal_actions(self) -> np.ndarray: ...

    def apply(self, action: int) -> Game: ...

    def terminal_value(self) -> float | None: ...

    def observation(self) -> Any: ...


Evaluate = Callable[[list[Any]], tuple[np.ndarray, np.ndarray]]
"""Observations of n states -> (priors `[n, A]` (any non-negative weights; masked to the legal
moves and normalised by the search), values `[n]` in [-1, 1] for the player to move)."""


def puct_scores(
    prior: np.ndarray,
    visit_count: np.ndarray,
    value_sum: np.ndarray,
    c_init: float = 1.25,
    c_base: float = 19652.0,
) -> np.ndarray:
    """`Q(s, a) + U(s, a)` of every edge of one node (Silver et al. 2018, pseudocode).

    Args:
        prior: `[A]` P(s, a).
        visit_count: `[A]` N(s, a); N(s) is their sum.
        value_sum: `[A]` W(s, a), from the point of view of the player to move in s.
        c_init: the exploration rate's constant term.
        c_base: the visit count over which the exploration rate grows by log(2).
    Returns:
        `[A]` scores; Q is 0 for edges never visited.
    """
    _same_shape(prior=prior, visit_count=visit_count, value_sum=value_sum)
    parent = float(visit_count.sum())
    c = np.log((1.0 + parent + c_base) / c_base) + c_init
    q = np.where(visit_count > 0, value_sum / np.maximum(visit_count, 1), 0.0)
    scores: np.ndarray = q + c * prior * np.sqrt(max(parent, 1.0)) / (1.0 + visit_count)
    return scores


def visit_policy(visit_counts: np.ndarray, temperature: float) -> np.ndarray:
    """The policy `N(s, a)^(1/T) / sum_b N(s, b)^(1/T)` over `[..., A]` counts (Silver et al.
    2017/2018); `temperature` 0 is the limit: uniform over the most visited moves."""
    counts = np.asarray(visit_counts, np.float64)
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}.")
    if np.any(counts.sum(axis=-1) <= 0):
        raise ValueError("visit_policy needs at least one visit per row.")
    if temperature == 0:
        best = counts == counts.max(axis=-1, keepdims=True)
        uniform: np.ndarray = best / best.sum(axis=-1, keepdims=True)
        return uniform
    # counts / max first, so large counts raised to 1 / T do not overflow
    scaled = (counts / counts.max(axis=-1, keepdims=True)) ** (1.0 / temperature)
    policy: np.ndarray = scaled / scaled.sum(axis=-1, keepdims=True)
    return policy


def dirichlet_noise(
    prior: np.ndarray,
    legal: np.ndarray,
    alpha: float,
    fraction: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """`(1 - fraction) prior + fraction eta`, `eta ~ Dir(alpha)` over the legal moves only
    (Silver et al. 2018: alpha 0.3 chess, 0.15 shogi, 0.03 Go; fraction 0.25). `[A]` each."""
    _same_shape(prior=prior, legal=legal)
    legal = np.asarray(legal, bool)
    if not legal.any():
        raise ValueError("dirichlet_noise needs at least one legal move.")
    noise = np.zeros(prior.shape, np.float64)
    noise[legal] = rng.dirichlet(np.full(int(legal.sum()), alpha))
    return (1.0 - fraction) * prior + fraction * noise


class _Node:
    """A state in the tree: the statistics of its edges, `[A]` each, and its children."""

    __slots__ = ("children", "game", "legal", "prior", "terminal", "value_sum", "visits")

    def __init__(self, game: Game) -> None:
        self.game = game
        self.terminal = game.terminal_value()
        self.children: dict[int, _Node] = {}
        self.prior: np.ndarray | None = None  # set when evaluated (expanded)
        self.legal = np.zeros(0, bool)
        self.visits = np.zeros(0, np.float64)
        self.value_sum = np.zeros(0, np.float64)

    def expand(self, prior: np.ndarray) -> None:
        self.legal = np.asarray(self.game.legal_actions(), bool)
        p = np.where(self.legal, np.maximum(np.asarray(prior, np.float64), 0.0), 0.0)
        total = p.sum()
        self.prior = p / total if total > 0 else self.legal / self.legal.sum()
        self.visits = np.zeros(len(p), np.float64)
        self.value_sum = np.zeros(len(p), np.float64)


class SearchResult(NamedTuple):
    """What `run_searches` returns for n roots."""

    visit_counts: np.ndarray  # [n, A] N(root, a)
    root_values: np.ndarray  # [n] the search's value of each root for its player to move
    priors: np.ndarray  # [n, A] the root priors the search used (after noise)


def run_searches(
    games: Sequence[Game],
    evaluate: Evaluate,
    num_simulations: int,
    *,
    c_init: float = 1.25,
    c_base: float = 19652.0,
    noise_alpha: float = 0.3,
    noise_fraction: float = 0.0,
    rng: np.random.Generator | None = None,
) -> SearchResult:
    """`num_simulations` PUCT simulations from each of `games` (none may have ended), side by
    side: each call of `evaluate` gets one leaf per search still needing one.

    `noise_fraction` > 0 mixes Dirichlet(`noise_alpha`) noise into each root's priors (`rng`
    draws it); self-play uses it, evaluation not.
    """
    if num_simulations < 1:
        raise ValueError(f"num_simulations must be >= 1, got {num_simulations}.")
    roots = [_Node(game) for game in games]
    if any(root.terminal is not None for root in roots):
        raise ValueError("run_searches: a root game has already ended; there is no move.")
    if not roots:
        return SearchResult(np.zeros((0, 0)), np.zeros(0), np.zeros((0, 0)))
    priors, values = evaluate([root.game.observation() for root in roots])
    for root, prior in zip(roots, priors, strict=True):
        root.expand(prior)
        if noise_fraction > 0:
            if rng is None:
                raise ValueError("run_searches: root noise needs an rng.")
            assert root.prior is not None
            root.prior = dirichlet_noise(root.prior, root.legal, noise_alpha, noise_fraction, rng)
    for _ in range(num_simulations):
        paths: list[list[tuple[_Node, int]]] = []
        leaves: list[_Node] = []
        for root in roots:
            path, leaf = _select(root, c_init, c_base)
            paths.append(path)
            leaves.append(leaf)
        pending = [i for i, leaf in enumerate(leaves) if leaf.terminal is None]
        leaf_values = np.array([leaf.terminal or 0.0 for leaf in leaves], np.float64)
        if pending:
            priors, values = evaluate([leaves[i].game.observation() for i in pending])
            for j, i in enumerate(pending):
                leaves[i].expand(priors[j])
                leaf_values[i] = float(values[j])
        for path, value in zip(paths, leaf_values, strict=True):
            _backup(path, float(value))
    counts = np.stack([root.visits for root in roots])
    root_values = np.array(
        [root.value_sum.sum() / max(root.visits.sum(), 1.0) for root in roots], np.float64
    )
    used = np.stack([root.prior for root in roots if root.prior is not None])
    return SearchResult(counts, root_values, used)


def _select(root: _Node, c_init: float, c_base: float) -> tuple[list[tuple[_Node, int]], _Node]:
    """From `root` down the highest-scoring edges to a node not yet evaluated, or a terminal."""
    node, path = root, []
    while True:
        assert node.prior is not None
        scores = puct_scores(node.prior, node.visits, node.value_sum, c_init, c_base)
        action = int(np.argmax(np.where(node.legal, scores, -np.inf)))
        path.append((node, action))
        child = node.children.get(action)
        if child is None:
            child = node.children[action] = _Node(node.game.apply(action))
            return path, child
        if child.terminal is not None or child.prior is None:
            return path, child
        node = child


def _backup(path: list[tuple[_Node, int]], leaf_value: float) -> None:
    """`leaf_value` is for the leaf's player to move; each edge above is its opponent's move."""
    value = leaf_value
    for node, action in reversed(path):
        value = -value
        node.visits[action] += 1.0
        node.value_sum[action] += value


class AlphaZeroLoss(NamedTuple):
    loss: torch.Tensor  # scalar: value + policy
    value_loss: torch.Tensor  # scalar
    policy_loss: torch.Tensor  # scalar


def policy_value_loss(
    logits: torch.Tensor,
    value: torch.Tensor,
    target_policy: torch.Tensor,
    outcome: torch.Tensor,
    legal: torch.Tensor | None = None,
) -> AlphaZeroLoss:
    """AlphaZero's loss `(z - v)^2 - pi^T log p` (Silver et al. 2018), batch means; the L2 term
    is the optimiser's weight decay.

    Args:
        logits: `[B, A]` the network's policy logits.
        value: `[B]` its value of the state for the player to move, in [-1, 1].
        target_policy: `[B, A]` pi, the search's visit distribution.
        outcome: `[B]` z, the game's result for the player to move in the state.
        legal: `[B, A]` bool, optional: illegal moves are left out of p's normalisation.
    """
    _rank(logits, 2, "logits")
    _same_shape(logits=logits, target_policy=target_policy)
    _rank(value, 1, "value")
    _same_shape(value=value, outcome=outcome)
    if legal is not None:
        _same_shape(logits=logits, legal=legal)
        logits = logits.masked_fill(~legal, -1e9)
    log_p = F.log_softmax(logits, dim=-1)
    policy_loss = -(target_policy * log_p).sum(dim=-1).mean()
    value_loss = (outcome - value).pow(2).mean()
    return AlphaZeroLoss(value_loss + policy_loss, value_loss, policy_loss)
