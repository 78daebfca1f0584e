"""IMPALA (Espeholt et al. 2018): an actor-critic that learns off-policy with V-trace targets."""

from shoal.agents.base import Agent, Layout
from shoal.agents.impala.actor import IMPALAPolicy
from shoal.agents.impala.config import IMPALAConfig
from shoal.agents.impala.learner import IMPALALearner
from shoal.agents.vtrace_ac import make_networks, off_policy_data_path
from shoal.data import DataPath
from shoal.envs.spec import EnvSpec


def make_data_path(spec: EnvSpec, config: IMPALAConfig, layout: Layout) -> DataPath:
    """Off-policy: `batch_size` unrolls per update, taken as they come from any actor, while
    actors keep acting; the queue's capacity bounds the policy lag V-trace corrects for."""
    return off_policy_data_path(config.unroll_length, config.batch_size, layout)


AGENT = Agent(
    name="impala",
    config_cls=IMPALAConfig,
    make_networks=make_networks,
    make_policy=IMPALAPolicy,
    make_learner=IMPALALearner,
    make_data_path=make_data_path,
    mutable=frozenset(
        {
            "learning_rate",
            "entropy_coef",
            "value_coef",
            "gamma",
            "trace_lambda",
            "rho_bar",
            "c_bar",
            "pg_rho_bar",
            "max_grad_norm",
            "reward_clip",
        }
    ),
)

__all__ = ["AGENT", "IMPALAConfig"]
