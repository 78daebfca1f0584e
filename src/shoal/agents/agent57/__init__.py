"""Agent57 (Badia et al. 2020, "Agent57: Outperforming the Atari Human Benchmark"): R2D2 with
Never Give Up's intrinsic rewards (Badia et al. 2020), a family of (β_j, γ_j) mixtures learned
by two Q-networks with transformed Retrace, and a sliding-window UCB meta-controller.

Where each part lives: the mixture table `mixtures.py`; the meta-controller `bandit.py`; the
episodic memory, RND multiplier and running statistics `shoal.ops.novelty`; the combined
Q-values and the transformed greedy Retrace `shoal.ops.value_rescaling` and `shoal.ops.retrace`;
the networks `networks.py`; acting `actor.py`; the losses `loss.py`; the learner `learner.py`;
the replay `data.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from shoal.agents.agent57.actor import EVALUATOR, Agent57Policy
from shoal.agents.agent57.bandit import best_arm
from shoal.agents.agent57.config import Agent57Config
from shoal.agents.agent57.data import make_data_path
from shoal.agents.agent57.learner import Agent57Learner
from shoal.agents.agent57.networks import make_networks
from shoal.agents.base import Agent, Layout


def validate(config: Agent57Config, layout: Layout) -> None:
    if config.evaluator_row and layout.total_envs < 2:
        raise ValueError(
            "Agent57 runs its last env as the evaluator (its own bandit, acting at "
            "eval_epsilon), so with a single env nothing would explore. Use --num-envs 2 or "
            "more, or --agent.evaluator-row false."
        )


def bandit_metrics(policy_state: Mapping[str, Any]) -> dict[str, float]:
    """Per-arm episode counts and mean returns over the actors' bandit windows, and the arm the
    evaluator's bandit rates best, from the run's merged policy state."""
    arms: list[int] = []
    returns: list[float] = []
    size = 0
    for key, state in policy_state.items():
        if key.endswith("/bandit") and not key.startswith(EVALUATOR):
            arms += list(state["arms"])
            returns += list(state["rewards"])
            size = int(state["num_arms"])
    row: dict[str, float] = {}
    if size:
        counts = np.bincount(np.asarray(arms, np.int64), minlength=size)
        sums = np.bincount(np.asarray(arms, np.int64), np.asarray(returns), minlength=size)
        for arm in range(size):
            row[f"bandit/count_arm{arm:02d}"] = float(counts[arm])
            if counts[arm]:
                row[f"bandit/return_arm{arm:02d}"] = float(sums[arm] / counts[arm])
    evaluator = policy_state.get(f"{EVALUATOR}/bandit")
    if evaluator and evaluator["arms"]:
        arms_e = np.asarray(evaluator["arms"], np.int64)
        sums = np.bincount(arms_e, np.asarray(evaluator["rewards"]), evaluator["num_arms"])
        counts = np.bincount(arms_e, minlength=evaluator["num_arms"])
        means = np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf)
        best = best_arm(counts, means)
        row["evaluator/best_arm"] = float(best)
        row["evaluator/best_arm_return"] = float(means[best])
        row["evaluator/episodes"] = float(len(arms_e))
    return row


AGENT = Agent(
    name="agent57",
    config_cls=Agent57Config,
    make_networks=make_networks,
    make_policy=Agent57Policy,
    make_learner=Agent57Learner,
    make_data_path=make_data_path,
    validate=validate,
    policy_metrics=bandit_metrics,
)

__all__ = ["AGENT", "Agent57Config"]
