"""`--logger`: every tracker receives the rows of metrics.jsonl; W&B (offline) and MLflow (a
file store) are read back, imported only when chosen, and continued by --resume."""

from __future__ import annotations

import csv
import importlib.util
import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

import shoal
from shoal.cli import main
from shoal.runtime.config import RunConfig
from shoal.telemetry import MetricsWriter, read_metrics
from shoal.telemetry.trackers import CsvTracker, scalars, tensorboard_tag

pytest.importorskip("wandb")
pytest.importorskip("mlflow")


@pytest.fixture
def tracker_env(tmp_path, monkeypatch):
    """W&B offline and quiet; MLflow on a file store in tmp_path (MLflow 3 wants the opt-in)."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONSOLE", "off")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return tmp_path


def train(tmp_path, logger, total_steps=1024, resume=None):
    run = {"total_steps": total_steps}
    if resume is None:
        run |= {
            "runs_dir": str(tmp_path / "runs"),
            "run_name": "run",
            "progress": False,
            "eval_episodes": 0,
            "log_interval": 256,
            "num_envs": 4,
            "logger": logger,
        }
        return shoal.train("ppo", "CartPole-v1", run=run, agent={"unroll_length": 64}).run_dir
    return shoal.train(resume=resume, run=run).run_dir


def expected(run_dir):
    """{step: numbers} of metrics.jsonl, as a numeric tracker should have them."""
    return {row["env_steps"]: scalars(row) for row in read_metrics(run_dir / "metrics.jsonl")}


# W&B's offline runs are files of records in LevelDB's log format (a 7-byte file header, then
# 32 KiB blocks of chunks with a 7-byte header each: crc32, length, type), each record a
# protobuf `Record`. wandb 0.31 no longer ships a Python reader, so the test has its own.
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
_BLOCK = 32768


def wandb_records(path: Path):
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, magic, _version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic) == (b":W&B", 0xBEE1)
    pos, pending = 7, b""
    while pos + 7 <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0:  # zero padding after the last record
            break
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (_FULL, _LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def wandb_runs(run_dir):
    """[(W&B run id, {step: numbers})] of each offline W&B run started in `run_dir`, oldest
    first."""
    runs = []
    for folder in sorted((run_dir / "wandb").glob("offline-run-*")):
        (path,) = folder.glob("*.wandb")
        run_id, history = None, {}
        for record in wandb_records(path):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                run_id = record.run.run_id
            elif kind == "history":
                items = {
                    i.key or "/".join(i.nested_key): json.loads(i.value_json)
                    for i in record.history.item
                }
                history[record.history.step.num] = {
                    k: v
                    for k, v in items.items()
                    if not k.startswith("_")  # W&B's own
                }
        runs.append((run_id, history))
    return runs


def settled_wandb_runs(run_dir, count):
    """`wandb_runs` once each of the `count` runs' files holds its run record: W&B's service
    process writes the offline file and, on a loaded machine, may still be flushing it after
    `finish` has returned (seen once in `make test` beside other work). Up to 30 s."""
    deadline = time.monotonic() + 30
    while True:
        runs = wandb_runs(run_dir)
        if (len(runs) == count and all(i is not None for i, _ in runs)) or (
            time.monotonic() > deadline
        ):
            return runs
        time.sleep(0.5)


def mlflow_history(run_id):
    """(run status, {step: numbers}) of an MLflow run."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    run = client.get_run(run_id)
    history: dict[int, dict[str, float]] = {}
    for key in run.data.metrics:
        for metric in client.get_metric_history(run_id, key):
            history.setdefault(metric.step, {})[key] = metric.value
    return run.info.status, run.data.params, history


def grouped(rows):
    """`expected` rows with their keys as TensorBoard and W&B group them (`train/loss`)."""
    return {
        step: {tensorboard_tag(key): value for key, value in numbers.items()}
        for step, numbers in rows.items()
    }


def assert_same_rows(received, rows):
    """The same steps, the same keys at each step, the same numbers."""
    assert sorted(received) == sorted(rows)
    for step, numbers in rows.items():
        assert received[step] == pytest.approx(numbers, rel=1e-12), step


def ids(run_dir):
    return json.loads((run_dir / "trackers.json").read_text())


