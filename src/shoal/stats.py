"""Moved to `shoal.analysis.stats`. This module re-exports its public names, so old imports keep
working; import from `shoal.analysis.stats` in new code."""

from shoal.analysis.stats import (
    AGGREGATES,
    Estimate,
    Statistic,
    iqm,
    mean_of_means,
    median_of_means,
    stratified_bootstrap,
)

__all__ = [
    "AGGREGATES",
    "Estimate",
    "Statistic",
    "iqm",
    "mean_of_means",
    "median_of_means",
    "stratified_bootstrap",
]
