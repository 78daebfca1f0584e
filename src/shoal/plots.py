"""Moved to `shoal.analysis.plots`. This module re-exports its public names, so old imports keep
working; import from `shoal.analysis.plots` in new code."""

from shoal.analysis.plots import (
    BAND_REPS,
    GRID_POINTS,
    IMAGE_FORMATS,
    X_AXES,
    Curve,
    Plot,
    XAxis,
    group_curve,
    plot_runs,
)

__all__ = [
    "BAND_REPS",
    "GRID_POINTS",
    "IMAGE_FORMATS",
    "X_AXES",
    "Curve",
    "Plot",
    "XAxis",
    "group_curve",
    "plot_runs",
]
