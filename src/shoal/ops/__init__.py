"""Pure RL math: returns, advantages, policy losses, action distributions, critic targets,
distributional (categorical and quantile) targets, exploration noise, trust-region steps and
tree search (AlphaZero's PUCT).

Stateless functions on time-major `[T, B]` tensors (or any shape where no time axis exists), in
the style of rlax: one topic per module, shape checks on entry, a paper reference per op. This
package imports only torch, numpy and the standard library.
"""

from shoal.ops.actor_critic import NStepAdvantage, n_step_advantage
from shoal.ops.advantages import generalized_advantage_estimation, normalize_advantages
from shoal.ops.cem import CEMResult, cem_maximize
from shoal.ops.distributional import (
    CategoricalLoss,
    categorical_double_q_learning,
    categorical_projection,
)
from shoal.ops.distributions import (
    categorical_entropy,
    categorical_kl,
    categorical_log_prob,
    categorical_sample,
    gaussian_entropy,
    gaussian_kl,
    gaussian_log_prob,
    gaussian_sample,
)
from shoal.ops.double_q import (
    clipped_double_q_target,
    smoothed_target_action,
    soft_clipped_double_q_target,
)
from shoal.ops.evolution import ARSDirection, ars_direction, centered_ranks, es_gradient
from shoal.ops.exploration import ornstein_uhlenbeck_step
from shoal.ops.masking import (
    legal_or_all,
    masked_argmax,
    masked_logits,
    masked_max,
    uniform_legal_actions,
)
from shoal.ops.max_entropy import soft_policy_loss, temperature_loss
from shoal.ops.policy_losses import (
    approx_kl,
    clip_fraction,
    clipped_surrogate_loss,
    clipped_value_loss,
    huber_loss,
    value_loss,
)
from shoal.ops.proximal import adaptive_kl_coefficient, target_clipped_log_ratio
from shoal.ops.quantile import (
    QuantileLoss,
    quantile_double_q_learning,
    quantile_huber_loss,
    quantile_midpoints,
)
from shoal.ops.retrace import retrace, transformed_greedy_retrace
from shoal.ops.returns import (
    complete_return_mask,
    discounted_returns,
    lambda_returns,
    n_step_returns,
)
from shoal.ops.search import (
    AlphaZeroLoss,
    SearchResult,
    dirichlet_noise,
    policy_value_loss,
    puct_scores,
    run_searches,
    visit_policy,
)
from shoal.ops.squashed_gaussian import (
    SquashedSample,
    squashed_gaussian_log_prob,
    squashed_gaussian_sample,
    tanh_log_det_jacobian,
)
from shoal.ops.trust_region import (
    ConjugateGradient,
    LineSearch,
    backtracking_line_search,
    conjugate_gradient,
    fisher_vector_product,
)
from shoal.ops.turns import TurnAdvantages, turn_advantages
from shoal.ops.value_rescaling import (
    combine_q_values,
    signed_hyperbolic,
    signed_parabolic,
    transformed_n_step_double_q_targets,
)
from shoal.ops.vtrace import VTraceReturns, vtrace, vtrace_policy_gradient_loss

__all__ = [
    "ARSDirection",
    "AlphaZeroLoss",
    "CEMResult",
    "CategoricalLoss",
    "ConjugateGradient",
    "LineSearch",
    "NStepAdvantage",
    "QuantileLoss",
    "SearchResult",
    "SquashedSample",
    "TurnAdvantages",
    "VTraceReturns",
    "adaptive_kl_coefficient",
    "approx_kl",
    "ars_direction",
    "backtracking_line_search",
    "categorical_double_q_learning",
    "categorical_entropy",
    "categorical_kl",
    "categorical_log_prob",
    "categorical_projection",
    "categorical_sample",
    "cem_maximize",
    "centered_ranks",
    "clip_fraction",
    "clipped_double_q_target",
    "clipped_surrogate_loss",
    "clipped_value_loss",
    "combine_q_values",
    "complete_return_mask",
    "conjugate_gradient",
    "dirichlet_noise",
    "discounted_returns",
    "es_gradient",
    "fisher_vector_product",
    "gaussian_entropy",
    "gaussian_kl",
    "gaussian_log_prob",
    "gaussian_sample",
    "generalized_advantage_estimation",
    "huber_loss",
    "lambda_returns",
    "legal_or_all",
    "masked_argmax",
    "masked_logits",
    "masked_max",
    "n_step_advantage",
    "n_step_returns",
    "normalize_advantages",
    "ornstein_uhlenbeck_step",
    "policy_value_loss",
    "puct_scores",
    "quantile_double_q_learning",
    "quantile_huber_loss",
    "quantile_midpoints",
    "retrace",
    "run_searches",
    "signed_hyperbolic",
    "signed_parabolic",
    "smoothed_target_action",
    "soft_clipped_double_q_target",
    "soft_policy_loss",
    "squashed_gaussian_log_prob",
    "squashed_gaussian_sample",
    "tanh_log_det_jacobian",
    "target_clipped_log_ratio",
    "temperature_loss",
    "transformed_greedy_retrace",
    "transformed_n_step_double_q_targets",
    "turn_advantages",
    "uniform_legal_actions",
    "value_loss",
    "visit_policy",
    "vtrace",
    "vtrace_policy_gradient_loss",
]
