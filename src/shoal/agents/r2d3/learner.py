"""R2D3's learner: the value family's `QLearner` with R2D2's sequence loss, on batches that mix
agent and demo sequences (`shoal.data.demos`); both kinds are learned alike (Paine et al.
2019: the same TD loss, no imitation term), and the loss's metrics say how demonstrations fare.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from shoal.agents.r2d3.config import R2D3Config
from shoal.agents.value import LossResult, QLearner
from shoal.agents.value.recurrent import R2D2Net
from shoal.agents.value.sequence_loss import r2d2_loss
from shoal.envs.spec import EnvSpec


def r2d3_loss(
    online: R2D2Net, target: R2D2Net, data: Mapping[str, np.ndarray], config: R2D3Config
) -> LossResult:
    """R2D2's loss of the mixed batch, with the share of demo sequences in it and their mean
    new priority (`demo_priority_mean`, absent from a batch without one)."""
    result = r2d2_loss(online, target, data, config)
    demo = torch.from_numpy(np.asarray(data["demo"], bool)).to(result.td_abs.device)
    metrics = dict(result.metrics)
    metrics["demo_fraction"] = demo.float().mean()
    if demo.any():
        metrics["demo_priority_mean"] = result.td_abs[demo].mean()
    return LossResult(result.loss, result.td_abs, metrics)


class R2D3Learner(QLearner):
    """`QLearner` on mixed batches of sequences."""

    def __init__(self, spec: EnvSpec, config: R2D3Config, net: R2D2Net) -> None:
        super().__init__(spec, config, net, loss=r2d3_loss)
