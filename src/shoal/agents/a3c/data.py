"""A3C's data path: gradients, not experience, travel from the actors to the learner.

Each actor's adder holds the actor's copy of the network (the policy's, with the weights that
acted): it computes the actor-critic loss of each unroll and its gradient, and sends that
flat gradient with the version it was computed at and the actor's index. The `GradientQueue`
hands the learner one gradient per update, oldest first, and drops those whose staleness (the
learner's version minus theirs) exceeds `max_staleness`; at most `capacity` wait, and an actor
that would exceed it waits (backpressure), which bounds staleness on its own on a fast learner.
Inline, the data path asks for `--actors` actors (`actors_inline`): threads, each a gradient
worker with its own network and envs, as on ray each is a process.
"""

from __future__ import annotations

import threading
from collections import deque
from functools import partial
from typing import Any

import numpy as np
import torch

from shoal.agents.actor_critic import ActorCritic, LossSettings, actor_critic_loss
from shoal.agents.base import Unroll
from shoal.data import Batch, DataPath, Layout
from shoal.data.queue import NoSnapshot
from shoal.envs.spec import EnvSpec

__all__ = ["GradientAdder", "GradientQueue", "make_data_path"]


class GradientAdder:
    """An actor's unrolls as gradients of the loss at the weights that acted."""

    def __init__(self, net: ActorCritic, config: LossSettings, actor: int = 0) -> None:
        self.net, self.config, self.actor = net, config, actor
        # The learner's Adam lays its flat buffer out in this order.
        self.params = [p for p in net.parameters() if p.requires_grad]

    def add(self, unroll: Unroll) -> dict[str, Any]:
        loss, diagnostics, _ = actor_critic_loss(self.net, unroll, self.config)
        grads = torch.autograd.grad(loss, self.params, allow_unused=True)
        flat = torch.cat(
            [
                (g if g is not None else torch.zeros_like(p)).reshape(-1)
                for g, p in zip(grads, self.params, strict=True)
            ]
        )
        return {
            "gradient": flat.detach().cpu().numpy().astype(np.float32),
            "version": unroll.behaviour_version,
            "actor": self.actor,
            "metrics": diagnostics,
        }


class GradientQueue(NoSnapshot):
    """Gradients from any actor, one per learner update, within a staleness bound."""

    def __init__(self, capacity: int, max_staleness: int) -> None:
        self.capacity, self.max_staleness = max(1, int(capacity)), int(max_staleness)
        self._pending: deque[dict[str, Any]] = deque()
        self._version = 0
        self._steps = 0
        self._dropped = 0
        self._staleness: list[int] = []  # of the gradients handed out since the last stats
        self._workers: set[int] = set()  # the actors that computed them
        self._closed = False
        self._cond = threading.Condition()

    def insert(self, items: Any, version: int, block: bool = True, steps: int = 0) -> bool:
        with self._cond:
            self._steps += steps
            if items is None or self._closed:
                return not self._closed
            # No weights act before the learner has them: a newer version than the queue heard
            # of (a resumed learner's) is the learner's.
            self._version = max(self._version, int(items["version"]))
            if block:
                self._cond.wait_for(lambda: self._closed or len(self._pending) < self.capacity)
            if self._closed:
                return False
            self._pending.append(items)
            self._cond.notify_all()
            return True

    def _drop_stale(self) -> None:
        while self._pending and self._version - self._pending[0]["version"] > self.max_staleness:
            self._pending.popleft()
            self._dropped += 1

    def can_sample(self) -> bool:
        with self._cond:
            self._drop_stale()
            return bool(self._pending)

    def sample(self, progress: float, timeout: float | None) -> Batch | None:
        with self._cond:

            def ready() -> bool:
                self._drop_stale()
                return self._closed or bool(self._pending)

            if not self._cond.wait_for(ready, timeout) or self._closed:
                return None
            item = self._pending.popleft()
            self._staleness.append(self._version - int(item["version"]))
            self._workers.add(int(item.get("actor", 0)))
            self._cond.notify_all()
            return Batch(item, int(item["version"]), steps=self._steps)

    def after_update(self, batch: Batch, priorities: np.ndarray | None, version: int) -> None:
        with self._cond:
            self._version = max(self._version, int(version))
            self._cond.notify_all()

    def stats(self) -> dict[str, float]:
        with self._cond:
            seen, self._staleness = self._staleness, []
            workers, self._workers = self._workers, set()
        out = {"gradients_dropped": float(self._dropped)}
        if seen:
            out |= {"staleness_mean": float(np.mean(seen)), "staleness_max": float(max(seen))}
            out["gradient_workers"] = float(len(workers))
        return out

    @property
    def sample_weight(self) -> float:
        return float(len(self._pending))

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


def _queue(capacity: int, max_staleness: int, shards: int, seed: int) -> GradientQueue:
    return GradientQueue(capacity, max_staleness)


def make_data_path(spec: EnvSpec, config: Any, layout: Layout) -> DataPath:
    """Gradients into one queue next to the learner; inline, `--actors` actor threads compute
    them while the learner applies them (`overlap`, `actors_inline`)."""
    return DataPath(
        unroll_length=config.unroll_length,
        make_table=partial(_queue, layout.queue_capacity, config.max_staleness),
        make_adder=lambda policy, actor: GradientAdder(policy.net, config, actor),
        overlap=True,
        actors_inline=True,
    )
