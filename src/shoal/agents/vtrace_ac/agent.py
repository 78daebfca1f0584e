"""A V-trace actor-critic's `Agent` record: the family's network, behaviour policy and
off-policy unroll queue, with the agent's name, config, learner and PBT-mutable fields."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from shoal.agents.base import Agent, Layout, Learner
from shoal.agents.vtrace_ac.config import VTraceConfig
from shoal.agents.vtrace_ac.data import off_policy_data_path
from shoal.agents.vtrace_ac.networks import make_networks
from shoal.agents.vtrace_ac.policy import VTracePolicy
from shoal.data import DataPath
from shoal.envs.spec import EnvSpec

__all__ = ["VTRACE_MUTABLE", "vtrace_agent", "vtrace_data_path"]

# `VTraceConfig` fields every V-trace learner reads at each update: what PBT may change in place.
VTRACE_MUTABLE = frozenset(
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
)


def vtrace_data_path(spec: EnvSpec, config: VTraceConfig, layout: Layout) -> DataPath:
    """Off-policy: `batch_size` unrolls per update, taken as they come from any actor, while
    actors keep acting; the queue's capacity bounds the policy lag V-trace corrects for."""
    return off_policy_data_path(config.unroll_length, config.batch_size, layout)


def vtrace_agent(
    name: str,
    config_cls: type[VTraceConfig],
    make_learner: Callable[[EnvSpec, Any, Any], Learner],
    *,
    make_data_path: Callable[[EnvSpec, Any, Layout], DataPath] = vtrace_data_path,
    mutable: Iterable[str] = (),
) -> Agent:
    """The `Agent` record of a V-trace actor-critic called `name`: the family's `VTraceNet` and
    `VTracePolicy`, `make_learner` (a `VTraceLearner`), the off-policy queue (or the agent's
    `make_data_path`), and PBT-mutable fields: the family's (`VTRACE_MUTABLE`) and `mutable`."""
    return Agent(
        name=name,
        config_cls=config_cls,
        make_networks=make_networks,
        make_policy=VTracePolicy,  # type: ignore[arg-type]
        make_learner=make_learner,
        make_data_path=make_data_path,
        mutable=VTRACE_MUTABLE | frozenset(mutable),
    )
