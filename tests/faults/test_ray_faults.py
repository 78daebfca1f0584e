"""Faults injected into ray runs (issue 14): a role's process is SIGKILLed mid-run, and each
test asserts what survives and what the run says it lost. The README's table of faults
summarises them. A kill lands once the run has written a checkpoint, so what a restarted role
comes back with is the checkpoint's."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from processes import assert_processes_end

import shoal
from shoal.cli import main
from shoal.run.checkpoints import list_checkpoints, load_checkpoint
from shoal.telemetry import read_metrics

# Ray fault runs: `make test-integration`.
pytestmark = [pytest.mark.distributed, pytest.mark.integration, pytest.mark.timeout(600)]

# Small budgets: each run stops on steps, far enough past the kill for a restart to be seen
# (not on wall time: a busy machine may take a minute to place the roles).
QUIET = ["--progress", "false", "--tensorboard", "false", "--eval-episodes", "0"]
RAY = ["--runtime", "ray", "--actors", "2", "--num-envs", "4"]


def _train_in_thread(argv: list[str]) -> dict:
    """Start `shoal train ARGV` in a thread; the dict gets the exit code (`code`) or the
    error (`error`) and `thread`."""
    outcome: dict = {}

    def train() -> None:
        try:
            outcome["code"] = main(["train", *argv])
        except Exception as err:  # the test says what it expected
            outcome["error"] = err

    outcome["thread"] = threading.Thread(target=train)
    outcome["thread"].start()
    return outcome


def _wait_for(outcome: dict, check, what: str, seconds: float = 120.0):
    """`check()`'s first truthy answer while the run goes on."""
    deadline = time.time() + seconds
    while time.time() < deadline and outcome["thread"].is_alive():
        found = check()
        if found:
            return found
        time.sleep(0.2)
    outcome["thread"].join(timeout=1)
    raise AssertionError(f"the run never {what}: {outcome}")


def _placement(run_dir: Path) -> dict:
    return json.loads((run_dir / "ray_actors.json").read_text())


def _started(outcome: dict, run_dir: Path) -> dict:
    """Where each role runs, once all are placed."""
    _wait_for(outcome, (run_dir / "ray_actors.json").exists, "placed its roles")
    return _placement(run_dir)


def _checkpointed(run_dir: Path) -> dict | None:
    """The newest checkpoint, once there is one."""
    saved = list_checkpoints(run_dir / "checkpoints")
    return load_checkpoint(saved[-1]) if saved else None


def _snapshotted(run_dir: Path) -> dict | None:
    """The newest checkpoint, once one with a replay snapshot exists."""
    saved = list_checkpoints(run_dir / "checkpoints")
    if not saved:
        return None
    newest = load_checkpoint(saved[-1])
    return newest if newest.get("replay") else None


def _logged_past(run_dir: Path, steps: int) -> bool:
    rows = list(read_metrics(run_dir / "metrics.jsonl"))
    return bool(rows) and rows[-1]["env_steps"] > steps


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def _finish(outcome: dict) -> None:
    outcome["thread"].join(timeout=500)
    assert not outcome["thread"].is_alive(), "the run did not end"


def test_an_actor_kill_is_restarted_counted_once_and_the_run_finishes(
    ray_cluster, tmp_path, capsys
):
    runs = tmp_path / "runs"
    # Steps, not wall time, end it: a busy machine may take a minute to place the roles.
    argv = ["ppo", "--env", "CartPole-v1", *RAY, *QUIET, "--total-steps", "30000"]
    argv += ["--max-time", "900", "--log-interval", "1000"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "actor"])
    run_dir = runs / "actor"
    killed = _started(outcome, run_dir)["actor0"]["pid"]
    _wait_for(outcome, lambda: _logged_past(run_dir, 0), "acted and learned")
    _kill(killed)
    _finish(outcome)
    assert outcome.get("code") == 0, outcome.get("error")
    summary = json.loads((run_dir / "summary.json").read_text())
    # Both its calls in flight failed (max_inflight 2): one death, counted once.
    assert summary["actor_restarts"] == 1
    assert "replay_restarts" not in summary
    # ray_actors.json names the new process, not the dead one.
    assert _placement(run_dir)["actor0"]["pid"] != killed
    assert "Traceback" not in capsys.readouterr().err


