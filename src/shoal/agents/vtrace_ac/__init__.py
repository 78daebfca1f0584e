"""The V-trace family: what IMPALA and APPO share.

- `config`: `VTraceConfig`, the config section both inherit (IMPALA's defaults).
- `networks`: `VTraceNet`, a torso picked from the observation space (or named), an optional
  LSTM core, categorical policy and value heads, over time-major unrolls.
- `policy`: `VTracePolicy`, the behaviour policy μ, recording its logits for V-trace.
- `batch`: an unroll as tensors (`Batch`) and one pass of the network over it (`evaluate`), with
  the final observation's value at each truncation.
- `loss`: the V-trace actor-critic loss with the agent's policy term left open: `vtrace_terms`
  (log-probabilities, V-trace targets, standardised advantages) and `vtrace_actor_critic_loss`
  (the policy term plus the weighted baseline loss and entropy bonus, and the metrics).
- `learner`: `VTraceLearner`, Adam steps of the agent's loss per batch of unrolls, with hooks
  for the number of steps, what follows each step and the agent's own metrics.
- `data`: the off-policy unroll queue with bounded staleness.
- `agent`: `vtrace_agent`, an agent's `Agent` record from its name, config and learner (the
  family's network, policy and queue; `VTRACE_MUTABLE`, the fields PBT may change).
"""

from shoal.agents.vtrace_ac.agent import VTRACE_MUTABLE, vtrace_agent, vtrace_data_path
from shoal.agents.vtrace_ac.batch import Batch, Evaluated, evaluate, masked_mean
from shoal.agents.vtrace_ac.config import VTraceConfig
from shoal.agents.vtrace_ac.data import off_policy_data_path
from shoal.agents.vtrace_ac.learner import StepLoss, VTraceLearner
from shoal.agents.vtrace_ac.loss import VTraceTerms, vtrace_actor_critic_loss, vtrace_terms
from shoal.agents.vtrace_ac.networks import NetworkSettings, VTraceNet, check_fits, make_networks
from shoal.agents.vtrace_ac.policy import VTracePolicy

__all__ = [
    "VTRACE_MUTABLE",
    "Batch",
    "Evaluated",
    "NetworkSettings",
    "StepLoss",
    "VTraceConfig",
    "VTraceLearner",
    "VTraceNet",
    "VTracePolicy",
    "VTraceTerms",
    "check_fits",
    "evaluate",
    "make_networks",
    "masked_mean",
    "off_policy_data_path",
    "vtrace_actor_critic_loss",
    "vtrace_agent",
    "vtrace_data_path",
    "vtrace_terms",
]
