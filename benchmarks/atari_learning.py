"""Atari learning: train one game under a wall-clock budget, score it by the no-op starts
protocol from its checkpoints, and plot score against training time and against frames.

    python benchmarks/atari_learning.py --env ALE/Pong-v5 --algo impala --seeds 0 1 2 \\
        [--budget-minutes 120] [--checkpoint-steps 250000] [--runs-dir runs/atari] \\
        [--phases train evaluate report] [--target 18] \\
        [--peer sample-factory --sf-python peers/sf/bin/python] [-- EXTRA SHOAL TRAIN FLAGS]

Each seed is one run directory, `RUNS_DIR/<game>-<algo>-s<seed>`, trained by `shoal train ...
--run-name NAME --resume auto --max-time BUDGET`. `--max-time` counts the run's training time
across resumes (each checkpoint holds it), so the same command in a later session continues a
run where the last one stopped (losing at most the steps since its newest checkpoint), and does
nothing for a run that has used its budget. Every checkpoint is kept and scored once: 30
episodes of the no-op starts protocol (`shoal eval CHECKPOINT --protocol atari`: 1-30 no-ops,
no sticky actions, whole games, 108,000-frame cap, the agent's own evaluation mode), the
result cached in RUN_DIR/evaluations/. Scoring runs after training, so its time is not counted
as training time, and it reads only the run directory, never a live process.

`--peer sample-factory` trains Sample Factory 2.1.1's APPO (`../shared/peers/`) on the same
game for the same budget after shoal, with the same frame settings (frame skip 4 with a max
over the last two frames, 84x84 grey, 4 stacked frames, up to 30 no-op starts, no sticky
actions, the minimal action set, rewards clipped for learning) and the same cores (2 workers
x 8 envs). Its checkpoints hold a network shoal cannot load, so its curve is its logged
training-episode returns (the mean of its last 100 episodes, from its TensorBoard events),
drawn beside shoal's protocol scores: the table says which is which.

The table goes to stdout and to `--out-dir` (`atari_<game>.md`), the figure to
`atari_<game>.png`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from atari_published import published_rows
from budgeted_run import train_with_budget

PEER_WORKERS, PEER_ENVS_PER_WORKER = 2, 8


@dataclass(frozen=True)
class Point:
    """One scored checkpoint (or one logged peer figure)."""

    minutes: float  # training wall-clock time
    frames: int
    score: float
    spread: float  # standard deviation over the episodes (0 for a peer's logged mean)
    episodes: int


def game_of(env: str) -> str:
    return env.split("/")[-1].split("NoFrameskip")[0].split("-")[0]


def run_name(env: str, algo: str, seed: int) -> str:
    return f"{game_of(env).lower()}-{algo}-s{seed}"


def train(args: argparse.Namespace, seed: int) -> None:
    """Start or continue one seed's run; returns when its budget is used (or on error)."""
    train_with_budget(
        args.algo,
        args.env,
        seed,
        args.runs_dir,
        run_name(args.env, args.algo, seed),
        minutes=args.budget_minutes,
        total_steps=args.total_steps,
        checkpoint_steps=args.checkpoint_steps,
        extra=args.extra,
    )


def mode(args: argparse.Namespace) -> str:
    return "greedy" if args.deterministic else "own"