class _StopWhileAnActorIsDown(shoal.Callback):
    """Ends the run at the first row that counts an actor down, while Ray restarts it."""

    def on_row(self, row):
        return row.get("actors_live", 2) == 2


def test_a_run_that_ends_while_an_actor_restarts_waits_for_it_and_counts_it(ray_cluster, tmp_path):
    # IMPALA's learner takes any actor's unrolls, so rows go on while actor0 is down, and the
    # first with `actors_live` 1 ends the run before Ray has the new process up (seconds).
    runs = tmp_path / "runs"
    run = {"runs_dir": str(runs), "run_name": "ends", "progress": False, "tensorboard": False}
    run |= {"runtime": "ray", "actors": 2, "num_envs": 4, "eval_episodes": 0}
    run |= {"total_steps": 1_000_000, "log_interval": 200, "max_time": 900}
    outcome: dict = {}

    def train() -> None:
        outcome["result"] = shoal.train(
            "impala", "CartPole-v1", seed=0, run=run, callbacks=[_StopWhileAnActorIsDown()]
        )

    outcome["thread"] = threading.Thread(target=train)
    outcome["thread"].start()
    run_dir = runs / "ends"
    killed = _started(outcome, run_dir)["actor0"]["pid"]
    _wait_for(outcome, lambda: _logged_past(run_dir, 0), "acted and learned")
    _kill(killed)
    _finish(outcome)
    result = outcome["result"]
    assert result.stop_reason == "callback"
    assert list(read_metrics(run_dir / "metrics.jsonl"))[-1]["actors_live"] == 1
    assert result.summary["actor_restarts"] == 1
    assert _placement(run_dir)["actor0"]["pid"] != killed


def test_a_replay_shard_kill_comes_back_with_its_snapshot_and_the_run_finishes(
    ray_cluster, tmp_path, capsys
):
    runs = tmp_path / "runs"
    argv = ["apex", "--env", "CartPole-v1", *RAY, *QUIET, "--replay-shards", "2"]
    argv += ["--total-steps", "6000", "--max-time", "900", "--checkpoint-interval", "2000"]
    argv += ["--log-interval", "500"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "shard"])
    run_dir = runs / "shard"
    killed = _started(outcome, run_dir)["replay1"]["pid"]
    saved = _wait_for(outcome, lambda: _snapshotted(run_dir), "wrote a replay snapshot")
    _kill(killed)
    _finish(outcome)
    assert outcome.get("code") == 0, outcome.get("error")
    err = capsys.readouterr().err
    assert "Traceback" not in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["replay_restarts"] == 1 and "actor_restarts" not in summary
    assert _placement(run_dir)["replay1"]["pid"] != killed
    # One line says what came back and what was lost; the metrics carry the same figures.
    said = re.search(
        r"replay shard 1 was restarted after its process died: (\d+) items restored from the "
        r"checkpoint at (\d+) steps; about (\d+) items it held are lost\.",
        err,
    )
    assert said, err
    restored, steps, lost = map(int, said.groups())
    assert restored > 0 and steps >= saved["env_steps"]
    assert summary["replay_items_lost"] == lost
    rows = list(read_metrics(run_dir / "metrics.jsonl"))
    after = [row for row in rows if row.get("replay_restarts") == 1]
    assert after, "no metrics row after the restart"
    # The run went on learning from both shards: the replay grew past what was restored.
    assert after[-1]["replay_size"] > restored and rows[-1]["updates"] > after[0]["updates"]


_RESTARTED = re.compile(
    r"The learner's process \(pid (\d+)\) died at (\d+) steps; the run starts its roles again "
    r"from checkpoints/(\S+) \(learner restart 1 of 3\): the (\d+) steps since are lost\."
)


