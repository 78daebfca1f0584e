"""One cell of the defaults matrix with extra flags, for finding why a cell fails (issue 37).

Runs `shoal train ALGO --env TASK --seed S [flags]` for each seed, with one busy process beside
it when `--busy`, and evaluates the final policy as `defaults_matrix.py` does (20 greedy episodes
through `shoal.load(run).predict` on a fresh env). Each run is appended to `--results` (JSON
lines, with its label, flags, time, load average and the replay ratio held) and printed, so a
candidate fix can be compared with the preset seed by seed (with `--eval-every N` among the
flags, the record keeps each in-run greedy evaluation as `curve`):

    python benchmarks/defaults_probe.py --label gamma98 --seeds 1 2 3 --busy \\
        -- --runtime ray --actors 2 --agent.gamma 0.98

Ray's actors and learner interleave differently on every run, so on ray a seed does not fix the
outcome: compare failure rates over several runs, not single seeds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from defaults_matrix import BUSY, CARTPOLE, evaluate, replay_ratio

# The first fix's Ape-X probes are in defaults_matrix_apex_probes.jsonl; later ones here.
DEFAULT_RESULTS = Path(__file__).parent / "results" / "defaults_matrix_probes.jsonl"


def probe(algo: str, env_id: str, seed: int, busy: bool, flags: list[str]) -> dict[str, object]:
    """Train once with `flags` and evaluate the final policy; the record to keep."""
    runs_dir = Path(tempfile.mkdtemp(prefix="shoal-probe-"))
    command = [sys.executable, "-m", "shoal", "train", algo, "--env", env_id, "--seed", str(seed)]
    command += ["--runs-dir", str(runs_dir), "--run-name", algo, "--progress", "false"]
    command += ["--tensorboard", "false", *flags]
    spinner = subprocess.Popen([sys.executable, "-c", BUSY]) if busy else None
    load_before, started = os.getloadavg()[0], time.time()
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    record: dict[str, object] = {"seconds": round(time.time() - started)}
    record["load"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    if done.returncode != 0:
        record["error"] = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return record
    run_dir = runs_dir / algo
    summary = json.loads((run_dir / "summary.json").read_text())
    returns = evaluate(run_dir, env_id)
    record |= {
        "eval": sum(returns) / len(returns),
        "eval_min": min(returns),
        "train": summary["train_return_mean"],
        "shoal_eval": (summary.get("evaluation") or {}).get("mean_return"),
        "ratio": replay_ratio(run_dir),
    }
    curve = greedy_curve(run_dir)
    if curve:
        record["curve"] = curve
    return record


def greedy_curve(run_dir: Path) -> list[list[float]]:
    """`[env_steps, greedy mean]` of each in-run evaluation (`--eval-every`): where a run that
    ends below the threshold solved the task and when it lost it."""
    curve = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "eval_return_mean" in row:
            curve.append([row["env_steps"], round(row["eval_return_mean"], 1)])
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", default="apex")
    parser.add_argument("--env", default=CARTPOLE)
    parser.add_argument("--label", required=True, help="names the candidate in the results")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1])
    parser.add_argument("--busy", action="store_true", help="one busy process beside each run")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("flags", nargs="*", help="after --: flags for `shoal train`")
    args = parser.parse_args()
    for seed in args.seeds:
        record = {"label": args.label, "seed": seed, "extra": args.flags}
        record |= probe(args.algo, args.env, seed, args.busy, args.flags)
        record |= {"busy": args.busy, "date": datetime.date.today().isoformat()}
        record |= {"algo": args.algo, "env": args.env, "episodes": 20}
        with args.results.open("a") as out:
            out.write(json.dumps(record) + "\n")
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
