"""The actor-critic family: what PPO, A2C and A3C share.

- `networks`: `ActorCritic`, a torso picked from the observation space with policy and value
  heads (and optional observation and reward normalisation).
- `policy`: `PPOPolicy`, the stochastic policy that records log-probabilities.
- `loss`: the n-step advantage actor-critic loss (Mnih et al. 2016) of A2C's learner and A3C's
  actors.
- `data`: the on-policy unroll queue of PPO and A2C.
"""

from shoal.agents.actor_critic.data import on_policy_data_path
from shoal.agents.actor_critic.loss import LossSettings, actor_critic_loss
from shoal.agents.actor_critic.networks import ActorCritic, NetworkSettings, make_networks
from shoal.agents.actor_critic.policy import PPOPolicy

__all__ = [
    "ActorCritic",
    "LossSettings",
    "NetworkSettings",
    "PPOPolicy",
    "actor_critic_loss",
    "make_networks",
    "on_policy_data_path",
]
