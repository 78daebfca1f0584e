"""An ensemble of `E` equally shaped MLPs evaluated together: one batched matmul per layer.

Twin (or more) Q critics of the same widths see the same input; as `E` separate MLPs they cost
`E` small matmuls per layer, each too small to use a core well, plus `E` times the per-op
overhead. Stacking the members' weights `[E, in, out]` turns each layer into one
`torch.baddbmm` over the members (the first layer, whose input all members share, into one
matmul against the members' weights side by side). Each member is initialised as
`torch.nn.Linear` initialises a layer (uniform in `±1/sqrt(in)` for weights and biases), and
`from_linears` / `linear_weights` convert to and from `E` stacks of `nn.Linear` layers exactly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
from torch import nn

from shoal.nets.mlp import Activation

__all__ = ["EnsembleLinear", "EnsembleMLP"]

_ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh}


class EnsembleLinear(nn.Module):
    """`E` linear layers: `x [E, B, in]` (or a shared `[B, in]`) -> `[E, B, out]`.

    `weight [E, in, out]` (transposed against `nn.Linear`'s, so the batched matmul reads it as
    it lies) and `bias [E, 1, out]`.
    """

    def __init__(self, members: int, in_features: int, out_features: int) -> None:
        super().__init__()
        if members < 1:
            raise ValueError(f"an ensemble needs at least one member, got {members}")
        self.members, self.in_features, self.out_features = members, in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = nn.Parameter(
            torch.empty(members, in_features, out_features).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.empty(members, 1, out_features).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2:  # one input for every member: one matmul against [in, E * out]
            e, i, o = self.weight.shape
            wide = self.weight.permute(1, 0, 2).reshape(i, e * o)
            out = (x @ wide).view(len(x), e, o).transpose(0, 1)
            return out + self.bias
        return torch.baddbmm(self.bias, x, self.weight)

    def member(self, x: torch.Tensor, index: int) -> torch.Tensor:
        """Member `index` alone: `x [B, in]` -> `[B, out]`."""
        return torch.addmm(self.bias[index], x, self.weight[index])

    def extra_repr(self) -> str:
        return f"members={self.members}, in={self.in_features}, out={self.out_features}"


class EnsembleMLP(nn.Module):
    """`E` MLPs of the same widths (linear + activation per hidden width, a linear output
    layer), evaluated as one: `x [B, in]` -> `[E, B, out]`."""

    def __init__(
        self,
        members: int,
        in_features: int,
        hidden_sizes: Sequence[int],
        out_features: int,
        activation: Activation,
    ) -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation}")
        widths = [in_features, *hidden_sizes, out_features]
        self.layers = nn.ModuleList(
            EnsembleLinear(members, a, b) for a, b in itertools.pairwise(widths)
        )
        self.members = members
        self.activation = activation

    @property
    def linears(self) -> list[EnsembleLinear]:
        """The layers, input first."""
        return [layer for layer in self.layers if isinstance(layer, EnsembleLinear)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        act = _ACTIVATIONS[self.activation]
        *hidden, last = self.linears
        for layer in hidden:
            x = act(layer(x))
        out: torch.Tensor = last(x)
        return out

    def member(self, x: torch.Tensor, index: int) -> torch.Tensor:
        """Member `index` alone, `x [B, in]` -> `[B, out]` (e.g. TD3's actor loss, which
        needs the first critic only)."""
        act = _ACTIVATIONS[self.activation]
        *hidden, last = self.linears
        for layer in hidden:
            x = act(layer.member(x, index))
        return last.member(x, index)

    @torch.no_grad()
    def load_linears(self, stacks: Sequence[Sequence[nn.Linear]]) -> None:
        """Copy `E` stacks of `nn.Linear` layers (member by member, layer by layer) in."""
        weights = [[(lin.weight, lin.bias) for lin in stack] for stack in stacks]
        self.load_linear_weights(weights)

    @torch.no_grad()
    def load_linear_weights(
        self, members: Sequence[Sequence[tuple[torch.Tensor, torch.Tensor]]]
    ) -> None:
        """Copy `nn.Linear`-laid-out `(weight [out, in], bias [out])` pairs, one list of layers
        per member, in."""
        if len(members) != self.members or any(len(m) != len(self.layers) for m in members):
            raise ValueError(
                f"expected {self.members} members of {len(self.layers)} layers each, got "
                f"{[len(m) for m in members]}"
            )
        for j, layer in enumerate(self.linears):
            layer.weight.copy_(torch.stack([m[j][0].t() for m in members]))
            layer.bias.copy_(torch.stack([m[j][1] for m in members]).unsqueeze(1))

    def linear_weights(self) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
        """Each member's layers as `nn.Linear` lays them out: `(weight [out, in], bias [out])`."""
        return [
            [(layer.weight[e].t(), layer.bias[e, 0]) for layer in self.linears]
            for e in range(self.members)
        ]
