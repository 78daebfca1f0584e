"""Run directories in a bucket (`--runs-dir URL`, `shoal.storage`), on fsspec's in-memory
filesystem: a run trains into the bucket, is loaded and evaluated from it, and resumed from it;
an upload cut mid-checkpoint is never taken for a checkpoint; every mistake is one exit-2
paragraph that leaves nothing behind."""

from __future__ import annotations

import json
import re
import sys
import tempfile
import uuid
from pathlib import Path

import fsspec
import pytest
from run_dirs import rows, write_run

import shoal
from shoal.cli import main
from shoal.errors import CheckpointError, ConfigError
from shoal.run import storage
from shoal.run.checkpoints import load_checkpoint
from shoal.run.runs import read_runs
from shoal.run.storage import UploadError
from shoal.telemetry import read_metrics

MEMORY = fsspec.filesystem("memory")
QUICK = {"progress": False, "checkpoint_interval": 1024, "log_interval": 512, "eval_episodes": 1}


@pytest.fixture
def bucket(tmp_path, monkeypatch):
    """A fresh `memory://` bucket folder, and staging folders under tmp_path (to count them)."""
    monkeypatch.setenv(storage.STAGING_ENV, str(tmp_path / "staging"))
    root = f"/bkt-{uuid.uuid4().hex[:8]}"
    yield f"memory:/{root}/runs"
    if MEMORY.exists(root):
        MEMORY.rm(root, recursive=True)


def _objects(url: str) -> list[str]:
    root = url.removeprefix("memory:/")
    return sorted(name[len(root) + 1 :] for name in MEMORY.find(root))


def _local(url: str, tmp_path: Path, rel: str) -> Path:
    """A copy of the bucket's `url/rel`, to read with the local-file readers."""
    target = tmp_path / "read" / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    MEMORY.get_file(f"{url.removeprefix('memory:/')}/{rel}", str(target))
    return target


def _staging_left(tmp_path: Path) -> list[Path]:
    staging = tmp_path / "staging"
    return list(staging.iterdir()) if staging.exists() else []


def test_a_run_trains_into_a_bucket_loads_from_it_and_resumes_from_it(bucket, tmp_path):
    first = shoal.train("ppo", "CartPole-v1", total_steps=2048, run={**QUICK, "runs_dir": bucket})
    url = first.run_dir
    assert isinstance(url, str) and url.startswith(bucket + "/ppo-CartPole-v1-")
    objects = _objects(url)
    assert {"config.yaml", "metrics.jsonl", "summary.json"} <= set(objects)
    assert [o for o in objects if o.startswith("checkpoints/")] == [
        "checkpoints/step-000000001024.pt",
        "checkpoints/step-000000002048.pt",
    ]
    assert any(o.startswith("tb/events.out.tfevents") for o in objects)
    assert _staging_left(tmp_path) == [], "the staging folder goes once the bucket has the run"
    rows = read_metrics(_local(url, tmp_path, "metrics.jsonl"))
    assert rows[-1]["env_steps"] == 2048 and "eval_return_mean" in rows[-1]

    policy = shoal.load(url)
    assert policy.env_steps == 2048 and policy.act(policy.spec.observation_space.sample()) in (0, 1)
    older = shoal.load(f"{url}/checkpoints/step-000000001024.pt")
    assert older.env_steps == 1024
    assert shoal.evaluate(url, episodes=2).episodes == 2

    second = shoal.train(resume=url, total_steps=3072, run={"progress": False})
    assert second.run_dir == url and second.env_steps == 3072
    newest = load_checkpoint(_local(url, tmp_path, "checkpoints/step-000000003072.pt"))
    assert newest["resume_count"] == 1 and newest["episodes"] > first.episodes
    after = read_metrics(_local(url, tmp_path, "metrics.jsonl"))
    steps = [row["env_steps"] for row in after]
    assert steps == sorted(set(steps)) and after[: len(rows)] == rows and steps[-1] == 3072
    assert _staging_left(tmp_path) == []


