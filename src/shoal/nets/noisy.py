"""Noisy linear layers with factorised Gaussian noise (Fortunato et al. 2018, "Noisy Networks for
Exploration", arXiv:1706.10295, section 3).

`y = (μ^w + σ^w ⊙ ε^w) x + μ^b + σ^b ⊙ ε^b`, the noise factorised over the p inputs and q
outputs as `ε^w_{ij} = f(ε_i) f(ε_j)`, `ε^b_j = f(ε_j)` with `f(x) = sgn(x) √|x|` and
`ε ~ N(0, 1)`: p + q draws per sample instead of p q. Initialised (section 3.2) with
`μ ~ U[-1/√p, 1/√p]` and `σ = σ_0 / √p`, σ_0 = 0.5.

In training mode every forward pass draws new noise (NoisyNet-DQN resamples before each action
and for each network in each learner step, Fortunato et al. Algorithm 1, as Rainbow does); in
eval mode the layer is its mean `μ^w x + μ^b`, the greedy policy. `mean_weights(module)`
evaluates with the means for a while without changing anything else.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

__all__ = ["NoisyLinear", "mean_weights", "noisy_layers"]


def _scaled_noise(size: int, device: torch.device) -> torch.Tensor:
    """`f(ε) = sgn(ε) √|ε|`, `ε ~ N(0, 1)`, `[size]`, from torch's global generator."""
    x = torch.randn(size, device=device)
    return x.sign() * x.abs().sqrt()


class NoisyLinear(nn.Module):
    """`[..., in_features] -> [..., out_features]` with learned, factorised Gaussian noise.

    Parameters `weight_mu`, `weight_sigma` `[out, in]`, `bias_mu`, `bias_sigma` `[out]`; the
    last noise drawn is kept in the buffers `epsilon_in` `[in]` and `epsilon_out` `[out]` (not
    saved in checkpoints: it is redrawn at the next forward pass in training).
    """

    def __init__(self, in_features: int, out_features: int, sigma_0: float = 0.5) -> None:
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise ValueError(f"NoisyLinear needs positive sizes, got {in_features}, {out_features}")
        if not 0 < sigma_0 < math.inf:
            raise ValueError(f"sigma_0 must be a finite number > 0, got {sigma_0}")
        self.in_features, self.out_features, self.sigma_0 = in_features, out_features, sigma_0
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
        self.bias_mu = nn.Parameter(torch.empty(out_features))
        self.bias_sigma = nn.Parameter(torch.empty(out_features))
        self.register_buffer("epsilon_in", torch.zeros(in_features), persistent=False)
        self.register_buffer("epsilon_out", torch.zeros(out_features), persistent=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fortunato et al. 2018, section 3.2: `μ ~ U[-1/√p, 1/√p]`, `σ = σ_0 / √p`."""
        bound = 1.0 / math.sqrt(self.in_features)
        with torch.no_grad():
            self.weight_mu.uniform_(-bound, bound)
            self.bias_mu.uniform_(-bound, bound)
            self.weight_sigma.fill_(self.sigma_0 * bound)
            self.bias_sigma.fill_(self.sigma_0 * bound)

    def reset_noise(self) -> None:
        """Draw new factorised noise `f(ε_in)`, `f(ε_out)`. New tensors, not in-place copies: a
        graph built on the previous noise can still be differentiated."""
        device = self.weight_mu.device
        self.epsilon_in = _scaled_noise(self.in_features, device)
        self.epsilon_out = _scaled_noise(self.out_features, device)

    def noisy_weight(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The weight `[out, in]` and bias `[out]` under the last noise drawn."""
        weight_epsilon = torch.outer(self.epsilon_out, self.epsilon_in)
        weight = self.weight_mu + self.weight_sigma * weight_epsilon
        return weight, self.bias_mu + self.bias_sigma * self.epsilon_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return nn.functional.linear(x, self.weight_mu, self.bias_mu)
        self.reset_noise()
        weight, bias = self.noisy_weight()
        return nn.functional.linear(x, weight, bias)

    def extra_repr(self) -> str:
        sizes = f"in_features={self.in_features}, out_features={self.out_features}"
        return f"{sizes}, sigma_0={self.sigma_0}"


def noisy_layers(module: nn.Module) -> list[NoisyLinear]:
    """Every `NoisyLinear` inside `module`."""
    return [m for m in module.modules() if isinstance(m, NoisyLinear)]


@contextmanager
def mean_weights(module: nn.Module) -> Iterator[None]:
    """Within the block, `module`'s noisy layers are their means (the greedy policy); their
    training flags are restored after it, and nothing else changes."""
    layers = noisy_layers(module)
    flags = [layer.training for layer in layers]
    for layer in layers:
        layer.training = False
    try:
        yield
    finally:
        for layer, flag in zip(layers, flags, strict=True):
            layer.training = flag
