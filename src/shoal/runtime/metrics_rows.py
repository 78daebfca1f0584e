"""The driver's metrics rows: one each time the run passes a multiple of `--log-interval`
steps, one at the step of each periodic evaluation (with its `eval_*` keys), and a last one at
the end, written to `metrics.jsonl` and the run's loggers (`MetricsWriter`).

A row holds the counter's figures, the launcher's event counts and gauges, the newest update's
metrics and policy lag, the acting policies' metrics, and the clock (`TIMING_KEYS`, the only
keys that differ between two runs of one seed).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from shoal.runtime.counter import Counter
from shoal.runtime.program import Program
from shoal.telemetry import MetricsWriter

__all__ = ["TIMING_KEYS", "MetricsRows", "next_multiple"]

# Only these fields of a metrics row depend on the clock; everything else is reproducible.
TIMING_KEYS = ("time", "steps_per_second")


class MetricsRows:
    """Rows of `program`'s run as `counter` counts it. `gauges` (launcher figures of the
    moment, e.g. `actors_live` on ray) and `policy_state` (the acting policies' newest
    `state_dict`s) are the driver's, read at each row."""

    def __init__(
        self,
        program: Program,
        counter: Counter,
        gauges: dict[str, float],
        policy_state: dict[str, Any],
    ) -> None:
        self.program, self.counter = program, counter
        self.gauges, self.policy_state = gauges, policy_state
        steps = counter.env_steps
        # From the step resumed (0 for a run restarted without a checkpoint), not appended to.
        self.writer = MetricsWriter(program.run_dir, program.run.loggers, steps)
        self._next = next_multiple(steps, program.run.log_interval)
        # Training time (`Counter.elapsed`), not wall time: a row that spans a pause (SIGSTOP,
        # a suspended VM) gives the rate the run trained at.
        self._last = (counter.elapsed, steps)
        self.logged_step = steps  # the step of the newest row
        # The newest update's metrics and policy lag, for the row written at the end.
        self._metrics: Callable[[], dict[str, float]] = dict
        self._lag = math.nan
        self.pending: dict[str, float] = {}  # evaluations' keys for the next row

    def update(self, metrics: Callable[[], dict[str, float]], policy_lag: float) -> None:
        """The newest update's metrics (asked for only when a row is written) and lag."""
        self._metrics, self._lag = metrics, policy_lag

    def due(self) -> bool:
        """Whether a row is due: a multiple of --log-interval passed, or an evaluation made."""
        return self.counter.env_steps >= self._next or bool(self.pending)

    def write(self) -> dict[str, Any]:
        """Write a row of the run so far, with the evaluations made since the last one."""
        counter = self.counter
        now = counter.elapsed
        then, steps_then = self._last
        rate = (counter.env_steps - steps_then) / max(now - then, 1e-9)
        row = self._row(self._metrics(), self._lag, rate)
        row.update(self.pending)
        self.pending = {}
        self.writer.write(row)
        self._last = (now, counter.env_steps)
        self.logged_step = counter.env_steps
        self._next = next_multiple(counter.env_steps, self.program.run.log_interval)
        return row

    def close(self, ok: bool) -> None:
        self.writer.close(ok=ok)

    def _row(self, metrics: dict[str, float], policy_lag: float, rate: float) -> dict[str, Any]:
        counter = self.counter
        lengths = counter.recent_lengths
        return {
            "env_steps": counter.env_steps,
            "frames": counter.env_steps * self.program.spec.frames_per_step,
            "episodes": counter.episodes,
            "updates": counter.updates,
            "return_mean": counter.mean_return,
            "episode_length_mean": sum(lengths) / len(lengths) if lengths else None,
            **counter.metric_means(),
            "policy_lag": policy_lag,
            **counter.counts,
            **self.gauges,
            **metrics,
            **self.program.agent.policy_metrics(self.policy_state),
            "time": round(counter.elapsed, 3),
            "steps_per_second": round(rate, 1),
        }


def next_multiple(value: int, interval: int) -> int:
    """The first multiple of `interval` above `value`: when a periodic task is next due."""
    return (value // interval + 1) * interval
