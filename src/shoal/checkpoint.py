"""Moved to `shoal.run.checkpoints` (the replay snapshot file format to `shoal.run.arrays`,
file names to `shoal.run.layout`). This module re-exports the public names it had, so old
imports keep working; import from the new modules in new code."""

from shoal.run.checkpoints import (
    FORMAT,
    POLICY_FORMAT,
    SNAPSHOT_MAGIC,
    SnapshotWriter,
    array_bytes,
    checkpoint_path,
    list_checkpoints,
    load_checkpoint,
    load_latest,
    policy_payload,
    read_any,
    read_arrays,
    save_checkpoint,
    save_policy,
    snapshot_paths,
    write_arrays,
)

__all__ = [
    "FORMAT",
    "POLICY_FORMAT",
    "SNAPSHOT_MAGIC",
    "SnapshotWriter",
    "array_bytes",
    "checkpoint_path",
    "list_checkpoints",
    "load_checkpoint",
    "load_latest",
    "policy_payload",
    "read_any",
    "read_arrays",
    "save_checkpoint",
    "save_policy",
    "snapshot_paths",
    "write_arrays",
]
