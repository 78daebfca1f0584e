"""Where metrics rows go (`--logger`): metrics.jsonl, TensorBoard, metrics.csv, Weights & Biases
and MLflow.

Every tracker is fed the same rows, one `write(row)` call per row, the step being the row's
`env_steps`. A row's non-finite numbers arrive as None (jsonl writes null, csv an empty cell;
TensorBoard, W&B and MLflow skip them). TensorBoard and W&B group the keys into sections
(`tensorboard_tag`); jsonl, csv and MLflow keep the plain keys. W&B and MLflow are imported
only when chosen, and `check_installed` refuses a chosen one that is not installed before a
run directory exists.
Their run ids are kept in `RUN_DIR/trackers.json`, so `shoal train --resume` continues the same
W&B and MLflow runs.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, Protocol

from shoal.config import load_yaml, storage_error, write_atomically
from shoal.errors import ConfigError, ShoalError, StorageError
from shoal.run.layout import (
    CONFIG_FILE,
    METRICS_CSV,
    METRICS_FILE,
    TENSORBOARD_DIR,
    TRACKER_IDS_FILE,
    VIDEO_DIR,
)
from shoal.tree import flatten_dict

LoggerName = Literal["tensorboard", "jsonl", "csv", "wandb", "mlflow"]
DEFAULT_LOGGERS: tuple[LoggerName, ...] = ("tensorboard", "jsonl")
IDS_FILE = TRACKER_IDS_FILE
# Trackers from optional packages; each logger's name is its module's, its pip package's and
# its shoal extra's.
_OPTIONAL = ("wandb", "mlflow")


class TrackerError(ShoalError):
    """A chosen tracker that cannot start (no W&B login, an MLflow store that cannot open)."""


class Tracker(Protocol):
    def write(self, row: dict[str, Any]) -> None:
        """Record one metrics row (`env_steps` is its step)."""

    def close(self, ok: bool) -> None:
        """Finish: `ok` is False when the run stopped on an error."""


def check_installed(loggers: Iterable[str]) -> None:
    """A ConfigError saying what to pip install for each chosen tracker that is missing
    (found without importing it)."""
    missing = [
        name
        for name in dict.fromkeys(loggers)
        if name in _OPTIONAL and importlib.util.find_spec(name) is None
    ]
    if missing:
        names = " and ".join(missing)
        plural = len(missing) > 1
        raise ConfigError(
            f"--logger {names} needs the {names} package{'s' if plural else ''}, which "
            f"{'are' if plural else 'is'} not installed. Run `pip install "
            f"'shoal[{','.join(missing)}]'` (or `pip install {' '.join(missing)}`) and start "
            f"again, or leave {names} out of --logger. Nothing was written."
        )


def open_trackers(loggers: Iterable[str], run_dir: Path, resume_step: int | None) -> list[Tracker]:
    """One tracker per chosen logger. `resume_step`: the step the run continues from; what was
    logged past it describes work lost with the process and is dropped where the tracker can
    drop it (jsonl, csv, TensorBoard)."""
    trackers: list[Tracker] = []
    try:
        for name in dict.fromkeys(loggers):
            trackers.append(_FACTORIES[name](run_dir, resume_step))
    except BaseException:
        for tracker in trackers:
            tracker.close(ok=False)
        raise
    return trackers


def scalars(row: dict[str, Any]) -> dict[str, float]:
    """The numbers of a row other than its step: what TensorBoard, W&B and MLflow record."""
    return {
        key: value
        for key, value in row.items()
        if key != "env_steps" and isinstance(value, int | float) and not isinstance(value, bool)
    }


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Rows of a metrics.jsonl; a last line cut short by a crash is skipped. A file that is
    not UTF-8 text (not one shoal wrote, or damaged) is a StorageError naming the line."""
    if not path.exists():
        return []
    rows = []
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise StorageError(
            f"{path} is not a metrics file shoal can read: line {line} is not UTF-8 text "
            f"(byte 0x{data[err.start]:02x} at offset {err.start}), so the file is damaged or "
            "was not written by shoal. Nothing was changed; restore it from a copy, or move it "
            "aside (the run's checkpoints do not need it)."
        ) from None
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def _append_line(file: io.TextIOBase, path: Path, line: str) -> None:
    try:
        file.write(line)
        file.flush()  # a killed run keeps every row written so far
    except OSError as err:  # a full disk, most often
        raise storage_error(path, err) from None


