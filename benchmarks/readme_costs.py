"""What the README's long examples cost on this machine: each run for a minute, then its rate.

Each example is the README's command, bounded with `--max-time` (and with no final evaluation,
which a rate of training does not need). Its rate is the agent steps between the first and the
last metrics rows over the time between them, so start-up (imports, env builds, filling a
replay) is left out; the estimate is the example's whole budget (its preset's `total_steps`,
or its own) at that rate.

    python benchmarks/readme_costs.py [--seconds 90] [--only minatar]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The README's examples that run for more than a few minutes on a CPU.
EXAMPLES = {
    "ppo-minatar": "shoal train ppo --env minatar:breakout --seed 1",
    "dqn-minatar": "shoal train dqn --env minatar:breakout --agent.samples-per-insert 8 "
    "--agent.target-tau 0.005",
    "impala-pong-lstm": "shoal train impala --env ALE/Pong-v5 --agent.use-lstm true "
    "--agent.torso impala_resnet",
    "ppo-breakout": "shoal train ppo --env ALE/Breakout-v5 --env.sticky-actions true "
    "--agent.torso impala_resnet",
    "sac-halfcheetah": "shoal train sac --env HalfCheetah-v5",
    "td3-hopper-ray": "shoal train td3 --env Hopper-v5 --runtime ray --actors 2 --replay-shards 2",
    "agent57-zaxxon": "shoal train agent57 --env ZaxxonNoFrameskip-v4",
}


def measure(name: str, command: str, seconds: float, root: Path) -> dict:
    argv = command.split()[2:]  # after "shoal train"
    runs = root / name
    full = [sys.executable, "-m", "shoal", "train", *argv, "--max-time", str(seconds)]
    full += ["--eval-episodes", "0", "--progress", "false", "--runs-dir", str(runs)]
    full += ["--log-interval", "256", "--checkpoint-interval", "100000000"]
    done = subprocess.run(full, capture_output=True, text=True)
    if done.returncode != 0:
        return {"name": name, "error": done.stderr.strip().splitlines()[-1:]}
    (run_dir,) = runs.iterdir()
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "time" in r]
    config = (run_dir / "config.yaml").read_text()
    total = int(next(line for line in config.splitlines() if "total_steps:" in line).split()[-1])
    first, last = (rows[0], rows[-1]) if rows else ({}, {})
    if len(rows) >= 2 and last["time"] > first["time"]:
        rate = (last["env_steps"] - first["env_steps"]) / (last["time"] - first["time"])
        measured = "between the first and last rows"
    else:  # rows come after updates: a replay still filling has none; count the whole run
        summary = json.loads((run_dir / "summary.json").read_text())
        last = {"env_steps": summary["env_steps"], "frames": summary["env_steps"]}
        rate = summary["env_steps"] / summary["wall_time"]
        measured = "over the whole run, start-up included"
    if rate <= 0:
        return {"name": name, "command": command, "error": "no steps in the time given"}
    frames_per_step = 4 if "ALE/" in command or "NoFrameskip" in command else 1
    return {
        "name": name,
        "command": command,
        "steps_per_second": round(rate, 1),
        "measured": measured,
        "frames_per_step": frames_per_step,
        "total_steps": total,
        "hours": round(total / rate / 3600, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--only", help="run only the examples whose name contains this")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        for name, command in EXAMPLES.items():
            if args.only and args.only not in name:
                continue
            print(json.dumps(measure(name, command, args.seconds, Path(tmp))), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
