"""Learning curves of several runs (`shoal plot`): seeds of one algorithm on one env share a
mean line and a 95% bootstrap confidence band of that mean.

Seeds log at different step counts (and at different times), so each seed's curve is linearly
interpolated onto a common grid over the range every seed covers, and the band is the
bootstrap over seeds of the mean at each grid point (`stats.stratified_bootstrap` with one
task). One panel per env, one line per algorithm. Drawn with matplotlib's Agg backend through
`Figure` (no pyplot, so no display and no global figure state).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from shoal.analysis.stats import mean_of_means, stratified_bootstrap
from shoal.config import write_atomically
from shoal.errors import ConfigError
from shoal.run.runs import Run, check_output, group_runs, read_runs, series

__all__ = [
    "BAND_REPS",
    "GRID_POINTS",
    "IMAGE_FORMATS",
    "X_AXES",
    "Curve",
    "XAxis",
    "group_curve",
    "plot_runs",
]

XAxis = Literal["frames", "steps", "time"]
# --x choice -> (metrics.jsonl column, axis label)
X_AXES: dict[str, tuple[str, str]] = {
    "frames": ("frames", "frames"),
    "steps": ("env_steps", "agent steps"),
    "time": ("time", "wall time (s)"),
}
# Formats matplotlib writes with no extra program (pgf needs LaTeX, so it is left out).
IMAGE_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg", "webp", "eps")
GRID_POINTS = 200
BAND_REPS = 2_000


@dataclass(frozen=True)
class Curve:
    """One group's mean curve and its band on a grid; `band` is None for a single seed."""

    algo: str
    env: str
    seeds: int
    grid: np.ndarray
    mean: np.ndarray
    band: tuple[np.ndarray, np.ndarray] | None


def plot_runs(
    paths: Sequence[str | Path],
    output: str | Path,
    *,
    x: XAxis = "frames",
    metric: str = "return_mean",
    seed: int = 0,
) -> list[Curve]:
    """Draw the learning curves of the runs at `paths` into `output` (its suffix picks the
    format: png, pdf, svg, ...) and return the curves drawn."""
    if x not in X_AXES:
        raise ConfigError(f"--x must be one of {', '.join(X_AXES)}, got {x!r}.")
    output = Path(output)
    check_output(output, IMAGE_FORMATS, "an image")
    curves = [
        group_curve(members, X_AXES[x][0], metric, seed)
        for members in group_runs(read_runs(paths)).values()
    ]
    write_atomically(output, _draw(curves, X_AXES[x][1], metric, output.suffix[1:].lower()))
    return curves


def group_curve(runs: list[Run], x_key: str, metric: str, seed: int = 0) -> Curve:
    """The mean over seeds of `metric` against `x_key`, on a grid over the x range every seed
    covers, with a 95% bootstrap band when there are two seeds or more."""
    data = [series(run, x_key, metric) for run in runs]
    for run, (xs, _) in zip(runs, data, strict=True):
        if not xs:
            raise ConfigError(
                f"{run.path} has no metrics row with numbers for both {x_key!r} and {metric!r} "
                "(a metric such as return_mean is null until episodes finish); train longer or "
                "pick another --metric."
            )
    low = max(xs[0] for xs, _ in data)
    high = min(xs[-1] for xs, _ in data)
    if high < low:
        names = ", ".join(str(run.path) for run in runs)
        raise ConfigError(
            f"The seeds of {runs[0].algo} on {runs[0].env} ({names}) cover no common range of "
            f"{x_key}, so no mean can be drawn; plot them with runs of similar length."
        )
    grid = np.linspace(low, high, GRID_POINTS) if high > low else np.array([low])
    curves = np.stack([np.interp(grid, xs, ys) for xs, ys in data])  # [seeds, grid]
    band = None
    if len(runs) > 1:
        estimate = stratified_bootstrap([curves], mean_of_means, reps=BAND_REPS, seed=seed)
        band = (estimate.low, estimate.high)
    return Curve(runs[0].algo, runs[0].env, len(runs), grid, curves.mean(axis=0), band)


def _draw(curves: list[Curve], x_label: str, metric: str, fmt: str) -> bytes:
    from matplotlib.figure import Figure

    envs = list(dict.fromkeys(c.env for c in curves))
    cols = min(len(envs), 3)
    rows = math.ceil(len(envs) / cols)
    figure = Figure(figsize=(5.0 * cols, 3.6 * rows), layout="constrained")
    axes = figure.subplots(rows, cols, squeeze=False).ravel()
    for ax, env in zip(axes, envs, strict=False):
        for i, curve in enumerate(c for c in curves if c.env == env):
            color = f"C{i}"
            label = f"{curve.algo} ({curve.seeds} seed{'s' if curve.seeds > 1 else ''})"
            marker = "o" if curve.grid.size == 1 else None
            ax.plot(curve.grid, curve.mean, color=color, label=label, marker=marker)
            if curve.band is not None:
                ax.fill_between(curve.grid, *curve.band, color=color, alpha=0.25, linewidth=0)
        ax.set_title(env)
        ax.set_xlabel(x_label)
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    for ax in axes[len(envs) :]:
        ax.set_visible(False)
    figure.suptitle("mean over seeds, shaded: 95% bootstrap confidence interval", fontsize="small")
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=120)
    return buffer.getvalue()
