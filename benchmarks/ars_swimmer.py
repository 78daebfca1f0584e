"""ARS (V2-t, the paper's Swimmer settings) on Swimmer-v5: training episodes to a return of 325.

Mania et al. 2018 (Table 1) report the episodes ARS took to reach 325 on Swimmer-v1, the
median over 3 seeds: 427 for V2-t (`PAPER_V2T_EPISODES`). Here each seed trains with the
`ars` Swimmer-v5 preset (alpha 0.02, nu 0.01, N 1, b 1; one env, 1000-step episodes) and a
5-episode greedy evaluation of the current policy every 20 training episodes (20,000 steps),
stopping at the first evaluation that reaches the threshold. The evaluations' episodes are not
counted, as in the paper; the episodes printed are training episodes up to that evaluation, so
they are a multiple of 20 (the figure is resolved to 20 episodes). Swimmer-v5 is v1's task
on the maintained MuJoCo bindings (same 1000-step episodes and reward terms).

    python benchmarks/ars_swimmer.py [--seeds 0 1 2] [--max-episodes 2000]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time

import shoal

THRESHOLD = 325.0
PAPER_V2T_EPISODES = 427


class StopAtThreshold(shoal.Callback):
    def __init__(self) -> None:
        self.reached: int | None = None

    def on_evaluation(self, evaluation):
        if not evaluation.final and evaluation.mean_return >= THRESHOLD:
            self.reached = evaluation.env_steps
            return False
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--max-episodes", type=int, default=2000)
    parser.add_argument(
        "--normalize-obs",
        default="true",
        choices=["true", "false"],
        help="false: ARS V1-t, the linear policy on raw states (the paper's V1 settings for "
        "Swimmer are the same alpha, nu, N and b)",
    )
    args = parser.parse_args()
    print("seed  episodes_to_325  greedy_eval  wall_s  load_avg(1, 5, 15 min)", flush=True)
    reached = []
    for seed in args.seeds:
        stop = StopAtThreshold()
        with tempfile.TemporaryDirectory() as runs:
            run = {
                "runs_dir": runs,
                "progress": False,
                "tensorboard": False,
                "total_steps": 1000 * args.max_episodes,
                "eval_every": 20_000,
                "eval_every_episodes": 5,
                "eval_episodes": 5,
            }
            started = time.time()
            agent = {"normalize_obs": args.normalize_obs == "true"}
            result = shoal.train(
                "ars", "Swimmer-v5", seed=seed, run=run, agent=agent, callbacks=[stop]
            )
            wall = time.time() - started
        episodes = None if stop.reached is None else stop.reached // 1000
        if episodes is not None:
            reached.append(episodes)
        load = ", ".join(f"{x:.0f}" for x in os.getloadavg())
        shown = episodes if episodes is not None else f"> {args.max_episodes}"
        print(
            f"{seed:4}  {shown!s:>15}  {result.evaluation.mean_return:11.1f}  {wall:6.1f}  {load}",
            flush=True,
        )
    # A seed that did not reach it counts as more than --max-episodes: the median is still
    # known while fewer than half the seeds miss.
    episodes = sorted(reached) + [math.inf] * (len(args.seeds) - len(reached))
    median = statistics.median(episodes)
    shown = f"{median:.0f}" if math.isfinite(median) else f"> {args.max_episodes}"
    print(
        f"median over the {len(args.seeds)} seeds: {shown} episodes ({len(reached)} reached "
        f"325); the paper's ARS V2-t: {PAPER_V2T_EPISODES}"
    )


if __name__ == "__main__":
    main()
