"""The 1-hour soak (issue 14): IMPALA and Ape-X on MinAtar on ray, an actor killed every 5 minutes.

Each agent is one `shoal train AGENT --env minatar:breakout --runtime ray` process with its own
local Ray (started by that process, so the Ray processes of a run are its descendants and the two
runs' memory is counted apart even when they run at once). Every `--kill-every` seconds the soak
SIGKILLs one actor process (round robin over the actors `ray_actors.json` names, and only a
process of that run), and every `--sample-every` seconds it sums the resident memory (RSS) of the
run's driver and every process below it (Ray's GCS, raylet and workers included), with their
proportional and unique set sizes (PSS, USS: see `Soak.samples`). At the end it prints, per
agent: memory at `--warmup` seconds against the end, the growth (target: RSS under 5%), whether
the run finished (exit 0, summary.json written), and `actor_restarts` from the summary against
the kills (must be equal). `--report-only` prints the figures of a soak in `--runs-dir` again.

    python benchmarks/soak.py [--agents impala apex] [--env minatar:breakout] [--max-time 3600]
                              [--kill-every 300] [--sample-every 30] [--warmup 600]
                              [--sequential] [--runs-dir DIR]

Ape-X's replay is capped (`--replay-capacity`, 50k transitions) so that it fills early: a replay
still filling is growth, but not a leak (the report says when it was full; on a busy machine that
can be after the warm-up). Exit code 0 if every agent met every target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

GROWTH_TARGET = 5.0  # percent
END_MARGIN_S = 60.0  # no kill this close to the end: its restart must be seen before the run ends


@dataclass
class Soak:
    """One agent's run: its process, its kills and its memory samples."""

    agent: str
    run_dir: Path
    process: subprocess.Popen
    started: float
    log: Path
    kills: list[tuple[float, str, int]] = field(default_factory=list)  # (t, role, pid)
    # (t, RSS, PSS, USS, processes). RSS counts a page shared by N processes N times (libraries
    # a restarted actor maps, such as pyarrow and pandas, which Ray's serializer loads); PSS
    # counts 1/N of it in each, N counting other runs' processes too; USS counts only pages
    # private to a process, so its sum is what the run alone holds.
    samples: list[tuple[float, int, int, int, int]] = field(default_factory=list)
    placed_at: float | None = None
    next_kill: float = 0.0

    def processes(self) -> list[psutil.Process]:
        """The driver and every process below it (the run's local Ray)."""
        try:
            root = psutil.Process(self.process.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def sample(self) -> None:
        rss, pss, uss, count = 0, 0, 0, 0
        for process in self.processes():
            try:
                memory = process.memory_full_info()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue  # a process that ended between the listing and the reading
            rss, pss, uss = rss + memory.rss, pss + memory.pss, uss + memory.uss
            count += 1
        if count:
            self.samples.append((time.time() - self.started, rss, pss, uss, count))

    def placement(self) -> dict | None:
        try:
            return json.loads((self.run_dir / "ray_actors.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def kill_one(self) -> None:
        """SIGKILL the next actor process in turn, if it is one of this run's processes."""
        placement = self.placement() or {}
        actors = sorted(role for role in placement if role.startswith("actor"))
        if not actors:
            return
        role = actors[len(self.kills) % len(actors)]
        pid = placement[role]["pid"]
        ours = {process.pid for process in self.processes()}
        if pid not in ours:
            print(f"[{self.agent}] {role}'s pid {pid} is not a process of this run; skipped")
            return
        psutil.Process(pid).send_signal(signal.SIGKILL)
        t = time.time() - self.started
        self.kills.append((t, role, pid))
        print(f"[{self.agent}] {t:7.0f} s: killed {role} (pid {pid})", flush=True)


def launch(agent: str, args: argparse.Namespace, runs_dir: Path) -> Soak:
    run_dir = runs_dir / agent
    command = [sys.executable, "-m", "shoal", "train", agent, "--env", args.env]
    command += ["--runtime", "ray", "--actors", str(args.actors), "--seed", "0"]
    command += ["--total-steps", "1000000000", "--max-time", str(args.max_time)]
    command += ["--runs-dir", str(runs_dir), "--run-name", agent, "--progress", "false"]
    command += ["--tensorboard", "false", "--eval-episodes", "5"]
    command += ["--checkpoint-interval", str(args.checkpoint_interval)]
    if agent == "apex":
        command += ["--agent.replay-capacity", str(args.replay_capacity)]
    log = runs_dir / f"{agent}.log"
    started = time.time()
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    print(f"[{agent}] started pid {process.pid}: {' '.join(command[1:])}", flush=True)
    return Soak(agent, run_dir, process, started, log)


def watch(soaks: list[Soak], args: argparse.Namespace) -> None:
    """Sample and kill on the clock until every run has exited."""
    next_sample = {soak.agent: 0.0 for soak in soaks}
    while any(soak.process.poll() is None for soak in soaks):
        for soak in soaks:
            if soak.process.poll() is not None:
                continue
            now = time.time() - soak.started
            if now >= next_sample[soak.agent]:
                soak.sample()
                next_sample[soak.agent] = now + args.sample_every
                if soak.samples and len(soak.samples) % 10 == 1:
                    t, rss, _, uss, count = soak.samples[-1]
                    print(
                        f"[{soak.agent}] {t:7.0f} s: RSS {rss / 2**20:8.1f} MB, USS "
                        f"{uss / 2**20:8.1f} MB in {count} processes",
                        flush=True,
                    )
            if soak.placed_at is None and soak.placement() is not None:
                soak.placed_at = now  # kills count from when every role runs
                soak.next_kill = now + args.kill_every
            if (
                soak.placed_at is not None
                and now >= soak.next_kill
                and now < args.max_time - END_MARGIN_S
            ):
                soak.kill_one()
                soak.next_kill += args.kill_every
        time.sleep(1.0)


def growth(samples: list[dict], warmup: float, key: str) -> str:
    """Memory (`key`: rss, pss, uss) at the sample nearest `warmup` s against the last one."""
    start = min(samples, key=lambda sample: abs(sample["t"] - warmup))
    after = [s for s in samples if s["t"] >= start["t"]]
    first, last, peak = start[key], samples[-1][key], max(s[key] for s in after)
    return (
        f"{first / 2**20:.1f} MB at {start['t']:.0f} s, {last / 2**20:.1f} MB at "
        f"{samples[-1]['t']:.0f} s: growth {100.0 * (last - first) / first:+.2f}% (peak after "
        f"warm-up {peak / 2**20:.1f} MB, {100.0 * (peak - first) / first:+.2f}%)"
    )


def record(soak: Soak) -> dict:
    """What the soak saw of one run, as saved in RUNS_DIR/AGENT-soak.json."""
    samples = [
        {"t": t, "rss": rss, "pss": pss, "uss": uss, "processes": n}
        for t, rss, pss, uss, n in soak.samples
    ]
    kills = [{"t": t, "role": role, "pid": pid} for t, role, pid in soak.kills]
    return {
        "samples": samples,
        "kills": kills,
        "exit": soak.process.returncode,
        "started": soak.started,
        "wall": time.time() - soak.started,
    }


def report(agent: str, run_dir: Path, seen: dict, args: argparse.Namespace) -> bool:
    """Print one agent's figures from what the soak saw (`record`); True if it met every
    target."""
    code, kills = seen["exit"], len(seen["kills"])
    summary_file = run_dir / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else {}
    finished = code == 0 and bool(summary)
    restarts = summary.get("actor_restarts", 0)
    # The end: the last sample before training stopped (when the final checkpoint was written;
    # the final evaluation and the shutdown follow), so the teardown's figures do not flatter it.
    saved = sorted((run_dir / "checkpoints").glob("step-*.pt"), key=lambda p: p.stat().st_mtime)
    # (A record without its start, from an earlier soak.py: the run directory's first file.)
    started = seen.get("started") or (run_dir / "config.yaml").stat().st_mtime
    stopped = saved[-1].stat().st_mtime - started if saved else args.max_time
    training = [s for s in seen["samples"] if s["t"] < stopped] or seen["samples"]
    print(f"\n{agent.upper()} on {args.env}, ray, {args.actors} actors; run {run_dir}")
    print(
        f"  finished: {'yes' if finished else 'NO'} (exit {code}, summary.json "
        f"{'written' if summary else 'missing'}; stop_reason {summary.get('stop_reason')}, "
        f"{summary.get('env_steps', 0):,} env steps, wall {seen.get('wall', math.nan):.0f} s)"
    )
    print(
        f"  actor kills {kills}, actor_restarts {restarts}: "
        f"{'equal' if restarts == kills else 'NOT EQUAL'}"
    )
    metrics = run_dir / "metrics.jsonl"
    rows = [json.loads(line) for line in metrics.open()] if metrics.exists() else []
    full = [r["time"] for r in rows if (r.get("replay_size") or 0) >= 0.95 * args.replay_capacity]
    if agent == "apex":
        print(f"  replay 95% full at {f'{full[0]:.0f} s' if full else 'no point'} of training")
    if not training or training[-1]["t"] < args.warmup:
        print("  memory: the run ended before the warm-up; no figures")
        return False
    start = min(training, key=lambda sample: abs(sample["t"] - args.warmup))
    grown = 100.0 * (training[-1]["rss"] - start["rss"]) / start["rss"]
    print(
        f"  memory, RSS of the driver and its Ray processes: {growth(training, args.warmup, 'rss')}"
    )
    for key in ("pss", "uss"):
        if all(key in sample for sample in training):
            print(f"  memory, {key.upper()} of the same: {growth(training, args.warmup, key)}")
    print(f"  RSS growth {grown:+.2f}% against the target of < {GROWTH_TARGET:.0f}%")
    return finished and restarts == kills and grown < GROWTH_TARGET


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", nargs="+", default=["impala", "apex"])
    parser.add_argument("--env", default="minatar:breakout")
    parser.add_argument("--max-time", type=float, default=3600.0)
    parser.add_argument("--kill-every", type=float, default=300.0)
    parser.add_argument("--sample-every", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=600.0)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--replay-capacity", type=int, default=50_000)
    parser.add_argument("--checkpoint-interval", type=int, default=200_000)
    parser.add_argument("--sequential", action="store_true", help="one agent after the other")
    parser.add_argument("--runs-dir", type=Path, default=None)
    parser.add_argument(
        "--report-only", action="store_true", help="print the figures of the soak in --runs-dir"
    )
    args = parser.parse_args()
    if args.report_only:
        seen = {
            agent: json.loads((args.runs_dir / f"{agent}-soak.json").read_text())
            for agent in args.agents
        }
        results = [report(agent, args.runs_dir / agent, seen[agent], args) for agent in args.agents]
        return 0 if all(results) else 1
    runs_dir = args.runs_dir or Path(tempfile.mkdtemp(prefix="shoal-soak-"))
    runs_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"soak of {', '.join(args.agents)} on {args.env}: {args.max_time:.0f} s each, an actor "
        f"killed every {args.kill_every:.0f} s, memory sampled every {args.sample_every:.0f} s; "
        f"runs in {runs_dir}",
        flush=True,
    )
    groups = [[agent] for agent in args.agents] if args.sequential else [args.agents]
    soaks = []
    for group in groups:
        running = [launch(agent, args, runs_dir) for agent in group]
        watch(running, args)
        soaks += running
    records = {soak.agent: record(soak) for soak in soaks}
    for agent, seen in records.items():  # saved first, so --report-only can print it again
        (runs_dir / f"{agent}-soak.json").write_text(json.dumps(seen, indent=1))
    results = [report(soak.agent, soak.run_dir, records[soak.agent], args) for soak in soaks]
    print("\nall targets met" if all(results) else "\nsome target was missed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
