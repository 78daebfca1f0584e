"""summary.json (`shoal.run.summary`): one writer, with declared keys."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from shoal.run.layout import SUMMARY_FILE
from shoal.run.summary import SUMMARY_KEYS, read_summary, run_summary, write_summary


@dataclass
class _Counter:
    env_steps: int = 2048
    episodes: int = 90
    updates: int = 8
    counts: dict[str, int] = field(default_factory=lambda: {"actor_restarts": 1})
    interruption: str = "interrupted"
    target_reached_step: int | None = None
    target_reached_at: float | None = None
    elapsed: float = 12.34567
    mean_return: float | None = 21.5
    reason: str | None = "total_steps"

    def stop_reason(self) -> str | None:
        return self.reason


EVALUATION = {"episodes": 2, "mean_return": 20.0}


def test_a_summary_holds_every_declared_key_then_the_counts_then_the_writers_own():
    summary = run_summary(
        algo="ppo",
        env="CartPole-v1",
        seed=3,
        counter=_Counter(),
        evaluation=EVALUATION,
        extra={"pid": 4242},
    )
    assert set(SUMMARY_KEYS) <= set(summary)
    assert set(summary) - set(SUMMARY_KEYS) == {"actor_restarts", "pid"}
    assert summary["wall_time"] == 12.346 and summary["stop_reason"] == "total_steps"
    assert summary["evaluation"] == EVALUATION and summary["evaluation_sampled"] is None
    keys = list(summary)
    assert keys.index("stop_reason") < keys.index("actor_restarts") < keys.index("evaluation")
    assert keys[-1] == "pid"


def test_an_interrupted_run_says_so():
    summary = run_summary(
        algo="ppo",
        env="CartPole-v1",
        seed=0,
        counter=_Counter(reason=None, interruption="terminated"),
        evaluation=None,
    )
    assert summary["stop_reason"] == "terminated" and summary["evaluation"] is None


@pytest.mark.parametrize("where", ["counts", "extra"])
def test_nothing_may_replace_a_declared_key(where):
    counter = _Counter(counts={"env_steps": 1}) if where == "counts" else _Counter()
    extra = {"seed": 9} if where == "extra" else None
    with pytest.raises(ValueError, match="would replace a declared key"):
        run_summary(algo="ppo", env="e", seed=0, counter=counter, evaluation=None, extra=extra)


def test_write_refuses_a_summary_without_the_declared_keys(tmp_path):
    with pytest.raises(ValueError, match="lacks"):
        write_summary(tmp_path, {"algo": "ppo"})
    assert not (tmp_path / SUMMARY_FILE).exists()


def test_written_and_read_back(tmp_path):
    summary = run_summary(algo="ppo", env="e", seed=0, counter=_Counter(), evaluation=None)
    path = write_summary(tmp_path, summary)
    assert path == tmp_path / SUMMARY_FILE
    assert read_summary(tmp_path) == summary == json.loads(path.read_text())


def test_a_missing_or_torn_summary_reads_as_none(tmp_path):
    assert read_summary(tmp_path) is None
    (tmp_path / SUMMARY_FILE).write_text('{"algo": "pp')  # a kill mid-write
    assert read_summary(tmp_path) is None
    (tmp_path / SUMMARY_FILE).write_text("[1, 2]")
    assert read_summary(tmp_path) is None


def test_shoal_train_writes_every_declared_key(trained):
    summary = read_summary(Path(trained.run_dir))
    assert summary is not None
    assert [key for key in SUMMARY_KEYS if key not in summary] == []
    assert summary == trained.summary
    assert summary["env_steps"] == trained.env_steps
