"""Environments: the registry, specs and vector envs."""

from shoal.envs.registry import EnvFactory, make_env, make_env_factory
from shoal.envs.spec import EnvSpec
from shoal.envs.vector import InProcessVectorEnv, VectorStep

__all__ = [
    "EnvFactory",
    "EnvSpec",
    "InProcessVectorEnv",
    "VectorStep",
    "make_env",
    "make_env_factory",
]
