"""DQN on CartPole killed at 30k steps and resumed, with and without replay snapshots.

For each seed, three runs of `shoal train dqn --env CartPole-v1` (the preset) with the same
seed, as separate processes:

- uninterrupted: to `--total-steps` (40k);
- snapshots: killed with SIGKILL as soon as its checkpoint at `--kill-at` (30k) steps exists,
  then `shoal train --resume` to 40k: the replay comes back from the checkpoint's snapshot;
- no snapshots: the same with `--checkpoint-replay false`: the resumed run starts with an
  empty replay and waits for `min_replay_size` new transitions before learning again.

Inline runs are deterministic under a seed, so all three are the same run up to the kill
(checked below); after it, a resumed run meets new episodes (env seeds move on per resume).
Prints each run's training return (the mean of the last `--return-window` episodes, logged
every 1000 steps) from the kill to the end, and how far each resumed run is from the
uninterrupted one: the mean over those steps, the rows within 10% and the largest dip, per
seed and for the mean curve over seeds. Target (issue 14): with snapshots, within 10% over the
10k steps after the kill; without, the dip measured.

    python benchmarks/dqn_resume_replay.py [--seeds 0 1 2] [--kill-at 30000] [--total-steps 40000]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from shoal.run.checkpoints import list_checkpoints
from shoal.telemetry import read_metrics

SHOAL = [sys.executable, "-m", "shoal"]
KINDS = ("uninterrupted", "snapshots", "no snapshots")


def train(runs: Path, name: str, seed: int, args: argparse.Namespace, extra: list[str]) -> list:
    return [
        *SHOAL,
        "train",
        "dqn",
        "--env",
        "CartPole-v1",
        "--seed",
        str(seed),
        "--total-steps",
        str(args.total_steps),
        "--checkpoint-interval",
        str(args.kill_at // 3),
        "--log-interval",
        "1000",
        "--return-window",
        str(args.return_window),
        "--eval-episodes",
        "0",
        "--progress",
        "false",
        "--tensorboard",
        "false",
        "--runs-dir",
        str(runs),
        "--run-name",
        name,
        *extra,
    ]


def killed_and_resumed(command: list, run_dir: Path, args: argparse.Namespace) -> str:
    """Run `command`, SIGKILL it once its checkpoint at `kill_at` steps exists, resume it;
    return what the resumed run said about its replay."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    checkpoints = run_dir / "checkpoints"
    while process.poll() is None:
        steps = [int(p.name[5:17]) for p in list_checkpoints(checkpoints)]
        if steps and max(steps) >= args.kill_at:
            os.kill(process.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    process.wait()
    if process.returncode != -signal.SIGKILL:
        raise SystemExit(f"{run_dir.name} ended before it was killed: {process.stderr.read()}")
    resume = [*SHOAL, "train", "--resume", str(run_dir), "--total-steps", str(args.total_steps)]
    done = subprocess.run(resume, capture_output=True, text=True, check=True)
    return " ".join(line for line in done.stderr.splitlines() if "replay" in line)


def returns(run_dir: Path) -> dict[int, float]:
    """The logged training returns by step, to the 1000 (rows are written after updates, so
    a resumed run that waits to refill its replay logs at other step counts)."""
    rows = read_metrics(run_dir / "metrics.jsonl")
    return {row["env_steps"] // 1000 * 1000: row["return_mean"] for row in rows}


def one_seed(runs: Path, seed: int, args: argparse.Namespace) -> dict[str, dict[int, float]]:
    curves = {}
    for kind in KINDS:
        name = f"{kind.replace(' ', '-')}-seed{seed}"
        extra = ["--checkpoint-replay", "false"] if kind == "no snapshots" else []
        command = train(runs, name, seed, args, extra)
        started = time.perf_counter()
        if kind == "uninterrupted":
            subprocess.run(command, capture_output=True, check=True)
            said = ""
        else:
            said = killed_and_resumed(command, runs / name, args)
        print(f"seed {seed}, {kind}: {time.perf_counter() - started:.0f} s. {said}", flush=True)
        curves[kind] = returns(runs / name)
    return curves


def report(curves: dict[str, dict[int, float]], args: argparse.Namespace, label: str) -> None:
    base = curves["uninterrupted"]
    before = [s for s in base if s <= args.kill_at]
    same = all(curves[k].get(s) == base[s] for k in KINDS for s in before)
    after = sorted(s for s in base if s > args.kill_at)
    print(f"\n{label}: training return (mean of the last {args.return_window} episodes)")
    print(f"{'steps':>8} " + " ".join(f"{kind:>14}" for kind in KINDS))
    for steps in after:
        print(f"{steps:>8} " + " ".join(f"{curves[k].get(steps, np.nan):>14.1f}" for k in KINDS))
    reference = np.array([base[s] for s in after])
    for kind in KINDS[1:]:
        values = np.array([curves[kind].get(s, np.nan) for s in after])
        gap = (values - reference) / reference
        print(
            f"{kind}: mean {np.nanmean(values):.1f} against {reference.mean():.1f} "
            f"({100 * (np.nanmean(values) / reference.mean() - 1):+.1f}%); rows within 10%: "
            f"{int(np.sum(np.abs(gap) <= 0.1))}/{len(after)}; largest dip "
            f"{100 * np.nanmin(gap):+.1f}%"
        )
    print(f"identical to the uninterrupted run up to {args.kill_at} steps: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--kill-at", type=int, default=30_000)
    parser.add_argument("--total-steps", type=int, default=40_000)
    parser.add_argument("--return-window", type=int, default=10)
    parser.add_argument("--runs-dir", default=None, help="keep the runs here (default: temp)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        runs = Path(args.runs_dir or temp)
        per_seed = {seed: one_seed(runs, seed, args) for seed in args.seeds}
    for seed, curves in per_seed.items():
        report(curves, args, f"seed {seed}")
    if len(per_seed) > 1:
        mean = {
            kind: {
                steps: float(np.mean([c[kind].get(steps, np.nan) for c in per_seed.values()]))
                for steps in next(iter(per_seed.values()))["uninterrupted"]
            }
            for kind in KINDS
        }
        report(mean, args, f"mean over seeds {args.seeds}")


if __name__ == "__main__":
    main()
