"""Exploration noise of deterministic continuous policies: the Ornstein-Uhlenbeck process.

Lillicrap et al. 2016, "Continuous control with deep reinforcement learning" (DDPG,
arXiv:1509.02971), section 3: "we used an Ornstein-Uhlenbeck process (Uhlenbeck & Ornstein,
1930) to generate temporally correlated exploration", with θ = 0.15 and σ = 0.2 (section 7).
The process is discretised by Euler-Maruyama, as in OpenAI Baselines' and Stable-Baselines3's
`OrnsteinUhlenbeckActionNoise` (whose `dt` is 1e-2):

    x_t = x_{t-1} + θ (μ - x_{t-1}) dt + σ √dt ε_t,   ε_t ~ N(0, I)

With dt = 1 it is rlax's `add_ornstein_uhlenbeck_noise` (damping θ). Shapes are `[...]`,
usually `[B, D]`: one process per env row and action entry.
"""

from __future__ import annotations

import math

from torch import Tensor

from shoal.ops._checks import check_floating, check_nonnegative, check_positive, check_same_shape

__all__ = ["ornstein_uhlenbeck_step"]


def ornstein_uhlenbeck_step(
    x_tm1: Tensor,
    epsilon_t: Tensor,
    theta: float,
    sigma: float,
    dt: float = 1.0,
    mu: float = 0.0,
) -> Tensor:
    """One step of the discretised Ornstein-Uhlenbeck process.

    `x_t = x_{t-1} + θ (μ - x_{t-1}) dt + σ √dt ε_t` (Lillicrap et al. 2016, section 3; the
    Euler-Maruyama step of `dx = θ (μ - x) dt + σ dW`).

    Args:
        x_tm1: the process at the previous step `[...]` (μ, or 0, at an episode's start).
        epsilon_t: standard normal draws ε_t, same shape.
        theta: mean-reversion rate θ >= 0 (0: a random walk).
        sigma: noise scale σ >= 0.
        dt: time step > 0.
        mu: the mean μ the process reverts to.

    Returns:
        x_t `[...]`.
    """
    check_floating("x_tm1", x_tm1)
    check_same_shape("x_tm1", x_tm1, [("epsilon_t", epsilon_t)])
    check_nonnegative("theta", theta)
    check_nonnegative("sigma", sigma)
    check_positive("dt", dt)
    return x_tm1 + theta * (mu - x_tm1) * dt + sigma * math.sqrt(dt) * epsilon_t
