"""Shared fixtures: every run writes under a temporary runs directory, quietly."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def quiet_run(tmp_path: Path) -> dict:
    """Run settings for tests: a private runs dir, no progress bar, no TensorBoard."""
    return {"runs_dir": str(tmp_path / "runs"), "progress": False, "tensorboard": False}
