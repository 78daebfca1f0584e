"""Metrics sinks (metrics.jsonl, TensorBoard, metrics.csv, W&B, MLflow) and the console."""

from shoal.telemetry.console import Console
from shoal.telemetry.metrics import MetricsWriter, read_metrics

__all__ = ["Console", "MetricsWriter", "read_metrics"]
