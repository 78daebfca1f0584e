"""The learner's side of every launcher: take a batch, update, publish weights, feed back.

`LearnerLoop` is the same for every agent and placement (Acme's `run_experiment` idea): the
data path's table decides when a batch is ready (a full on-policy batch, an unroll within the
staleness bound, a replay batch within the rate limiter's ratio), the learner learns from it,
the newest weights go on the `WeightsBoard` if an actor asked for them, and the table hears what
came of its batch (new priorities; the version that releases waiting on-policy actors). Policy
lag is measured here, once: the learner's version minus the batch's behaviour version.

Divergence is caught here too, for every agent: an update whose metrics (its losses, gradient
norms) hold NaN or inf raises a `DivergenceError` naming the update before its weights are
published, its priorities reach the table or a checkpoint is taken; `non_finite` finds NaN or
inf in a learner's state, which the driver checks before writing a checkpoint.

The learner's `progress` (learning-rate and clip annealing) is that of the batch it learns from:
the env steps acted into the tables by the time the batch was taken, not the driver's count
at some moment, so an on-policy run anneals the same whatever the timing of its processes.
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Callable, Mapping
from typing import Any

import torch

from shoal.agents.base import Learner
from shoal.data import Table
from shoal.errors import DivergenceError
from shoal.runtime.program import Program

__all__ = ["LearnerLoop", "WeightsBoard", "build_learner", "check_update", "non_finite"]

ADVICE = (
    "Lower --agent.learning-rate (or clip gradients with --agent.max-grad-norm, where the "
    "agent has it) and start a new run."
)


def check_update(metrics: Mapping[str, Any], update: int) -> None:
    """Raise a DivergenceError if any figure of learner update number `update` is NaN or inf."""
    bad = [
        f"{key}={float(value)}"
        for key, value in metrics.items()
        if isinstance(value, numbers.Real) and not math.isfinite(float(value))
    ]
    if bad:
        raise DivergenceError(
            f"Training diverged at update {update}: it gave {', '.join(bad)}. The run stopped "
            f"there, and no checkpoint holds that update's weights. {ADVICE}"
        )


def non_finite(state: Any, prefix: str = "") -> list[str]:
    """Names of the floating-point tensors in a (nested) state dict that hold NaN or inf."""
    if isinstance(state, Mapping):
        return [bad for k, v in state.items() for bad in non_finite(v, f"{prefix}{k}.")]
    if isinstance(state, list | tuple):
        return [bad for i, v in enumerate(state) for bad in non_finite(v, f"{prefix}{i}.")]
    if isinstance(state, torch.Tensor) and state.is_floating_point():
        return [] if bool(torch.isfinite(state).all()) else [prefix.rstrip(".")]
    return []


def build_learner(program: Program, device: torch.device) -> Learner:
    """The agent's learner with a network of its own on `device`."""
    agent = program.agent
    net = agent.make_networks(program.spec, program.agent_config).to(device)
    return agent.make_learner(program.spec, program.agent_config, net)


class WeightsBoard:
    """The newest weights the learner published, for actors to take (thread-safe).

    The learner copies its weights only when some actor asked since the last copy, so a learner
    that updates many times per unroll (replay agents) copies them about once per unroll.
    `pack` turns `Learner.weights()` into what is stored (a Ray object ref on the ray launcher).
    """

    def __init__(self, pack: Callable[[Any], Any] = lambda weights: weights) -> None:
        self.pack = pack
        self.version = -1
        self.weights: Any = None
        self._wanted = True
        self._lock = threading.Lock()

    def take(self, have: int) -> tuple[int, Any] | None:
        """The published `(version, weights)` if newer than `have`; asks for newer ones."""
        with self._lock:
            self._wanted = True
            if self.version > have:
                return self.version, self.weights
            return None

    def offer(self, learner: Learner) -> None:
        """Publish the learner's weights if an actor asked for them since the last time."""
        with self._lock:
            if not self._wanted:
                return
            self._wanted = False
        packed = self.pack(learner.weights())
        with self._lock:
            self.version, self.weights = learner.version, packed


class LearnerLoop:
    """Batches from `table` into `learner`; weights onto `board`; metrics for the driver."""

    def __init__(
        self,
        learner: Learner,
        table: Table,
        board: WeightsBoard | None = None,
        metric_sources: tuple[Callable[[], dict[str, float]], ...] = (),
        progress: Callable[[int], float] = lambda steps: 0.0,
    ) -> None:
        """`progress(steps)`: the budget used once the tables have `steps` env steps."""
        self.learner, self.table, self.board = learner, table, board
        self.progress = progress
        self._steps = 0  # the tables' env steps at the last batch
        self.metric_sources = (table.stats, *metric_sources)
        self.last: dict[str, float] = {}
        self.lag = 0.0
        self.lock = threading.Lock()  # an update and a checkpoint never interleave
        if board is not None:
            board.offer(learner)  # the weights actors start from

    def try_update(self, timeout: float | None = 0.0) -> bool:
        """One update if the table hands out a batch within `timeout` seconds."""
        batch = self.table.sample(self.progress(self._steps), timeout)
        if batch is None:
            return False
        self._steps = batch.steps
        learner = self.learner
        with self.lock:
            lag = learner.version - batch.behaviour_version
            update = learner.update(batch.data, self.progress(batch.steps))
            check_update(update.metrics, learner.version)  # before a checkpoint can see it
        if self.board is not None:
            self.board.offer(learner)  # before the table releases actors that wait for it
        self.table.after_update(batch, update.priorities, learner.version)
        self.last, self.lag = update.metrics, float(lag)
        return True

    def metrics(self) -> dict[str, float]:
        """The last update's metrics and the data path's (and other sources') figures."""
        row = dict(self.last)
        for source in self.metric_sources:
            row |= source()
        return row

    def state_dict(self) -> dict[str, Any]:
        with self.lock:
            return self.learner.state_dict()
