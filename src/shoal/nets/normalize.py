"""Running mean and variance of a stream, kept as module buffers so checkpoints carry them."""

from __future__ import annotations

import torch
from torch import nn


class RunningNorm(nn.Module):
    """Normalise inputs by running statistics: `(x - mean) / sqrt(var + eps)`, clipped.

    Statistics merge batches with the parallel-variance formula (Chan et al. 1979), so the result
    does not depend on how a stream is cut into batches. `update` is called by whoever owns the
    data (the learner), never inside `forward`, so acting does not change the statistics.
    """

    def __init__(self, shape: tuple[int, ...], clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))
        self.clip = clip
        self.eps = eps

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        """Merge a batch `[N, *shape]` into the statistics."""
        batch = batch.to(torch.float64).reshape(-1, *self.mean.shape)
        n = batch.shape[0]
        if n == 0:
            return
        batch_mean = batch.mean(0)
        batch_var = batch.var(0, unbiased=False)
        delta = batch_mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        m2 = self.var * self.count + batch_var * n + delta.square() * self.count * n / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        std = (self.var + self.eps).sqrt().to(x.dtype)
        return ((x - self.mean.to(x.dtype)) / std).clamp(-self.clip, self.clip)