def test_resume_auto_starts_continues_and_then_leaves_a_finished_run_alone(bucket, capsys):
    argv = ["train", "ppo", "--env", "CartPole-v1", "--runs-dir", bucket, "--run-name", "job"]
    argv += ["--resume", "auto", "--progress", "false", "--checkpoint-interval", "1024"]
    argv += ["--eval-episodes", "0"]
    assert main([*argv, "--total-steps", "1024"]) == 0
    assert main([*argv, "--total-steps", "2048"]) == 0  # a larger budget goes on
    summary = _objects(f"{bucket}/job")
    assert "checkpoints/step-000000002048.pt" in summary
    capsys.readouterr()
    assert main([*argv, "--total-steps", "2048"]) == 0
    assert "already complete" in capsys.readouterr().out


def _cut_after_put(monkeypatch, steps: int) -> None:
    """The connection dies while the checkpoint for `steps` is uploaded: half of it reaches the
    bucket (a file:// or a slow multipart upload can leave that), then the upload fails."""
    put = type(MEMORY).put_file

    def cut(self, lpath, rpath, *args, **kwargs):
        if f"step-{steps:012d}.pt" in rpath:
            data = Path(lpath).read_bytes()
            self.pipe_file(rpath, data[: len(data) // 2])
            raise ConnectionResetError("Connection reset by peer")
        return put(self, lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(type(MEMORY), "put_file", cut)


def test_an_upload_cut_mid_checkpoint_is_never_read_as_a_checkpoint(bucket, tmp_path, monkeypatch):
    _cut_after_put(monkeypatch, 2048)
    with pytest.raises(UploadError) as failed:
        shoal.train(
            "ppo",
            "CartPole-v1",
            total_steps=4096,
            run={**QUICK, "runs_dir": bucket, "run_name": "cut"},
        )
    message = str(failed.value)
    assert "ConnectionResetError" in message and f"--resume {bucket}/cut" in message
    monkeypatch.undo()
    monkeypatch.setenv(storage.STAGING_ENV, str(tmp_path / "staging"))
    url = f"{bucket}/cut"
    objects = _objects(url)
    # The half object lies under a temporary name that no reader lists as a checkpoint.
    assert "checkpoints/step-000000002048.pt" not in objects
    assert [o for o in objects if ".step-000000002048.pt.tmp-" in o]
    assert shoal.load(url).env_steps == 1024, "the newest complete checkpoint is read"
    kept = [p for p in _staging_left(tmp_path) if any(p.rglob("step-000000002048.pt"))]
    assert len(kept) == 1, "the staging folder that holds the unsent checkpoint is kept"

    resumed = shoal.train(resume=url, total_steps=3072, run={"progress": False})
    assert resumed.env_steps == 3072
    objects = _objects(url)
    assert not [o for o in objects if ".tmp-" in o], "the resume removes the stale temp key"
    assert load_checkpoint(_local(url, tmp_path, "checkpoints/step-000000003072.pt"))


def _fails(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


def test_bad_urls_and_a_missing_extra_are_one_paragraph_and_leave_nothing(
    capsys, tmp_path, monkeypatch
):
    monkeypatch.setenv(storage.STAGING_ENV, str(tmp_path / "staging"))
    train = ["train", "ppo", "--env", "CartPole-v1", "--progress", "false", "--runs-dir"]
    err = _fails(capsys, [*train, "s4://bucket/runs"])
    assert "s4://bucket/runs is not a URL shoal can write to" in err
    monkeypatch.setitem(sys.modules, "gcsfs", None)  # as if shoal[gcs] were not installed
    err = _fails(capsys, [*train, "gs://bucket/runs"])
    assert "pip install 'shoal[gcs]'" in err
    err = _fails(capsys, [*train, "memory://"])
    assert "names no bucket" in err
    assert _staging_left(tmp_path) == [] and not list(Path.cwd().glob("s4:*"))


def test_a_url_that_is_no_run_is_refused_by_resume_eval_and_load(bucket, capsys, tmp_path):
    MEMORY.pipe_file(f"{bucket.removeprefix('memory:/')}/other/notes.txt", b"not a run")
    err = _fails(capsys, ["train", "--resume", f"{bucket}/other"])
    assert f"{bucket}/other is not a shoal run directory" in err
    err = _fails(capsys, ["eval", f"{bucket}/other"])
    assert "not a shoal run directory" in err
    with pytest.raises(CheckpointError):
        shoal.load(f"{bucket}/missing")
    assert _staging_left(tmp_path) == []


def test_a_run_that_fails_before_its_first_checkpoint_leaves_nothing_in_the_bucket(bucket):
    class Boom(shoal.Callback):
        def on_row(self, row):
            raise ConfigError("stop here")

    with pytest.raises(ConfigError, match=r"stop here.*Nothing was kept: memory://"):
        shoal.train(
            "ppo",
            "CartPole-v1",
            total_steps=2048,
            run={**QUICK, "runs_dir": bucket, "run_name": "boom", "checkpoint_interval": 2048},
            callbacks=[Boom()],
        )
    assert _objects(f"{bucket}/boom") == []


def test_staging_defaults_to_the_temp_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(storage.STAGING_ENV, raising=False)
    folder = storage.staging_folder("run")
    try:
        assert folder.name == "run" and folder.parent.parent == Path(tempfile.gettempdir())
    finally:
        storage.RunStore(folder, staged=True).close()
    assert not folder.parent.exists()


def _put_run(bucket: str, name: str, seed: int, returns: list[float]) -> str:
    """A finished run's readable files in the bucket, as `shoal train --runs-dir URL` leaves."""
    local = write_run(Path(tempfile.mkdtemp()), name, seed=seed, rows=rows([100, 200], returns))
    root = f"{bucket.removeprefix('memory:/')}/{name}"
    for path in local.iterdir():
        MEMORY.put_file(str(path), f"{root}/{path.name}")
    MEMORY.pipe_file(f"{root}/checkpoints/step-000000000200.pt", b"not read by plot or report")
    return f"{bucket}/{name}"


def test_plot_and_report_read_runs_from_a_bucket_folder(bucket, tmp_path, capsys):
    first = _put_run(bucket, "ppo-a", 0, [10.0, 20.0])
    _put_run(bucket, "ppo-b", 1, [12.0, 30.0])
    runs = read_runs([bucket])
    assert [run.path for run in runs] == [first, f"{bucket}/ppo-b"]
    assert [run.rows[-1]["return_mean"] for run in runs] == [20.0, 30.0]
    assert main(["plot", bucket, "-o", str(tmp_path / "curves.png")]) == 0
    assert (tmp_path / "curves.png").stat().st_size > 0
    err = _fails(capsys, ["plot", f"{bucket}/nothing", "-o", str(tmp_path / "x.png")])
    assert "is not a run directory, nor a folder of them" in err
    assert _staging_left(tmp_path) == []


def test_play_of_a_url_needs_a_local_video_path(bucket, capsys):
    err = _fails(capsys, ["play", f"{bucket}/run"])
    assert "pass --video out.mp4" in err


def _pong_record(run_dir: str) -> object:
    """A one-episode no-op protocol result of checkpoint step 7 of `run_dir`."""
    from shoal.evaluation_protocol import AtariEvaluation, ProtocolEpisode

    episode = ProtocolEpisode(
        seed=1, score=3.0, agent_steps=10, frames=40, capped=False, human_normalized=None
    )
    return AtariEvaluation(
        run_dir=run_dir,
        env_id="ALE/Pong-v5",
        game="pong",
        checkpoint_steps=7,
        mode="greedy",
        epsilon=None,
        settings={},
        random_score=None,
        human_score=None,
        episodes=(episode,),
    )


def test_an_atari_protocol_record_of_a_bucket_run_is_kept_in_the_bucket(bucket):
    from shoal.evaluation_protocol import save_record

    kept = save_record(_pong_record(f"{bucket}/run"))
    assert kept == f"{bucket}/run/evaluations/atari-step-000000000007.json"
    assert json.loads(MEMORY.cat_file(kept.removeprefix("memory:/")))["mean_score"] == 3.0


def test_an_atari_protocol_record_of_one_checkpoint_is_kept_in_its_run(tmp_path):
    """`shoal eval RUN/checkpoints/step-N.pt --protocol atari` keeps its record in RUN."""
    from shoal.evaluation_protocol import save_record

    checkpoint = tmp_path / "run" / "checkpoints" / "step-000000000007.pt"
    checkpoint.parent.mkdir(parents=True)
    checkpoint.write_bytes(b"weights")
    kept = save_record(_pong_record(str(checkpoint)))
    assert kept == tmp_path / "run" / "evaluations" / "atari-step-000000000007.json"
    assert json.loads(kept.read_text())["mean_score"] == 3.0


def test_a_sync_puts_snapshots_first_moves_checkpoints_into_place_and_prunes_last(
    tmp_path, monkeypatch
):
    """On file:// (a shared filesystem through fsspec): the order a reader relies on."""
    monkeypatch.setenv(storage.STAGING_ENV, str(tmp_path / "staging"))
    store = storage.create_run(f"file://{tmp_path}/bucket", "run", True, "algo: ppo\n")
    saved = store.local / "checkpoints"
    saved.mkdir()
    (saved / "step-000000000001.pt").write_bytes(b"one")
    store.sync()
    (saved / "step-000000000001.pt").unlink()  # pruned by the next checkpoint
    (saved / "step-000000000002-0123abcd.replay0").write_bytes(b"its replay")
    (saved / "step-000000000002.pt").write_bytes(b"two")
    (saved / ".step-000000000003.pt.x.tmp").write_bytes(b"a write in progress")
    (store.local / "metrics.jsonl").write_text("{}\n")
    calls = []
    local_fs = type(store.bucket.fs)
    for name in ("put_file", "mv", "rm_file"):
        method = getattr(local_fs, name)

        def recorded(self, *paths, _name=name, _method=method, **kwargs):
            shown = paths[1:2] if _name == "put_file" else paths[:2]  # put: the remote name
            calls.append((_name, *(Path(str(p)).name for p in shown)))
            return _method(self, *paths, **kwargs)

        monkeypatch.setattr(local_fs, name, recorded)
    store.sync()
    assert calls[:2] == [
        ("put_file", "step-000000000002-0123abcd.replay0"),
        ("put_file", "metrics.jsonl"),
    ]
    temp = calls[2][1]
    assert calls[2][0] == "put_file" and temp.startswith(".step-000000000002.pt.tmp-")
    assert calls[3] == ("mv", temp, "step-000000000002.pt")
    assert calls[4] == ("rm_file", "step-000000000001.pt") and len(calls) == 5
    remote = tmp_path / "bucket" / "run"
    assert sorted(p.relative_to(remote).as_posix() for p in remote.rglob("*") if p.is_file()) == [
        "checkpoints/step-000000000002-0123abcd.replay0",
        "checkpoints/step-000000000002.pt",
        "config.yaml",
        "metrics.jsonl",
    ]
    store.close()
    assert _staging_left(tmp_path) == []


def test_a_replay_agent_resumed_from_a_bucket_gets_its_replay_snapshot_back(bucket, capsys):
    run = {**QUICK, "runs_dir": bucket, "eval_episodes": 0, "checkpoint_interval": 1000}
    dqn = {"min_replay_size": 500, "samples_per_insert": 4}
    first = shoal.train("dqn", "CartPole-v1", seed=0, total_steps=1000, agent=dqn, run=run)
    snapshots = [o for o in _objects(first.run_dir) if ".replay0" in o]
    assert len(snapshots) == 1 and snapshots[0].startswith(
        f"checkpoints/step-{first.env_steps:012d}-"
    )
    capsys.readouterr()
    second = shoal.train(resume=first.run_dir, run={"total_steps": 1500, "progress": False})
    err = capsys.readouterr().err
    restored = re.search(
        rf"replay restored from the checkpoint at {first.env_steps} steps: (\d+)", err
    )
    assert restored and 500 < int(restored[1]) <= first.env_steps, err
    after = [o for o in _objects(first.run_dir) if ".replay0" in o]
    assert len(after) == 1 and after[0].startswith(f"checkpoints/step-{second.env_steps:012d}-")
