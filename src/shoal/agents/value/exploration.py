"""Exploration of the value agents: Ape-X's fixed per-actor (or per-env) epsilons.

Horgan et al. 2018 ("Distributed Prioritized Experience Replay"), section 4: actor i of N acts
epsilon-greedily with `epsilon^(1 + alpha i / (N - 1))`; R2D2 (Kapturowski et al. 2019, section
2.3) and Agent57 use it too, per actor or per env.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from shoal import ops
from shoal.agents.base import ActMode, Layout
from shoal.agents.common.masks import legal_actions_np

__all__ = ["apex_epsilon", "epsilon_greedy", "exploration_rates"]


def apex_epsilon(epsilon: float, alpha: float, index: int, count: int) -> float:
    """Ape-X's exploration rate of actor `index` of `count`: `epsilon^(1 + alpha i / (N - 1))`
    (Horgan et al. 2018, section 4; R2D2 uses it too, Kapturowski et al. 2019, section 2.3)."""
    spread = index / (count - 1) if count > 1 else 0.0
    return epsilon ** (1.0 + alpha * spread)


def exploration_rates(config: Any, layout: Layout, slots: np.ndarray, mode: ActMode) -> np.ndarray:
    """Ape-X's epsilon of each env slot in `train` mode (per env or per actor, as the config's
    `exploration` says), `eval_epsilon` in `sample` mode, 0 in `greedy` (R2D2 and Agent57)."""
    if mode != "train":
        return np.full(len(slots), config.eval_epsilon if mode == "sample" else 0.0)
    if config.exploration == "per_actor":
        index, count = slots // layout.envs_per_actor, layout.actors
    else:
        index, count = slots, layout.total_envs
    return np.array([config.epsilon(int(i), count) for i in index])


def epsilon_greedy(
    q: torch.Tensor, obs: Any, rates: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Epsilon-greedy actions `[n]` on Q-values `q [n, A]`: row i takes a uniform random action
    with probability `rates[i]`, else its greedy one (Mnih et al. 2015). Where `obs` carries an
    action mask both are among the legal actions (`shoal.ops.masking`), so no action taken,
    greedy or random, is illegal."""
    legal = legal_actions_np(obs)
    if legal is None:
        greedy = q.argmax(-1).cpu().numpy()
    else:
        greedy = ops.masked_argmax(q, torch.from_numpy(legal).to(q.device)).cpu().numpy()
    width = len(greedy)
    explore = rng.random(width) < rates
    if legal is None:
        random = rng.integers(0, q.shape[-1], width)
    else:
        random = ops.uniform_legal_actions(legal, rng)
    return np.where(explore, random, greedy)
