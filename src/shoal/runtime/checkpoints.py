"""The driver's checkpoints: periodic (every `--checkpoint-interval` steps) and final, each
with the run's counters and, where the run keeps one, a replay snapshot; and the resume from one.

A checkpoint holds the learner's `state_dict`, the counter's state (`Counter.state`), the
launcher's event counts, torch's generator, the acting policies' merged `state_dict`s, the
env's spaces and how many times the run was resumed; it is never written of weights that hold
NaN or inf.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from shoal.checkpoint import save_checkpoint
from shoal.errors import DivergenceError
from shoal.runtime.counter import Counter
from shoal.runtime.learning import ADVICE, non_finite
from shoal.runtime.metrics_rows import next_multiple
from shoal.runtime.program import Program
from shoal.runtime.snapshots import ReplaySnapshots, Tables

__all__ = ["Checkpoints"]


class Checkpoints:
    """Checkpoints of `program`'s run as `counter` counts it, resumed from `resume` (a
    checkpoint's payload, or None for a new run); `policy_state` is the driver's union of the
    acting policies' newest `state_dict`s, filled here from the checkpoint resumed."""

    def __init__(
        self,
        program: Program,
        counter: Counter,
        policy_state: dict[str, Any],
        resume: dict[str, Any] | None,
    ) -> None:
        self.program, self.counter, self.policy_state = program, counter, policy_state
        self.resume = resume
        self.resume_count = 0 if resume is None else int(resume["resume_count"]) + 1
        if resume is not None:
            policy_state.update(resume.get("policies", {}))
            counter.resume(resume)
        self._next = next_multiple(counter.env_steps, program.run.checkpoint_interval)
        self.replay: ReplaySnapshots | None = None  # the launcher's tables, once attached

    def restore(self, learner: Any) -> None:
        """Load the learner (and torch's generator) from the checkpoint being resumed."""
        if self.resume is not None:
            learner.load_state_dict(self.resume["learner"])
            torch.set_rng_state(self.resume["torch_rng"])

    def attach_replay(self, tables: Tables, say: Callable[[str], None]) -> None:
        """Snapshot `tables` with every checkpoint, once the snapshot of the checkpoint being
        resumed is restored into them (call before any actor inserts)."""
        self.replay = ReplaySnapshots(tables, self.program.run, say)
        self.replay.restore(self.resume, self.program.checkpoint_dir)

    def due(self) -> bool:
        """Whether the run passed a multiple of --checkpoint-interval since the last one."""
        return self.counter.env_steps >= self._next

    def write(self, learner_state: dict[str, Any]) -> Path:
        """Write a checkpoint of the learner and the run's counters; never one whose weights
        hold NaN or inf (that raises a DivergenceError and keeps the checkpoints before it).
        Returns its path."""
        counter = self.counter
        bad = non_finite(learner_state)
        if bad:
            names = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
            raise DivergenceError(
                f"Training diverged by update {counter.updates} ({counter.env_steps} steps): the "
                f"learner's {names} hold NaN or inf, so no checkpoint was written of them. "
                + ADVICE
            )
        payload = {
            "algo": self.program.agent.name,
            "env": self.program.env_id,
            **counter.state(),
            "resume_count": self.resume_count,
            "counts": dict(counter.counts),
            "torch_rng": torch.get_rng_state(),
            "learner": learner_state,
            "policies": dict(self.policy_state),
            "spec": self.program.spec.to_data(),
        }
        path = save_checkpoint(
            self.program.checkpoint_dir,
            counter.env_steps,
            payload,
            self.program.run.keep_checkpoints,
            self.replay.save if self.replay is not None else None,
        )
        return path

    def scheduled(self) -> None:
        """The periodic checkpoint due was written: the next is due a multiple later (a
        checkpoint written at another time, the final one or `shoal tune`'s, moves nothing)."""
        self._next = next_multiple(self.counter.env_steps, self.program.run.checkpoint_interval)
