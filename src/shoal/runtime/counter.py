"""Counts steps, episodes and updates, and decides when a run stops.

`Counter` holds a run's progress and its stop conditions (steps, wall time, a target return, a
callback); `StopSignals` turns Ctrl-C and SIGTERM into a requested stop. What a checkpoint
keeps of the counter is `Counter.state`, and `Counter.resume` reads it back.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from shoal.runtime.config import RunConfig
from shoal.runtime.frozen_time import frozen_seconds

# What a run that took no step in training's share of --max-time leaves its final evaluations
# and its exit (`Counter.stop_reason`).
STARVED_EVAL_S = 3.0


@dataclass
class Counter:
    """Progress of a run. Wall time continues across resumes via `elapsed_before`, and leaves
    out the time the process was stopped (`frozen_time`)."""

    config: RunConfig
    env_steps: int = 0
    episodes: int = 0
    updates: int = 0
    elapsed_before: float = 0.0
    recent_returns: deque[float] = field(default_factory=deque)
    recent_lengths: deque[int] = field(default_factory=deque)
    target_reached_at: float | None = None  # unix time when stop_at_return was first met
    target_reached_step: int | None = None
    counts: dict[str, int] = field(default_factory=dict)  # launcher events, e.g. actor restarts
    # The stop reason of a run stopped by a signal: "interrupted" (Ctrl-C) or "terminated"
    # (SIGTERM, a scheduler's preemption).
    interruption: str = "interrupted"
    started: float = field(default_factory=time.time)
    frozen_at_start: float = field(default_factory=frozen_seconds)
    stopped_by: str | None = None  # a stop asked for by a callback ("callback")
    # The env's named episode figures (`VectorStep.episode_metrics`), each a recent window.
    recent_metrics: dict[str, deque[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        window = self.config.return_window
        self.recent_returns = deque(self.recent_returns, maxlen=window)
        self.recent_lengths = deque(self.recent_lengths, maxlen=window)

    @property
    def elapsed(self) -> float:
        frozen = frozen_seconds() - self.frozen_at_start
        return self.elapsed_before + time.time() - self.started - frozen

    @property
    def mean_return(self) -> float | None:
        if not self.recent_returns:
            return None
        return sum(self.recent_returns) / len(self.recent_returns)

    def resume(self, state: dict[str, Any]) -> None:
        """Continue from a checkpoint's payload (what `state` wrote into it)."""
        self.env_steps = int(state["env_steps"])
        self.episodes = int(state["episodes"])
        self.updates = int(state["updates"])
        self.elapsed_before = float(state["elapsed"])
        self.recent_returns.extend(state["recent_returns"])
        self.recent_lengths.extend(state["recent_lengths"])
        self.counts.update(state.get("counts", {}))

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps of the counter: its progress and recent episodes (the
        event counts are written beside them by `Checkpoints`, after the resume count)."""
        return {
            "env_steps": self.env_steps,
            "episodes": self.episodes,
            "updates": self.updates,
            "elapsed": self.elapsed,
            "recent_returns": list(self.recent_returns),
            "recent_lengths": list(self.recent_lengths),
        }

    def add_episodes(self, returns: list[float], lengths: list[int]) -> None:
        self.episodes += len(returns)
        self.recent_returns.extend(returns)
        self.recent_lengths.extend(lengths)
        target = self.config.stop_at_return
        full = len(self.recent_returns) == self.config.return_window
        mean = self.mean_return
        if (
            target is not None
            and self.target_reached_at is None
            and full
            and mean is not None
            and mean >= target
        ):
            self.target_reached_at = time.time()
            self.target_reached_step = self.env_steps

    def add_episode_metrics(self, metrics: dict[str, list[float]]) -> None:
        for name, values in metrics.items():
            window = self.recent_metrics.get(name)
            if window is None:
                window = self.recent_metrics[name] = deque(maxlen=self.config.return_window)
            window.extend(values)

    def metric_means(self) -> dict[str, float]:
        """`<name>_mean` of each named episode figure over its recent window."""
        return {f"{k}_mean": sum(v) / len(v) for k, v in self.recent_metrics.items() if v}

    def progress(self, steps: int | None = None) -> float:
        """Fraction of the budget used, in [0, 1]: steps (`env_steps` unless given) or wall
        time, whichever is further."""
        done = (self.env_steps if steps is None else steps) / self.config.total_steps
        return min(1.0, max(done, self.time_progress()))

    def time_progress(self) -> float:
        """Fraction of the training's share of `max_time` used (0 without one)."""
        budget = self.config.train_time
        if budget is None:
            return 0.0
        return min(1.0, self.elapsed / budget)

    def stop_reason(self) -> str | None:
        if self.stopped_by is not None:
            return self.stopped_by
        if self.env_steps >= self.config.total_steps:
            return "total_steps"
        budget = self.config.train_time
        if budget is not None and self.elapsed >= budget and self._trained_or_out_of_time():
            return "max_time"
        if self.target_reached_at is not None:
            return "stop_at_return"
        return None

    def _trained_or_out_of_time(self) -> bool:
        """At the end of training's share of --max-time: a run whose learner has not updated
        yet (a local Ray started and placed its roles on a busy machine in most of it, and its
        first unroll came back just before) takes some of the final evaluation's share
        instead, up to `STARVED_EVAL_S` before the end, rather than end having learned
        nothing. (Counting steps instead, such a ray run stopped at its first unroll's 256.)"""
        last = self.last_start()
        return self.updates > 0 or last is None or time.time() >= last

    def last_start(self) -> float | None:
        """The `time.time()` after which a run whose learner has not updated stops
        (`stop_reason`): what a launcher's start (a local Ray's, the placing of its roles)
        must end before for the run to learn at all. None without --max-time."""
        max_time = self.config.max_time
        if max_time is None:
            return None
        left = max_time - min(STARVED_EVAL_S, self.config.final_eval_time or 0)
        return self.started - self.elapsed_before + left


class StopSignals:
    """Ctrl-C and SIGTERM, while installed (`with`, in the main thread only): the first press
    of Ctrl-C asks the run to stop after the current update (a checkpoint follows), the second
    aborts it (KeyboardInterrupt). SIGTERM, what Slurm and Kubernetes send a job they preempt,
    is a first Ctrl-C however often it comes (the scheduler's SIGKILL follows its grace period
    anyway), and names the stop "terminated" in `counter.interruption`."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if not self.requested and signum == signal.SIGTERM:
            self.counter.interruption = "terminated"
        self.requested = True

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            if handler is not None:  # None: a handler not set from Python, which stays
                signal.signal(signum, handler)
