"""Adam without `torch.optim`: the same update, minus the ~1.4 s import of torch._dynamo.

`torch.optim.Optimizer.__init__` imports torch._dynamo (torch 2.x), which costs more than a whole
CartPole run takes to learn. This class performs the update of `torch.optim.Adam` with
amsgrad=False and no weight decay (Kingma & Ba 2015, Algorithm 1, with eps added after the
bias-corrected square root as torch does), using the same fused foreach kernels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import torch


class Adam:
    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr = lr
        self.betas = betas
        self.eps = eps
        self.steps = 0
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One Adam step on every parameter that has a gradient."""
        live = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not live:
            return
        params = [self.params[i] for i in live]
        grads = [self.params[i].grad for i in live]
        exp_avg = [self.exp_avg[i] for i in live]
        exp_avg_sq = [self.exp_avg_sq[i] for i in live]
        beta1, beta2 = self.betas
        self.steps += 1
        torch._foreach_lerp_(exp_avg, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sq, beta2)
        torch._foreach_addcmul_(exp_avg_sq, grads, grads, 1 - beta2)
        bias1 = 1 - beta1**self.steps
        bias2_sqrt = math.sqrt(1 - beta2**self.steps)
        denom = torch._foreach_sqrt(exp_avg_sq)
        torch._foreach_div_(denom, bias2_sqrt)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(params, exp_avg, denom, -self.lr / bias1)

    def state_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "lr": self.lr,
            "exp_avg": [t.clone() for t in self.exp_avg],
            "exp_avg_sq": [t.clone() for t in self.exp_avg_sq],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if len(state["exp_avg"]) != len(self.params):
            raise ValueError(
                f"optimizer state has {len(state['exp_avg'])} tensors, the model has "
                f"{len(self.params)} parameters"
            )
        self.steps = int(state["steps"])
        self.lr = float(state["lr"])
        for target, source in zip(self.exp_avg, state["exp_avg"], strict=True):
            target.copy_(source)
        for target, source in zip(self.exp_avg_sq, state["exp_avg_sq"], strict=True):
            target.copy_(source)
