"""The registry of agents and presets. Only the interface layer (cli, api) reads it."""

from __future__ import annotations

import importlib
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml

from shoal.errors import ConfigError, did_you_mean

if TYPE_CHECKING:  # the agents import torch; `shoal list` and `--help` need none of it
    from shoal.agents.base import Agent

# algorithm name -> (module holding AGENT, one-line description)
AGENTS: dict[str, tuple[str, str]] = {
    "ppo": (
        "shoal.agents.ppo",
        "Proximal Policy Optimisation with GAE (on-policy, discrete or continuous, optional LSTM)",
    ),
    "impala": (
        "shoal.agents.impala",
        "IMPALA with V-trace off-policy correction (discrete actions, feed-forward or LSTM)",
    ),
    "appo": (
        "shoal.agents.appo",
        "APPO: asynchronous PPO, clipped surrogate on V-trace advantages (discrete actions)",
    ),
    "dqn": (
        "shoal.agents.dqn",
        "DQN with double Q, dueling heads, n-step returns and prioritised replay (discrete)",
    ),
    "apex": (
        "shoal.agents.apex",
        "Ape-X: DQN with per-actor exploration rates and sharded replay for many actors",
    ),
    "rainbow": (
        "shoal.agents.rainbow",
        "Rainbow: DQN with C51 distributions, noisy nets, dueling, double Q, n-step, PER",
    ),
    "r2d2": (
        "shoal.agents.r2d2",
        "R2D2: recurrent (LSTM) DQN from replayed sequences with stored state and burn-in",
    ),
    "r2d3": (
        "shoal.agents.r2d3",
        "R2D3: R2D2 with a prioritised replay of demonstrations (a Minari dataset) mixed in",
    ),
    "agent57": (
        "shoal.agents.agent57",
        "Agent57: R2D2 with NGU novelty, 32 (beta, gamma) mixtures and a UCB meta-controller",
    ),
    "sac": (
        "shoal.agents.sac",
        "Soft Actor-Critic: squashed Gaussian policy, twin critics, tuned entropy (continuous)",
    ),
    "qtopt": (
        "shoal.agents.qtopt",
        "QT-Opt: a Q-function maximised by CEM, no actor, clipped double Q (continuous)",
    ),
    "td3": (
        "shoal.agents.td3",
        "TD3: deterministic policy, twin critics, delayed updates, target smoothing (continuous)",
    ),
    "ddpg": (
        "shoal.agents.ddpg",
        "DDPG: deterministic policy, one critic, Polyak targets, Gaussian or OU noise (continuous)",
    ),
    "a2c": (
        "shoal.agents.a2c",
        "A2C: synchronous n-step advantage actor-critic, one gradient step a batch, optional LSTM",
    ),
    "pg": (
        "shoal.agents.pg",
        "REINFORCE: Monte-Carlo policy gradient with an optional learned baseline (on-policy)",
    ),
    "es": (
        "shoal.agents.es",
        "Evolution strategies: shared noise table, mirrored pairs, centred ranks; scalars travel",
    ),
    "ars": (
        "shoal.agents.ars",
        "ARS V2-t: linear policy, normalised states, top-b mirrored directions (scalars travel)",
    ),
    "trpo": (
        "shoal.agents.trpo",
        "TRPO: one natural-gradient policy step in a KL trust region per rollout, GAE",
    ),
    "a3c": (
        "shoal.agents.a3c",
        "A3C: actors send gradients of their own unrolls, applied as they arrive (bounded lag)",
    ),
    "bc": (
        "shoal.agents.bc",
        "Behavioural cloning: a policy fit to a Minari dataset's actions (--dataset), offline",
    ),
    "alphazero": (
        "shoal.agents.alphazero",
        "AlphaZero: PUCT tree search and a policy-value net learned from self-play (board games)",
    ),
}


def check_algorithm(name: str) -> None:
    """A ConfigError naming the known algorithms unless `name` is one; imports no agent, so a
    mistyped name is answered before torch is loaded."""
    if name not in AGENTS:
        raise ConfigError(
            f"Unknown algorithm {name!r}.{did_you_mean(name, AGENTS)} "
            f"Known algorithms: {', '.join(sorted(AGENTS))} (see `shoal list`)."
        )


def get_agent(name: str) -> Agent:
    """The `Agent` registered as `name`, or a ConfigError naming the known ones."""
    check_algorithm(name)
    return importlib.import_module(AGENTS[name][0]).AGENT


@cache
def presets(algo: str) -> dict[str, dict[str, Any]]:
    """Tuned settings of `algo` per env id: {env_id: {"run": {...}, "agent": {...}}}."""
    path = resources.files("shoal") / "presets" / f"{algo}.yaml"
    if not path.is_file():
        return {}
    # The package's own files: libyaml's safe loader where PyYAML has it (8x faster, and `shoal
    # list` reads every preset), else the pure-Python one; both build plain data only.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(), Loader=loader) or {}


def preset_for(algo: str, env_id: str, *, pixels: bool = False) -> dict[str, dict[str, Any]]:
    """The preset of `algo` for `env_id` (an empty one where none is tuned). `pixels`: the env
    is observed as images where it could be observed as a state vector (dm_control with
    `--env.dm-control-pixels true`); a preset's `pixels` section then overrides the rest."""
    preset = presets(algo).get(env_id, {})
    chosen = {"run": dict(preset.get("run", {})), "agent": dict(preset.get("agent", {}))}
    if pixels:
        for section, values in preset.get("pixels", {}).items():
            chosen[section].update(values)
    return chosen
