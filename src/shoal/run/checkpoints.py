"""Atomic checkpoints: written to a temp file and renamed, loaded without executing pickled code.

A checkpoint may come with a replay snapshot, one file per replay shard, named in its payload
(`replay`). The snapshot files are written first and the checkpoint file last, so the
checkpoint's own name is the one marker that both are complete: a process killed while writing
either leaves temp files and the previous checkpoint with its snapshot, never a checkpoint
whose snapshot is torn or missing. Only the newest checkpoint keeps its snapshot (a replay can
take gigabytes); pruning deletes the others' with them. The snapshot files' format is
`shoal.run.arrays`; the names of both are `shoal.run.layout`'s.

What a checkpoint and a saved policy hold is declared here (`CHECKPOINT_KEYS`, `POLICY_KEYS`,
`LEARNER_NETWORK`): the runtime writes them, and a resume, the evaluator, the video recorder and
`shoal.load` read them.
"""

from __future__ import annotations

import io
import secrets
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from shoal.config import to_dict, write_atomically
from shoal.errors import CheckpointError, ShoalWarning, StorageError
from shoal.run.arrays import SNAPSHOT_MAGIC, array_bytes, read_arrays, write_arrays
from shoal.run.layout import (
    CHECKPOINT_NAME,
    DAMAGED_SUFFIX,
    SNAPSHOT_NAME,
    checkpoint_name,
    checkpoint_steps,
    snapshot_name,
)

__all__ = [
    "CHECKPOINT_KEYS",
    "CHECKPOINT_OPTIONAL_KEYS",
    "FORMAT",
    "LEARNER_NETWORK",
    "POLICY_FORMAT",
    "POLICY_KEYS",
    "SNAPSHOT_MAGIC",
    "SnapshotWriter",
    "array_bytes",
    "checkpoint_path",
    "learner_network",
    "list_checkpoints",
    "load_checkpoint",
    "load_latest",
    "missing_keys",
    "policy_payload",
    "read_any",
    "read_arrays",
    "save_checkpoint",
    "save_policy",
    "snapshot_paths",
    "write_arrays",
]

FORMAT = "shoal-checkpoint-1"
POLICY_FORMAT = "shoal-policy-1"  # one saved policy: weights, spaces and configs (`save_policy`)

# What every checkpoint of a run holds (`FORMAT`): the marker, whose run it is, the counters a
# resume continues from, the RNG, and the learner's `state_dict`.
CHECKPOINT_KEYS = (
    "format",
    "algo",
    "env",
    "env_steps",
    "episodes",
    "updates",
    "elapsed",
    "recent_returns",
    "recent_lengths",
    "resume_count",
    "torch_rng",
    "learner",
)
# Keys a checkpoint may lack, read with a default: `counts` and `policies` came after the first
# checkpoints (older runs still resume), `replay` only goes with a replay snapshot, `spec` (the
# env's spaces, `EnvSpec.to_data`) came later still: with it, `shoal.load` of a run trained on
# an env object acts without the env.
CHECKPOINT_OPTIONAL_KEYS = ("counts", "policies", "replay", "spec")
# The key of the network's weights in every learner's `state_dict` (a checkpoint's `learner`):
# the actors, the evaluator, the video recorder and `shoal.load` build the policy's network
# from it without building the learner.
LEARNER_NETWORK = "network"
# What a saved policy holds (`POLICY_FORMAT`, `policy_payload`).
POLICY_KEYS = (
    "format",
    "algo",
    "env",
    "seed",
    "env_steps",
    "agent",
    "env_config",
    "spec",
    LEARNER_NETWORK,
    "policies",
)


def missing_keys(
    payload: Mapping[str, Any], declared: tuple[str, ...] = CHECKPOINT_KEYS
) -> list[str]:
    """The `declared` keys `payload` lacks, in declared order (`format` is added on save)."""
    return [key for key in declared if key != "format" and key not in payload]


