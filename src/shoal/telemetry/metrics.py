"""metrics.jsonl (one JSON object per log interval) and TensorBoard scalars, side by side."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from shoal.config import storage_error, write_atomically


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Rows of a metrics.jsonl; a last line cut short by a crash is skipped."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


class MetricsWriter:
    """Appends rows to metrics.jsonl and mirrors the numbers to TensorBoard."""

    def __init__(self, run_dir: Path, tensorboard: bool, resume_step: int | None = None) -> None:
        """`resume_step`: the step the run continues from; rows and events already written
        past it describe work that was lost with the process, and are dropped (all of them
        when a run restarts from step 0 because it has no checkpoint)."""
        self.path = run_dir / "metrics.jsonl"
        if resume_step is not None and self.path.exists():
            kept = [r for r in read_metrics(self.path) if r.get("env_steps", 0) <= resume_step]
            write_atomically(self.path, "".join(json.dumps(r) + "\n" for r in kept))
        self.file = self.path.open("a")
        self.tb = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            tb = run_dir / "tb"
            self.tb = SummaryWriter(str(tb), purge_step=resume_step if tb.exists() else None)

    def write(self, row: dict[str, Any]) -> None:
        clean = {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in row.items()
        }
        try:
            self.file.write(json.dumps(clean) + "\n")
            self.file.flush()
        except OSError as err:  # a full disk, most often
            raise storage_error(self.path, err) from None
        if self.tb is not None:
            step = int(row["env_steps"])
            for key, value in clean.items():
                if key != "env_steps" and isinstance(value, int | float) and value is not None:
                    self.tb.add_scalar(key, value, step)

    def close(self) -> None:
        self.file.close()
        if self.tb is not None:
            self.tb.close()
