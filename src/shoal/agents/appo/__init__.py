"""APPO: asynchronous PPO, PPO's clipped surrogate on V-trace advantages over IMPALA's
off-policy unroll queue (RLlib's APPO after IMPACT, Luo et al. 2020; Sample Factory's APPO,
Petrenko et al. 2020).

The network, behaviour policy, batch, loss terms, learner and data path are the V-trace
family's (`shoal.agents.vtrace_ac`), shared with IMPALA; APPO gives its policy term (the clipped
surrogate against the behaviour or target policy, the KL penalty: `loss.py`), its learner's
epochs, target network and KL weight (`learner.py`), its config and the policy-lag bound.
"""

from shoal.agents.appo.config import APPOConfig
from shoal.agents.appo.learner import APPOLearner
from shoal.agents.base import Layout
from shoal.agents.vtrace_ac import off_policy_data_path, vtrace_agent
from shoal.data import DataPath
from shoal.envs.spec import EnvSpec


def make_data_path(spec: EnvSpec, config: APPOConfig, layout: Layout) -> DataPath:
    """IMPALA's off-policy queue: `batch_size` unrolls per update as they come from any actor;
    its capacity, and `max_policy_lag` when set, bound how stale they may be."""
    return off_policy_data_path(
        config.unroll_length, config.batch_size, layout, config.max_policy_lag
    )


AGENT = vtrace_agent(
    "appo",
    APPOConfig,
    APPOLearner,
    make_data_path=make_data_path,
    mutable=("clip_eps", "kl_target"),
)

__all__ = ["AGENT", "APPOConfig", "APPOLearner"]
