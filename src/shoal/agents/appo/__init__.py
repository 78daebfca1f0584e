"""APPO: asynchronous PPO, PPO's clipped surrogate on V-trace advantages over IMPALA's
off-policy unroll queue (RLlib's APPO after IMPACT, Luo et al. 2020; Sample Factory's APPO,
Petrenko et al. 2020).

The network, behaviour policy, batch and data path are the V-trace family's
(`shoal.agents.vtrace_ac`), shared with IMPALA; APPO adds its loss and learner.
"""

from shoal.agents.appo.config import APPOConfig
from shoal.agents.appo.learner import APPOLearner
from shoal.agents.base import Agent, Layout
from shoal.agents.vtrace_ac import VTracePolicy, make_networks, off_policy_data_path
from shoal.data import DataPath
from shoal.envs.spec import EnvSpec


def make_data_path(spec: EnvSpec, config: APPOConfig, layout: Layout) -> DataPath:
    """IMPALA's off-policy queue: `batch_size` unrolls per update as they come from any actor;
    its capacity, and `max_policy_lag` when set, bound how stale they may be."""
    return off_policy_data_path(
        config.unroll_length, config.batch_size, layout, config.max_policy_lag
    )


AGENT = Agent(
    name="appo",
    config_cls=APPOConfig,
    make_networks=make_networks,
    make_policy=VTracePolicy,
    make_learner=APPOLearner,
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
            "clip_eps",
            "kl_target",
            "max_grad_norm",
            "reward_clip",
        }
    ),
)

__all__ = ["AGENT", "APPOConfig", "APPOLearner"]
