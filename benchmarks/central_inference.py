"""Actor-side against central inference (SEED): IMPALA's env frames/s with 1, 2 and 4 actors.

Each configuration trains IMPALA on the ray launcher for `--seconds` with `--num-envs` envs per
actor; the figure is the median of the logged rates over the second half of the run (Ray's
start-up excluded), in env frames (4 per agent step on Atari, 1 on MinAtar). Actor-side: every
actor runs its own copy of the network on its CPU; central: actors only step envs and the
learner's process batches all their observations (`--inference central`). With `--gpu` the
learner and the inference server use the GPU (`--learner-gpus 1`).

    python benchmarks/central_inference.py [--seconds 40] [--actors 1 2 4]
        [--envs minatar:breakout ALE/Pong-v5] [--num-envs 8] [--gpu]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch


def frames_per_second(runs_dir: Path, name: str, env: str, seconds: float, extra: list[str]):
    """(frames/s, mean inference batch fill or None) of one timed IMPALA run."""
    command = [sys.executable, "-m", "shoal", "train", "impala", "--env", env]
    command += ["--max-time", str(seconds), "--runs-dir", str(runs_dir), "--run-name", name]
    command += ["--progress", "false", "--eval-episodes", "0", "--log-interval", "2000"]
    command += ["--tensorboard", "false", "--total-steps", "1000000000", *extra]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    rows = [json.loads(line) for line in (runs_dir / name / "metrics.jsonl").open()]
    late = [row for row in rows if row["time"] >= seconds / 2] or rows[-1:]
    frames_per_step = rows[-1]["frames"] / max(rows[-1]["env_steps"], 1)
    fill = [row["inference_batch_fill"] for row in late if "inference_batch_fill" in row]
    fps = frames_per_step * statistics.median(row["steps_per_second"] for row in late)
    return fps, (statistics.mean(fill) if fill else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--envs", nargs="+", default=["minatar:breakout", "ALE/Pong-v5"])
    parser.add_argument("--num-envs", type=int, default=8, help="envs per actor")
    parser.add_argument("--gpu", action="store_true", help="learner and server on the GPU")
    args = parser.parse_args()
    device = torch.cuda.get_device_name(0) if args.gpu else "no GPU"
    print(f"machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, {device}")
    print(f"IMPALA on ray, {args.num_envs} envs per actor, {args.seconds:.0f} s per run\n")
    header = f"{'env':<18}{'actors':>7}{'actor-side fps':>16}{'central fps':>13}"
    print(f"{header}{'ratio':>7}{'fill':>6}")
    common = ["--runtime", "ray", "--num-envs", str(args.num_envs), "--actor-cpus", "0.5"]
    if args.gpu:
        common += ["--learner-gpus", "1", "--learner-device", "cuda"]
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        for env in args.envs:
            for actors in args.actors:
                figures = {}
                fill = None
                for mode in ("actor", "central"):
                    extra = [*common, "--actors", str(actors), "--inference", mode]
                    name = f"{env.replace('/', '_').replace(':', '_')}-{actors}-{mode}"
                    figures[mode], mode_fill = frames_per_second(
                        runs, name, env, args.seconds, extra
                    )
                    fill = mode_fill if mode == "central" else fill
                ratio = figures["central"] / figures["actor"]
                print(
                    f"{env:<18}{actors:>7}{figures['actor']:>16,.0f}{figures['central']:>13,.0f}"
                    f"{ratio:>6.2f}x{fill or 0:>6.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
