"""Output heads that map torso features `[B, F]` to policy, value and Q outputs."""

from __future__ import annotations

import torch
from torch import nn

from shoal.nets.mlp import orthogonal_init

__all__ = ["CategoricalHead", "DuelingQHead", "GaussianHead", "ValueHead"]


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


class DuelingQHead(nn.Module):
    """Dueling Q-values of Wang et al. 2016, "Dueling network architectures for deep RL".

    Separate value and advantage streams (Linear `hidden`, ReLU, Linear) combine as
    `Q = V + A - mean_a(A)` (their eq. 9): subtracting the mean makes V and A identifiable,
    since any constant could otherwise move between them. `[B, F] -> [B, A]`.
    """

    def __init__(self, in_features: int, num_actions: int, hidden: int = 512) -> None:
        super().__init__()
        gain = 2**0.5  # for the ReLU between the two layers of each stream
        self.value_stream = nn.Sequential(
            orthogonal_init(nn.Linear(in_features, hidden), gain),
            nn.ReLU(),
            orthogonal_init(nn.Linear(hidden, 1), 1.0),
        )
        self.advantage_stream = nn.Sequential(
            orthogonal_init(nn.Linear(in_features, hidden), gain),
            nn.ReLU(),
            orthogonal_init(nn.Linear(hidden, num_actions), 1.0),
        )

    def streams(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`[B, F]` -> (value `[B]`, advantages `[B, A]`) before they are combined."""
        return self.value_stream(features).squeeze(-1), self.advantage_stream(features)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """`[B, F]` -> Q-values `[B, A]`."""
        value, advantage = self.streams(features)
        return value.unsqueeze(-1) + advantage - advantage.mean(-1, keepdim=True)