def learner_network(learner_state: Mapping[str, Any], where: str = "The checkpoint") -> Any:
    """The network's weights in a learner's `state_dict`, or a CheckpointError saying which
    key is missing and what the learner must write."""
    try:
        return learner_state[LEARNER_NETWORK]
    except (KeyError, TypeError):
        keys = ", ".join(map(str, learner_state)) if isinstance(learner_state, Mapping) else "?"
        raise CheckpointError(
            f"{where} holds no network weights: its learner state has no "
            f"{LEARNER_NETWORK!r} key (it has: {keys or 'nothing'}). A learner's state_dict "
            f"must keep its network's state_dict under {LEARNER_NETWORK!r}, as "
            "shoal.agents.base.Learner does."
        ) from None


def checkpoint_path(directory: Path, env_steps: int) -> Path:
    return directory / checkpoint_name(env_steps)


def list_checkpoints(directory: Path) -> list[Path]:
    """Complete checkpoints in `directory`, oldest first (temp files from a crash are ignored)."""
    if not directory.is_dir():
        return []
    found = [p for p in directory.iterdir() if CHECKPOINT_NAME.match(p.name)]
    return sorted(found, key=_step)


def _step(path: Path) -> int:
    return checkpoint_steps(path.name)  # type: ignore[return-value]


def snapshot_paths(directory: Path, env_steps: int, shards: int) -> list[Path]:
    """Fresh names for the `shards` files of a replay snapshot taken at `env_steps`. A random
    tag keeps them apart from an earlier snapshot at the same step (the final checkpoint often
    has the step of the last periodic one), so a checkpoint never names another's file."""
    tag = secrets.token_hex(4)
    return [directory / snapshot_name(env_steps, tag, i) for i in range(shards)]


# (directory, env_steps) -> the checkpoint's `replay` entry (the snapshot files it wrote), or
# None when no snapshot goes with this checkpoint.
SnapshotWriter = Callable[[Path, int], dict[str, Any] | None]


def save_checkpoint(
    directory: Path,
    env_steps: int,
    payload: dict[str, Any],
    keep: int,
    replay: SnapshotWriter | None = None,
) -> Path:
    """Write `payload` as the checkpoint for `env_steps`, then delete all but the newest `keep`.

    `replay`, if given, writes a replay snapshot first (see the module docstring) and returns
    the entry stored as the payload's `replay`. Pruning keeps the new checkpoint and the
    `keep - 1` newest before it; a file named for a later step (one `load_latest` found damaged)
    is never counted as one of those kept. Snapshots not named by the new checkpoint go."""
    path = checkpoint_path(directory, env_steps)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob(".step-*.tmp"):  # left by a process killed mid-write
            stale.unlink(missing_ok=True)
        entry = replay(directory, env_steps) if replay is not None else None
        if entry is not None:
            payload = {**payload, "replay": entry}
        buffer = io.BytesIO()
        torch.save({"format": FORMAT, **payload}, buffer)
        write_atomically(path, buffer.getvalue())
    except (OSError, StorageError) as err:
        before = [p for p in list_checkpoints(directory) if _step(p) < env_steps]
        kept = (
            f"The newest complete checkpoint, {before[-1].name}, is intact: once the folder "
            f"can be written again, continue with `shoal train --resume {directory.parent}`."
            if before
            else "No checkpoint was written before it."
        )
        reason = err if isinstance(err, StorageError) else f"{err.strerror or err}."
        raise StorageError(
            f"The checkpoint at {env_steps} steps was not written: {reason} {kept}"
        ) from None
    older = [p for p in list_checkpoints(directory) if _step(p) < env_steps]
    for old in older[: max(len(older) - (keep - 1), 0)]:
        old.unlink(missing_ok=True)
    named = set(entry["files"]) if entry is not None else set()
    for snapshot in directory.iterdir():
        if SNAPSHOT_NAME.match(snapshot.name) and snapshot.name not in named:
            snapshot.unlink(missing_ok=True)
    return path


def load_checkpoint(path: Path, algo: str | None = None) -> dict[str, Any]:
    """Load with `weights_only=True` (no pickled code runs); check it is shoal's and `algo`'s."""
    data = _read(path)
    if isinstance(data, str):
        raise CheckpointError(
            f"{path} is {data}. Pass a run directory written by `shoal train`, or a checkpoint "
            "from its checkpoints/."
        )
    _check_algo(data, path, algo)
    return data