def evaluate(args: argparse.Namespace, seed: int, score: bool = True) -> list[Point]:
    """Score every checkpoint of one run not scored yet (unless not `score`); all of its
    scored points, oldest first."""
    from shoal.evaluation_protocol import evaluate_atari
    from shoal.run.checkpoints import list_checkpoints, load_checkpoint

    run_dir = args.runs_dir / run_name(args.env, args.algo, seed)
    cache_path = run_dir / "evaluations" / "atari_learning.json"
    cache: dict[str, dict[str, Any]] = (
        json.loads(cache_path.read_text()) if cache_path.exists() else {}
    )
    for checkpoint in list_checkpoints(run_dir / "checkpoints") if score else []:
        key = f"{checkpoint.name}:{args.episodes}:{mode(args)}"
        if key in cache:
            continue
        state = load_checkpoint(checkpoint)
        started = time.perf_counter()
        result = evaluate_atari(
            checkpoint, args.episodes, deterministic=args.deterministic, seed=args.eval_seed
        )
        scores = [episode.score for episode in result.episodes]
        cache[key] = {
            "minutes": float(state["elapsed"]) / 60,
            "frames": int(state["env_steps"]) * 4,
            "score": statistics.mean(scores),
            "spread": statistics.pstdev(scores),
            "episodes": len(scores),
        }
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_text(json.dumps(cache, indent=1))
        point = cache[key]
        print(
            f"[evaluate] {run_dir.name} {checkpoint.name}: {point['minutes']:.1f} min, "
            f"{point['frames'] / 1e6:.2f}M frames, score {point['score']:.2f} "
            f"± {point['spread']:.2f} ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    tail = f":{args.episodes}:{mode(args)}"
    points = [Point(**value) for key, value in cache.items() if key.endswith(tail)]
    return sorted(points, key=lambda p: p.frames)


def gymnasium_check(args: argparse.Namespace, seed: int) -> tuple[float, float] | None:
    """(mean score through `shoal.load(run).predict` on Gymnasium's own Atari wrappers,
    episodes) for the newest checkpoint of one run: the env a user outside shoal would build."""
    import gymnasium as gym

    import shoal

    run_dir = args.runs_dir / run_name(args.env, args.algo, seed)
    if not (run_dir / "checkpoints").exists():
        return None
    policy = shoal.load(run_dir, deterministic=args.deterministic)
    raw = gym.make(args.env, frameskip=1, repeat_action_probability=0.0)
    env = gym.wrappers.FrameStackObservation(
        gym.wrappers.AtariPreprocessing(raw, noop_max=30, frame_skip=4, screen_size=84), 4
    )
    scores = []
    for episode in range(args.episodes):
        obs, _ = env.reset(seed=args.eval_seed + episode)
        state, total, ended = None, 0.0, False
        while not ended:
            action, state = policy.predict(obs, state, deterministic=args.deterministic)
            obs, reward, terminated, truncated, _ = env.step(int(action))
            total += float(reward)
            ended = terminated or truncated
        scores.append(total)
    env.close()
    print(f"[gymnasium] {run_dir.name}: {statistics.mean(scores):.2f} over {len(scores)}")
    return statistics.mean(scores), float(len(scores))


def time_to(points: list[Point], target: float) -> Point | None:
    """The first point at or above `target`."""
    return next((p for p in points if p.score >= target), None)


def peer_dir(args: argparse.Namespace) -> Path:
    return args.runs_dir / f"sf-{game_of(args.env).lower()}"


def train_peer(args: argparse.Namespace) -> None:
    """Sample Factory's APPO for the budget (one process: it does not resume our way)."""
    if args.sf_python is None:
        raise SystemExit("--peer sample-factory needs --sf-python (../shared/peers/README.md)")
    train_dir = peer_dir(args)
    if (train_dir / "done").exists():
        return
    game = game_of(args.env).lower()
    command = [str(args.sf_python), "-m", "sf_examples.atari.train_atari", f"--env=atari_{game}"]
    command += ["--device=cpu", f"--num_workers={PEER_WORKERS}", "--worker_num_splits=2"]
    command += [f"--num_envs_per_worker={PEER_ENVS_PER_WORKER}", "--async_rl=True"]
    command += ["--with_wandb=False", "--experiment=appo", f"--train_dir={train_dir}"]
    command += [f"--train_for_seconds={int(args.budget_minutes * 60)}", "--save_every_sec=600"]
    print(f"[peer] {' '.join(command)}", flush=True)
    shutil.rmtree(train_dir, ignore_errors=True)  # a half run cannot be continued: start over
    train_dir.mkdir(parents=True)
    with (train_dir / "train.log").open("w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise SystemExit(f"[peer] exited {done.returncode}; see {train_dir / 'train.log'}")
    (train_dir / "done").write_text("")


def peer_points(args: argparse.Namespace) -> list[Point]:
    """Sample Factory's logged mean training-episode return against time and frames."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = sorted(peer_dir(args).rglob("events.out.tfevents*"))
    if not events:
        return []
    points: list[Point] = []
    for event_file in events:
        accumulator = EventAccumulator(str(event_file), size_guidance={"scalars": 0})
        accumulator.Reload()
        tags = accumulator.Tags()["scalars"]
        tag = next((t for t in ("reward/reward", "policy_stats/avg_reward") if t in tags), None)
        if tag is None:
            continue
        scalars = accumulator.Scalars(tag)
        start = scalars[0].wall_time
        points += [
            Point((s.wall_time - start) / 60, int(s.step), float(s.value), 0.0, 100)
            for s in scalars
        ]
    return sorted(points, key=lambda p: p.frames)


def at_minutes(points: list[Point], minutes: float) -> Point | None:
    """The newest point no later than `minutes`."""
    earlier = [p for p in points if p.minutes <= minutes + 0.5]
    return earlier[-1] if earlier else None


def at_frames(points: list[Point], frames: int) -> Point | None:
    """The newest point at or before `frames` (1% slack: the final checkpoint of a run to
    exactly that many frames can land a little past it)."""
    earlier = [p for p in points if p.frames <= frames * 1.01]
    return earlier[-1] if earlier else None


def at_10m_frames(game: str, runs: dict[int, list[Point]]) -> list[str]:
    """shoal's score at 10M frames beside the scores published at 10M frames (context: the
    protocols differ, each row says how)."""
    published = published_rows(game)
    if not published:
        return []
    lines = ["", "At 10M frames:", "", "| run | score | frames | source | protocol |"]
    lines.append("| --- | --- | --- | --- | --- |")
    for seed, points in runs.items():
        point = at_frames(points, 10_000_000)
        score = f"{point.score:.1f} ± {point.spread:.1f}" if point else "-"
        frames = f"{point.frames / 1e6:.1f}M" if point else "-"
        lines.append(f"| shoal seed {seed} | {score} | {frames} | this run | no-op starts |")
    return lines + published


def report(args: argparse.Namespace, runs: dict[int, list[Point]], peer: list[Point]) -> str:
    game = game_of(args.env)
    lines = [
        f"# {game}: {args.algo} ({', '.join(args.extra) or 'preset'}), "
        f"budget {args.budget_minutes:.0f} min, target {args.target:g}",
        "",
        f"Machine: {os.cpu_count()} CPUs, {'GPU' if torch.cuda.is_available() else 'no GPU'}; "
        f"load average at report time {os.getloadavg()[0]:.2f}. shoal: {args.episodes}-episode "
        "no-op starts protocol per checkpoint; peer: its logged training-episode returns.",
        "",
        "| run | points | best score | time to target | frames at target |",
        "| --- | --- | --- | --- | --- |",
    ]
    for seed, points in runs.items():
        hit = time_to(points, args.target)
        best = max(points, key=lambda p: p.score) if points else None
        lines.append(
            f"| shoal seed {seed} | {len(points)} | "
            + (f"{best.score:.1f} at {best.minutes:.0f} min" if best else "-")
            + f" | {f'{hit.minutes:.0f} min' if hit else 'not reached'}"
            + f" | {f'{hit.frames / 1e6:.1f}M' if hit else '-'} |"
        )
    if peer:
        hit = time_to(peer, args.target)
        best = max(peer, key=lambda p: p.score)
        lines.append(
            f"| Sample Factory APPO (training returns) | {len(peer)} | {best.score:.1f} at "
            f"{best.minutes:.0f} min | {f'{hit.minutes:.0f} min' if hit else 'not reached'} | "
            f"{f'{hit.frames / 1e6:.1f}M' if hit else '-'} |"
        )
    marks = [30, 60, 90, 120]
    lines += ["", "| minutes | " + " | ".join(f"shoal s{s}" for s in runs) + " | SF APPO |"]
    lines.append("| --- " * (len(runs) + 2) + "|")
    for minutes in marks:
        cells = []
        for points in [*runs.values(), peer]:
            point = at_minutes(points, minutes)
            cells.append(f"{point.score:.1f} ({point.frames / 1e6:.1f}M)" if point else "-")
        lines.append(f"| {minutes} | " + " | ".join(cells) + " |")
    return "\n".join(lines + at_10m_frames(game, runs))


def plot(args: argparse.Namespace, runs: dict[int, list[Point]], peer: list[Point]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (by_time, by_frames) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for seed, points in runs.items():
        label = f"shoal {args.algo}, seed {seed} (no-op protocol)"
        by_time.plot([p.minutes for p in points], [p.score for p in points], "o-", label=label)
        by_frames.plot([p.frames / 1e6 for p in points], [p.score for p in points], "o-")
    if peer:
        label = "Sample Factory APPO (training returns)"
        by_time.plot([p.minutes for p in peer], [p.score for p in peer], "-", label=label)
        by_frames.plot([p.frames / 1e6 for p in peer], [p.score for p in peer], "-")
    for axis, name in ((by_time, "training wall-clock (minutes)"), (by_frames, "frames (M)")):
        axis.axhline(args.target, color="grey", linestyle=":", linewidth=1)
        axis.set_xlabel(name)
        axis.grid(alpha=0.3)
    by_time.set_ylabel(f"{game_of(args.env)} score")
    by_time.legend(fontsize=8)
    figure.suptitle(f"{args.env} on {os.cpu_count()} CPUs, budget {args.budget_minutes:.0f} min")
    figure.tight_layout()
    path = args.out_dir / f"atari_{game_of(args.env).lower()}.png"
    figure.savefig(path, dpi=100)
    return path


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="ALE/Pong-v5")
    parser.add_argument("--algo", default="impala")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--budget-minutes", type=float, default=120.0)
    parser.add_argument("--total-steps", type=int, default=10_000_000, help="agent steps at most")
    parser.add_argument("--checkpoint-steps", type=int, default=250_000, help="agent steps")
    parser.add_argument("--episodes", type=int, default=30, help="protocol episodes a point")
    parser.add_argument("--eval-seed", type=int, default=10_000)
    parser.add_argument("--target", type=float, default=18.0)
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help="score greedy actions (default: the agent's own evaluation mode, as shoal eval)",
    )
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/atari"))
    parser.add_argument("--out-dir", type=Path, default=Path("runs/atari"))
    parser.add_argument("--phases", nargs="+", default=["train", "evaluate", "report"])
    parser.add_argument("--peer", choices=["sample-factory"], default=None)
    parser.add_argument("--sf-python", type=Path, default=None)
    args = parser.parse_args(argv)
    args.extra = extra
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if "train" in args.phases:
        for seed in args.seeds:
            train(args, seed)
        if args.peer:
            train_peer(args)
    runs: dict[int, list[Point]] = {}
    if {"evaluate", "report", "gymnasium"} & set(args.phases):
        for seed in args.seeds:  # scored only in the evaluate phase; the others read the cache
            runs[seed] = evaluate(args, seed, score="evaluate" in args.phases)
    if "report" in args.phases:
        peer = peer_points(args) if args.peer else []
        table = report(args, runs, peer)
        (args.out_dir / f"atari_{game_of(args.env).lower()}.md").write_text(table + "\n")
        print(table)
        print(f"figure: {plot(args, runs, peer)}")
    if "gymnasium" in args.phases:
        for seed in args.seeds:
            newest = runs.get(seed) or []
            check = gymnasium_check(args, seed)
            if check is not None and newest:
                print(
                    f"seed {seed}: Gymnasium's wrappers {check[0]:.2f} over {check[1]:.0f} "
                    f"episodes; shoal eval --protocol atari {newest[-1].score:.2f}"
                )


if __name__ == "__main__":
    main()