def test_a_learner_kill_restarts_every_role_from_the_newest_checkpoint_and_the_run_finishes(
    ray_cluster, tmp_path, capsys
):
    """The driver restarts a dead learner (with every role, as `--resume` would) from the newest
    checkpoint and its replay snapshot: only the steps since that checkpoint are lost."""
    runs = tmp_path / "runs"
    argv = ["apex", "--env", "CartPole-v1", *RAY, *QUIET, "--replay-shards", "1"]
    # Steps, not wall time, end it (a busy machine may take a minute to place the roles): the
    # kill lands at the first checkpoint's snapshot, long before the last step.
    argv += ["--total-steps", "6000", "--max-time", "900", "--checkpoint-interval", "2000"]
    argv += ["--log-interval", "500", "--keep-checkpoints", "1000"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "learner"])
    run_dir = runs / "learner"
    killed = _started(outcome, run_dir)["learner"]["pid"]
    saved = _wait_for(outcome, lambda: _snapshotted(run_dir), "wrote a replay snapshot")
    # Killed once a metrics row was written past that checkpoint: work that is then lost.
    _wait_for(outcome, lambda: _logged_past(run_dir, saved["env_steps"]), "logged past it")
    _kill(killed)
    _finish(outcome)
    assert outcome.get("code") == 0, outcome.get("error")
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Unhandled error" not in err, err
    # One line says what was lost: the steps since the newest checkpoint when it died.
    said = _RESTARTED.search(err)
    assert said, err
    pid, died_at, name, lost = said.groups()
    assert int(pid) == killed
    restored = load_checkpoint(run_dir / "checkpoints" / name)
    back = restored["env_steps"]
    assert back >= saved["env_steps"] and int(died_at) - back == int(lost) > 0
    assert f"replay restored from the checkpoint at {back} steps" in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["learner_restarts"] == 1 and summary["learner_steps_lost"] == int(lost)
    assert summary["stop_reason"] == "total_steps" and summary["env_steps"] >= 6000
    assert _placement(run_dir)["learner"]["pid"] != killed
    # The lost attempt's rows are gone: no step twice, and every row past the checkpoint is
    # the restarted run's, which went on from the checkpoint's updates.
    rows = list(read_metrics(run_dir / "metrics.jsonl"))
    steps = [row["env_steps"] for row in rows]
    assert steps == sorted(set(steps))
    after = [row for row in rows if row["env_steps"] > back]
    assert after and all(row.get("learner_restarts") == 1 for row in after)
    assert after[0]["updates"] >= restored["updates"] and after[-1]["updates"] > after[0]["updates"]


@pytest.mark.slow
def test_a_learner_kill_before_the_first_checkpoint_starts_the_run_again_from_step_0(
    ray_cluster, tmp_path, capsys
):
    """IMPALA's queue lives in the learner's process. Killed before any checkpoint, the run
    starts again from step 0, and the lost attempt's metrics rows are replaced."""
    runs = tmp_path / "runs"
    argv = ["impala", "--env", "CartPole-v1", *RAY, *QUIET, "--total-steps", "20000"]
    argv += ["--max-time", "900", "--log-interval", "1000", "--checkpoint-interval", "1000000"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "early"])
    run_dir = runs / "early"
    killed = _started(outcome, run_dir)["learner"]["pid"]
    _wait_for(outcome, lambda: _logged_past(run_dir, 0), "logged a row")
    _kill(killed)
    _finish(outcome)
    assert outcome.get("code") == 0, outcome.get("error")
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Unhandled error" not in err, err
    said = re.search(
        rf"The learner's process \(pid {killed}\) died at (\d+) steps; the run starts its roles "
        r"again from step 0 \(no checkpoint was written before\) \(learner restart 1 of 3\): "
        r"the (\d+) steps since are lost\.",
        err,
    )
    assert said and said.group(1) == said.group(2) and int(said.group(1)) >= 1000, err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["learner_restarts"] == 1 and summary["stop_reason"] == "total_steps"
    assert summary["learner_steps_lost"] == int(said.group(1))
    rows = list(read_metrics(run_dir / "metrics.jsonl"))
    steps = [row["env_steps"] for row in rows]
    assert steps == sorted(set(steps)) and steps[-1] >= 20000
    assert all(row.get("learner_restarts") == 1 for row in rows)


