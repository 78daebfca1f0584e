"""Atomic checkpoints: written to a temp file and renamed, loaded without executing pickled code."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import torch

from shoal.config import write_atomically
from shoal.errors import CheckpointError

FORMAT = "shoal-checkpoint-1"
_NAME = re.compile(r"^step-(\d{12})\.pt$")


def checkpoint_path(directory: Path, env_steps: int) -> Path:
    return directory / f"step-{env_steps:012d}.pt"


def list_checkpoints(directory: Path) -> list[Path]:
    """Complete checkpoints in `directory`, oldest first (temp files from a crash are ignored)."""
    if not directory.is_dir():
        return []
    found = [p for p in directory.iterdir() if _NAME.match(p.name)]
    return sorted(found, key=lambda p: int(_NAME.match(p.name).group(1)))  # type: ignore[union-attr]


def save_checkpoint(directory: Path, env_steps: int, payload: dict[str, Any], keep: int) -> Path:
    """Write `payload` as the checkpoint for `env_steps`, then delete all but the newest `keep`."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob(".step-*.tmp"):  # left by a process killed mid-write
        stale.unlink(missing_ok=True)
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, **payload}, buffer)
    path = checkpoint_path(directory, env_steps)
    write_atomically(path, buffer.getvalue())
    for old in list_checkpoints(directory)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def load_checkpoint(path: Path, algo: str | None = None) -> dict[str, Any]:
    """Load with `weights_only=True` (no pickled code runs); check it is shoal's and `algo`'s."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for corrupt or foreign files
        raise CheckpointError(
            f"{path} is not a readable shoal checkpoint ({type(err).__name__}: {err}). "
            "Pass a run directory written by `shoal train`, or a checkpoint from its checkpoints/."
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a shoal checkpoint (no '{FORMAT}' marker).")
    if algo is not None and data.get("algo") != algo:
        raise CheckpointError(
            f"{path} was written by algorithm {data.get('algo')!r}, not {algo!r}. "
            f"Load it with `{data.get('algo')}` or pick another run."
        )
    return data


def load_latest(directory: Path, algo: str | None = None) -> dict[str, Any] | None:
    """The newest checkpoint that loads, or None; a damaged newest falls back to an older one."""
    errors = []
    for path in reversed(list_checkpoints(directory)):
        try:
            data = load_checkpoint(path)
        except CheckpointError as err:
            errors.append(str(err))
            continue
        return load_checkpoint(path, algo) if algo is not None else data
    if errors:
        raise CheckpointError("No checkpoint could be loaded: " + " ".join(errors))
    return None
