"""Adam over one flat parameter buffer, without `torch.optim`.

Two reasons. `torch.optim.Optimizer.__init__` imports torch._dynamo (torch 2.x), about 1.4 s,
longer than a CartPole run takes to learn. And small RL networks have many small tensors, so
per-tensor optimiser and clipping kernels dominate a step: here every parameter is a view into
one flat tensor and every gradient a view into another, so Adam and gradient clipping are a few
kernels whatever the network. The update is `torch.optim.Adam`'s with amsgrad=False and no
weight decay (Kingma & Ba 2015, Algorithm 1, eps added after the bias-corrected square root).
Parameters that get no gradient in a step see a zero gradient (their moments decay).
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
        if not self.params:
            raise ValueError("Adam got no parameters that require gradients.")
        self.lr = lr
        self.betas = betas
        self.eps = eps
        self.steps = 0
        with torch.no_grad():
            self.flat = torch.cat([p.detach().reshape(-1) for p in self.params])
        self.flat_grad = torch.zeros_like(self.flat)
        offset = 0
        for p in self.params:
            n = p.numel()
            # The module keeps its Parameter objects; their storage moves into the flat buffer.
            p.data = self.flat[offset : offset + n].view_as(p)
            p.grad = self.flat_grad[offset : offset + n].view_as(p)
            offset += n
        self.exp_avg = torch.zeros_like(self.flat)
        self.exp_avg_sq = torch.zeros_like(self.flat)

    def zero_grad(self) -> None:
        # In place: autograd accumulates into the existing views, so they must stay set.
        self.flat_grad.zero_()

    @torch.no_grad()
    def clip_grad_norm(self, max_norm: float) -> torch.Tensor:
        """Scale gradients to a global L2 norm of at most `max_norm`; returns the norm before."""
        norm = self.flat_grad.norm()
        self.flat_grad.mul_(torch.clamp(max_norm / (norm + 1e-6), max=1.0))
        return norm

    @torch.no_grad()
    def step(self) -> None:
        beta1, beta2 = self.betas
        self.steps += 1
        self.exp_avg.lerp_(self.flat_grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(self.flat_grad, self.flat_grad, value=1 - beta2)
        bias1 = 1 - beta1**self.steps
        bias2_sqrt = math.sqrt(1 - beta2**self.steps)
        denom = (self.exp_avg_sq.sqrt() / bias2_sqrt).add_(self.eps)
        self.flat.addcdiv_(self.exp_avg, denom, value=-self.lr / bias1)

    def state_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "lr": self.lr,
            "exp_avg": self.exp_avg.clone(),
            "exp_avg_sq": self.exp_avg_sq.clone(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state["exp_avg"].shape != self.exp_avg.shape:
            raise ValueError(
                f"optimizer state holds {state['exp_avg'].numel()} values, the model has "
                f"{self.exp_avg.numel()} parameters"
            )
        self.steps = int(state["steps"])
        self.lr = float(state["lr"])
        self.exp_avg.copy_(state["exp_avg"])
        self.exp_avg_sq.copy_(state["exp_avg_sq"])
