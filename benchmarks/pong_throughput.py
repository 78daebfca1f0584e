"""IMPALA and APPO on Atari Pong (Nature CNN, CPU): env frames/s inline and on Ray with 1 and 2
actors, and Sample Factory's APPO and RLlib's APPO on the same machine in the same run when they are
installed.

Frames are emulator frames (4 per agent step). Each configuration trains for `--seconds`; the
figure is the median of the logged rates over the second half of the run (start-up excluded).
Sample Factory runs from its own virtual environment (it needs gymnasium < 1 and numpy < 2):
--sf-python, else peers/sf/bin/python (made by ../shared/peers/setup_sample_factory.sh peers/sf),
with the settings recorded in ../shared/peers/README.md; its "Fps is (10 sec: ..., 60 sec: ...)"
log lines are read, and the 60-second figure at the end is reported. RLlib 2.60 runs from its
own virtual environment too: --rllib-python, else peers/rllib/bin/python (made by
../shared/peers/setup_rllib.sh peers/rllib), running `rllib_pong.py` (APPO with 2 env runners
of 8 envs: the actors and envs of shoal's "ray, 2 actors" row); its figure is the agent steps
sampled over the second half of the run, x4.

    python benchmarks/pong_throughput.py [--seconds 120] [--configs inline,ray-1,ray-2]
        [--algos impala,appo]
        [--sf-python PATH] [--skip-sf] [--rllib-python PATH] [--skip-rllib] [--compare-with REF]

With --compare-with REF (a git commit), shoal at REF runs each configuration too, right after
this one's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from baseline import checkout

ROOT = Path(__file__).resolve().parent.parent
FPS = re.compile(r"Fps is \(10 sec: ([\d.na]+), 60 sec: ([\d.na]+), 300 sec: ([\d.na]+)\)")


def shoal_fps(
    runs_dir: Path,
    name: str,
    seconds: float,
    extra: list[str],
    env: dict | None = None,
    algo: str = "impala",
) -> float:
    command = [
        sys.executable,
        "-m",
        "shoal",
        "train",
        algo,
        "--env",
        "ALE/Pong-v5",
        "--max-time",
        str(seconds),
        "--runs-dir",
        str(runs_dir),
        "--run-name",
        name,
        "--progress",
        "false",
        "--eval-episodes",
        "0",
        "--log-interval",
        "5000",
        *extra,
    ]
    subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    rows = [json.loads(line) for line in (runs_dir / name / "metrics.jsonl").open()]
    late = [row for row in rows if row["time"] >= seconds / 2] or rows[-1:]
    return 4 * statistics.median(row["steps_per_second"] for row in late)


def sample_factory_fps(python: str, seconds: float, train_dir: Path) -> float | None:
    command = [
        python,
        "-m",
        "sf_examples.atari.train_atari",
        "--env=atari_pong",
        "--device=cpu",
        "--num_workers=2",
        "--num_envs_per_worker=8",
        "--worker_num_splits=2",
        "--async_rl=True",
        "--with_wandb=False",
        "--experiment=pong_bench",
        f"--train_dir={train_dir}",
    ]
    # Its own session, so the learner and rollout workers it spawns are stopped with it.
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    figures: list[float] = []
    deadline = time.time() + seconds
    try:
        for line in process.stdout:
            match = FPS.search(line)
            if match and match.group(2) != "nan":
                figures.append(float(match.group(2)))
            if time.time() > deadline:
                break
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return figures[-1] if figures else None


def rllib_fps(python: str, seconds: float) -> float | None:
    """RLlib APPO's frames/s over the second half of `seconds` (`rllib_pong.py`)."""
    script = str(Path(__file__).with_name("rllib_pong.py"))
    process = subprocess.Popen(
        [python, script, "--seconds", str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # its Ray's processes are stopped with it
    )
    points = []
    try:
        for line in process.stdout:
            if line.startswith("{"):
                point = json.loads(line)
                points.append((point["time"], point["steps"]))
        process.wait(timeout=seconds + 600)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    late = [p for p in points if p[0] >= seconds / 2]
    if len(late) < 2:
        return None
    (t0, s0), (t1, s1) = late[0], late[-1]
    return 4 * (s1 - s0) / (t1 - t0)


def find_peer(explicit: str | None, default: str, module: str) -> str | None:
    """A Python that imports `module`: `explicit`, else ROOT/`default`, else None."""
    python = explicit or str(ROOT / default)
    if Path(python).exists():
        probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
        if probe.returncode == 0:
            return python
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument(
        "--configs",
        default="inline,ray-1,ray-2",
        help="shoal's configurations: inline, ray-1 and ray-2 (actors on Ray)",
    )
    parser.add_argument("--skip-ray", action="store_true", help="inline only: --configs inline")
    parser.add_argument(
        "--algos",
        default="impala,appo",
        help="shoal's agents, each with its Atari preset (APPO's: IMPALA's sizes, one epoch)",
    )
    parser.add_argument("--sf-python", help="a Python with sample-factory installed")
    parser.add_argument("--skip-sf", action="store_true")
    parser.add_argument("--rllib-python", help="a Python with ray[rllib] 2.60 installed")
    parser.add_argument("--skip-rllib", action="store_true")
    parser.add_argument("--compare-with", metavar="REF", help="also run shoal at this commit")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        baseline = stack.enter_context(checkout(args.compare_with)) if args.compare_with else None
        _run(args, baseline)


def _run(args: argparse.Namespace, baseline: dict | None) -> None:
    runs_dir = Path(tempfile.mkdtemp(prefix="shoal-pong-"))
    wanted = ["inline"] if args.skip_ray else args.configs.split(",")
    configs = [("inline", [])] if "inline" in wanted else []
    configs += [
        (
            f"ray, {n} actor{'s' * (n > 1)}",
            ["--runtime", "ray", "--actors", str(n), "--num-envs", str(16 // n)],
        )
        for n in (1, 2)
        if f"ray-{n}" in wanted
    ]
    algos = args.algos.split(",")
    print(
        f"{', '.join(a.upper() for a in algos)}, ALE/Pong-v5, Nature CNN on CPU, "
        f"{args.seconds:g} s per configuration, frames = 4 x agent steps; load average at the "
        f"start {os.getloadavg()[0]:.1f}"
    )
    results = {}
    try:
        for algo, (config, extra) in [(a, c) for a in algos for c in configs]:
            # IMPALA's rows keep their names; other agents' are prefixed with theirs.
            name = config if algo == "impala" else f"{algo} {config}"
            run_name = re.sub(r"\W+", "_", name)
            for attempt in (1, 2):  # a local Ray whose raylet did not start is started again
                try:
                    results[name] = shoal_fps(
                        runs_dir, f"{run_name}{attempt}", args.seconds, extra, algo=algo
                    )
                    break
                except subprocess.CalledProcessError as err:
                    last = (err.stderr or "").strip().splitlines()[-1:] or ["no output"]
                    print(f"shoal {name:<19} failed (attempt {attempt}): {last[0]}", flush=True)
            if name not in results:
                continue
            print(f"shoal {name:<19} {results[name]:8,.0f} frames/s", flush=True)
            if baseline is not None:
                run_name = re.sub(r"\W+", "_", name) + "_baseline"
                before = shoal_fps(runs_dir, run_name, args.seconds, extra, baseline, algo)
                print(
                    f"  at {args.compare_with:<10} {before:8,.0f} frames/s "
                    f"(this commit: {results[name] / before:.2f}x)",
                    flush=True,
                )
        _peers(args, results, runs_dir)
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(runs_dir, ignore_errors=True)


def _peers(args: argparse.Namespace, results: dict[str, float], runs_dir: Path) -> None:
    """Sample Factory's and RLlib's rows, beside shoal's `results`."""
    if not args.skip_sf:
        sf = find_peer(args.sf_python, "peers/sf/bin/python", "sample_factory")
        if sf:
            fps = sample_factory_fps(sf, args.seconds, runs_dir / "sf")
            print(
                f"Sample Factory APPO   {fps:8,.0f} frames/s (60-second average)"
                if fps
                else "Sample Factory printed no frame rate"
            )
            if fps and results:
                best = max(results, key=results.get)
                print(
                    f"best shoal ({best}) / Sample Factory = {results[best] / fps:.2f}x "
                    "(target: at least 2x)"
                )
        else:
            print(
                "Sample Factory not found (bash ../shared/peers/setup_sample_factory.sh peers/sf)"
            )
    if not args.skip_rllib:
        rllib = find_peer(args.rllib_python, "peers/rllib/bin/python", "ray.rllib")
        if rllib:
            fps = rllib_fps(rllib, args.seconds)
            print(
                f"RLlib APPO, 2 runners {fps:8,.0f} frames/s (second half)"
                if fps
                else "RLlib reported too few iterations"
            )
            for pair in ("ray, 2 actors", "appo ray, 2 actors"):
                if fps and pair in results:
                    ratio = results[pair] / fps
                    print(f"shoal ({pair}) / RLlib = {ratio:.2f}x (target: at least 3x)")
        else:
            print("RLlib not found (bash ../shared/peers/setup_rllib.sh peers/rllib)")


if __name__ == "__main__":
    main()