class JsonlTracker:
    """`metrics.jsonl`: one JSON object per row, what `shoal plot` and `shoal report` read."""

    def __init__(self, run_dir: Path, resume_step: int | None) -> None:
        self.path = run_dir / METRICS_FILE
        if resume_step is not None and self.path.exists():
            kept = [r for r in read_metrics(self.path) if r.get("env_steps", 0) <= resume_step]
            write_atomically(self.path, "".join(json.dumps(r) + "\n" for r in kept))
        self.file = self.path.open("a")

    def write(self, row: dict[str, Any]) -> None:
        _append_line(self.file, self.path, json.dumps(row) + "\n")

    def close(self, ok: bool) -> None:
        self.file.close()


# TensorBoard shows one section of cards per tag prefix: a row's keys go to five sections
# (metrics.jsonl keeps the plain keys; the README maps the two).
_ROLLOUT = frozenset({"return_mean", "episode_length_mean", "episodes", "frames"})
_PERF = frozenset({"steps_per_second", "time", "updates", "policy_lag"})
_PERF_PREFIXES = ("inference_", "env_step_ms")
_DATA_PREFIXES = ("replay_", "unrolls_")
_FAULT_SUFFIXES = ("_restarts", "_reconnects", "_lost", "_live")


def tensorboard_tag(key: str) -> str:
    """Where a metrics key shows in TensorBoard: `rollout/`, `eval/`, `train/` (what the
    learner reports), `data/` (replay and queues), `perf/` (speed, lag) or `faults/`; keys
    that name their own group (`bandit/count_arm00`) stay as they are."""
    if "/" in key:
        return f"perf/{key}" if key.startswith(_PERF_PREFIXES) else key
    if key.startswith("eval_"):
        return "eval/" + key.removeprefix("eval_")
    if key in _ROLLOUT:
        return f"rollout/{key}"
    if key in _PERF or key.startswith(_PERF_PREFIXES):
        return f"perf/{key}"
    if key.endswith(_FAULT_SUFFIXES):
        return f"faults/{key}"
    if key.startswith(_DATA_PREFIXES):
        return f"data/{key}"
    return f"train/{key}"


