"""Counts steps, episodes and updates, and decides when a run stops."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from shoal.runtime.config import RunConfig


@dataclass
class Counter:
    """Progress of a run. Wall time continues across resumes via `elapsed_before`."""

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
    stopped_by: str | None = None  # a stop asked for by a callback ("callback")
    # The env's named episode figures (`VectorStep.episode_metrics`), each a recent window.
    recent_metrics: dict[str, deque[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        window = self.config.return_window
        self.recent_returns = deque(self.recent_returns, maxlen=window)
        self.recent_lengths = deque(self.recent_lengths, maxlen=window)

    @property
    def elapsed(self) -> float:
        return self.elapsed_before + time.time() - self.started

    @property
    def mean_return(self) -> float | None:
        if not self.recent_returns:
            return None
        return sum(self.recent_returns) / len(self.recent_returns)

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
        if budget is not None and self.elapsed >= budget:
            return "max_time"
        if self.target_reached_at is not None:
            return "stop_at_return"
        return None
