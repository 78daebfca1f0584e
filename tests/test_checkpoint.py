from __future__ import annotations

import errno
import os
import pickle
import warnings

import pytest
import torch

from shoal import config
from shoal.errors import CheckpointError, ShoalWarning, StorageError
from shoal.run.checkpoints import list_checkpoints, load_checkpoint, load_latest, save_checkpoint


def _payload(step: int) -> dict:
    return {"algo": "ppo", "env_steps": step, "learner": {"w": torch.full((2,), float(step))}}


def test_round_trip_and_only_the_newest_are_kept(tmp_path):
    for step in (10, 20, 30, 40):
        save_checkpoint(tmp_path, step, _payload(step), keep=2)
    names = [p.name for p in list_checkpoints(tmp_path)]
    assert names == ["step-000000000030.pt", "step-000000000040.pt"]
    latest = load_latest(tmp_path, "ppo")
    assert latest["env_steps"] == 40
    assert torch.equal(latest["learner"]["w"], torch.full((2,), 40.0))


def test_no_temp_file_is_left_and_partial_files_are_ignored(tmp_path):
    save_checkpoint(tmp_path, 5, _payload(5), keep=3)
    # What a kill during a write leaves behind: a temp file that is never a checkpoint name.
    (tmp_path / ".step-000000000009.pt.abc.tmp").write_bytes(b"half a checkpo")
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-000000000005.pt"]
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp") and "000005" in p]


def test_a_damaged_newest_checkpoint_falls_back_to_the_previous_one_and_says_so(tmp_path):
    save_checkpoint(tmp_path, 1, _payload(1), keep=3)
    save_checkpoint(tmp_path, 2, _payload(2), keep=3)
    (tmp_path / "step-000000000002.pt").write_bytes(b"garbage")
    with pytest.warns(ShoalWarning) as caught:
        assert load_latest(tmp_path)["env_steps"] == 1
    (warning,) = caught
    assert "step-000000000002.pt is not a readable shoal checkpoint" in str(warning.message)
    assert "using step-000000000001.pt (1 steps)" in str(warning.message)
    assert (tmp_path / "step-000000000002.pt").exists()  # only looked at, not moved


def test_a_damaged_checkpoint_is_never_kept_in_place_of_good_ones(tmp_path):
    for step in (1, 2, 3):
        save_checkpoint(tmp_path, step, _payload(step), keep=2)
    (tmp_path / "step-000000000003.pt").write_bytes(b"torn")
    with pytest.warns(ShoalWarning, match="renamed to"):
        assert load_latest(tmp_path, "ppo", set_aside=True)["env_steps"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: the damaged file is out of the way now
        assert load_latest(tmp_path, "ppo")["env_steps"] == 2
    # The resumed run writes on from step 2: pruning keeps the newest good ones.
    save_checkpoint(tmp_path, 3, _payload(3), keep=2)
    save_checkpoint(tmp_path, 4, _payload(4), keep=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == [
        "step-000000000003.pt",
        "step-000000000004.pt",
    ]
    assert (tmp_path / "step-000000000003.pt.damaged").read_bytes() == b"torn"


def test_pruning_never_counts_a_later_file_among_those_kept(tmp_path):
    save_checkpoint(tmp_path, 5, _payload(5), keep=1)
    (tmp_path / "step-000000000009.pt").write_bytes(b"torn")  # e.g. not set aside
    save_checkpoint(tmp_path, 6, _payload(6), keep=1)
    names = [p.name for p in list_checkpoints(tmp_path)]
    assert names == ["step-000000000006.pt", "step-000000000009.pt"]
    assert load_checkpoint(tmp_path / "step-000000000006.pt")["env_steps"] == 6


def test_no_loadable_checkpoint_is_an_error_naming_each(tmp_path):
    for step in (1, 2):
        (tmp_path / f"step-{step:012d}.pt").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="None of the 2 checkpoints") as error:
        load_latest(tmp_path)
    assert "step-000000000001.pt is not" in str(error.value)
    assert "step-000000000002.pt is not" in str(error.value)


def test_a_full_disk_leaves_no_partial_checkpoint_and_the_older_ones_intact(tmp_path, monkeypatch):
    save_checkpoint(tmp_path, 1, _payload(1), keep=1)
    real_fsync = os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(config.os, "fsync", full)
    with pytest.raises(StorageError) as error:
        save_checkpoint(tmp_path, 2, _payload(2), keep=1)
    monkeypatch.setattr(config.os, "fsync", real_fsync)
    message = str(error.value)
    assert "The checkpoint at 2 steps was not written" in message
    assert "No space left on device" in message and "The disk is full" in message
    assert "step-000000000001.pt, is intact" in message
    assert os.listdir(tmp_path) == ["step-000000000001.pt"]
    assert load_latest(tmp_path)["env_steps"] == 1


class _Exploit:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_pickled_code_is_never_executed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "step-000000000001.pt"
    with path.open("wb") as f:
        pickle.dump({"format": "shoal-checkpoint-1", "x": _Exploit()}, f, protocol=2)
    with pytest.raises(CheckpointError, match="not a readable shoal checkpoint"):
        load_checkpoint(path)
    assert not (tmp_path / "pwned").exists()


def test_foreign_files_and_other_algorithms_are_rejected(tmp_path):
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(1)}, foreign)
    with pytest.raises(CheckpointError, match="not a shoal checkpoint"):
        load_checkpoint(foreign)
    save_checkpoint(tmp_path, 3, _payload(3), keep=1)
    with pytest.raises(CheckpointError, match="written by algorithm 'ppo', not 'dqn'"):
        load_latest(tmp_path, "dqn")
