"""The shared noise table of OpenAI's evolution strategies (Salimans et al. 2017, section 2.1).

Every process builds the same table of standard normal float32 values once, from a seed, and
a perturbation is named by an offset into it: `ε = table[offset : offset + P]` for a network of
P parameters. So a worker sends the learner an offset and a return, never a vector of P
numbers, and the learner rebuilds ε from its own copy. Theirs held 250M values (1 GB); a
table needs only to be much longer than P for slices at random offsets to be close to
independent.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["noise_table", "perturbations"]

_TABLES: dict[tuple[int, int], np.ndarray] = {}
_LOCK = threading.Lock()


def noise_table(seed: int, size: int) -> np.ndarray:
    """The process's table of `size` float32 normals drawn from `seed`, built on first use
    and shared by every policy and learner of the process afterwards (read-only)."""
    key = (int(seed), int(size))
    with _LOCK:
        table = _TABLES.get(key)
        if table is None:
            table = np.random.default_rng(key[0]).standard_normal(key[1], dtype=np.float32)
            table.flags.writeable = False
            _TABLES[key] = table
    return table


def perturbations(table: np.ndarray, offsets: np.ndarray, dim: int) -> np.ndarray:
    """The perturbations at `offsets [n]`, `[n, dim]` float32."""
    out = np.empty((len(offsets), dim), np.float32)
    for row, offset in enumerate(np.asarray(offsets, np.int64).tolist()):
        out[row] = table[offset : offset + dim]
    return out
