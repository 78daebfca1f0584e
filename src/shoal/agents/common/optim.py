"""One optimiser step, for learners that step several optimisers on separate losses."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["optimizer_step"]


def optimizer_step(optimizer: Any, loss: torch.Tensor) -> None:
    """Zero the gradients, back-propagate `loss`, step (`shoal.optim.Adam` or a torch one)."""
    optimizer.zero_grad()
    loss.backward()  # type: ignore[no-untyped-call]
    optimizer.step()
