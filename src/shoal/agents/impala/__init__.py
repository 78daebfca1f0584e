"""IMPALA (Espeholt et al. 2018): an actor-critic that learns off-policy with V-trace targets."""

from shoal.agents.base import Agent
from shoal.agents.impala.actor import IMPALAEvalPolicy, IMPALAPolicy
from shoal.agents.impala.config import IMPALAConfig, validate
from shoal.agents.impala.learner import IMPALALearner
from shoal.agents.impala.networks import make_networks

AGENT = Agent(
    name="impala",
    config_cls=IMPALAConfig,
    make_networks=make_networks,
    make_policy=IMPALAPolicy,
    make_learner=IMPALALearner,
    make_eval_policy=IMPALAEvalPolicy,
    data="unroll",
    unroll_length=lambda config: config.unroll_length,
    validate=validate,
    # V-trace corrects for a lagging behaviour policy: actors need not wait for each update.
    on_policy=False,
    batch_unrolls=lambda config: config.batch_size,
)

__all__ = ["AGENT", "IMPALAConfig"]
