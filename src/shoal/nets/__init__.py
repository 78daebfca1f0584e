"""Network building blocks: torsos, heads and input normalisation."""

from shoal.nets.mlp import MLP, orthogonal_init
from shoal.nets.normalize import RunningNorm

__all__ = ["MLP", "RunningNorm", "orthogonal_init"]
