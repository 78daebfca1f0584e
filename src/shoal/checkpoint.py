"""Atomic checkpoints: written to a temp file and renamed, loaded without executing pickled code.

A checkpoint may come with a replay snapshot, one file per replay shard, named in its payload
(`replay`). The snapshot files are written first and the checkpoint file last, so the
checkpoint's own name is the one marker that both are complete: a process killed while writing
either leaves temp files and the previous checkpoint with its snapshot, never a checkpoint
whose snapshot is torn or missing. Only the newest checkpoint keeps its snapshot (a replay can
take gigabytes); pruning deletes the others' with them.
"""

from __future__ import annotations

import io
import json
import re
import secrets
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import torch

from shoal.config import to_dict, write_atomically
from shoal.errors import CheckpointError, ShoalWarning, StorageError
from shoal.tree import flatten_dict

FORMAT = "shoal-checkpoint-1"
POLICY_FORMAT = "shoal-policy-1"  # one saved policy: weights, spaces and configs (`save_policy`)
_NAME = re.compile(r"^step-(\d{12})\.pt$")
_SNAPSHOT_NAME = re.compile(r"^step-\d{12}-[0-9a-f]{8}\.replay\d+$")
SNAPSHOT_MAGIC = b"shoal-replay-snapshot-1\n"
_ALIGN = 64  # array offsets in a snapshot file, so a mapped array starts on a cache line


def checkpoint_path(directory: Path, env_steps: int) -> Path:
    return directory / f"step-{env_steps:012d}.pt"


def list_checkpoints(directory: Path) -> list[Path]:
    """Complete checkpoints in `directory`, oldest first (temp files from a crash are ignored)."""
    if not directory.is_dir():
        return []
    found = [p for p in directory.iterdir() if _NAME.match(p.name)]
    return sorted(found, key=lambda p: int(_NAME.match(p.name).group(1)))  # type: ignore[union-attr]


def _step(path: Path) -> int:
    return int(_NAME.match(path.name).group(1))  # type: ignore[union-attr]


def snapshot_paths(directory: Path, env_steps: int, shards: int) -> list[Path]:
    """Fresh names for the `shards` files of a replay snapshot taken at `env_steps`. A random
    tag keeps them apart from an earlier snapshot at the same step (the final checkpoint often
    has the step of the last periodic one), so a checkpoint never names another's file."""
    tag = secrets.token_hex(4)
    return [directory / f"step-{env_steps:012d}-{tag}.replay{i}" for i in range(shards)]


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
        if _SNAPSHOT_NAME.match(snapshot.name) and snapshot.name not in named:
            snapshot.unlink(missing_ok=True)
    return path


def write_arrays(path: Path, tree: Mapping[str, Any]) -> int:
    """Write a nested dict of numpy arrays and plain values (numbers, strings) to `path`
    atomically (a temp file, then rename); returns the file's size in bytes.

    The file is a JSON header (each array's dtype, shape and offset; the plain values) and the
    arrays' raw bytes, written straight from the arrays: a replay of gigabytes is written at the
    disk's speed with no copy in memory, and read back by `read_arrays` without unpickling."""
    arrays: dict[str, np.ndarray] = {}
    values: dict[str, Any] = {}
    for key, leaf in _flatten(tree):
        if isinstance(leaf, np.ndarray):
            arrays[key] = np.require(leaf, requirements="C")
        else:
            values[key] = leaf.item() if isinstance(leaf, np.generic) else leaf
    layout, offset = {}, 0
    for key, array in arrays.items():
        layout[key] = {"dtype": array.dtype.str, "shape": array.shape, "offset": offset}
        offset = _aligned(offset + array.nbytes)
    header = {"arrays": layout, "values": values, "data_bytes": offset}
    head = json.dumps(header).encode()
    start = _aligned(len(SNAPSHOT_MAGIC) + 8 + len(head))

    def write(f: BinaryIO) -> None:
        f.write(SNAPSHOT_MAGIC + len(head).to_bytes(8, "little") + head)
        for key, array in arrays.items():
            f.write(b"\0" * (start + layout[key]["offset"] - f.tell()))
            f.write(memoryview(array.reshape(-1)).cast("B"))
        f.write(b"\0" * (start + offset - f.tell()))

    write_atomically(path, write)
    return start + offset


def read_arrays(path: Path) -> dict[str, Any]:
    """What `write_arrays` wrote, as a nested dict. Arrays map the file read-only (copy what
    you keep); only plain numeric and boolean dtypes are accepted, so nothing is unpickled.
    A file that is not a whole snapshot raises a CheckpointError saying why."""
    try:
        with open(path, "rb") as f:
            if f.read(len(SNAPSHOT_MAGIC)) != SNAPSHOT_MAGIC:
                raise CheckpointError(f"{path.name} is not a shoal replay snapshot.")
            head = f.read(int.from_bytes(f.read(8), "little"))
        header = json.loads(head)
        start = _aligned(len(SNAPSHOT_MAGIC) + 8 + len(head))
        if path.stat().st_size != start + header["data_bytes"]:
            raise CheckpointError(
                f"{path.name} holds {path.stat().st_size} bytes, not the "
                f"{start + header['data_bytes']} its header names."
            )
        leaves = dict(header["values"])
        for key, spec in header["arrays"].items():
            leaves[key] = _mapped(path, start + spec["offset"], spec)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{path.name} cannot be read: {err}") from None
    return _unflatten(leaves)


def array_bytes(tree: Mapping[str, Any]) -> int:
    """Bytes of the numpy arrays in a nested dict: about what `write_arrays` writes of it."""
    return sum(leaf.nbytes for _, leaf in _flatten(tree) if isinstance(leaf, np.ndarray))


def _mapped(path: Path, offset: int, spec: dict[str, Any]) -> np.ndarray:
    dtype, shape = np.dtype(spec["dtype"]), tuple(spec["shape"])
    if dtype.kind not in "biuf":
        raise ValueError(f"dtype {dtype} is not a plain number type")
    if dtype.itemsize * int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype)  # an empty map is an error in mmap
    return np.memmap(path, dtype, mode="r", offset=offset, shape=shape)


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def _flatten(tree: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return flatten_dict(tree, "/")


def _unflatten(leaves: Mapping[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in leaves.items():
        *parents, name = key.split("/")
        node = tree
        for parent in parents:
            node = node.setdefault(parent, {})
        node[name] = value
    return tree


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
        "network": dict(network),
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
                path.replace(path.with_name(path.name + ".damaged"))
            plural = "s were" if len(damaged) > 1 else " was"
            message += f" The damaged file{plural} renamed to *.damaged."
        except OSError:
            pass  # pruning never counts a damaged later file as kept, renamed or not
    warnings.warn(message, ShoalWarning, stacklevel=3)
