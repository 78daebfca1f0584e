"""Does each agent's default learn its reference task on every seed, inline and on Ray, busy or not?

Issue 37. For each agent in the catalog (`shoal.catalog.AGENTS`) this runs `shoal train ALGO
--env TASK` with the preset's budget and nothing else set (no stop condition), for each seed,
runtime (inline, or `--runtime ray --actors 2`) and load (idle, or `--busy`: one process spinning
beside the run), then evaluates the run's final policy outside the project's evaluator: 20 greedy
episodes through the public API, `shoal.load(run_dir).predict(obs, state, reward=r)`, on a fresh
`gymnasium.make(TASK)` env (episode k reset with seed 10_000 + k).

Reference tasks: CartPole-v1 for the discrete agents (the recurrent ones, R2D2 and Agent57,
included: their presets are tuned for it, as `benchmarks/cartpole_defaults.py` runs them),
Pendulum-v1 for the continuous-only ones (SAC, TD3, DDPG, QT-Opt). Targets: CartPole >= 475,
Pendulum >= -250. Agents with no such task (BC and R2D3 need a dataset of demonstrations,
AlphaZero board games) are listed as skipped with the reason.

Each run is appended to a JSON-lines file (`--results`) as it ends, with its wall time, the load
average around it and the replay ratio the replay agents held (the last `replay_ratio` row of
`metrics.jsonl`: items sampled per item inserted); a cell already in the file is not run again,
so a matrix can be run piecewise across sessions (a run that failed is run again). The table
printed at the end holds, per (agent, runtime, load) cell, the worst seed's evaluation, each
run's time and the replay ratio; `--markdown` prints it as Markdown (the benchmarks page's),
`--summary` the README's table, one row per agent with the worst seed of each runtime and load.
Run ray cells with `--jobs 1`: two local Ray
clusters started at once on a loaded 2-core machine failed to place their processes within
Ray's 120 s.

    python benchmarks/defaults_matrix.py [--algos apex dqn] [--seeds 0 1 2 3 4]
        [--runtimes inline ray] [--busy] [--results FILE] [--max-minutes 14] [--table-only]
        [--summary] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from shoal.catalog import AGENTS

CARTPOLE, PENDULUM = "CartPole-v1", "Pendulum-v1"
TARGETS = {CARTPOLE: 475.0, PENDULUM: -250.0}
CONTINUOUS = {"sac": PENDULUM, "td3": PENDULUM, "ddpg": PENDULUM, "qtopt": PENDULUM}
SKIPPED = {
    "bc": "offline: clones a Minari dataset of demonstrations (--dataset), no task of its own",
    "r2d3": "needs a Minari dataset of demonstrations (--agent.demos); its task is the snake maze",
    "alphazero": "two-player board games (tictactoe, connect_four), not a Gymnasium task",
}
EPISODES = 20
EVAL_SEED = 10_000
BUSY = "while True: pass"
DEFAULT_RESULTS = Path(__file__).parent / "results" / "defaults_matrix.jsonl"


def task_of(algo: str) -> str | None:
    """The reference task of `algo`, or None where it is skipped."""
    return None if algo in SKIPPED else CONTINUOUS.get(algo, CARTPOLE)


def evaluate(run_dir: Path, env_id: str, episodes: int = EPISODES) -> list[float]:
    """Greedy returns of the run's final policy through `shoal.load(...).predict` on a fresh
    Gymnasium env: the loop a user writes, not the runtime's evaluator."""
    import gymnasium as gym

    import shoal

    policy = shoal.load(run_dir)
    env = gym.make(env_id)
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=EVAL_SEED + episode)
        state, reward, total, done = None, 0.0, 0.0, False
        while not done:
            action, state = policy.predict(obs, state, reward=reward)
            obs, r, terminated, truncated, _ = env.step(action)
            reward = float(r)
            total += reward
            done = terminated or truncated
        returns.append(total)
    env.close()
    return returns


def replay_ratio(run_dir: Path) -> float | None:
    """The last `replay_ratio` logged (items sampled per item inserted), None for agents without
    replay."""
    ratio = None
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "replay_ratio" in row:
            ratio = row["replay_ratio"]
    return ratio


