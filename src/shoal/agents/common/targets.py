"""Target-network updates, as pure functions (rlax's `incremental_update`, `periodic_update`)
and as one reusable object each (TorchRL's `SoftUpdate`, `HardUpdate`).

- Periodic ("hard") copies: Mnih et al. 2015, "Human-level control through deep reinforcement
  learning", Methods: the target network is the online one, copied every C updates.
- Incremental ("soft", Polyak) averaging: Lillicrap et al. 2016, "Continuous control with deep
  reinforcement learning" (DDPG), section 3: `θ' <- τ θ + (1 - τ) θ'` after every update; SAC
  (Haarnoja et al. 2018) and TD3 (Fujimoto et al. 2018) use it too.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["HardUpdate", "SoftUpdate", "TargetUpdate", "incremental_update", "periodic_update"]


@torch.no_grad()
def incremental_update(target: nn.Module, online: nn.Module, tau: float) -> None:
    """`target <- (1 - tau) target + tau online`, parameter by parameter (buffers untouched)."""
    for t, o in zip(target.parameters(), online.parameters(), strict=True):
        t.lerp_(o, tau)


@torch.no_grad()
def periodic_update(target: nn.Module, online: nn.Module, step: int, period: int) -> bool:
    """Copy `online` (parameters and buffers) into `target` when `step` is a multiple of
    `period`; whether it copied."""
    if step % period != 0:
        return False
    target.load_state_dict(online.state_dict())
    return True


class SoftUpdate:
    """Polyak-average `online` into `target` with rate `tau` (Lillicrap et al. 2016), every
    `period`-th call (SAC's `target_update_period`; 1: every call)."""

    def __init__(self, target: nn.Module, online: nn.Module, tau: float, period: int = 1) -> None:
        if not 0.0 < tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {tau}.")
        self.target, self.online, self.tau, self.period = target, online, float(tau), int(period)

    def __call__(self, step: int) -> None:
        """After gradient step `step` (counted from 1)."""
        if step % self.period == 0:
            incremental_update(self.target, self.online, self.tau)


class HardUpdate:
    """Copy `online` into `target` every `period` gradient steps (Mnih et al. 2015)."""

    def __init__(self, target: nn.Module, online: nn.Module, period: int) -> None:
        if period < 1:
            raise ValueError(f"period must be >= 1, got {period}.")
        self.target, self.online, self.period = target, online, int(period)

    def __call__(self, step: int) -> None:
        """After gradient step `step` (counted from 1)."""
        periodic_update(self.target, self.online, step, self.period)


class TargetUpdate:
    """The value agents' rule: `tau < 1` averages every step (`SoftUpdate`), `tau == 1` copies
    every `period` steps (`HardUpdate`). Reads `tau` and `period` at each call, so a PBT exploit
    that changes them takes effect at once."""

    def __init__(self, target: nn.Module, online: nn.Module) -> None:
        self.target, self.online = target, online

    def __call__(self, step: int, tau: float, period: int) -> None:
        if tau < 1.0:
            incremental_update(self.target, self.online, tau)
        else:
            periodic_update(self.target, self.online, step, period)
