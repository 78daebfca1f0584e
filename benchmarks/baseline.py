"""Another commit of shoal, to measure it beside this one in the same run.

`checkout(ref)` makes a temporary git worktree of `ref` and yields the environment that runs
`python -m shoal` from its sources (same interpreter and packages, its `src` first on the path),
so a benchmark can interleave the two commits' runs on the same machine and load.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def checkout(ref: str) -> Iterator[dict[str, str]]:
    with tempfile.TemporaryDirectory(prefix="shoal-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref],
            check=True,
            capture_output=True,
        )
        try:
            yield {**os.environ, "PYTHONPATH": str(tree / "src")}
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                capture_output=True,
            )
