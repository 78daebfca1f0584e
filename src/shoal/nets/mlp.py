"""Multi-layer perceptron torso and the orthogonal initialisation PPO implementations use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn

Activation = Literal["tanh", "relu"]
_ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU}


def orthogonal_init(layer: nn.Linear, gain: float) -> nn.Linear:
    """Orthogonal weights scaled by `gain` and zero bias.

    As in Engstrom et al. 2020, "Implementation Matters in Deep Policy Gradients".
    """
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class MLP(nn.Module):
    """Flatten, then Linear + activation per hidden size. `[B, *in_shape] -> [B, hidden[-1]]`."""

    def __init__(
        self, in_features: int, hidden_sizes: Sequence[int], activation: Activation
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for size in hidden_sizes:
            layers += [orthogonal_init(nn.Linear(width, size), 2**0.5), _ACTIVATIONS[activation]()]
            width = size
        self.layers = nn.Sequential(*layers)
        self.out_features = width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)
