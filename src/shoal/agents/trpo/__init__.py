"""Trust Region Policy Optimization (Schulman et al. 2015, Appendix C) with GAE (Schulman et al.
2016), on rollouts of a vector env.

Each update takes one natural-gradient step of the policy, the direction solved by conjugate
gradient on Fisher-vector products and the step length fixed by the KL trust region and a
backtracking line search, then fits the value function by epochs of Adam minibatch steps. The
network, policy and on-policy unroll queue are the actor-critic family's
(`shoal.agents.actor_critic`); the trust-region math is `shoal.ops.trust_region`.
"""

from shoal.agents.actor_critic import PPOPolicy, make_networks, on_policy_data_path
from shoal.agents.base import Agent, Layout
from shoal.agents.trpo.config import TRPOConfig, validate
from shoal.agents.trpo.learner import TRPOLearner
from shoal.data import DataPath
from shoal.envs.spec import EnvSpec


def make_data_path(spec: EnvSpec, config: TRPOConfig, layout: Layout) -> DataPath:
    """On-policy: the actor-critic family's unroll queue (`on_policy_data_path`)."""
    return on_policy_data_path(spec, config, layout)


AGENT = Agent(
    name="trpo",
    config_cls=TRPOConfig,
    make_networks=make_networks,
    make_policy=PPOPolicy,
    make_learner=TRPOLearner,
    make_data_path=make_data_path,
    validate=validate,
    # Read by the learner at every update, so PBT may change them in place.
    mutable=frozenset(
        {
            "learning_rate",
            "gamma",
            "gae_lambda",
            "max_kl",
            "cg_damping",
            "line_search_shrink",
            "value_epochs",
        }
    ),
)

__all__ = ["AGENT", "TRPOConfig"]
