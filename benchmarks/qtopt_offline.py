"""QT-Opt and SAC learning from the same dataset without new data (offline), on Pendulum-v1.

Issue 33's figure: a dataset recorded by a half-trained SAC (`shoal record`), and each learner
given the same number of gradient steps on minibatches drawn uniformly from its transitions,
the same draws for both; each evaluated greedily on 10 episodes (seeds 10000+k, as `shoal
eval`) every `--eval-every` steps. The learners are shoal's own (`QTOptLearner`,
`SACLearner`), with their Pendulum presets' settings; the loop here stands in for the
runtime's offline table (`shoal train qtopt --dataset ... --agent.offline true` runs the same
learner through `shoal.data.offline.DatasetTable`), because SAC has no offline mode.

    python benchmarks/qtopt_offline.py --dataset PATH --steps 10000 --seed 0
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from shoal import catalog
from shoal.agents.base import StepInputs
from shoal.agents.qtopt.data import dataset_transitions
from shoal.data.datasets import open_dataset
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, make_env

ENV = "Pendulum-v1"
PRESETS = {  # the agent sections of src/shoal/presets/{qtopt,sac}.yaml for Pendulum-v1
    "qtopt": {"gamma": 0.98, "hidden_sizes": (64, 64), "batch_size": 64, "exploration": "gaussian"},
    "sac": {"learning_rate": 0.001},
}


def evaluate(policy, episodes: int = 10) -> float:
    env = make_env(ENV, EnvConfig())
    returns = []
    for k in range(episodes):
        obs, _ = env.reset(seed=10_000 + k)
        total, done, t = 0.0, False, 0
        while not done:
            inputs = StepInputs(
                np.array([t == 0]),
                np.zeros((1, 1), np.float32),
                np.zeros(1, np.float32),
                np.zeros(1, np.int64),
                np.array([t], np.int64),
            )
            step = policy.step(obs[None].astype(np.float32), {}, inputs, "greedy")
            obs, reward, terminated, truncated, _ = env.step(step.env_action[0])
            total, done, t = total + float(reward), terminated or truncated, t + 1
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def q_diagnostics(q, data, config, seed: int, states: int = 1000) -> dict[str, float]:
    """On `states` dataset transitions (the same each time): Q at the dataset's actions, Q at
    CEM's argmax of Q, and how many of the argmaxes lie near the box's edge (|a| > 0.95): a Q
    that CEM can push far above the dataset's values overvalues actions the data rarely
    shows (the offline hypothesis the docs test)."""
    from shoal.agents.qtopt.networks import cem_argmax

    rng = np.random.default_rng(seed + 1)
    index = rng.choice(len(data["reward"]), states, replace=False)
    obs = torch.as_tensor(data["obs"][index])
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        q_data = q(obs, torch.as_tensor(data["action"][index]))
        best, q_best = cem_argmax(q, obs, config, generator)
    return {
        "q_data": round(float(q_data.mean()), 2),
        "q_argmax": round(float(q_best.mean()), 2),
        "argmax_at_edge": round(float((best.abs() > 0.95).float().mean()), 3),
        "data_at_edge": round(float((np.abs(data["action"][index]) > 0.95).mean()), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--eval-every", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--algos", default="qtopt,sac")
    parser.add_argument(
        "--agent",
        default="{}",
        help="JSON settings over the presets' (e.g. '{\"batch_size\": 128}')",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    spec = env_spec(ENV, EnvConfig())
    for algo in args.algos.split(","):
        agent = catalog.get_agent(algo)
        settings = {**PRESETS[algo], **json.loads(args.agent)}
        config = agent.config_cls(**settings, learning_starts=0)
        items = dataset_transitions(open_dataset(args.dataset), spec, config.gamma)
        data = {k: items[k] for k in ("obs", "next_obs", "action", "reward", "discount")}
        size = len(data["reward"])
        torch.manual_seed(args.seed)
        net = agent.make_networks(spec, config)
        learner = agent.make_learner(spec, config, net)
        policy = agent.make_policy(spec, config, net, args.seed, None)
        rng = np.random.default_rng(args.seed)  # the same draws for every learner
        start = time.perf_counter()
        for step in range(1, args.steps + 1):
            index = rng.integers(0, size, config.batch_size)
            learner.update({k: v[index] for k, v in data.items()}, step / args.steps)
            if step % args.eval_every == 0:
                policy.load_weights(learner.weights())
                row = {"algo": algo, "seed": args.seed, "dataset_transitions": size}
                row |= {"batch_size": config.batch_size}
                row |= {"gradient_steps": step, "greedy_return_10": evaluate(policy)}
                row["seconds"] = round(time.perf_counter() - start, 1)
                if algo == "qtopt":
                    row |= q_diagnostics(net.q, data, config, args.seed)
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