class TensorBoardTracker:
    """TensorBoard scalars under `RUN_DIR/tb`, one per number of the row, grouped by
    `tensorboard_tag`."""

    def __init__(self, run_dir: Path, resume_step: int | None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        tb = run_dir / TENSORBOARD_DIR
        # TensorBoard purges events at purge_step and later; the checkpoint's own step (its
        # final row and evaluation) is kept, as metrics.jsonl keeps it.
        purge = resume_step + 1 if resume_step is not None and tb.exists() else None
        self.writer = SummaryWriter(str(tb), purge_step=purge)

    def write(self, row: dict[str, Any]) -> None:
        step = int(row["env_steps"])
        for key, value in scalars(row).items():
            self.writer.add_scalar(tensorboard_tag(key), value, step)

    def close(self, ok: bool) -> None:
        self.writer.close()


class CsvTracker:
    """`metrics.csv`, one line per row. Rows gain keys over a run (launcher counts, an agent's
    policy metrics), so a row with a new key rewrites the file with the wider header."""

    def __init__(self, run_dir: Path, resume_step: int | None) -> None:
        self.path = run_dir / METRICS_CSV
        self.rows: list[dict[str, Any]] = []
        if self.path.exists():
            with self.path.open(newline="") as f:
                self.rows = [
                    r
                    for r in csv.DictReader(f)
                    if resume_step is None or float(r.get("env_steps") or 0) <= resume_step
                ]
        self.columns = list(dict.fromkeys(key for row in self.rows for key in row))
        self._rewrite()

    def _rewrite(self) -> None:
        text = io.StringIO()
        writer = csv.DictWriter(text, self.columns, lineterminator="\n")
        if self.columns:
            writer.writeheader()
        writer.writerows(self.rows)
        write_atomically(self.path, text.getvalue())
        self.file = self.path.open("a", newline="")

    def write(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if any(key not in self.columns for key in row):
            self.columns += [key for key in row if key not in self.columns]
            self.file.close()
            self._rewrite()
            return
        line = io.StringIO()
        csv.DictWriter(line, self.columns, lineterminator="\n").writerow(row)
        _append_line(self.file, self.path, line.getvalue())

    def close(self, ok: bool) -> None:
        self.file.close()


def _run_config(run_dir: Path) -> dict[str, Any]:
    """The run's resolved config (config.yaml), which W&B and MLflow record with the run."""
    return load_yaml(run_dir / CONFIG_FILE)


def _tracker_ids(run_dir: Path) -> dict[str, str]:
    path = run_dir / IDS_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def _keep_tracker_id(run_dir: Path, name: str, run_id: str) -> None:
    ids = {**_tracker_ids(run_dir), name: run_id}
    write_atomically(run_dir / IDS_FILE, json.dumps(ids, indent=2) + "\n")


def _start_failed(tracker: str, err: Exception, advice: str) -> TrackerError:
    return TrackerError(f"{tracker} could not start a run: {type(err).__name__}: {err} {advice}")


class WandbTracker:
    """A Weights & Biases run named after the run directory, in project $WANDB_PROJECT (default
    `shoal`), grouped by algorithm and env so seeds sit together, its keys grouped into
    sections as TensorBoard's (`tensorboard_tag`); its files go to `RUN_DIR/wandb`. With
    WANDB_MODE=offline nothing leaves the machine until
    `wandb sync RUN_DIR/wandb/offline-run-*`."""

    def __init__(self, run_dir: Path, resume_step: int | None) -> None:
        import wandb

        config = _run_config(run_dir)
        run_id = _tracker_ids(run_dir).get("wandb")
        resumed = run_id is not None
        if run_id is None:
            run_id = uuid.uuid4().hex[:12]  # W&B's ids: letters and digits, unique per project
            _keep_tracker_id(run_dir, "wandb", run_id)
        try:
            self.run = wandb.init(
                id=run_id,
                resume="allow",  # a resumed shoal run appends to the W&B run of its id
                dir=str(run_dir),
                project=os.environ.get("WANDB_PROJECT", "shoal"),
                name=run_dir.name,
                group=f"{config.get('algo')}-{config.get('env')}",
                config=None if resumed else config,
            )
        except Exception as err:  # W&B raises its own errors for login, network and settings
            raise _start_failed(
                "Weights & Biases",
                err,
                "Log in with `wandb login`, or set WANDB_MODE=offline to log to the run "
                "directory and upload later with `wandb sync`.",
            ) from None
        if resumed:  # settings given with --resume (a larger --total-steps) are recorded too
            self.run.config.update(config, allow_val_change=True)

    def write(self, row: dict[str, Any]) -> None:
        # Keys grouped as TensorBoard's (`train/loss`): W&B makes a section per prefix.
        numbers = {tensorboard_tag(key): value for key, value in scalars(row).items()}
        self.run.log(numbers, step=int(row["env_steps"]))

    def close(self, ok: bool) -> None:
        self.run.finish(exit_code=0 if ok else 1)


def _mlflow_start_failed(err: Exception) -> TrackerError:
    """What to do when MLflow's store does not open; the two stores a new user meets first
    (MLflow 3's default sqlite store without SQLAlchemy, a file store without the opt-in)
    get their own advice."""
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    file_store = "file: store, e.g. MLFLOW_TRACKING_URI=file:///abs/path/mlruns"
    if "MLFLOW_ALLOW_FILE_STORE" in str(err):
        return TrackerError(
            f"MLflow could not start a run: MLflow 3 opens a file store (MLFLOW_TRACKING_URI="
            f"{uri or './mlruns'}) only with MLFLOW_ALLOW_FILE_STORE=true in the environment. "
            "Set it, or point MLFLOW_TRACKING_URI at a server (http://host:5000) or a database "
            "(sqlite:///mlflow.db, with the full mlflow package)."
        )
    if not uri and importlib.util.find_spec("sqlalchemy") is None:
        return TrackerError(
            "MLflow could not start a run: with MLFLOW_TRACKING_URI unset MLflow 3 stores runs "
            "in sqlite:///mlflow.db, which needs the full mlflow package, and only "
            "mlflow-skinny is installed (as shoal's dev extra installs it). Run `pip install "
            f"'shoal[mlflow]'`, or set MLFLOW_TRACKING_URI to a server (http://host:5000) or a "
            f"{file_store} together with MLFLOW_ALLOW_FILE_STORE=true."
        )
    return _start_failed(
        "MLflow",
        err,
        "Check MLFLOW_TRACKING_URI (a server such as http://host:5000, or a store such as "
        f"sqlite:///mlflow.db, or a {file_store} with MLFLOW_ALLOW_FILE_STORE=true).",
    )


class MlflowTracker:
    """An MLflow run named after the run directory, in experiment $MLFLOW_EXPERIMENT_NAME
    (default `shoal`) of the tracking store MLflow is set to (MLFLOW_TRACKING_URI: a server, a
    database or a file store; unset, MLflow's own default), with the run's config as params
    and `config.yaml` as an artifact (again on a resume, whose settings may differ); its
    videos (`RUN_DIR/videos`) are logged as artifacts under `videos/` when it closes."""

    def __init__(self, run_dir: Path, resume_step: int | None) -> None:
        from mlflow.tracking import MlflowClient

        self.run_dir = run_dir
        run_id = _tracker_ids(run_dir).get("mlflow")
        try:
            self.client = MlflowClient()
            if run_id is None:
                run_id = self._create_run(run_dir)
                _keep_tracker_id(run_dir, "mlflow", run_id)
            else:
                self.client.update_run(run_id, status="RUNNING")
            self.client.log_artifact(run_id, str(run_dir / CONFIG_FILE))
        except Exception as err:  # MLflow raises its own errors for stores and servers
            raise _mlflow_start_failed(err) from None
        self.run_id = run_id

    def _create_run(self, run_dir: Path) -> str:
        from mlflow.entities import Param

        name = os.environ.get("MLFLOW_EXPERIMENT_NAME", "shoal")
        experiment = self.client.get_experiment_by_name(name)
        if experiment is None:
            try:
                experiment_id = self.client.create_experiment(name)
            except Exception:  # another run made it meanwhile
                experiment_id = self.client.get_experiment_by_name(name).experiment_id
        else:
            experiment_id = experiment.experiment_id
        run = self.client.create_run(experiment_id, run_name=run_dir.name)
        params = [Param(key, str(value)) for key, value in _flatten(_run_config(run_dir))]
        self.client.log_batch(run.info.run_id, params=params)
        return str(run.info.run_id)

    def write(self, row: dict[str, Any]) -> None:
        from mlflow.entities import Metric

        stamp, step = int(time.time() * 1000), int(row["env_steps"])
        metrics = [Metric(key, float(value), stamp, step) for key, value in scalars(row).items()]
        self.client.log_batch(self.run_id, metrics=metrics)

    def close(self, ok: bool) -> None:
        videos = self.run_dir / VIDEO_DIR
        try:
            if videos.is_dir() and any(videos.iterdir()):
                self.client.log_artifacts(self.run_id, str(videos), VIDEO_DIR)
        finally:
            self.client.set_terminated(self.run_id, "FINISHED" if ok else "FAILED")


def _flatten(config: dict[str, Any]) -> list[tuple[str, Any]]:
    """`{"run": {"total_steps": 5}}` -> `[("run.total_steps", 5)]`."""
    return flatten_dict(config, ".")


_FACTORIES: dict[str, Callable[[Path, int | None], Tracker]] = {
    "tensorboard": TensorBoardTracker,
    "jsonl": JsonlTracker,
    "csv": CsvTracker,
    "wandb": WandbTracker,
    "mlflow": MlflowTracker,
}
