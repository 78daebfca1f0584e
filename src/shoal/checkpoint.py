"""Atomic checkpoints: written to a temp file and renamed, loaded without executing pickled code."""

from __future__ import annotations

import io
import re
import warnings
from pathlib import Path
from typing import Any

import torch

from shoal.config import write_atomically
from shoal.errors import CheckpointError, ShoalWarning, StorageError

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


def _step(path: Path) -> int:
    return int(_NAME.match(path.name).group(1))  # type: ignore[union-attr]


def save_checkpoint(directory: Path, env_steps: int, payload: dict[str, Any], keep: int) -> Path:
    """Write `payload` as the checkpoint for `env_steps`, then delete all but the newest `keep`.

    Pruning keeps the new checkpoint and the `keep - 1` newest before it; a file named for a
    later step (one `load_latest` found damaged) is never counted as one of those kept."""
    path = checkpoint_path(directory, env_steps)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob(".step-*.tmp"):  # left by a process killed mid-write
            stale.unlink(missing_ok=True)
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


def _read(path: Path) -> dict[str, Any] | str:
    """The checkpoint's contents, or why it cannot be read ("not a ... checkpoint (...)")."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for corrupt or foreign files
        # The first sentence only: torch's weights-only message goes on for a page.
        first = (str(err).strip().splitlines() or [""])[0].split(". ")[0].rstrip(".")
        return f"not a readable shoal checkpoint ({type(err).__name__}: {first:.200})"
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return f"not a shoal checkpoint (no '{FORMAT}' marker)"
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
