"""The actor-critic family: what PPO, A2C, A3C, REINFORCE (`pg`) and TRPO share.

- `config`: the config section `ActorCriticConfig` every family config inherits, and the
  smaller sections some of them add (`ObservationNormConfig`, `GAEConfig`,
  `LossWeightsConfig`, `LSTMConfig`).
- `networks`: `ActorCritic`, a torso picked from the observation space with policy and value
  heads (and optional observation and reward normalisation), and an optional LSTM core
  (`use_lstm`) run over time-major sequences (`ActorCritic.unroll`).
- `policy`: `PPOPolicy`, the stochastic policy that records log-probabilities (and, with an
  LSTM, carries the core's state through the runtime's row store).
- `sequences`: the whole-sequence inputs of a recurrent learner (episode starts and the state
  each env's sequence started from) and PPO's minibatches of whole sequences.
- `loss`: the n-step advantage actor-critic loss (Mnih et al. 2016) of A2C's learner and A3C's
  actors.
- `learner`: `OneStepLearner`, one Adam step of an agent's loss per batch (A2C's, REINFORCE's).
- `data`: the on-policy unroll queue of PPO and A2C.
"""

from shoal.agents.actor_critic.config import (
    ActorCriticConfig,
    GAEConfig,
    LossWeightsConfig,
    LSTMConfig,
    ObservationNormConfig,
    unroll_length_param,
)
from shoal.agents.actor_critic.data import on_policy_data_path
from shoal.agents.actor_critic.learner import LossFn, OneStepLearner
from shoal.agents.actor_critic.loss import LossSettings, actor_critic_loss
from shoal.agents.actor_critic.networks import (
    ActorCritic,
    CoreState,
    NetworkSettings,
    Unrolled,
    make_networks,
)
from shoal.agents.actor_critic.policy import PPOPolicy
from shoal.agents.actor_critic.sequences import sequence_inputs, sequence_minibatches

__all__ = [
    "ActorCritic",
    "ActorCriticConfig",
    "CoreState",
    "GAEConfig",
    "LSTMConfig",
    "LossFn",
    "LossSettings",
    "LossWeightsConfig",
    "NetworkSettings",
    "ObservationNormConfig",
    "OneStepLearner",
    "PPOPolicy",
    "Unrolled",
    "actor_critic_loss",
    "make_networks",
    "on_policy_data_path",
    "sequence_inputs",
    "sequence_minibatches",
    "unroll_length_param",
]
