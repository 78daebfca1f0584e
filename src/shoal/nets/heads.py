"""Output heads that map torso features `[B, F]` to policy, value and Q outputs."""

from __future__ import annotations

import torch
from torch import nn

from shoal.nets.mlp import orthogonal_init
from shoal.nets.noisy import NoisyLinear

__all__ = ["CategoricalHead", "DuelingQHead", "GaussianHead", "ValueHead", "q_linear"]


class CategoricalHead(nn.Module):
    """Logits of a categorical policy. `[B, F] -> [B, A]`.

    Orthogonal init with gain 0.01 makes the initial policy near-uniform (Andrychowicz et al.
    2021, "What matters in on-policy RL?").
    """

    def __init__(self, in_features: int, num_actions: int) -> None:
        super().__init__()
        self.linear = orthogonal_init(nn.Linear(in_features, num_actions), 0.01)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """`[B, F]` -> logits `[B, A]`."""
        return self.linear(features)


class GaussianHead(nn.Module):
    """Mean of a diagonal Gaussian policy, with a state-independent `log_std` `[D]`.

    `[B, F] -> mean [B, D]`. A learned log-std that does not depend on the state, as in PPO
    (Schulman et al. 2017); the mean starts near zero (gain 0.01) like the categorical logits.
    """

    def __init__(self, in_features: int, action_dim: int, init_log_std: float = 0.0) -> None:
        super().__init__()
        self.linear = orthogonal_init(nn.Linear(in_features, action_dim), 0.01)
        self.log_std = nn.Parameter(torch.full((action_dim,), float(init_log_std)))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """`[B, F]` -> mean `[B, D]`; the log-std is `self.log_std` `[D]`."""
        return self.linear(features)


class ValueHead(nn.Module):
    """State value. `[B, F] -> [B]`, orthogonal init with gain 1."""

    def __init__(self, in_features: int) -> None:
        super().__init__()
        self.linear = orthogonal_init(nn.Linear(in_features, 1), 1.0)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """`[B, F]` -> values `[B]`."""
        return self.linear(features).squeeze(-1)


def q_linear(
    in_features: int, out_features: int, gain: float, noisy: bool, sigma_0: float
) -> nn.Module:
    """A layer of a Q head: orthogonal `nn.Linear` with `gain`, or a `NoisyLinear` (Fortunato et
    al. 2018) with its own initialisation when `noisy`."""
    if noisy:
        return NoisyLinear(in_features, out_features, sigma_0)
    return orthogonal_init(nn.Linear(in_features, out_features), gain)


class DuelingQHead(nn.Module):
    """Dueling Q-values of Wang et al. 2016, "Dueling network architectures for deep RL".

    Separate value and advantage streams (Linear `hidden`, ReLU, Linear) combine as
    `Q = V + A - mean_a(A)` (their eq. 9): subtracting the mean makes V and A identifiable,
    since any constant could otherwise move between them. `[B, F] -> [B, A]`.

    With `atoms` > 1 (C51, Bellemare et al. 2017) each stream gives `atoms` outputs per value
    or action and they combine atom by atom into logits `[B, A, atoms]`, as in Rainbow (Hessel
    et al. 2018, section 3); `noisy` makes every layer a `NoisyLinear` (Rainbow's noisy nets).
    """

    def __init__(
        self,
        in_features: int,
        num_actions: int,
        hidden: int = 512,
        *,
        atoms: int = 1,
        noisy: bool = False,
        sigma_0: float = 0.5,
    ) -> None:
        super().__init__()
        if atoms < 1:
            raise ValueError(f"atoms must be >= 1, got {atoms}")
        self.num_actions, self.atoms = num_actions, atoms
        gain = 2**0.5  # for the ReLU between the two layers of each stream
        self.value_stream = nn.Sequential(
            q_linear(in_features, hidden, gain, noisy, sigma_0),
            nn.ReLU(),
            q_linear(hidden, atoms, 1.0, noisy, sigma_0),
        )
        self.advantage_stream = nn.Sequential(
            q_linear(in_features, hidden, gain, noisy, sigma_0),
            nn.ReLU(),
            q_linear(hidden, num_actions * atoms, 1.0, noisy, sigma_0),
        )

    def streams(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`[B, F]` -> (value `[B]`, advantages `[B, A]`) before they are combined; with atoms,
        (value `[B, atoms]`, advantages `[B, A, atoms]`)."""
        value, advantage = self.value_stream(features), self.advantage_stream(features)
        if self.atoms == 1:
            return value.squeeze(-1), advantage
        return value, advantage.view(*advantage.shape[:-1], self.num_actions, self.atoms)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """`[B, F]` -> Q-values `[B, A]`, or logits `[B, A, atoms]` with atoms."""
        value, advantage = self.streams(features)
        mean = advantage.mean(-2 if self.atoms > 1 else -1, keepdim=True)
        return value.unsqueeze(-2 if self.atoms > 1 else -1) + advantage - mean
