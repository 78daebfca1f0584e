"""The run directory's layout: every file and folder name a run holds, in one place.

    RUN_DIR/
        config.yaml                      CONFIG_FILE: the resolved config; marks a run directory
        metrics.jsonl                    METRICS_FILE: one JSON row per --log-interval
        metrics.csv                      METRICS_CSV: the same rows (--logger csv)
        summary.json                     SUMMARY_FILE: the run's end (`shoal.run.summary`)
        trackers.json                    TRACKER_IDS_FILE: W&B / MLflow run ids, for a resume
        ray_actors.json                  PLACEMENT_FILE: where each Ray role runs (--runtime ray)
        best.pt                          BEST_POLICY: the best evaluated policy (--keep-best)
        tb/                              TENSORBOARD_DIR: TensorBoard events
        videos/                          VIDEO_DIR: step-<steps>.mp4, play-step-<steps>.mp4
        evaluations/                     EVALUATIONS_DIR: atari-step-<steps>.json records
        checkpoints/                     CHECKPOINT_DIR
            step-<steps:012d>.pt         a checkpoint (`shoal.run.checkpoints`)
            step-<steps:012d>-<tag>.replay<i>   shard i of its replay snapshot
            .step-....tmp                a write in progress (never a checkpoint name)
            step-....pt.damaged          a damaged checkpoint set aside on resume

These names are the run directory's format: runs written by older shoal versions are read by
them, so a name here never changes. This module imports nothing, so any layer may read it.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = [
    "BEST_POLICY",
    "CHECKPOINT_DIR",
    "CHECKPOINT_NAME",
    "CONFIG_FILE",
    "DAMAGED_SUFFIX",
    "EVALUATIONS_DIR",
    "METRICS_CSV",
    "METRICS_FILE",
    "PLACEMENT_FILE",
    "PROTOCOL_RECORDS",
    "SNAPSHOT_NAME",
    "SUMMARY_FILE",
    "TENSORBOARD_DIR",
    "TRACKER_IDS_FILE",
    "VIDEO_DIR",
    "checkpoint_dir",
    "checkpoint_name",
    "checkpoint_steps",
    "protocol_record_name",
    "snapshot_name",
]

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.jsonl"
METRICS_CSV = "metrics.csv"
SUMMARY_FILE = "summary.json"
TRACKER_IDS_FILE = "trackers.json"
PLACEMENT_FILE = "ray_actors.json"
BEST_POLICY = "best.pt"
TENSORBOARD_DIR = "tb"
VIDEO_DIR = "videos"
EVALUATIONS_DIR = "evaluations"
CHECKPOINT_DIR = "checkpoints"
DAMAGED_SUFFIX = ".damaged"

# A complete checkpoint (temp files from a crash never match) and a replay snapshot's shard.
CHECKPOINT_NAME = re.compile(r"^step-(\d{12})\.pt$")
SNAPSHOT_NAME = re.compile(r"^step-\d{12}-[0-9a-f]{8}\.replay\d+$")
# Records of `shoal eval --protocol atari`, relative to the run directory (a glob).
PROTOCOL_RECORDS = f"{EVALUATIONS_DIR}/atari-step-*.json"


def checkpoint_dir(run_dir: Path) -> Path:
    """The folder of the run's checkpoints and replay snapshots."""
    return run_dir / CHECKPOINT_DIR


def checkpoint_name(env_steps: int) -> str:
    """The file name of the checkpoint taken at `env_steps`; zero-padded, so names sort by step."""
    return f"step-{env_steps:012d}.pt"


def checkpoint_steps(name: str) -> int | None:
    """The step a checkpoint's file name says, or None for a name that is no checkpoint."""
    match = CHECKPOINT_NAME.match(name)
    return int(match.group(1)) if match else None


def snapshot_name(env_steps: int, tag: str, shard: int) -> str:
    """Shard `shard` of the replay snapshot taken at `env_steps`; `tag` (8 hex digits) keeps it
    apart from an earlier snapshot at the same step."""
    return f"step-{env_steps:012d}-{tag}.replay{shard}"


def protocol_record_name(checkpoint_steps: int) -> str:
    """The file, in EVALUATIONS_DIR, of an Atari protocol evaluation of that checkpoint."""
    return f"atari-step-{checkpoint_steps:012d}.json"