def run_one(algo: str, env_id: str, runtime: str, seed: int, runs_dir: str) -> dict[str, Any]:
    """Train `algo` with its defaults and evaluate the final policy; the record to keep."""
    command = [sys.executable, "-m", "shoal", "train", algo, "--env", env_id]
    command += ["--seed", str(seed), "--runs-dir", runs_dir, "--progress", "false"]
    command += ["--tensorboard", "false"]
    if runtime == "ray":
        command += ["--runtime", "ray", "--actors", "2"]
    load_before = os.getloadavg()[0]
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.time() - started
    record: dict[str, Any] = {"seconds": round(seconds, 1), "load_before": round(load_before, 2)}
    record["load_after"] = round(os.getloadavg()[0], 2)
    if done.returncode != 0:
        record["error"] = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return record
    run_dir = Path(
        next(line.split(": ", 1)[1] for line in done.stdout.splitlines() if "run dir" in line)
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    returns = evaluate(run_dir, env_id)
    record.update(
        steps=summary["env_steps"],
        train=summary["train_return_mean"],
        shoal_eval=(summary.get("evaluation") or {}).get("mean_return"),
        eval=sum(returns) / len(returns),
        eval_min=min(returns),
        replay_ratio=replay_ratio(run_dir),
        run_dir=str(run_dir),
    )
    return record


def key(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record["algo"], record["env"], record["runtime"], record["load"], record["seed"])


def read_results(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cell_rows(records: list[dict[str, Any]], algos: list[str]) -> list[dict[str, Any]]:
    """One row per (agent, task, runtime, load) cell: its seeds, the worst seed's evaluation,
    the mean, how many seeds reached the target, the mean load average, each run's seconds
    and the range of replay ratios held."""
    cells: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in records:
        if r["algo"] in algos:
            cells.setdefault((r["algo"], r["env"], r["runtime"], r["load"]), []).append(r)
    rows = []
    for (algo, env_id, runtime, load), runs in sorted(cells.items()):
        runs.sort(key=lambda r: r["seed"])
        ok = [r for r in runs if "error" not in r]
        worst = min(ok, key=lambda r: r["eval"]) if ok else None
        ratios = [r["replay_ratio"] for r in ok if r.get("replay_ratio") is not None]
        loads = [(r["load_before"] + r["load_after"]) / 2 for r in runs]
        rows.append(
            {
                "algo": algo,
                "env": env_id,
                "runtime": runtime,
                "load": load,
                "seeds": ",".join(str(r["seed"]) for r in runs),
                "worst": f"{worst['eval']:.1f} (s{worst['seed']})" if worst else "-",
                "worst_min": f"{worst['eval_min']:.0f}" if worst else "-",
                "mean": f"{sum(r['eval'] for r in ok) / len(ok):.1f}" if ok else "-",
                "passed": sum(r["eval"] >= TARGETS[env_id] for r in ok),
                "runs": len(runs),
                "load_avg": sum(loads) / len(loads),
                "times": " ".join(
                    f"{r['seconds']:.0f}" if "error" not in r else "err" for r in runs
                ),
                "ratio": f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-",
            }
        )
    return rows


def table(records: list[dict[str, Any]], algos: list[str]) -> str:
    """Worst seed per (agent, runtime, load), each run's time and the replay ratio held."""
    lines = [
        f"{'agent':<9} {'task':<12} {'runtime':<7} {'load':<5} {'seeds':<10} {'worst':>14} "
        f"{'mean':>7} {'ok':>5} {'load avg':>9}  {'seconds per run':<28} replay ratio",
    ]
    for c in cell_rows(records, algos):
        lines.append(
            f"{c['algo']:<9} {c['env']:<12} {c['runtime']:<7} {c['load']:<5} {c['seeds']:<10} "
            f"{c['worst']:>14} {c['mean']:>7} {c['passed']:>2}/{c['runs']:<2} "
            f"{c['load_avg']:>9.2f}  {c['times']:<28} {c['ratio']}"
        )
    for algo in algos:
        if algo in SKIPPED:
            lines.append(f"{algo:<9} skipped: {SKIPPED[algo]}")
    return "\n".join(lines)


def markdown_table(records: list[dict[str, Any]], algos: list[str]) -> str:
    """`table` as Markdown, for the benchmarks page: the worst seed in bold where every seed
    reached the target, with its lowest episode."""
    lines = [
        "| agent | task | runtime | load | seeds | worst seed (predict, 20 episodes; lowest "
        "episode) | mean | solved | load average | s per run | replay ratio held |",
        "|" + " --- |" * 11,
    ]
    for c in cell_rows(records, algos):
        worst = f"{c['worst']}; {c['worst_min']}"
        worst = f"**{worst}**" if c["passed"] == c["runs"] else worst
        runtime = "ray, 2 actors" if c["runtime"] == "ray" else c["runtime"]
        lines.append(
            f"| {c['algo']} | {c['env']} | {runtime} | {c['load']} | {c['seeds']} | {worst} | "
            f"{c['mean']} | {c['passed']}/{c['runs']} | {c['load_avg']:.2f} | "
            f"{c['times'].replace(' ', ', ')} | {c['ratio']} |"
        )
    return "\n".join(lines)


CELLS = (("inline", "idle"), ("inline", "busy"), ("ray", "idle"), ("ray", "busy"))


def summary(records: list[dict[str, Any]], algos: list[str], seeds: int = 5) -> str:
    """A Markdown table, one row per agent: the worst seed's greedy evaluation in each (runtime,
    load) cell and how many of its seeds reached the target; a cell short of `seeds` runs says
    so, and one never run says "not run"."""
    head = "| agent | task | " + " | ".join(f"{rt}, {load}" for rt, load in CELLS) + " |"
    lines = [head, "|" + " --- |" * (2 + len(CELLS))]
    for algo in algos:
        env_id = task_of(algo)
        if env_id is None:
            continue
        row = [f"`{algo}`", env_id]
        for runtime, load in CELLS:
            runs = [
                r
                for r in records
                if (r["algo"], r["env"], r["runtime"], r["load"]) == (algo, env_id, runtime, load)
                and "error" not in r
            ]
            if not runs:
                row.append("not run")
                continue
            worst = min(r["eval"] for r in runs)
            solved = sum(r["eval"] >= TARGETS[env_id] for r in runs)
            shown = f"**{worst:.1f}**" if solved == len(runs) else f"{worst:.1f}"
            row.append(f"{shown} ({solved}/{len(runs)})" + (" so far" if len(runs) < seeds else ""))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=list(AGENTS), choices=list(AGENTS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    runtimes = ["inline", "ray"]
    parser.add_argument("--runtimes", nargs="+", default=runtimes, choices=runtimes)
    parser.add_argument("--busy", action="store_true", help="one busy process beside each run")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="JSON lines file")
    parser.add_argument(
        "--max-minutes", type=float, default=None, help="start no run after this many minutes"
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="runs at once (beside the one busy process)"
    )
    parser.add_argument("--table-only", action="store_true", help="print the table, run nothing")
    parser.add_argument(
        "--summary", action="store_true", help="print the README's table (Markdown), run nothing"
    )
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="print the cell table as Markdown (the benchmarks page's), run nothing",
    )
    args = parser.parse_args()
    load = "busy" if args.busy else "idle"
    records = read_results(args.results)
    if args.summary:
        print(summary(records, args.algos, len(args.seeds)))
        return
    if args.markdown:
        print(markdown_table(records, args.algos))
        return
    done = {key(r) for r in records if "error" not in r}  # a failed run is run again
    todo = [
        (algo, env_id, runtime, seed)
        for algo in args.algos
        if (env_id := task_of(algo)) is not None
        for runtime in args.runtimes
        for seed in args.seeds
        if (algo, env_id, runtime, load, seed) not in done
    ]
    started = time.time()
    busy = None
    if args.table_only:
        todo = []
    if todo:
        busy = subprocess.Popen([sys.executable, "-c", BUSY]) if args.busy else None
        print(f"{len(todo)} run(s) to do ({load}); results in {args.results}", flush=True)
    lock = threading.Lock()

    def one(item: tuple[str, str, str, int], runs_dir: str) -> None:
        algo, env_id, runtime, seed = item
        if args.max_minutes is not None and time.time() - started > 60 * args.max_minutes:
            return  # left to do
        record = {"algo": algo, "env": env_id, "runtime": runtime, "load": load, "seed": seed}
        record |= {"date": time.strftime("%Y-%m-%d %H:%M"), "jobs": args.jobs}
        record |= run_one(algo, env_id, runtime, seed, f"{runs_dir}/{algo}-{runtime}-{seed}")
        record.pop("run_dir", None)  # a temporary directory
        shown = record.get("error") or (
            f"eval {record['eval']:.1f} (min {record['eval_min']:.0f}), shoal's "
            f"{record['shoal_eval']}, train {record['train']:.1f}, ratio {record['replay_ratio']}"
        )
        with lock:
            args.results.parent.mkdir(parents=True, exist_ok=True)
            with args.results.open("a") as out:
                out.write(json.dumps(record) + "\n")
            records.append(record)
            print(
                f"{algo} {runtime} {load} seed {seed}: {shown}, {record['seconds']:.0f} s, "
                f"load {record['load_before']}-{record['load_after']}",
                flush=True,
            )

    try:
        with (
            tempfile.TemporaryDirectory() as runs_dir,
            ThreadPoolExecutor(args.jobs) as pool,
        ):
            for future in [pool.submit(one, item, runs_dir) for item in todo]:
                future.result()
    finally:
        if busy is not None:
            busy.kill()
    if args.max_minutes is not None and len(records) < len(done) + len(todo):
        print(f"--max-minutes {args.max_minutes:g} reached; the rest is left to do")
    print(table(records, args.algos))


if __name__ == "__main__":
    main()
