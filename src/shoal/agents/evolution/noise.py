"""The shared noise table of OpenAI's evolution strategies (Salimans et al. 2017, section 2.1).

Every node holds one table of standard normal float32 values built from a seed, and a
perturbation is named by an offset into it: `ε = table[offset : offset + P]` for a network of
P parameters. So a worker sends the learner an offset and a return, never a vector of P
numbers, and the learner rebuilds ε from its own copy. Theirs held 250M values (1 GB); a
table needs only to be much longer than P for slices at random offsets to be close to
independent.

Once per node, not per process: the first process on a machine to need a (seed, size) table
builds it into a POSIX shared-memory file (`/dev/shm/shoal-noise-...-SEED-SIZE`), and every
later process of the node (Ray actors, the learner) maps that segment read-only instead
of building and holding its own copy. The segment is removed when the process that built it
exits (Python's resource tracker does it even after a SIGKILL); processes that mapped it keep
their mapping, and one starting later builds the table anew. Where shared memory is missing or
too small (a container's 64 MB /dev/shm), or the builder died mid-way, the process builds a
private table: the values are the same, only the memory is not shared.
"""

from __future__ import annotations

import atexit
import mmap
import os
import threading
import time
from multiprocessing import resource_tracker

import numpy as np

__all__ = ["noise_table", "perturbations", "segment_path"]

_TABLES: dict[tuple[int, int], np.ndarray] = {}
_LOCK = threading.Lock()
SHM_DIR = "/dev/shm"  # POSIX shared memory on Linux: a tmpfs of the machine's memory
_HEADER = 64  # bytes before the values: a ready mark, then padding (keeps them aligned)
_READY = 0x5EED7AB1E0000001  # written last: the values after it are complete
WAIT_S = 120.0  # longest wait for another process to finish building the table


def noise_table(seed: int, size: int) -> np.ndarray:
    """The node's read-only table of `size` float32 normals drawn from `seed`: mapped from
    shared memory when a process of this node built it, else built (into shared memory when
    possible); each process maps or builds it once, for all its users."""
    key = (int(seed), int(size))
    with _LOCK:
        table = _TABLES.get(key)
        if table is None:
            table = _shared(*key)
            if table is None:
                table = _build(*key, np.empty(key[1], np.float32))
            table.flags.writeable = False
            _TABLES[key] = table
    return table


def segment_path(seed: int, size: int) -> str:
    """The shared-memory file that holds the (seed, size) table on a node (numpy's version in
    the name: its generators' streams may change between versions)."""
    return os.path.join(SHM_DIR, f"shoal-noise-np{np.__version__}-{int(seed)}-{int(size)}")


def _build(seed: int, size: int, out: np.ndarray) -> np.ndarray:
    np.random.default_rng(seed).standard_normal(size, dtype=np.float32, out=out)
    return out


def _shared(seed: int, size: int) -> np.ndarray | None:
    """The table in the node's shared memory (built here if no process has), or None."""
    path, nbytes = segment_path(seed, size), _HEADER + 4 * size
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _attach(path, nbytes, size)
    except OSError:  # no shared memory here
        return None
    try:
        # Removed when this process exits: here, or by the resource tracker (a process of
        # its own) after a SIGKILL, so a builder that dies never leaves a half-built table.
        resource_tracker.register("/" + os.path.basename(path), "shared_memory")
        atexit.register(_remove, path)
        if not _room_for(nbytes):  # writing past a full tmpfs would kill us with SIGBUS
            _remove(path)
            return None
        os.ftruncate(fd, nbytes)
        memory = mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)
    values = _build(seed, size, _values(memory, size))
    memory.flush()
    _mark(memory)[0] = _READY
    return values


def _attach(path: str, nbytes: int, size: int) -> np.ndarray | None:
    """Map the table another process built, once its ready mark is set; None if it is gone,
    has another size, or was not finished within `WAIT_S`."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            if os.fstat(fd).st_size == nbytes:  # else its builder has not sized it yet
                memory = mmap.mmap(fd, nbytes, prot=mmap.PROT_READ)
                if _mark(memory)[0] == _READY:
                    return _values(memory, size)
                memory.close()
        finally:
            os.close(fd)
        time.sleep(0.05)
    return None


def _values(memory: mmap.mmap, size: int) -> np.ndarray:
    return np.frombuffer(memory, np.float32, count=size, offset=_HEADER)


def _mark(memory: mmap.mmap) -> np.ndarray:
    return np.frombuffer(memory, np.uint64, count=1)


def _room_for(nbytes: int) -> bool:
    """Whether the shared-memory file system has `nbytes` free."""
    stats = os.statvfs(SHM_DIR)
    return stats.f_bavail * stats.f_frsize > nbytes


def _remove(path: str) -> None:
    try:
        os.unlink(path)
        resource_tracker.unregister("/" + os.path.basename(path), "shared_memory")
    except FileNotFoundError:
        pass


def perturbations(table: np.ndarray, offsets: np.ndarray, dim: int) -> np.ndarray:
    """The perturbations at `offsets [n]`, `[n, dim]` float32."""
    out = np.empty((len(offsets), dim), np.float32)
    for row, offset in enumerate(np.asarray(offsets, np.int64).tolist()):
        out[row] = table[offset : offset + dim]
    return out