def test_a_learner_kill_with_no_restarts_left_stops_the_run_resumable_from_its_checkpoint(
    ray_cluster, tmp_path, capsys
):
    runs = tmp_path / "runs"
    argv = ["apex", "--env", "CartPole-v1", *RAY, *QUIET, "--replay-shards", "1"]
    argv += ["--total-steps", "1000000", "--max-time", "900", "--checkpoint-interval", "2000"]
    argv += ["--max-learner-restarts", "0"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "learner"])
    run_dir = runs / "learner"
    killed = _started(outcome, run_dir)["learner"]["pid"]
    saved = _wait_for(outcome, lambda: _snapshotted(run_dir), "wrote a replay snapshot")
    _kill(killed)
    _finish(outcome)
    # One paragraph (the CLI's exit code 2), naming the checkpoint a resume goes on from.
    assert outcome.get("code") == 2, outcome.get("error")
    err = capsys.readouterr().err
    assert "Unhandled error" not in err
    newest = _learner_killed(err, killed, run_dir)
    assert "as many as --max-learner-restarts (0) allows" in err
    assert not (run_dir / "summary.json").exists()
    # What survives: the newest checkpoint, whole, with its replay snapshot.
    kept = load_checkpoint(newest)
    assert kept["env_steps"] >= saved["env_steps"] and kept["replay"]
    resumed = shoal.train(
        resume=run_dir, run={"total_steps": kept["env_steps"] + 1000, "max_time": 600}
    )
    assert resumed.env_steps >= kept["env_steps"] + 1000
    assert f"replay restored from the checkpoint at {kept['env_steps']} steps" in (
        capsys.readouterr().err
    )


def _learner_killed(err: str, killed: int, run_dir: Path) -> Path:
    """The newest checkpoint, once the run's one paragraph said the learner died and named it."""
    assert "Traceback" not in err and err.count("shoal: error:") == 1, err
    newest = list_checkpoints(run_dir / "checkpoints")[-1]
    assert f"pid {killed}) died at" in err and f"--resume {run_dir}" in err
    assert f"checkpoints/{newest.name}" in err
    return newest


def test_an_inference_server_kill_is_a_learner_kill_and_restarted_from_its_checkpoint(
    ray_cluster, tmp_path, capsys
):
    """With --inference central the server lives in the learner's process (beside the
    on-policy queue), so its death is the learner's: both come back from the checkpoint."""
    runs = tmp_path / "runs"
    argv = ["impala", "--env", "CartPole-v1", *RAY, *QUIET, "--inference", "central"]
    argv += ["--total-steps", "30000", "--max-time", "900", "--checkpoint-interval", "1000"]
    argv += ["--keep-checkpoints", "1000"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "server"])
    run_dir = runs / "server"
    killed = _started(outcome, run_dir)["learner"]["pid"]
    saved = _wait_for(outcome, lambda: _checkpointed(run_dir), "wrote a checkpoint")
    _kill(killed)
    _finish(outcome)
    assert outcome.get("code") == 0, outcome.get("error")
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Unhandled error" not in err, err
    said = _RESTARTED.search(err)
    assert said and int(said.group(1)) == killed, err
    back = load_checkpoint(run_dir / "checkpoints" / said.group(3))["env_steps"]
    assert back >= saved["env_steps"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["learner_restarts"] == 1 and summary["stop_reason"] == "total_steps"


@pytest.mark.slow
def test_a_learner_whose_node_is_gone_stops_the_run_resumable_from_its_checkpoint(
    ray_cluster, tmp_path, capsys
):
    """A learner that dies with its node is not restarted (whatever --max-learner-restarts
    allows): the run stops with one paragraph naming the checkpoint `--resume` goes on from."""
    cluster, _ = ray_cluster
    # A node only the learner fits on (it reserves no CPU; actors and shards reserve some).
    node = cluster.add_node(num_cpus=0, resources={"learner_node": 1})
    try:
        runs = tmp_path / "runs"
        argv = ["ppo", "--env", "CartPole-v1", *RAY, *QUIET, "--total-steps", "10000000"]
        argv += ["--max-time", "900", "--checkpoint-interval", "2048", "--learner-cpus", "0"]
        argv += ["--learner-resources", "learner_node=1"]
        outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "node"])
        run_dir = runs / "node"
        placed = _started(outcome, run_dir)["learner"]
        assert placed["node_id"] == node.node_id
        _wait_for(outcome, lambda: list_checkpoints(run_dir / "checkpoints"), "checkpointed")
    finally:
        cluster.remove_node(node, allow_graceful=False)
    _finish(outcome)
    assert outcome.get("code") == 2, outcome.get("error")
    err = capsys.readouterr().err
    _learner_killed(err, placed["pid"], run_dir)
    assert f"with its node ({node.node_id[:12]}), which Ray reports dead" in err
    assert "learner restart" not in err


