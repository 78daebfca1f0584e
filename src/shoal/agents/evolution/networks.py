"""The networks evolution strategies and ARS search over: an MLP (a linear map without hidden
layers) that also acts with a different parameter vector per row, and observation statistics.

The parameters are searched, never differentiated, so a network is its flat parameter vector
θ `[P]` (the order of `parameters()`); `batched(obs, params)` evaluates n rows with n vectors
`[n, P]` in one batched matmul per layer, which is how a policy acts each env with its own
perturbation. Observations are normalised with running moments that the learner merges from
what actors report (OpenAI's `RunningStat`: sum, sum of squares, count; std floored at 0.1).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError

__all__ = ["PerturbableMLP", "check_flat_observations"]

_ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu}


def check_flat_observations(spec: EnvSpec, algo: str) -> int:
    """The observation size; a ConfigError for observations this family does not handle."""
    if spec.dict_obs or len(spec.obs_shape) != 1 or spec.obs_dtype == np.uint8:
        raise ConfigError(
            f"{algo} acts on flat float vector observations; {spec.env_id} gives "
            f"{spec.observation_space}. Use ppo, a2c or impala for images and dict observations."
        )
    return int(spec.obs_shape[0])


class PerturbableMLP(nn.Module):
    """`obs [n, D] -> outputs [n, A]`: Linear (+ activation) per hidden size, then Linear."""

    def __init__(
        self,
        obs_dim: int,
        hidden_sizes: Sequence[int],
        out_dim: int,
        activation: str = "tanh",
        bias: bool = True,
        zero_init: bool = False,
        obs_clip: float = float("inf"),
        normalize_obs: bool = True,
    ) -> None:
        super().__init__()
        widths = [obs_dim, *hidden_sizes, out_dim]
        self.layers = nn.ModuleList(
            nn.Linear(a, b, bias=bias) for a, b in itertools.pairwise(widths)
        )
        with torch.no_grad():
            for layer in self.layers:
                # Normalised-column init of OpenAI's ES; ARS starts from zero.
                weight = torch.randn_like(layer.weight)
                layer.weight.copy_(weight / weight.norm(dim=1, keepdim=True))
                if zero_init:
                    layer.weight.zero_()
                if layer.bias is not None:
                    layer.bias.zero_()
            self.layers[-1].weight.mul_(0.01)
        self.activation = _ACTIVATIONS[activation]
        self.obs_clip, self.normalize_obs = float(obs_clip), normalize_obs
        # OpenAI's RunningStat starts from a count and sum of squares of 0.01: mean 0, std 1.
        self.register_buffer("obs_sum", torch.zeros(obs_dim, dtype=torch.float64))
        self.register_buffer("obs_sumsq", torch.full((obs_dim,), 1e-2, dtype=torch.float64))
        self.register_buffer("obs_count", torch.tensor(1e-2, dtype=torch.float64))
        # The learner's version: a policy tags each episode with the weights it started on.
        self.register_buffer("iteration", torch.tensor(0, dtype=torch.int64))
        self.num_params = sum(p.numel() for p in self.parameters())

    def flat_params(self) -> torch.Tensor:
        """θ `[P]`, a copy."""
        return torch.cat([p.detach().reshape(-1) for p in self.parameters()])

    @torch.no_grad()
    def add_to_params(self, delta: torch.Tensor) -> None:
        """θ += delta `[P]`."""
        offset = 0
        for p in self.parameters():
            p.add_(delta[offset : offset + p.numel()].view_as(p).to(p.dtype))
            offset += p.numel()

    @torch.no_grad()
    def merge_obs_moments(self, total: np.ndarray, sumsq: np.ndarray, count: float) -> None:
        """Add actors' observation moments (sum `[D]`, sum of squares `[D]`, count)."""
        self.obs_sum += torch.as_tensor(total, dtype=torch.float64)
        self.obs_sumsq += torch.as_tensor(sumsq, dtype=torch.float64)
        self.obs_count += float(count)

    def fingerprint(self) -> tuple[int, ...]:
        """Changes whenever θ or the moments change: each tensor's identity and torch's count of
        its in-place writes, which an update, a weight load and a moment merge all bump. Acting
        reuses what it derived from them while this is the same."""
        # The layers' own dicts, not `parameters()`, whose walk of the modules costs more here
        # than the step it would save.
        params = (p for layer in self.layers for p in layer._parameters.values() if p is not None)
        tensors = [*params, *self._buffers.values()]
        return tuple(v for t in tensors for v in (id(t), t._version))

    def moments(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The observations' running mean and std `[D]` (float32), derived once per change."""
        key = self.fingerprint()
        if getattr(self, "_moments_key", None) != key:
            mean = self.obs_sum / self.obs_count
            std = (self.obs_sumsq / self.obs_count - mean.square()).clamp_min(1e-2).sqrt()
            self._moments = (mean.float(), std.float())
            self._moments_key = key
        return self._moments

    def normalise(self, obs: torch.Tensor) -> torch.Tensor:
        if not self.normalize_obs:
            return obs
        mean, std = self.moments()
        x = (obs - mean.to(obs.dtype)) / std.to(obs.dtype)
        return x.clamp(-self.obs_clip, self.obs_clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = self.normalise(obs)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = self.activation(x)
        return x

    def batched(self, obs: torch.Tensor, params: torch.Tensor) -> torch.Tensor:
        """Row i of `obs [n, D]` through the network with parameters `params[i]` (`[n, P]`)."""
        x = self.normalise(obs).unsqueeze(2)  # [n, D, 1]
        n, offset = params.shape[0], 0
        for i, layer in enumerate(self.layers):
            out, inp = layer.weight.shape
            weight = params[:, offset : offset + out * inp].view(n, out, inp)
            offset += out * inp
            if layer.bias is not None:
                bias = params[:, offset : offset + out].unsqueeze(2)
                offset += out
                x = torch.baddbmm(bias, weight, x)
            else:
                x = torch.bmm(weight, x)
            if i + 1 < len(self.layers):
                x = self.activation(x)
        return x.squeeze(2)
