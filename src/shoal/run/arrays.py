"""The file format of a replay snapshot: a nested dict of numpy arrays, written at the disk's
speed and read back by mapping the file, with nothing unpickled.

    MAGIC | header length (8 bytes, little-endian) | JSON header | padding | array bytes

The header names each array's dtype, shape and offset (from the start of the array bytes, each
aligned to 64 bytes so a mapped array starts on a cache line) and the plain values. Which files
a checkpoint's snapshot has, and when they are written and pruned, is `shoal.run.checkpoints`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from shoal.config import write_atomically
from shoal.errors import CheckpointError
from shoal.tree import flatten_dict

__all__ = ["SNAPSHOT_MAGIC", "array_bytes", "read_arrays", "write_arrays"]

SNAPSHOT_MAGIC = b"shoal-replay-snapshot-1\n"
_ALIGN = 64  # array offsets in a snapshot file, so a mapped array starts on a cache line


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
