"""Metrics sinks (metrics.jsonl, TensorBoard, metrics.csv, W&B, MLflow) and the console."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Console", "MetricsWriter", "read_metrics"]

if TYPE_CHECKING:
    from shoal.telemetry.console import Console
    from shoal.telemetry.metrics import MetricsWriter, read_metrics


def __getattr__(name: str) -> Any:
    # Lazy: the command line reads `telemetry.trackers` (the logger names) before it parses its
    # arguments, and the console's progress bars (tqdm) cost a fifth of `shoal --help`.
    if name == "Console":
        from shoal.telemetry.console import Console

        return Console
    if name in ("MetricsWriter", "read_metrics"):
        from shoal.telemetry import metrics

        return getattr(metrics, name)
    raise AttributeError(name)
