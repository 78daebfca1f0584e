"""Asynchronous PPO's pieces beyond PPO's clipped surrogate (APPO: RLlib's and Sample Factory's).

- `target_clipped_log_ratio`: the probability ratio of IMPACT's surrogate, taken against a
  target network's policy rather than the behaviour policy, with the behaviour-to-target weight
  clipped (Luo et al. 2020, "IMPACT: Importance Weighted Asynchronous Architectures with Clipped
  Target Networks", arXiv:1912.00167, Section 4, as RLlib's APPO computes it).
- `adaptive_kl_coefficient`: the KL penalty's coefficient, raised when the measured KL overshoots
  its target and lowered when it undershoots (Schulman et al. 2017, arXiv:1707.06347, Section 4,
  with RLlib's thresholds and factors).

The clipped surrogate itself is `shoal.ops.clipped_surrogate_loss`, the KL
`shoal.ops.categorical_kl`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from shoal.ops._checks import check_floating, check_nonnegative, check_positive, check_same_shape

__all__ = ["adaptive_kl_coefficient", "target_clipped_log_ratio"]


def target_clipped_log_ratio(
    log_pi_a: Tensor, log_mu_a: Tensor, log_target_a: Tensor, max_weight: float = 2.0
) -> Tensor:
    """`log[(π(a|x) / μ(a|x)) · min(μ(a|x) / π_target(a|x), max_weight)]`, per element.

    IMPACT's ratio (Luo et al. 2020, Section 4): the surrogate compares the learner's policy π
    with a slowly moving target policy π_target instead of the behaviour policy μ that acted,
    so that data of many ages share one proximal anchor. Where `μ / π_target <= max_weight` it
    is `log π - log π_target`; beyond, the behaviour-to-target weight is capped at `max_weight`
    (RLlib's APPO clips it to [0, 2]). Feed it to `clipped_surrogate_loss` as `log_ratio`.

    Gradients flow through `log_pi_a` only: behaviour and target log-probabilities are constants.

    Args:
        log_pi_a: `log π(a_t|x_t)` under the learner's policy, any shape.
        log_mu_a: `log μ(a_t|x_t)` under the behaviour policy, same shape.
        log_target_a: `log π_target(a_t|x_t)` under the target network's policy, same shape.
        max_weight: cap c > 0 of `μ / π_target` (inf: no cap, the ratio is `π / π_target`).

    Returns:
        the log-ratio, same shape as `log_pi_a`.
    """
    check_floating("log_pi_a", log_pi_a)
    check_same_shape("log_pi_a", log_pi_a, [("log_mu_a", log_mu_a), ("log_target_a", log_target_a)])
    check_floating("log_mu_a", log_mu_a)
    check_floating("log_target_a", log_target_a)
    if max_weight != math.inf:
        check_positive("max_weight", max_weight)
    log_mu_a, log_target_a = log_mu_a.detach(), log_target_a.detach()
    # In log space, so a vanishing target probability cannot overflow the weight before the cap.
    log_weight = torch.clamp(log_mu_a - log_target_a, max=math.log(max_weight))
    return log_pi_a - log_mu_a + log_weight


def adaptive_kl_coefficient(
    coefficient: float,
    kl: float,
    target: float,
    *,
    factor_up: float = 1.5,
    factor_down: float = 0.5,
) -> float:
    """The next KL-penalty coefficient β from the KL `d` just measured (Schulman et al. 2017,
    Section 4: "if d > d_targ × 1.5, β ← β × 2; if d < d_targ / 1.5, β ← β / 2").

    With RLlib's thresholds and factors (its APPO and PPO learners): β ← β × `factor_up` when
    `d > 2 d_targ`, β ← β × `factor_down` when `d < d_targ / 2`, unchanged in between.

    Args:
        coefficient: the current β >= 0 (0 stays 0).
        kl: the measured mean KL(π_old ‖ π) >= 0.
        target: the target KL d_targ > 0.
        factor_up: multiplier > 1 when the KL overshoots.
        factor_down: multiplier in (0, 1) when it undershoots.

    Returns:
        the new β.
    """
    check_nonnegative("coefficient", coefficient)
    check_nonnegative("kl", kl)
    check_positive("target", target)
    if not factor_up > 1.0 or not 0.0 < factor_down < 1.0:
        raise ValueError(
            f"need factor_up > 1 and 0 < factor_down < 1, got {factor_up} and {factor_down}"
        )
    if kl > 2.0 * target:
        return coefficient * factor_up
    if kl < 0.5 * target:
        return coefficient * factor_down
    return coefficient
