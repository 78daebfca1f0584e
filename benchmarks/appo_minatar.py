"""APPO against IMPALA on MinAtar Breakout: mean return against frames, same frames and seeds.

Target (reference-list issue, item 5): APPO's mean over seeds at 5M frames >= IMPALA's 21.1
(benchmarks/minatar_impala.py, 2026-11). Each agent runs with its own MinAtar preset
(presets/appo.yaml: IMPALA's MinAtar settings with two epochs per batch), one
`shoal train ALGO --env minatar:breakout` process per seed, `--parallel` at a time; APPO's
seeds first, then IMPALA's with the same seeds and frames. MinAtar has no frame skip: frames are
agent steps.

    python benchmarks/appo_minatar.py [--seeds 3] [--parallel 2] [--env minatar:breakout]
                                      [--total-steps 5000000] [--runs-dir DIR]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from minatar_runs import parse_args, run_seeds

IMPALA_AT_5M = 21.1  # benchmarks/minatar_impala.py, seeds 0-2 (docs/algorithms/impala.md)


def main() -> None:
    args = parse_args(__doc__.split("\n\n")[0])
    runs_dir = args.runs_dir or Path(tempfile.mkdtemp(prefix="shoal-appo-minatar-"))
    started = time.time()
    ends = {}
    for algo in ("appo", "impala"):
        ends[algo] = run_seeds(
            algo, args.env, args.seeds, args.parallel, args.total_steps, runs_dir / algo, 20.0
        )
        print(flush=True)
    print(f"{args.env}, {args.total_steps:,} frames, seeds 0 to {args.seeds - 1}:")
    for algo, value in ends.items():
        print(f"  {algo:>6}: last-20 training mean at the end, mean over seeds {value:.1f}")
    verdict = "meets" if ends["appo"] >= ends["impala"] else "misses"
    print(f"APPO {verdict} IMPALA's mean of this run ({ends['impala']:.1f})")
    if args.total_steps >= 5_000_000:
        verdict = "meets" if ends["appo"] >= IMPALA_AT_5M else "misses"
        print(f"APPO {verdict} the issue's target of IMPALA's {IMPALA_AT_5M} at 5M frames")
    print(f"total wall time {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