def test_wandb_mlflow_and_csv_receive_the_rows_of_metrics_jsonl(tracker_env):
    run_dir = train(tracker_env, "jsonl,csv,wandb,mlflow")
    rows = expected(run_dir)
    assert len(rows) >= 4 and all("return_mean" in r for r in rows.values())

    ((wandb_id, wandb_rows),) = settled_wandb_runs(run_dir, 1)
    assert wandb_id == ids(run_dir)["wandb"]
    # Issue 35, item 19: W&B's keys are grouped as TensorBoard's (they were plain).
    assert_same_rows(wandb_rows, grouped(rows))
    assert "train/policy_loss" in wandb_rows[max(rows)]

    status, params, mlflow_rows = mlflow_history(ids(run_dir)["mlflow"])
    assert status == "FINISHED"
    assert_same_rows(mlflow_rows, rows)
    assert params["algo"] == "ppo" and params["run.log_interval"] == "256"

    with (run_dir / "metrics.csv").open() as f:
        table = list(csv.DictReader(f))
    jsonl = read_metrics(run_dir / "metrics.jsonl")
    assert [r["env_steps"] for r in table] == [str(r["env_steps"]) for r in jsonl]
    assert all(
        float(t["return_mean"]) == j["return_mean"] for t, j in zip(table, jsonl, strict=True)
    )
    assert not (run_dir / "tb").exists()  # left out of --logger


def test_a_resumed_run_continues_the_same_wandb_and_mlflow_runs(tracker_env):
    run_dir = train(tracker_env, "jsonl,wandb,mlflow", total_steps=768)
    first_ids = ids(run_dir)
    before = max(expected(run_dir))
    train(tracker_env, None, total_steps=1536, resume=run_dir)
    assert ids(run_dir) == first_ids
    rows = expected(run_dir)
    assert max(rows) > before

    (id_1, history_1), (id_2, history_2) = settled_wandb_runs(run_dir, 2)
    assert id_1 == id_2 == first_ids["wandb"]  # `wandb sync` appends the second to the first
    assert max(history_1) == before and min(history_2) > before
    assert_same_rows({**history_1, **history_2}, grouped(rows))

    status, _, mlflow_rows = mlflow_history(first_ids["mlflow"])
    assert status == "FINISHED"
    assert_same_rows(mlflow_rows, rows)


