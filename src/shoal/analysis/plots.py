"""Learning curves of several runs (`shoal plot`): seeds of one experiment (one algorithm on one
env with the same settings, `shoal.run.runs.group_runs`) share a mean line and a 95% bootstrap
confidence band of that mean.

Seeds log at different step counts (and at different times), so each seed's curve is linearly
interpolated onto a common grid over the range every seed covers (a note says so when a seed
runs longer), and the band is the bootstrap over seeds of the mean at each grid point
(`stats.stratified_bootstrap` with one task). A run lacking the metric (a DQN run asked for
PPO's `value_loss`) is left out with a note; a run still going (no summary.json) is drawn as
far as it got, with a note. One panel per env, one line per group. Drawn with matplotlib's Agg
backend through `Figure` (no pyplot, so no display and no global figure state).
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
from shoal.run.runs import (
    Run,
    check_output,
    describe_group,
    group_runs,
    read_runs,
    same_seeds,
    series,
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
    """One group's mean curve and its band on a grid; `band` is None for a single seed.
    `settings`: what sets the group apart from others of its algorithm and env
    (`"agent.learning_rate=0.001"`); `notes`: what a reader should know (unfinished seeds,
    seeds cut to the common range)."""

    algo: str
    env: str
    seeds: int
    grid: np.ndarray
    mean: np.ndarray
    band: tuple[np.ndarray, np.ndarray] | None
    settings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return describe_group((self.algo, self.env, *self.settings))


@dataclass(frozen=True)
class Plot:
    """What `plot_runs` drew: its curves, and notes on what it left out or cut."""

    curves: list[Curve]
    notes: list[str]


def plot_runs(
    paths: Sequence[str | Path],
    output: str | Path,
    *,
    x: XAxis = "frames",
    metric: str = "return_mean",
    seed: int = 0,
) -> Plot:
    """Draw the learning curves of the runs at `paths` into `output` (its suffix picks the
    format: png, pdf, svg, ...) and return the curves drawn, with notes on the runs left out
    (no `metric`, or no point yet) and on seeds unfinished or cut to the common range. Only
    when no run has a point to draw is it a ConfigError (the first run's reason)."""
    if x not in X_AXES:
        raise ConfigError(f"--x must be one of {', '.join(X_AXES)}, got {x!r}.")
    output = Path(output)
    check_output(output, IMAGE_FORMATS, "an image")
    x_key = X_AXES[x][0]
    groups = group_runs(read_runs(paths))
    curves, notes, reasons = [], same_seeds(groups), []
    for key, members in groups.items():
        usable = []
        for run in members:
            try:
                _points(run, x_key, metric)
            except ConfigError as err:
                reasons.append(err)
                notes.append(f"left out {run.path}: {err}")
                continue
            usable.append(run)
        if usable:
            curves.append(group_curve(usable, x_key, metric, seed, settings=tuple(key[2:])))
    if not curves:
        raise reasons[0]
    write_atomically(output, _draw(curves, X_AXES[x][1], metric, output.suffix[1:].lower()))
    return Plot(curves, notes + [note for curve in curves for note in curve.notes])


def _points(run: Run, x_key: str, metric: str) -> tuple[list[float], list[float]]:
    xs, ys = series(run, x_key, metric)
    if not xs:
        raise ConfigError(
            f"{run.path} has no metrics row with numbers for both {x_key!r} and {metric!r} "
            "(a metric such as return_mean is null until episodes finish); train longer or "
            "pick another --metric."
        )
    return xs, ys


def group_curve(
    runs: list[Run], x_key: str, metric: str, seed: int = 0, settings: tuple[str, ...] = ()
) -> Curve:
    """The mean over seeds of `metric` against `x_key`, on a grid over the x range every seed
    covers, with a 95% bootstrap band when there are two seeds or more."""
    data = [_points(run, x_key, metric) for run in runs]
    label = describe_group((runs[0].algo, runs[0].env, *settings))
    low = max(xs[0] for xs, _ in data)
    high = min(xs[-1] for xs, _ in data)
    if high < low:
        names = ", ".join(str(run.path) for run in runs)
        raise ConfigError(
            f"The seeds of {label} ({names}) cover no common range of "
            f"{x_key}, so no mean can be drawn; plot them with runs of similar length."
        )
    notes = [
        f"{label}: seed {run.seed} is unfinished (no summary.json: still running, or "
        f"stopped without one); drawn up to {x_key} {xs[-1]:g}."
        for run, (xs, _) in zip(runs, data, strict=True)
        if not run.finished
    ]
    if len(runs) > 1 and any(xs[0] < low or xs[-1] > high for xs, _ in data):
        spans = ", ".join(
            f"seed {run.seed}: {xs[0]:g} to {xs[-1]:g}"
            for run, (xs, _) in zip(runs, data, strict=True)
        )
        notes.append(
            f"{label}: the seeds cover different ranges of {x_key} ({spans}); the mean is "
            f"drawn over the range all cover, {low:g} to {high:g}."
        )
    grid = np.linspace(low, high, GRID_POINTS) if high > low else np.array([low])
    curves = np.stack([np.interp(grid, xs, ys) for xs, ys in data])  # [seeds, grid]
    band = None
    if len(runs) > 1:
        estimate = stratified_bootstrap([curves], mean_of_means, reps=BAND_REPS, seed=seed)
        band = (estimate.low, estimate.high)
    return Curve(
        runs[0].algo,
        runs[0].env,
        len(runs),
        grid,
        curves.mean(axis=0),
        band,
        settings,
        tuple(notes),
    )


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
            name = curve.algo + (f" [{', '.join(curve.settings)}]" if curve.settings else "")
            label = f"{name} ({curve.seeds} seed{'s' if curve.seeds > 1 else ''})"
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
