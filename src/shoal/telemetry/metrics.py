"""Metrics rows, handed to every tracker chosen with `--logger` (metrics.jsonl and TensorBoard by
default; `trackers.py`)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from shoal.telemetry.trackers import TensorBoardTracker, open_trackers, read_metrics

__all__ = ["MetricsWriter", "read_metrics"]


class MetricsWriter:
    """Writes each metrics row to every chosen tracker, one call per tracker and row."""

    def __init__(
        self, run_dir: Path, loggers: Iterable[str], resume_step: int | None = None
    ) -> None:
        """`resume_step`: the step the run continues from; rows and events already written
        past it describe work that was lost with the process, and are dropped (all of them
        when a run restarts from step 0 because it has no checkpoint)."""
        self.trackers = open_trackers(loggers, run_dir, resume_step)
        # TensorBoard's writer, for what is not a scalar (images, videos); None without it.
        self.tb = next((t.writer for t in self.trackers if isinstance(t, TensorBoardTracker)), None)

    def write(self, row: dict[str, Any]) -> None:
        clean = {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in row.items()
        }
        for tracker in self.trackers:
            tracker.write(clean)

    def close(self, ok: bool = True) -> None:
        """`ok`: False when the run stopped on an error (W&B and MLflow mark the run failed)."""
        for tracker in self.trackers:
            tracker.close(ok)