# Runs `shoal train ARGV[2:]` and lets its second checkpoint file hang half-written: the kill
# then lands inside the write, whatever the machine's speed. ARGV[1] is a file it names the
# checkpoint in once the half is on disk.
_HANG_IN_SECOND_WRITE = """
import os, sys, time
from pathlib import Path
from shoal.run import checkpoints as checkpoint
from shoal.cli import main

real, written = checkpoint.write_atomically, []

def write(path, data):
    if written:
        def half(f):
            f.write(data[: len(data) // 2])
            f.flush()
            os.fsync(f.fileno())
            Path(sys.argv[1]).write_text(str(path))
            time.sleep(3600)

        return real(path, half)
    written.append(path)
    return real(path, data)

checkpoint.write_atomically = write
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_a_kill_during_a_checkpoint_write_keeps_the_previous_one_and_its_replay(
    ray_cluster, tmp_path, capsys
):
    """On ray the driver (`shoal train`'s process) writes each checkpoint file, after the replay
    shards wrote their snapshot files. SIGKILLed inside that write, it leaves a half-written
    temp file and a snapshot no checkpoint names; the previous checkpoint and its snapshot are
    whole and `--resume` goes on from them."""
    cluster, _ = ray_cluster
    runs, marker = tmp_path / "runs", tmp_path / "writing"
    argv = ["train", "apex", "--env", "CartPole-v1", *RAY, *QUIET, "--replay-shards", "2"]
    argv += ["--address", cluster.address, "--total-steps", "1000000"]
    argv += ["--checkpoint-interval", "2000", "--runs-dir", str(runs), "--run-name", "torn"]
    command = [sys.executable, "-c", _HANG_IN_SECOND_WRITE, str(marker), *argv]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 180
        while not marker.exists():
            assert process.poll() is None, process.communicate()[1]
            assert time.time() < deadline, "the second checkpoint was never written"
            time.sleep(0.1)
        process.kill()
        process.wait(timeout=30)
    finally:
        process.kill()
    run_dir = runs / "torn"
    checkpoints = run_dir / "checkpoints"
    torn = Path(marker.read_text())
    # The kill landed mid-write: the half-written temp file is there, its checkpoint is not.
    assert list(checkpoints.glob(f".{torn.name}.*.tmp")) and not torn.exists()
    (first,) = list_checkpoints(checkpoints)
    kept = load_checkpoint(first)
    named = set(kept["replay"]["files"])
    orphans = {p.name for p in checkpoints.glob("step-*.replay*")} - named
    assert len(named) == 2 and len(orphans) == 2  # the torn checkpoint's snapshot
    resumed = shoal.train(
        resume=run_dir,
        run={"total_steps": kept["env_steps"] + 2000, "address": cluster.address},
    )
    assert resumed.env_steps >= kept["env_steps"] + 2000
    err = capsys.readouterr().err
    assert f"replay restored from the checkpoint at {kept['env_steps']} steps" in err
    # The next save removed what the killed write left.
    left = os.listdir(checkpoints)
    assert not [name for name in left if name.endswith(".tmp") or name in orphans]
    for path in list_checkpoints(checkpoints):
        load_checkpoint(path)


@pytest.fixture
def small_disk(tmp_path):
    """A 32 MB tmpfs: a disk that really fills (needs root, as in CI containers)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(disk: Path) -> Path:
    """Write a file until the disk is full; return it."""
    filler = disk / "filler"
    with filler.open("wb") as f:
        try:
            while True:
                f.write(b"\0" * 2**20)
                f.flush()
        except OSError as err:
            assert err.errno == errno.ENOSPC, err
    return filler


@pytest.mark.slow
def test_a_full_disk_during_a_ray_run_stops_it_with_its_checkpoints_whole(
    ray_cluster, small_disk, capsys
):
    runs = small_disk / "runs"
    argv = ["ppo", "--env", "CartPole-v1", *RAY, *QUIET, "--total-steps", "10000000"]
    argv += ["--max-time", "900", "--checkpoint-interval", "2048", "--log-interval", "1024"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "full"])
    run_dir = runs / "full"
    _wait_for(outcome, lambda: list_checkpoints(run_dir / "checkpoints"), "wrote a checkpoint")
    filler = _fill(small_disk)
    _finish(outcome)
    # One paragraph (exit code 2): what could not be written, and that the disk is full.
    assert outcome.get("code") == 2, outcome.get("error")
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("shoal: error:") == 1, err
    # Which write meets the full disk first (the checkpoint, or a metrics row) depends on where
    # the files' last pages end; either says so and names what to do.
    assert "No space left on device. The disk is full: free some space" in err
    saved = list_checkpoints(run_dir / "checkpoints")
    for path in saved:
        load_checkpoint(path)
    assert not list((run_dir / "checkpoints").glob(".*.tmp"))
    # Once there is room again, --resume goes on from the newest.
    filler.unlink()
    kept = load_checkpoint(saved[-1])
    resumed = shoal.train(
        resume=run_dir, run={"total_steps": kept["env_steps"] + 2048, "max_time": 600}
    )
    assert resumed.env_steps >= kept["env_steps"] + 2048


