"""AlphaZero on Ray with 2 self-play actors: actor-side leaf evaluation against central inference.

Each configuration trains the tictactoe preset (32 games per actor, 48 simulations a move) on
the ray launcher with `--actors 2` for `--seconds` (`--max-time`: Ray's start-up included,
which took 10 to 45 s on the loaded 2-core machine); the figures are taken from the metrics
rows, between the first row (written once self-play has filled the replay's warm-up and the
learner has updated) and the last, so start-up is left out:

- actor-side (`--inference actor`): each actor searches and evaluates its searches' leaves
  with its own copy of the network, one forward pass per simulation of its 32 searches;
- central (`--inference central`): each actor still searches, but every batch of leaves is a
  request to the inference server in the learner's process, which puts the requests of both
  actors waiting together (up to `--inference-batch` 64 rows, or what waits once the oldest
  request is `--inference-timeout-ms` old) through one forward pass.

Printed per run: self-play games/s (two agent episodes per game), positions/s (the replay's
inserted positions: the moves of finished games), and the central server's mean requests
(leaf batches) per forward pass and mean rows per forward pass against its maximum. The
learner's rate limiter (8 sampled positions per played one) binds both kinds of run the same
way, so these are the whole system's rates on this machine, learner included.

    python benchmarks/alphazero_ray.py [--seconds 150] [--timeouts-ms 2 10] [--seed 0]
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

MAX_BATCH = 64  # both actors' 32 games: one mover each


def run(runs_dir: Path, name: str, seconds: float, seed: int, extra: list[str]) -> dict:
    """Figures between the first and the last metrics row of one timed run."""
    command = [sys.executable, "-m", "shoal", "train", "alphazero", "--env", "tictactoe"]
    command += ["--runtime", "ray", "--actors", "2", "--seed", str(seed)]
    command += ["--max-time", str(seconds), "--runs-dir", str(runs_dir), "--run-name", name]
    command += ["--progress", "false", "--eval-episodes", "0", "--log-interval", "500"]
    command += ["--tensorboard", "false", "--total-steps", "1000000000", *extra]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    rows = [json.loads(line) for line in (runs_dir / name / "metrics.jsonl").open()]
    rows = [row for row in rows if "replay_inserted" in row]
    if len(rows) < 3:
        raise RuntimeError(
            f"{name}: {len(rows)} metrics rows in {seconds} s (Ray's start took most of it?); "
            "raise --seconds."
        )
    first, last = rows[0], rows[-1]
    late = rows[1:]
    dt = max(last["time"] - first["time"], 1e-9)
    out = {
        "games_per_s": (last["episodes"] - first["episodes"]) / 2 / dt,
        "positions_per_s": (last["replay_inserted"] - first["replay_inserted"]) / dt,
        "updates": last["updates"],
        "window_s": dt,
    }
    served = [row for row in late if "inference_batch_size" in row]
    if served:
        out["calls_per_batch"] = statistics.mean(r["inference_calls_per_batch"] for r in served)
        out["rows_per_batch"] = statistics.mean(r["inference_batch_size"] for r in served)
        out["fill"] = statistics.mean(r["inference_batch_fill"] for r in served)
        out["latency_ms"] = statistics.mean(r["inference_latency_ms"] for r in served)
        out["compute_ms"] = statistics.mean(r["inference_compute_ms"] for r in served)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--timeouts-ms", type=float, nargs="+", default=[2.0, 10.0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}")
    print(
        f"AlphaZero, tictactoe preset, ray, 2 self-play actors x 32 games, {args.seconds:.0f} s "
        f"per run (figures from its first metrics row on), seed {args.seed}\n"
    )
    configs = [("actor-side", ["--inference", "actor"])]
    central = ["--inference", "central", "--inference-batch", str(MAX_BATCH)]
    for timeout in args.timeouts_ms:
        configs.append(
            (f"central {timeout:g} ms", [*central, "--inference-timeout-ms", str(timeout)])
        )
    header = (
        f"{'leaf evaluation':<18}{'window s':>9}{'games/s':>9}{'positions/s':>13}{'updates':>9}"
        f"{'requests/batch':>16}{'rows/batch (max)':>18}{'fill':>6}{'latency ms':>12}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in configs:
            name = label.replace(" ", "_")
            figures = run(Path(tmp), name, args.seconds, args.seed, extra)
            if "rows_per_batch" in figures:
                served = (
                    f"{figures['calls_per_batch']:>16.2f}"
                    f"{figures['rows_per_batch']:>11.1f} ({MAX_BATCH})"
                    f"{figures['fill']:>6.2f}{figures['latency_ms']:>12.1f}"
                )
            else:  # each actor's own forward pass: one request, its own leaves
                served = f"{'1 (own)':>16}{'<= 32':>18}{'-':>6}{'-':>12}"
            print(
                f"{label:<18}{figures['window_s']:>9.0f}{figures['games_per_s']:>9.1f}{figures['positions_per_s']:>13.1f}"
                f"{figures['updates']:>9}{served}",
                flush=True,
            )


if __name__ == "__main__":
    main()
