"""Fixtures of the dataset and R2D3 tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def minari_root(tmp_path, monkeypatch):
    """Minari's datasets folder ($MINARI_DATASETS_PATH), for this test only."""
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return root