def test_wandb_and_mlflow_are_imported_only_when_chosen(tmp_path):
    script = (
        "import sys, shoal\n"
        "shoal.train('ppo', 'CartPole-v1', total_steps=256, run={'runs_dir': sys.argv[1], "
        "'progress': False, 'eval_episodes': 0, 'num_envs': 4, 'log_interval': 128, "
        "'logger': 'tensorboard,jsonl,csv'}, agent={'unroll_length': 64})\n"
        "print(sorted(m for m in ('wandb', 'mlflow') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert {"metrics.jsonl", "metrics.csv", "tb"} <= {p.name for p in run_dir.iterdir()}


def _refused(capsys, argv, *phrases):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("shoal: error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1  # one paragraph
    for phrase in phrases:
        assert phrase in err


def test_a_tracker_that_is_not_installed_is_refused_before_anything_is_written(
    tmp_path, monkeypatch, capsys
):
    runs = tmp_path / "runs"
    monkeypatch.setitem(sys.modules, "wandb", None)  # what Python sees when it is not installed
    _refused(capsys, train_argv(runs, "--logger", "jsonl,wandb"), "pip install 'shoal[wandb]'")
    assert not runs.exists()
    # Resuming with it: refused before the run's config or metrics change.
    run_dir = train(tmp_path, "jsonl", total_steps=256)
    config = (run_dir / "config.yaml").read_text()
    _refused(
        capsys,
        ["train", "--resume", str(run_dir), "--total-steps", "512", "--logger", "wandb"],
        "--logger wandb needs the wandb package",
    )
    assert (run_dir / "config.yaml").read_text() == config
    assert not (run_dir / "trackers.json").exists()


def train_argv(runs, *flags):
    return ["train", "ppo", "--env", "CartPole-v1", "--runs-dir", str(runs), *flags]


def test_an_unknown_logger_names_the_valid_ones(tmp_path, capsys):
    runs = tmp_path / "runs"
    argv = train_argv(runs, "--logger", "jsonl,wandbb")
    _refused(capsys, argv, "Did you mean 'wandb'", "'mlflow'")
    assert not runs.exists()


def test_a_tracker_that_cannot_start_leaves_no_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "nosuch://host")
    runs = tmp_path / "runs"
    argv = train_argv(runs, "--logger", "mlflow", "--progress", "false")
    _refused(
        capsys, argv, "MLflow could not start a run", "MLFLOW_TRACKING_URI", "Nothing was kept"
    )
    assert list(runs.iterdir()) == []


def test_a_failed_run_is_marked_failed(tracker_env):
    run_dir = tracker_env / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\nseed: 0\n")
    writer = MetricsWriter(run_dir, ["mlflow"], resume_step=0)
    writer.write({"env_steps": 10, "loss": 1.5, "return_mean": float("nan")})
    writer.close(ok=False)
    status, _, history = mlflow_history(ids(run_dir)["mlflow"])
    assert status == "FAILED" and history == {10: {"loss": 1.5}}  # NaN is not recorded


def test_csv_widens_its_header_and_drops_rows_past_a_resume(tmp_path):
    tracker = CsvTracker(tmp_path, resume_step=0)
    tracker.write({"env_steps": 100, "loss": 1.0})
    tracker.write({"env_steps": 200, "loss": 0.5, "actor_restarts": 1})  # a key appears
    tracker.write({"env_steps": 300, "loss": None, "actor_restarts": 2})
    tracker.close(ok=True)
    text = (tmp_path / "metrics.csv").read_text()
    assert text == "env_steps,loss,actor_restarts\n100,1.0,\n200,0.5,1\n300,,2\n"
    resumed = CsvTracker(tmp_path, resume_step=200)  # the work after step 200 was lost
    resumed.write({"env_steps": 250, "loss": 0.7, "actor_restarts": 1})
    resumed.close(ok=True)
    assert (tmp_path / "metrics.csv").read_text().splitlines()[1:] == [
        "100,1.0,",
        "200,0.5,1",
        "250,0.7,1",
    ]


def test_loggers_default_and_the_older_tensorboard_flag():
    assert RunConfig().loggers == ("tensorboard", "jsonl")
    assert RunConfig(tensorboard=False).loggers == ("jsonl",)
    assert RunConfig(logger=("csv", "csv", "wandb")).loggers == ("csv", "wandb")


def test_mlflow_logs_the_config_and_videos_as_artifacts(tracker_env):
    # Issue 35, item 13: no artifacts were logged.
    from mlflow.tracking import MlflowClient

    run_dir = tracker_env / "run"
    (run_dir / "videos").mkdir(parents=True)
    (run_dir / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\nseed: 0\n")
    (run_dir / "videos" / "step-000000000100.mp4").write_bytes(b"not really a video")
    writer = MetricsWriter(run_dir, ["mlflow"], resume_step=0)
    writer.write({"env_steps": 100, "loss": 1.0})
    writer.close(ok=True)
    client = MlflowClient()
    run_id = ids(run_dir)["mlflow"]
    listed = {a.path for a in client.list_artifacts(run_id)}
    assert listed == {"config.yaml", "videos"}
    (video,) = client.list_artifacts(run_id, "videos")
    assert video.path == "videos/step-000000000100.mp4"
    here = Path(client.download_artifacts(run_id, "config.yaml", str(tracker_env)))
    assert here.read_text() == (run_dir / "config.yaml").read_text()


def test_mlflow_stores_that_do_not_open_say_what_to_set(tmp_path, monkeypatch, capsys):
    # Issue 35, item 13: after the dev install (mlflow-skinny) MLflow's default store does not
    # open, and MLflow 3 refuses a file store without MLFLOW_ALLOW_FILE_STORE.
    runs = tmp_path / "runs"
    argv = train_argv(runs, "--logger", "mlflow", "--progress", "false")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    _refused(capsys, argv, "MLFLOW_ALLOW_FILE_STORE=true in the environment")
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    if importlib.util.find_spec("sqlalchemy") is None:  # mlflow-skinny, as the dev extra has
        _refused(capsys, argv, "pip install 'shoal[mlflow]'", "MLFLOW_ALLOW_FILE_STORE=true")
    assert list(runs.iterdir()) == []


def test_tensorboard_keeps_the_checkpoint_steps_row_and_evaluation_after_a_resume(tmp_path):
    # Issue 35, item 19: TensorBoard purged the resumed checkpoint's own step (its final row
    # and evaluation), which metrics.jsonl and MLflow keep.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = {
        "runs_dir": str(tmp_path / "runs"),
        "progress": False,
        "log_interval": 256,
        "num_envs": 4,
        "eval_episodes": 2,
        "total_steps": 512,
    }
    first = shoal.train("ppo", "CartPole-v1", run=run, agent={"unroll_length": 64})
    end = first.env_steps
    shoal.train(resume=first.run_dir, run={"total_steps": 1024})
    jsonl = {r["env_steps"] for r in read_metrics(first.run_dir / "metrics.jsonl")}
    events = EventAccumulator(str(first.run_dir / "tb")).Reload()
    for tag in ("rollout/return_mean", "eval/return_mean"):
        steps = [e.step for e in events.Scalars(tag)]
        assert end in steps, (tag, steps)
        assert len(steps) == len(set(steps))  # each step once
    assert {e.step for e in events.Scalars("perf/time")} == jsonl
