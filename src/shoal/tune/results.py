"""What a finished `shoal tune` search writes (`trials.md`, `trials.csv`, `best.yaml`) and the
checks of its outcome: a search in which every trial failed, or none reported `--metric`, is a
one-paragraph error once its table is written."""

from __future__ import annotations

import csv
import difflib
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoal import config as configs
from shoal import experiment
from shoal.errors import ConfigError, ShoalError
from shoal.tune.trial import ERROR_KEY

TABLE_FILE = "trials.md"
CSV_FILE = "trials.csv"
BEST_FILE = "best.yaml"


@dataclass(frozen=True)
class TuneResult:
    experiment_dir: Path
    rows: list[dict[str, Any]]  # one per trial, as in trials.csv
    best: dict[str, Any] | None  # the best trial's row
    best_config: Path | None  # best.yaml
    table: str  # the markdown table


def report(
    exp_dir: Path, grid: Any, *, metric: str, mode: str, keys: list[str], algo: str
) -> TuneResult:
    """The finished search's table (`trials.md`, `trials.csv`, printed) and the best trial's
    settings (`best.yaml`) from Tune's `ResultGrid`: a row per trial with its searched
    settings (`keys`), its best and last `metric`, exploits and status."""
    rows, reported = [], set[str]()  # the rows, and every metric the trials reported
    for result in grid:
        config = result.config or {}
        metrics = result.metrics or {}
        trial_id = metrics.get("trial_id") or Path(result.path).name
        frame = result.metrics_dataframe
        values = [] if frame is None or metric not in frame else list(frame[metric])
        finite = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
        best = (max if mode == "max" else min)(finite) if finite else None
        last = metrics.get(metric)
        row: dict[str, Any] = {"trial": trial_id}
        for key in keys:
            section, _, name = key.partition(".")
            row[key] = config.get(section, {}).get(name)
        row.update(
            {
                "env_steps": metrics.get("env_steps"),
                f"best {metric}": best,
                f"last {metric}": last if _finite(last) else None,
                "exploits": metrics.get("exploits", 0),
                "status": "error" if result.error else "done",
                "run_dir": str(exp_dir / "runs" / f"{algo}-{trial_id}"),
            }
        )
        if result.error:
            row["error"] = str(result.error).strip().splitlines()[-1][:200]
        if metrics.get(ERROR_KEY):  # a user's mistake, ended without Tune's traceback
            row["status"], row["error"] = "error", str(metrics[ERROR_KEY])
        reported.update(_reported(frame))
        rows.append(row)
    rows.sort(key=lambda r: str(r["trial"]))
    scored = [r for r in rows if r[f"last {metric}"] is not None]
    best_row = None
    if scored:
        pick = max if mode == "max" else min
        best_row = pick(scored, key=lambda r: r[f"last {metric}"])
    table = _markdown(rows, metric, best_row)
    configs.write_atomically(exp_dir / TABLE_FILE, table)
    configs.write_atomically(exp_dir / CSV_FILE, _csv(rows))
    best_path = None
    if best_row is not None:
        best_path = _write_best(Path(best_row["run_dir"]), exp_dir / BEST_FILE)
    print(table, end="")
    if best_path is not None:
        print(f"best settings: {best_path} (`shoal train --config {best_path}` trains them)")
    _check_outcome(rows, reported, metric, exp_dir)
    return TuneResult(exp_dir, rows, best_row, best_path, table)


def _reported(frame: Any) -> list[str]:
    """The metrics a trial reported (Tune's own columns left out)."""
    if frame is None:
        return []
    return [str(c) for c in frame.columns if "/" not in str(c) and c not in _TUNE_COLUMNS]


_TUNE_COLUMNS = {
    "timestamp", "checkpoint_dir_name", "done", "training_iteration", "trial_id", "date",
    "time_this_iter_s", "time_total_s", "pid", "hostname", "node_ip", "time_since_restore",
    "iterations_since_restore", ERROR_KEY,
}  # fmt: skip


def _check_outcome(
    rows: list[dict[str, Any]], reported: set[str], metric: str, exp_dir: Path
) -> None:
    """A search that found nothing is a ShoalError (exit 2), once its table is written: every
    trial failed (the first one's paragraph), or none reported --metric (a typo: the columns
    they did report, the closest first)."""
    if not rows:
        return
    failed = [r for r in rows if r["status"] == "error"]
    if len(failed) == len(rows):
        raise ShoalError(
            f"Every trial of the search failed; the first: {failed[0].get('error')} "
            f"{exp_dir / TABLE_FILE} lists each trial and its error; no {BEST_FILE} was written."
        )
    reported = reported - {metric}  # every result carries it, as NaN where not reported
    if reported and not any(r[f"best {metric}"] is not None for r in rows):
        close = difflib.get_close_matches(metric, reported, n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        raise ConfigError(
            f"No trial reported --metric {metric}, so no trial could be ranked and no "
            f"{BEST_FILE} was written.{hint} The trials reported: {', '.join(sorted(reported))}. "
            f"The trials' runs are kept in {exp_dir / 'runs'}; search again with one of them."
        )


def _write_best(run_dir: Path, path: Path) -> Path | None:
    """The best trial's settings (as its run last used them) as a `--config` file."""
    stored = run_dir / experiment.CONFIG_FILE
    if not stored.is_file():
        return None
    data = configs.load_yaml(stored)
    run = {k: v for k, v in data.get("run", {}).items() if k not in ("runs_dir", "run_name")}
    run.pop("progress", None)
    data["run"] = run
    configs.write_atomically(path, configs.dump_yaml(data))
    return path


def _markdown(rows: list[dict[str, Any]], metric: str, best: dict[str, Any] | None) -> str:
    if not rows:
        return "no trials ran\n"
    columns = [c for c in rows[0] if c not in ("run_dir", "error")]
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join(" --- " for _ in columns) + "|",
    ]
    for row in rows:
        mark = " (best)" if row is best else ""
        cells = [_cell(row.get(c)) + (mark if c == "trial" else "") for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    errors = [f"- {r['trial']}: {r['error']}" for r in rows if r.get("error")]
    return "\n".join(lines + (["", *errors] if errors else [])) + "\n"


def _csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    columns = list(dict.fromkeys(c for row in rows for c in row))
    writer = csv.DictWriter(buffer, columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
