"""Does `--max-time` hold on a busy machine? README and Getting started examples beside one busy
process (issue 35 item 14).

Each example runs with `--max-time BUDGET` (default 40 s) while a `python -c 'while True: pass'`
this script starts keeps one core busy. For each it prints the command's wall time (from the
moment this script starts it to its exit: Python's start, imports, Ray's start and the final
evaluation all count), the budget, the agent steps trained (`env_steps` of the run's
summary.json) and whether it ended within 10% of its budget with more than 0 steps. The load
average before and after is printed: the machine may be shared.

    python benchmarks/max_time_budget.py [--budget 40] [--only ray]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# README's Quick start and docs/getting-started.md, each bounded by --max-time only (their own
# step budgets are far longer than 40 s on a CPU).
EXAMPLES = {
    "ppo-cartpole": "shoal train ppo --env CartPole-v1",
    "ppo-acrobot": "shoal train ppo --env Acrobot-v1 --agent.learning-rate 1e-3",
    "dqn-cartpole": "shoal train dqn --env CartPole-v1",
    "r2d2-cartpole": "shoal train r2d2 --env CartPole-v1",
    "dqn-minatar": "shoal train dqn --env minatar:breakout --seed 1",
    "ppo-cartpole-ray": "shoal train ppo --env CartPole-v1 --runtime ray --actors 2",
    "impala-cartpole-ray": "shoal train impala --env CartPole-v1 --runtime ray --actors 2 "
    "--envs-per-actor 8",
    "apex-cartpole-ray": "shoal train apex --env CartPole-v1 --runtime ray --actors 2 "
    "--envs-per-actor 4 --replay-shards 2",
}
SLACK = 0.10


def measure(name: str, command: str, budget: float, root: Path) -> dict:
    runs = root / name
    argv = [sys.executable, "-m", "shoal", "train", *command.split()[2:]]
    argv += ["--max-time", f"{budget:g}", "--runs-dir", str(runs), "--progress", "false"]
    start = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    summaries = list(runs.glob("*/summary.json"))
    summary = json.loads(summaries[0].read_text()) if summaries else {}
    steps = int(summary.get("env_steps", 0))
    return {
        "name": name,
        "exit": done.returncode,
        "elapsed": elapsed,
        "run_wall_time": summary.get("wall_time"),
        "steps": steps,
        "stop_reason": summary.get("stop_reason"),
        "ok": done.returncode == 0 and steps > 0 and elapsed <= budget * (1 + SLACK),
        "error": "" if done.returncode == 0 else done.stderr.strip().splitlines()[-1:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=40.0)
    parser.add_argument("--only", default="", help="run the examples whose name holds this")
    args = parser.parse_args()
    chosen = {k: v for k, v in EXAMPLES.items() if args.only in k}
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
        f"{os.cpu_count()} CPUs; budget {args.budget:g} s, limit {args.budget * (1 + SLACK):g} s"
    )
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="max-time-") as tmp:
            for name, command in chosen.items():
                result = measure(name, command, args.budget, Path(tmp))
                results.append(result)
                print(
                    f"{name:22s} {result['elapsed']:6.1f} s / {args.budget:g} s "
                    f"({100 * (result['elapsed'] / args.budget - 1):+5.1f}%)  "
                    f"steps {result['steps']:>8,}  stop {result['stop_reason']}  "
                    f"run wall_time {result['run_wall_time']}  exit {result['exit']}  "
                    f"{'ok' if result['ok'] else 'FAIL'} {result['error'] or ''}",
                    flush=True,
                )
    finally:
        busy.kill()
        busy.wait()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{sum(r['ok'] for r in results)} of {len(results)} within 10% with > 0 steps")


if __name__ == "__main__":
    main()
