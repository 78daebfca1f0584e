"""How long do ES and ARS take to solve CartPole-v1 (a 10-episode greedy evaluation of 500)?

Trains each algorithm with its preset, evaluating greedily every 20,000 steps, and stops at the
first evaluation returning 500; prints the steps, the wall time from the call's start (noise
table, env and evaluations included) and the machine's load average, which on a shared
machine says how far the wall time is from an idle one's. Issue 18's target: ES under 60 s.

    python benchmarks/es_cartpole.py [--algos es ars a2c a3c] [--seeds 0 1 2] [--runtime inline]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import shoal


class StopAt500(shoal.Callback):
    def on_evaluation(self, evaluation):
        return evaluation.final or evaluation.mean_return < 500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=["es", "ars"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--runtime", default="inline", choices=["inline", "ray"])
    args = parser.parse_args()
    print("algo  seed  steps     greedy  wall_s  load_avg(1, 5, 15 min)")
    for algo in args.algos:
        for seed in args.seeds:
            with tempfile.TemporaryDirectory() as runs:
                run = {
                    "runs_dir": runs,
                    "progress": False,
                    "tensorboard": False,
                    "runtime": args.runtime,
                    "eval_every": 20_000,
                    "eval_every_episodes": 10,
                }
                if args.runtime == "ray":
                    run["actors"] = 2
                started = time.time()
                result = shoal.train(
                    algo, "CartPole-v1", seed=seed, run=run, callbacks=[StopAt500()]
                )
                wall = time.time() - started
            load = ", ".join(f"{x:.0f}" for x in os.getloadavg())
            print(
                f"{algo:5} {seed:4}  {result.env_steps:8}  {result.evaluation.mean_return:6.1f}  "
                f"{wall:6.1f}  {load}"
            )


if __name__ == "__main__":
    main()