@pytest.mark.slow
def test_sigterm_stops_a_ray_run_with_a_checkpoint_and_the_same_command_continues(
    ray_cluster, tmp_path
):
    """A scheduler's SIGTERM to `shoal train` on ray: a checkpoint, every role stopped, exit
    143, promptly; the requeued command (`--resume auto`) goes on from that checkpoint."""
    cluster, _ = ray_cluster
    runs = tmp_path / "runs"
    argv = [sys.executable, "-m", "shoal", "train", "ppo", "--env", "CartPole-v1", *RAY, *QUIET]
    argv += ["--address", cluster.address, "--total-steps", "10000000"]
    argv += ["--runs-dir", str(runs), "--run-name", "job", "--resume", "auto"]
    run_dir = runs / "job"
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 180
        while not list(run_dir.glob("metrics.jsonl")) or not _placement_if_any(run_dir):
            assert time.time() < deadline and process.poll() is None, process.stderr.read()
            time.sleep(0.2)
        pids = [role["pid"] for role in _placement(run_dir).values()]
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
        seconds = time.monotonic() - sent
    finally:
        process.kill()
    assert process.returncode == 143, err
    assert seconds < 30, f"took {seconds:.1f} s to stop after SIGTERM"
    assert "stopped by SIGTERM at" in err and "Traceback" not in err
    stopped = load_checkpoint(list_checkpoints(run_dir / "checkpoints")[-1])
    assert stopped["env_steps"] == json.loads((run_dir / "summary.json").read_text())["env_steps"]
    assert_processes_end(pids)
    again = [*argv[3:], "--total-steps", str(stopped["env_steps"] + 2000)]
    assert main(again) == 0
    resumed = load_checkpoint(list_checkpoints(run_dir / "checkpoints")[-1])
    assert resumed["env_steps"] >= stopped["env_steps"] + 2000 and resumed["resume_count"] == 1


def _placement_if_any(run_dir: Path) -> dict | None:
    return _placement(run_dir) if (run_dir / "ray_actors.json").exists() else None


def test_a_replay_shard_sigterm_is_a_kill_it_comes_back_and_the_run_finishes(
    ray_cluster, tmp_path, capsys
):
    # Issue 35, item 5: Ray's workers take SIGTERM as a graceful exit that waits for the calls
    # in flight, and a shard's insert waits for room only the learner's samples make: the shard
    # never exited nor answered, and the run hung at its next checkpoint, past --max-time.
    runs = tmp_path / "runs"
    argv = ["apex", "--env", "CartPole-v1", *RAY, *QUIET, "--replay-shards", "2"]
    argv += ["--total-steps", "6000", "--max-time", "300", "--checkpoint-interval", "1000"]
    argv += ["--log-interval", "500"]
    outcome = _train_in_thread([*argv, "--runs-dir", str(runs), "--run-name", "term"])
    run_dir = runs / "term"
    termed = _started(outcome, run_dir)["replay1"]["pid"]
    _wait_for(outcome, lambda: _snapshotted(run_dir), "wrote a replay snapshot")
    os.kill(termed, signal.SIGTERM)
    outcome["thread"].join(timeout=360)
    assert not outcome["thread"].is_alive(), "the run hung after a replay shard's SIGTERM"
    assert outcome.get("code") == 0, outcome.get("error")
    assert "Traceback" not in capsys.readouterr().err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["replay_restarts"] == 1 and summary["stop_reason"] == "total_steps"
    assert _placement(run_dir)["replay1"]["pid"] != termed
