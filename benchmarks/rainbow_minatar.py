"""Rainbow beside shoal's DQN on MinAtar Breakout and Space Invaders, from the same run: each
algorithm's preset, seeds 0 to 2, the mean return against frames and the end-of-budget means.

Target: at 1M frames, Rainbow at least DQN's figures on the same seeds (DQN's preset measured
16.5 on Breakout and 46.9 on Space Invaders at 1M frames, `benchmarks/minatar_dqn.py`).

    python benchmarks/rainbow_minatar.py [--seeds 3] [--parallel 2] [--total-steps 1000000]
        [--env minatar:breakout,minatar:space_invaders] [--algos dqn,rainbow]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from minatar_runs import run_seeds

GAMES = "minatar:breakout,minatar:space_invaders"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default=GAMES)
    parser.add_argument("--algos", default="dqn,rainbow")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--total-steps", type=int, default=1_000_000)
    parser.add_argument("--runs-dir", type=Path, default=None)
    args = parser.parse_args()
    runs_dir = args.runs_dir or Path(tempfile.mkdtemp(prefix="shoal-rainbow-minatar-"))
    algos, games = args.algos.split(","), args.env.split(",")
    started, ends = time.time(), {}
    for game in games:
        for algo in algos:
            run_dir = runs_dir / f"{algo}-{game.replace(':', '-')}"
            began = time.time()
            # Rainbow's target is DQN's figure on the same seeds, when DQN ran first.
            target = ends.get((game, "dqn"), 0.0) if algo != "dqn" else 0.0
            ends[game, algo] = run_seeds(
                algo, game, args.seeds, args.parallel, args.total_steps, run_dir, target
            )
            ends[game, algo + " s"] = time.time() - began
            print(flush=True)
    print(f"last-20 training mean at {args.total_steps:,} frames, seeds 0 to {args.seeds - 1}")
    print(f"{'game':<24}" + "".join(f"{algo:>12}" for algo in algos))
    for game in games:
        print(f"{game:<24}" + "".join(f"{ends[game, algo]:>12.1f}" for algo in algos))
    for game in games:
        times = ", ".join(f"{algo} {ends[game, algo + ' s'] / 60:.1f} min" for algo in algos)
        print(f"{game}: wall time with {args.parallel} seeds at a time: {times}")
    print(f"total wall time {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
