from __future__ import annotations

import os
import pickle

import pytest
import torch

from shoal.checkpoint import list_checkpoints, load_checkpoint, load_latest, save_checkpoint
from shoal.errors import CheckpointError


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


def test_a_damaged_newest_checkpoint_falls_back_to_the_previous_one(tmp_path):
    save_checkpoint(tmp_path, 1, _payload(1), keep=3)
    save_checkpoint(tmp_path, 2, _payload(2), keep=3)
    (tmp_path / "step-000000000002.pt").write_bytes(b"garbage")
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
