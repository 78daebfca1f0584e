"""PBT against fixed settings on MinAtar Breakout, the same space and the same env steps.

A population of N members (`shoal tune --scheduler pbt`) against N runs whose settings are
drawn from the same space and kept (`--scheduler fifo`), every run with the same budget of env
steps, so both sides spend N x total_steps. Printed per repetition: the best and the median
final training return (`return_mean`, the last 100 episodes) of each side, and the exploit
times PBT members measured in place: `exploit_time_s` from the row before an exploit (the
member paused) to the first step after it (resumed), and `exploit_copy_s`, the copy itself
(the donor's checkpoint read and loaded, the new settings applied).

    python benchmarks/pbt_minatar.py                       # 8 members, 3 repetitions
    python benchmarks/pbt_minatar.py --algo impala --reps 1
    python benchmarks/pbt_minatar.py --smoke               # 2 members, a tiny budget
    python benchmarks/pbt_minatar.py --side pbt --out pbt.json     # the sides apart (e.g.
    python benchmarks/pbt_minatar.py --side fifo --out fixed.json  # at once), then
    python benchmarks/pbt_minatar.py --combine pbt.json fixed.json --plot docs/pbt_minatar.png

The full run needs 2 x 8 x 3 runs of `--total-steps` each: hours on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SIDES = ("pbt", "fifo")
SPACES = {
    "ppo": Path(__file__).resolve().parents[1] / "examples/tune/ppo_minatar_space.yaml",
    "impala": {
        "agent.learning_rate": {"loguniform": [1.0e-4, 3.0e-3]},
        "agent.entropy_coef": {"loguniform": [1.0e-3, 5.0e-2]},
        "agent.value_coef": {"uniform": [0.25, 1.0]},
        "agent.gamma": {"uniform": [0.99, 0.9995]},
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algo", choices=sorted(SPACES), default="ppo")
    parser.add_argument("--env", default="minatar:breakout")
    parser.add_argument("--population", type=int, default=8)
    parser.add_argument("--total-steps", type=int, default=2_000_000)
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--log-interval", type=int, default=50_000)
    parser.add_argument("--perturbation-interval", type=int, default=None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--first-rep", type=int, default=0, help="number (and seed) of the first repetition"
    )
    parser.add_argument("--address", default=None, help="a Ray cluster (default: a local Ray)")
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    parser.add_argument("--plot", default=None, help="write repetition 0's curves (PNG) here")
    parser.add_argument(
        "--parallel", action="store_true", help="run PBT and the fixed runs at the same time"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="2 members, 6,144 steps each, 1 repetition"
    )
    parser.add_argument(
        "--side", choices=SIDES, default=None, help="run only this side (see --combine)"
    )
    parser.add_argument(
        "--combine",
        nargs=2,
        metavar=("PBT_JSON", "FIXED_JSON"),
        help="print (and --plot) the figures of two --side runs' --out files",
    )
    args = parser.parse_args()
    if args.combine:
        figures = [
            {**a, **b}
            for a, b in zip(*(json.loads(Path(f).read_text()) for f in args.combine), strict=True)
        ]
        for rep, sides in enumerate(figures):
            _print(rep, sides, args)
        if args.plot:
            _plot(figures[0], args, Path(args.plot))
            print(f"curves of repetition 0: {args.plot}")
        return
    if args.smoke:
        args.population, args.total_steps, args.num_envs = 2, 6144, 8
        args.log_interval, args.reps = 1024, 1
        args.perturbation_interval = args.perturbation_interval or 2048

    root = Path(tempfile.mkdtemp(prefix="pbt-minatar-"))
    agent = {"anneal_lr": False}
    if args.algo == "ppo":  # one minibatch per rollout of the smoke run's envs at most
        agent["minibatch_size"] = min(1024, 128 * args.num_envs)
    run = {
        "total_steps": args.total_steps,
        "num_envs": args.num_envs,
        "log_interval": args.log_interval,
        "checkpoint_interval": args.total_steps,
        "eval_episodes": 0,
        "tensorboard": False,
        "progress": False,
        "runs_dir": str(root),
    }
    if args.address:
        run["address"] = args.address
    figures = []
    for rep in range(args.first_rep, args.first_rep + args.reps):
        if args.parallel:  # both sides at once, each with its own local Ray: the same load
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(2, mp_context=context) as pool:
                jobs = {s: pool.submit(_side, args, s, rep, root, agent, run) for s in SIDES}
                sides = {s: job.result() for s, job in jobs.items()}
        else:
            chosen = [args.side] if args.side else SIDES
            sides = {s: _side(args, s, rep, root, agent, run) for s in chosen}
        figures.append(sides)
        if len(sides) == len(SIDES):
            _print(rep, sides, args)
        if args.out:
            Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")
    if args.plot and len(figures[0]) == len(SIDES):
        _plot(figures[0], args, Path(args.plot))
        print(f"curves of repetition 0: {args.plot}")


def _side(
    args: argparse.Namespace, scheduler: str, rep: int, root: Path, agent: dict, run: dict
) -> dict:
    """One side of a repetition: a PBT population or the fixed runs (fifo)."""
    from shoal.tune import tune

    started = time.time()
    result = tune(
        args.algo,
        args.env,
        space=SPACES[args.algo] if args.algo != "ppo" else str(SPACES["ppo"]),
        scheduler=scheduler,
        samples=args.population,
        population=args.population,
        perturbation_interval=args.perturbation_interval,
        seed=rep,
        agent=agent,
        run={**run, "run_name": f"{scheduler}-rep{rep}"},
        verbose=0,
    )
    scores = [r["last return_mean"] for r in result.rows]
    finite = [s for s in scores if s is not None and math.isfinite(s)]
    side = {
        "best": max(finite) if finite else None,
        "median": statistics.median(finite) if finite else None,
        "scores": sorted(finite),
        "env_steps": sum(r["env_steps"] or 0 for r in result.rows),
        "wall_s": round(time.time() - started, 1),
        "load_average": [round(v, 1) for v in os.getloadavg()],
        "dir": str(result.experiment_dir),
    }
    if scheduler == "pbt":
        side.update(_exploit_times(result.experiment_dir))
    return side


def _exploit_times(exp_dir: Path) -> dict:
    """Exploit times the members reported (see the module docstring)."""
    from ray.tune import ExperimentAnalysis

    pause, copy, exploits, pids, members = [], [], 0, set(), 0
    for frame in ExperimentAnalysis(str(exp_dir)).trial_dataframes.values():
        members += 1
        pids |= set(frame["pid"])
        exploits += int(frame["exploits"].max())
        pause += [float(v) for v in frame["exploit_time_s"] if math.isfinite(v)]
        copy += [float(v) for v in frame["exploit_copy_s"].drop_duplicates() if math.isfinite(v)]
    return {
        "exploits": exploits,
        "processes": len(pids),
        "members": members,
        "exploit_time_s": _spread(pause),
        "exploit_copy_s": _spread(copy),
    }


def _spread(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"median": statistics.median(values), "max": max(values), "n": len(values)}


def _curves(exp_dir: str) -> list[tuple[list[int], list[float]]]:
    """Each trial's (env steps, return_mean) from its shoal run's metrics.jsonl."""
    curves = []
    for metrics in sorted(Path(exp_dir, "runs").glob("*/metrics.jsonl")):
        steps, returns = [], []
        for line in metrics.read_text().splitlines():
            row = json.loads(line)
            value = row.get("return_mean")
            if isinstance(value, int | float) and math.isfinite(value):
                steps.append(row["env_steps"])
                returns.append(value)
        curves.append((steps, returns))
    return curves


def _plot(sides: dict, args: argparse.Namespace, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=110)
    for scheduler, colour, label in (("fifo", "tab:gray", "fixed"), ("pbt", "tab:blue", "PBT")):
        side = sides[scheduler]
        for i, (steps, returns) in enumerate(_curves(side["dir"])):
            name = f"{label} (best {_fmt(side['best'])}, median {_fmt(side['median'])})"
            axes.plot(steps, returns, color=colour, alpha=0.8, lw=1.2, label=None if i else name)
    axes.set_xlabel("env steps per member")
    axes.set_ylabel("return_mean (last 100 training episodes)")
    axes.set_title(
        f"{args.algo.upper()} on MinAtar Breakout: PBT population of {args.population} "
        f"against {args.population} fixed draws",
        fontsize=10,
    )
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)


def _print(rep: int, sides: dict, args: argparse.Namespace) -> None:
    pbt, fixed = sides["pbt"], sides["fifo"]
    print(
        f"\nrepetition {rep}: {args.algo} on {args.env}, {args.population} members x "
        f"{args.total_steps} env steps each (frames = steps: MinAtar has no frame skip)"
    )
    for name, side in (("PBT", pbt), ("fixed", fixed)):
        print(
            f"  {name:<6} best {_fmt(side['best'])}  median {_fmt(side['median'])}  "
            f"env steps {side['env_steps']}  wall {side['wall_s']} s  load average at the end "
            f"{side['load_average']}  ({side['dir']})"
        )
    if pbt.get("exploit_time_s"):
        t, c = pbt["exploit_time_s"], pbt["exploit_copy_s"] or {}
        print(
            f"  exploits {pbt['exploits']} in place ({pbt['processes']} processes for "
            f"{pbt['members']} members): pause to resume median {t['median']:.3f} s, max "
            f"{t['max']:.3f} s; copy median {c.get('median', math.nan):.3f} s"
        )
    else:
        print(f"  exploits: {pbt.get('exploits', 0)} (none timed in place)")
    verdict = (
        pbt["best"] is not None
        and fixed["best"] is not None
        and pbt["best"] >= fixed["best"]
        and pbt["median"] >= fixed["median"]
    )
    print(f"  PBT best >= fixed best and PBT median >= fixed median: {verdict}")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
