"""QT-Opt's Bellman updaters on Ray, and the inline Pendulum-v1 run, with the Pendulum preset.

For each `--updaters` count N (0: the learner computes its targets itself), one run of
`shoal train qtopt --env Pendulum-v1 --runtime ray --actors A --agent.bellman-updaters N`
(`shoal.train`, the same), and from its metrics rows, after learning starts:

- the updaters' throughput: targets handed to the learner per second (`labelled_items`);
- the learner's consumption: transitions it learned from per second (`learned_items`, or with
  no updaters the replay's `replay_sampled`), and gradient steps per second;
- the replay ratio the rate limiter held: transitions sampled per transition inserted beyond
  `learning_starts` (the limiter's own count), beside the preset's samples_per_insert;
- the target lag (learner updates between the target weights a batch was labelled with and
  the update that learned from it) and how full the learner's queue of labelled batches was;
- the learning result: the final greedy evaluation (`--eval-episodes`, deterministic).

`--inline-steps S` adds the inline run (in-turn, the preset: 1 env) to S steps with the same
final greedy evaluation. No peer library has QT-Opt, so no peer runs beside it.

    python benchmarks/qtopt_ray.py --steps 20000 --updaters 0,2 --seed 0
    python benchmarks/qtopt_ray.py --updaters '' --inline-steps 50000 --seed 0
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import shoal
from shoal.agents.qtopt import QTOptConfig

ENV = "Pendulum-v1"
PRESET = {"batch_size": 64, "updates_per_step": 0.5, "learning_starts": 1000}  # qtopt.yaml's


def rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def figures(run_dir: Path, updaters: int, agent: dict[str, Any]) -> dict[str, float]:
    """Rates over the rows after the first one with gradient steps (Ray's start and the
    replay's warm-up left out)."""
    table = [row for row in rows(run_dir) if row.get("gradient_steps", 0) > 0]
    first, last = table[0], table[-1]
    seconds = last["time"] - first["time"]
    consumed = "learned_items" if updaters else "replay_sampled"
    config = QTOptConfig(**{**PRESET, **agent})
    out = {
        "seconds_measured": seconds,
        "env_steps_per_s": (last["env_steps"] - first["env_steps"]) / seconds,
        "gradient_steps_per_s": (last["gradient_steps"] - first["gradient_steps"]) / seconds,
        "learner_samples_per_s": (last[consumed] - first[consumed]) / seconds,
        "replay_sampled_per_s": (last["replay_sampled"] - first["replay_sampled"]) / seconds,
        "replay_ratio_held": last["replay_sampled"]
        / max(last["replay_inserted"] - config.learning_starts, 1),
        "samples_per_insert_set": config.samples_per_insert,
        "gradient_steps": last["gradient_steps"],
    }
    if updaters:
        out["updater_targets_per_s"] = (last["labelled_items"] - first["labelled_items"]) / seconds
        out["target_lag_mean"] = float(
            np.mean([r["target_lag"] for r in table if "target_lag" in r])
        )
        out["labelled_queue_mean"] = float(np.mean([r["labelled_queue"] for r in table]))
    return out


def one_run(
    name: str, seed: int, steps: int, agent: dict[str, Any], run: dict[str, Any], updaters: int
) -> dict[str, Any]:
    started, load = time.time(), os.getloadavg()
    result = shoal.train("qtopt", ENV, seed=seed, total_steps=steps, agent=agent, run=run)
    assert result.evaluation is not None
    out: dict[str, Any] = {"run": name, "seed": seed, "steps": result.env_steps}
    out["wall_s"] = time.time() - started
    out["load_start"], out["load_end"] = load[0], os.getloadavg()[0]
    out["greedy_return"] = result.evaluation.mean_return
    out["greedy_std"] = result.evaluation.std_return
    out["greedy_min"] = result.evaluation.min_return
    table = rows(result.run_dir)  # the preset's --eval-every evaluations (5 episodes)
    out["evals"] = {r["env_steps"]: r["eval_return_mean"] for r in table if "eval_return_mean" in r}
    out |= figures(result.run_dir, updaters, agent)
    out["run_dir"] = str(result.run_dir)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20_000, help="env steps of each ray run")
    parser.add_argument(
        "--updaters", default="0,2", help="Bellman-updater counts, one ray run each"
    )
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--inline-steps", type=int, default=0, help="0: no inline run")
    parser.add_argument("--agent", default="{}", help="JSON agent overrides for every run")
    parser.add_argument("--runs-dir", default=None)
    parser.add_argument("--out", default=None, help="write the figures here as JSON")
    args = parser.parse_args()
    runs_dir = args.runs_dir or tempfile.mkdtemp(prefix="qtopt_ray_")
    base = {"runs_dir": runs_dir, "progress": False, "tensorboard": False}
    base |= {"eval_episodes": args.eval_episodes, "log_interval": 1000}
    extra = json.loads(args.agent)
    results = []
    for count in [int(n) for n in args.updaters.split(",") if n.strip()]:
        run = base | {"runtime": "ray", "actors": args.actors, "run_name": f"ray-u{count}"}
        agent = extra | {"bellman_updaters": count}
        results.append(
            one_run(
                f"ray, {args.actors} actors, {count} updaters",
                args.seed,
                args.steps,
                agent,
                run,
                count,
            )
        )
        print(json.dumps(results[-1]), flush=True)
    if args.inline_steps:
        run = base | {"run_name": "inline"}
        results.append(one_run("inline (in turn)", args.seed, args.inline_steps, extra, run, 0))
        print(json.dumps(results[-1]), flush=True)
    print()
    keys = ["greedy_return", "gradient_steps_per_s", "learner_samples_per_s"]
    keys += ["updater_targets_per_s", "replay_ratio_held", "samples_per_insert_set"]
    keys += ["target_lag_mean", "labelled_queue_mean", "env_steps_per_s", "wall_s"]
    keys += ["load_start", "load_end"]
    print("| run | steps | " + " | ".join(keys) + " |")
    print("|" + " --- |" * (len(keys) + 2))
    for row in results:
        cells = [f"{row[k]:.1f}" if isinstance(row.get(k), float) else "-" for k in keys]
        print(f"| {row['run']} | {row['steps']} | " + " | ".join(cells) + " |")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
