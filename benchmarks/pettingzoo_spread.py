"""A PettingZoo cooperative task against random: per-agent and summed (team) episode returns.

Plays whole games of a `pettingzoo:` env with uniformly random actions, and with a trained
policy (greedy and sampling) if a run directory is given, on the same evaluation seeds, and
prints the mean return of an agent and of a game's summed return, each with its standard error.

    python benchmarks/pettingzoo_spread.py [--env pettingzoo:mpe.simple_spread_v3] [--games 200]
                                           [--run RUN_DIR] [--agent-id] [--no-random]
                                           [--no-sampling]

The run the README reports was trained with

    shoal train ppo --env pettingzoo:mpe.simple_spread_v3 --env.agent-id true --num-envs 8 \
        --total-steps 1000000 --max-time 4800 --agent.unroll-length 25 \
        --agent.num-epochs 10 --agent.minibatch-size 200 --agent.learning-rate 0.001 \
        --agent.entropy-coef 0.01 --agent.gamma 0.95
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import shoal
from shoal.envs.config import EnvConfig
from shoal.envs.registry import make_vector_env, resolve_env, spec_of_source

EVAL_SEED = 10_000  # apart from training's seeds, as `shoal eval` does
WIDTH = 10  # games stepped side by side


def play(env_id: str, agent_id: bool, games: int, act=None) -> tuple[list[float], list[float]]:
    """Per-agent and per-game summed returns of the first `games` games to end, acting by
    `act(obs) -> actions` (uniformly random if None)."""
    config = EnvConfig(agent_id=agent_id)
    source = resolve_env(env_id, config)
    spec = spec_of_source(source)
    env = make_vector_env(source, spec, config, WIDTH, EVAL_SEED)
    rng = np.random.default_rng(EVAL_SEED)
    obs = env.reset()
    agents: list[float] = []
    teams: list[float] = []
    while len(teams) < games:
        if act is None and spec.discrete:
            actions = rng.integers(spec.num_actions, size=env.num_envs)
        elif act is None:
            box = spec.action_space
            actions = rng.uniform(box.low, box.high, (env.num_envs, *box.shape))
        else:
            actions = act(obs)
        step = env.step(actions)
        if act is not None:
            act.observe(step.reward, step.terminated | step.truncated)
        agents += step.episode_returns
        teams += step.episode_metrics.get("team_return", [])
        obs = step.obs
    env.close()
    return agents, teams[:games]


class PolicyActor:
    """A loaded policy's `Acting` as `act(obs)`, told of each step's outcome."""

    def __init__(self, run_dir: str, deterministic: bool) -> None:
        self.acting = shoal.load(run_dir, deterministic=deterministic, trust_run=True).acting

    def __call__(self, obs):
        return self.acting.act(obs)[0]

    def observe(self, reward, ended) -> None:
        self.acting.observe(reward, ended)


def _line(name: str, agents: list[float], teams: list[float]) -> str:
    def mean_se(values: list[float]) -> str:
        a = np.asarray(values)
        return f"{a.mean():8.2f} ± {a.std(ddof=1) / np.sqrt(len(a)):.2f}"

    return f"{name:<22} {mean_se(agents)}   {mean_se(teams)}   ({len(teams)} games)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="pettingzoo:mpe.simple_spread_v3")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--run", help="a trained run's directory, evaluated beside random")
    parser.add_argument("--agent-id", action="store_true", help="the run's --env.agent-id")
    parser.add_argument("--no-random", action="store_true", help="evaluate only the run")
    parser.add_argument("--no-sampling", action="store_true", help="only the greedy policy")
    args = parser.parse_args()
    print(f"{args.env}, {args.games} games from seed {EVAL_SEED}; load {os.getloadavg()[0]:.1f}")
    print(f"{'policy':<22} {'agent return':>16}   {'team return (sum)':>16}")
    if not args.no_random:
        print(_line("uniformly random", *play(args.env, args.agent_id, args.games)))
    if args.run:
        for deterministic in (True,) if args.no_sampling else (True, False):
            actor = PolicyActor(args.run, deterministic)
            name = "trained, " + ("greedy" if deterministic else "sampling")
            print(_line(name, *play(args.env, args.agent_id, args.games, actor)))


if __name__ == "__main__":
    main()
