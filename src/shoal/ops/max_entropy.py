"""Soft Actor-Critic's policy and temperature losses, per element.

Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications" (arXiv:1812.05905).
Every loss returns one value per input element; the caller reduces (usually with `.mean()`).
"""

from __future__ import annotations

from torch import Tensor

from shoal.ops._checks import check_floating, check_nonnegative, check_same_shape

__all__ = ["soft_policy_loss", "temperature_loss"]


def soft_policy_loss(log_pi: Tensor, q_pi: Tensor, alpha: float | Tensor) -> Tensor:
    """`α log π(a | s) - Q(s, a)` with `a` the policy's reparameterised sample (section 4.2).

    Minimising it moves the policy towards `exp(Q / α)`; gradients reach the policy through
    both `log_pi` and `q_pi` (the critic's own parameters are the caller's to freeze). α is a
    constant here.

    Args:
        log_pi: `log π(a | s)` of the sampled actions, any shape.
        q_pi: the critic's value of the same actions (SAC: the smaller of two), same shape.
        alpha: the temperature α >= 0, a float or a scalar tensor.

    Returns:
        per-element loss, same shape as `log_pi`.
    """
    check_floating("log_pi", log_pi)
    check_same_shape("log_pi", log_pi, [("q_pi", q_pi)])
    if isinstance(alpha, Tensor):
        if alpha.numel() != 1:
            raise ValueError(f"alpha must be a scalar, got shape {tuple(alpha.shape)}")
        alpha = alpha.detach().reshape(())
    else:
        check_nonnegative("alpha", alpha)
    return alpha * log_pi - q_pi


def temperature_loss(log_alpha: Tensor, log_pi: Tensor, target_entropy: float) -> Tensor:
    """`-log α · (log π(a | s) + H̄)`: automatic entropy tuning (section 5).

    The paper's objective `J(α) = E[-α log π(a | s) - α H̄]` with `log α` as the variable,
    as the authors' implementation (softlearning) and Stable-Baselines3 do: the gradient has
    the same sign, so α grows while the policy's entropy `-log π` is below the target `H̄` and
    shrinks while it is above. `log_pi` is a constant here; only `log_alpha` gets gradients.

    Args:
        log_alpha: log of the temperature, a scalar tensor (usually a parameter).
        log_pi: `log π(a | s)` of actions sampled from the current policy, any shape.
        target_entropy: the entropy target H̄ (SAC: `-dim(A)`).

    Returns:
        per-element loss, shape of `log_pi`.
    """
    check_floating("log_alpha", log_alpha)
    check_floating("log_pi", log_pi)
    if log_alpha.numel() != 1:
        raise ValueError(f"log_alpha must be a scalar, got shape {tuple(log_alpha.shape)}")
    return -log_alpha.reshape(()) * (log_pi.detach() + float(target_entropy))
