"""Behavioural cloning's loss: the negative log-likelihood of the dataset's actions under the
policy (cross-entropy for discrete actions), or the squared error of the Gaussian's mean."""

from __future__ import annotations

from typing import Any

import torch

from shoal import ops
from shoal.agents.bc.config import BCConfig
from shoal.agents.bc.networks import BCNet


def bc_loss(
    net: BCNet, obs: Any, actions: torch.Tensor, config: BCConfig
) -> tuple[torch.Tensor, dict[str, float]]:
    """`obs [B, ...]`, `actions [B]` (discrete) or `[B, D]` -> (loss, metrics).

    Discrete: `-log π(a|s)` averaged over the batch, with the share of actions the policy's
    most likely action matches (`accuracy`). Continuous: `-log N(a; μ(s), σ)` (`nll`) or
    `|a - μ(s)|²` (`mse`), summed over action dimensions, averaged over the batch."""
    params = net(obs)
    if net.discrete:
        log_prob = ops.categorical_log_prob(params, actions.long())
        loss = -log_prob.mean()
        accuracy = (params.argmax(-1) == actions).float().mean()
        return loss, {"loss": float(loss.detach()), "accuracy": float(accuracy)}
    actions = actions.reshape(params.shape).float()
    squared = (params - actions).pow(2).sum(-1).mean()
    metrics = {"mse": float(squared.detach())}
    if config.loss == "mse":
        loss = squared
    else:
        log_std = net.log_std
        assert log_std is not None
        loss = -ops.gaussian_log_prob(params, log_std, actions).mean()
        metrics["log_std"] = float(log_std.detach().mean())
    metrics["loss"] = float(loss.detach())
    return loss, metrics
