"""Learning from demonstrations on a hard-exploration maze: R2D3 against R2D2 (no
demonstrations) and behavioural cloning, with the same 10 demonstrations and the same budget.

The problem is shoal's snake maze (`shoal.envs.maze:snake_maze`): the only reward is 38 steps
from the start and an episode ends after 100 steps, so a uniformly random policy is rewarded
with probability 8.3e-8 per episode. The demonstrations are 10 episodes of a scripted shortest
path policy (`shoal.envs.maze.shortest_path_policy`), recorded as a Minari dataset with
`shoal.record.record_scripted` into a temporary folder (the maze is deterministic, so the 10
episodes are the same 38 steps).

Each run is one `shoal train` process, one at a time, on 8 envs for `--total-steps` (200k)
agent steps with a greedy evaluation every 20k:
- r2d3 with its preset (presets/r2d3.yaml) and `--dataset`;
- r2d2 with its maze preset (presets/r2d2.yaml), its budget cut to the same steps;
- bc with `--dataset`, a 64x64 MLP and 0.05 minibatch updates per step played (10k
  minibatches of 256 over 200k steps; its default 0.5 per step would make 100k of them).

For each it prints the final greedy evaluation (10 episodes; 1.0 is the optimum), the best of
the periodic greedy evaluations with its step, the step of the first metrics row whose training
return is above 0, and the wall time (`benchmarks/hard_exploration.py` reads the runs).

`--maze comb` runs the same on the random-start comb (`shoal.envs.maze:comb_maze`): every
episode starts at the dead end of one of 12 side corridors, so the 10 demonstrations (episode
k from seed k) cover only the teeth they started in, and a clone of them meets cells it never
saw. The final evaluation there is 30 episodes, each from a random tooth.

    python benchmarks/r2d3_maze.py [--maze snake|comb] [--seeds 0 1 2] [--algos r2d3 r2d2 bc]
        [--total-steps 200000] [any `shoal train` flag for every run]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hard_exploration import SOLVED, train

from shoal.envs.maze import comb_maze, shortest_path_policy, snake_maze
from shoal.record import record_scripted

MAZES = {"snake": snake_maze, "comb": comb_maze}
EPISODES = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--maze", choices=sorted(MAZES), default="snake")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--algos", nargs="+", default=["r2d3", "r2d2", "bc"])
    parser.add_argument("--total-steps", type=int, default=200_000)
    parser.add_argument("--runs-dir", type=Path, default=None)
    args, extra = parser.parse_known_args()
    runs_dir = args.runs_dir or Path(tempfile.mkdtemp(prefix="shoal-r2d3-maze-"))
    maze_id = f"shoal.envs.maze:{MAZES[args.maze].__name__}"
    maze = MAZES[args.maze]()
    recorded = record_scripted(
        maze_id,
        shortest_path_policy(maze),
        EPISODES,
        f"maze/{args.maze}-shortest-path-v0",
        datasets_dir=runs_dir / "datasets",
        name="shortest-path script",
    )
    print(
        f"{maze_id}: {EPISODES} demonstrations ({recorded.steps} steps, mean return "
        f"{recorded.mean_return:g}) in {recorded.folder}; {args.total_steps:,} steps per run, "
        f"seeds {args.seeds}; runs in {runs_dir}"
    )
    common = ["--total-steps", str(args.total_steps), "--num-envs", "8", "--eval-every", "20000"]
    if len(maze.starts) > 1:
        # Episode k of the recording was reset with seed k: which starts did they cover?
        covered = sorted({maze.reset(seed=k)[0].argmax() for k in range(EPISODES)})
        print(f"the demonstrations start from {len(covered)} of the {len(maze.starts)} starts")
        common += ["--eval-episodes", "30"]
    dataset = ["--dataset", str(recorded.folder)]
    flags = {
        "r2d3": dataset,
        "r2d2": [],
        "bc": [*dataset, "--agent.hidden-sizes", "64,64", "--agent.updates-per-step", "0.05"],
    }
    print(
        f"{'algo':<6} {'seed':>4} {'steps':>8} {'first reward':>13} {'final eval':>10} "
        f"{'best periodic eval':>19} {'s':>6}"
    )
    solved: dict[str, int] = {}
    for algo in args.algos:
        solved[algo] = 0
        for seed in args.seeds:
            r = train(algo, maze_id, seed, runs_dir, [*common, *flags[algo], *extra])
            if "error" in r:
                print(f"{algo:<6} {seed:>4} failed: {r['error']}", flush=True)
                continue
            solved[algo] += r["eval"] >= SOLVED
            first = "never" if r["first"] is None else f"{r['first']:,}"
            value, step = r["best"]
            best = "-" if value is None else f"{value:.2f} at {step:,}"
            print(
                f"{algo:<6} {seed:>4} {r['steps']:>8,} {first:>13} {r['eval']:>10.2f} "
                f"{best:>19} {r['seconds']:>6.0f}",
                flush=True,
            )
    for algo, count in solved.items():
        print(
            f"{algo}: final greedy evaluation >= {SOLVED:g} on {count} of {len(args.seeds)} seeds"
        )


if __name__ == "__main__":
    main()