def policy_payload(
    *,
    algo: str,
    env_id: str,
    seed: int,
    env_steps: int,
    agent_config: Any,
    env_config: Any,
    spec: Any,
    network: Mapping[str, Any],
    policies: Mapping[str, Any],
) -> dict[str, Any]:
    """What a saved policy holds: weights, the env's spaces (`EnvSpec`) and the configs."""
    return {
        "algo": algo,
        "env": env_id,
        "seed": seed,
        "env_steps": env_steps,
        "agent": to_dict(agent_config),
        "env_config": to_dict(env_config),
        "spec": spec.to_data(),
        LEARNER_NETWORK: dict(network),
        "policies": dict(policies),
    }


def save_policy(path: Path, payload: dict[str, Any]) -> None:
    """Write a saved policy to `path` atomically (its folder made if missing)."""
    buffer = io.BytesIO()
    torch.save({"format": POLICY_FORMAT, **payload}, buffer)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StorageError(
            f"Cannot create the folder {path.parent}: {err.strerror or err}. Save to a path "
            "you can write to."
        ) from None
    write_atomically(path, buffer.getvalue())


def read_any(path: Path) -> dict[str, Any] | str:
    """A saved policy's or a checkpoint's contents (`format` tells which), or why it cannot
    be read."""
    return _read(path, (FORMAT, POLICY_FORMAT))


def _read(path: Path, formats: tuple[str, ...] = (FORMAT,)) -> dict[str, Any] | str:
    """The checkpoint's contents, or why it cannot be read ("not a ... checkpoint (...)")."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for corrupt or foreign files
        # The first sentence only: torch's weights-only message goes on for a page.
        first = (str(err).strip().splitlines() or [""])[0].split(". ")[0].rstrip(".")
        return f"not a readable shoal checkpoint ({type(err).__name__}: {first:.200})"
    if not isinstance(data, dict) or data.get("format") not in formats:
        return f"not a shoal checkpoint (no '{formats[0]}' marker)"
    return data


def _check_algo(data: dict[str, Any], path: Path, algo: str | None) -> None:
    if algo is not None and data.get("algo") != algo:
        raise CheckpointError(
            f"{path} was written by algorithm {data.get('algo')!r}, not {algo!r}. "
            f"Load it with `{data.get('algo')}` or pick another run."
        )


def load_latest(
    directory: Path, algo: str | None = None, *, set_aside: bool = False
) -> dict[str, Any] | None:
    """The newest checkpoint that loads, or None if there is none.

    A damaged newer checkpoint is skipped with a `ShoalWarning` that names it. With
    `set_aside` (a run about to continue) it is also renamed to `NAME.damaged`, out of the
    way of the run's new checkpoints and their pruning, and kept for inspection."""
    damaged: list[tuple[Path, str]] = []
    for path in reversed(list_checkpoints(directory)):
        data = _read(path)
        if isinstance(data, str):
            damaged.append((path, data))
            continue
        _check_algo(data, path, algo)
        if damaged:
            _set_aside(damaged, path, int(data.get("env_steps", 0)), set_aside)
        return data
    if damaged:
        raise CheckpointError(
            f"None of the {len(damaged)} checkpoints in {directory} can be loaded: "
            f"{_reasons(damaged)}. Restore them from a backup, or move them away to start the "
            "run again from step 0."
        )
    return None


def _reasons(damaged: list[tuple[Path, str]]) -> str:
    return "; ".join(f"{path.name} is {reason}" for path, reason in damaged)


def _set_aside(damaged: list[tuple[Path, str]], used: Path, steps: int, rename: bool) -> None:
    message = (
        f"Skipped the newest checkpoint in {used.parent}, as {_reasons(damaged)}; using "
        f"{used.name} ({steps} steps), the newest that loads."
    )
    if rename:
        try:
            for path, _ in damaged:
                path.replace(path.with_name(path.name + DAMAGED_SUFFIX))
            plural = "s were" if len(damaged) > 1 else " was"
            message += f" The damaged file{plural} renamed to *.damaged."
        except OSError:
            pass  # pruning never counts a damaged later file as kept, renamed or not
    warnings.warn(message, ShoalWarning, stacklevel=3)
