"""Training frames/s on a ViZDoom scenario: shoal's IMPALA (or PPO) against Sample Factory's APPO,
in the same run on the same machine.

Both see the same env: the scenario's .cfg from Sample Factory's scenario folder (shoal is
pointed at it with --env.vizdoom-scenario-dir; SF's basic.cfg draws the HUD, and skips decals
and particles, unlike the vizdoom wheel's), rendered at 160x120,
resized to 128x72 RGB, frame skip 4 (Sample Factory's doom defaults and shoal's). Both train
a feed-forward conv net on CPU (shoal: the Nature CNN; Sample Factory: its convnet_simple,
`--use_rnn=False`, so neither pays for a recurrent core). Frames are game tics, 4 per agent
step. Each system trains for `--seconds`; shoal's figure is the median of its logged rates over
the second half of the run (every 512 steps, the first row left out: its rate counts start-up),
Sample Factory's the last of its "Fps is (10 sec: ..., 60 sec: ...)" 60-second figures. The
load average is printed before each, since the machine may be shared.

Sample Factory runs from its own virtual environment (gymnasium < 1, numpy < 2) with vizdoom
installed in it: --sf-python, else peers/sf/bin/python (bash ../shared/peers/setup_sample_factory.sh
peers/sf, then peers/sf/bin/pip install vizdoom).

    python benchmarks/vizdoom_throughput.py [--scenario basic] [--seconds 120] [--algo impala]
        [--sf-python PATH] [--vector inline,subprocess]
"""

from __future__ import annotations

import argparse
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

ROOT = Path(__file__).resolve().parent.parent
FPS = re.compile(r"Fps is \(10 sec: ([\d.na]+), 60 sec: ([\d.na]+), 300 sec: ([\d.na]+)\)")
FRAME_SKIP = 4


def load() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def shoal_fps(
    algo: str, scenario: str, vector: str, seconds: float, runs_dir: Path, scenario_dir: str | None
) -> float:
    name = f"{algo}_{vector}"
    command = [
        sys.executable,
        "-m",
        "shoal",
        "train",
        algo,
        "--env",
        f"vizdoom:{scenario}",
        "--env.vector",
        vector,
        "--num-envs",
        "16",
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
        "512",
        "--agent.torso",
        "nature_cnn",
        *(["--env.vizdoom-scenario-dir", scenario_dir] if scenario_dir else []),
    ]
    # Output to a file, not a pipe: a pipe would also wait for any process that inherited it.
    with open(runs_dir / f"{name}.log", "w") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT)
    rows = [json.loads(line) for line in (runs_dir / name / "metrics.jsonl").open()]
    # The first row's rate counts from the start, env start-up included (vizdoom starts an
    # engine per env, seconds each on a busy machine); SF's 60-second figure leaves it out too.
    running = rows[1:] or rows
    late = [row for row in running if row["time"] >= seconds / 2] or running[-3:]
    return FRAME_SKIP * statistics.median(row["steps_per_second"] for row in late)


def sample_factory_fps(python: str, scenario: str, seconds: float, train_dir: Path) -> float | None:
    command = [
        python,
        "-m",
        "sf_examples.vizdoom.train_vizdoom",
        f"--env=doom_{scenario}",
        "--device=cpu",
        "--num_workers=2",
        "--num_envs_per_worker=8",
        "--worker_num_splits=2",
        "--async_rl=True",
        "--use_rnn=False",
        f"--env_frameskip={FRAME_SKIP}",
        "--with_wandb=False",
        "--experiment=vizdoom_bench",
        f"--train_dir={train_dir}",
    ]
    # Its own session, so the learner and rollout workers it spawns are stopped with it.
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    figures: list[float] = []
    tail: list[str] = []
    deadline = time.time() + seconds
    try:
        assert process.stdout is not None
        for line in process.stdout:
            tail = [*tail[-19:], line]
            match = FPS.search(line)
            if match and match.group(2) != "nan":
                figures.append(float(match.group(2)))
            if time.time() > deadline:
                break
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    figures = [f for f in figures if f > 0]  # 0 until its first batch is learned from
    if not figures:
        print("Sample Factory's last lines:\n" + "".join(tail))
    return figures[-1] if figures else None


def sf_scenario_dir(python: str) -> str:
    probe = "import os, sf_examples.vizdoom.doom as d; print(os.path.dirname(d.__file__))"
    folder = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True)
    return os.path.join(folder.stdout.strip(), "scenarios")


def find_sf(explicit: str | None) -> str | None:
    python = explicit or str(ROOT / "peers/sf/bin/python")
    if Path(python).exists():
        probe = [python, "-c", "import sample_factory, sf_examples.vizdoom, vizdoom"]
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return python
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="basic", help="a scenario both systems know")
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--algo", default="impala", choices=["impala", "ppo"])
    parser.add_argument("--vector", default="inline,subprocess", help="shoal's vector envs to run")
    parser.add_argument("--sf-python", help="a Python with sample-factory and vizdoom installed")
    args = parser.parse_args()
    runs_dir = Path(tempfile.mkdtemp(prefix="shoal-vizdoom-"))
    print(
        f"vizdoom:{args.scenario}, 128x72 RGB, frame skip {FRAME_SKIP}, 16 envs, feed-forward "
        f"conv nets on CPU, {args.seconds:g} s each; frames = {FRAME_SKIP} x agent steps"
    )
    sf = find_sf(args.sf_python)
    scenario_dir = sf_scenario_dir(sf) if sf else None
    try:
        results = {}
        for vector in args.vector.split(","):
            before = load()
            results[vector] = shoal_fps(
                args.algo, args.scenario, vector, args.seconds, runs_dir, scenario_dir
            )
            label = f"shoal {args.algo} ({vector} envs)"
            print(f"{label:<32}{results[vector]:8,.0f} frames/s   [{before}]", flush=True)
        if sf is None:
            print("Sample Factory with vizdoom not found (see this script's docstring)")
            return
        before = load()
        fps = sample_factory_fps(sf, args.scenario, args.seconds, runs_dir / "sf")
        if fps is None:
            print(f"Sample Factory printed no frame rate above 0 in {args.seconds:g} s")
            return
        print(f"{'Sample Factory APPO':<32}{fps:8,.0f} frames/s   [{before}] (60-second average)")
        best = max(results, key=results.get)
        print(f"best shoal ({best}) / Sample Factory = {results[best] / fps:.2f}x (target: 2x)")
        print(f"finished at {load()}; the machine may be shared with other work")
    finally:
        shutil.rmtree(runs_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
