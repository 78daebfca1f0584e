"""IMPALA (Espeholt et al. 2018): an actor-critic that learns off-policy with V-trace targets."""

from functools import partial

from shoal.agents.base import Agent, Layout
from shoal.agents.impala.actor import IMPALAPolicy
from shoal.agents.impala.config import IMPALAConfig
from shoal.agents.impala.learner import IMPALALearner
from shoal.agents.impala.networks import make_networks
from shoal.data import DataPath, UnrollQueue
from shoal.envs.spec import EnvSpec


def _queue(batch: int, capacity: int, shards: int, seed: int) -> UnrollQueue:
    return UnrollQueue(batch=batch, capacity=capacity, on_policy=False)


def make_data_path(spec: EnvSpec, config: IMPALAConfig, layout: Layout) -> DataPath:
    """Off-policy: `batch_size` unrolls per update, taken as they come from any actor, while
    actors keep acting; the queue's capacity bounds the policy lag V-trace corrects for."""
    return DataPath(
        unroll_length=config.unroll_length,
        make_table=partial(_queue, config.batch_size, layout.queue_capacity),
    )


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
