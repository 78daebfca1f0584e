"""One check for a machine with a GPU, under 8 minutes: does shoal learn there, and how fast.

1. `pytest -m gpu`: the learners that update on cuda agree with the same update on the CPU.
2. IMPALA on Atari Pong, inline, with central inference (SEED: actor threads only step envs,
   one inference server batches their observations): the learner and the inference server on
   the GPU, then the same run with both on the CPU. Env frames/s (4 frames per agent step),
   learner updates/s and the inference batch fill, over the second half of each run.
3. R2D2 and Agent57 learner updates/s at the papers' sizes (Kapturowski et al. 2019; Badia et
   al. 2020): batches of 64 sequences of 80 trained steps after a 40-step burn-in, 84x84x4 Pong
   frames, LSTMs of 512 units (their Atari presets). The batch comes from each agent's own data
   path, filled by acting in Pong; the same batch is then learned from repeatedly on each
   device, so the figure is the learner's alone.

    python benchmarks/gpu_check.py [--seconds 60] [--cpu] [--out gpu_check.json]

`--cpu` runs every part on the CPU only (no pytest -m gpu): the smoke test of this script on a
machine without a GPU. The figures go to stdout as a table and to `--out` as JSON.
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
import time
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parent.parent
PONG = "ALE/Pong-v5"


def machine(cpu_only: bool) -> str:
    gpu = (
        "no GPU used"
        if cpu_only or not torch.cuda.is_available()
        else torch.cuda.get_device_name(0)
    )
    return f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), {gpu}"


def gpu_tests() -> dict[str, Any]:
    """`pytest -m gpu` over the test files that hold gpu tests: its closing line, exit code."""
    started = time.perf_counter()
    # Only those files: collecting the whole suite imports Ray, moto and the rest, which a
    # GPU machine need not have.
    files = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("test_*.py")
        if "mark.gpu" in path.read_text()
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", *files],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    print(done.stdout[-3000:], done.stderr[-2000:], sep="\n", flush=True)
    return {
        "exit_code": done.returncode,
        "summary": lines[-1] if lines else "",
        "seconds": time.perf_counter() - started,
    }


def impala_pong(
    device: str, seconds: float, runs: Path, actors: int, envs: int, log_interval: int
) -> dict:
    """Frames/s, learner updates/s and inference batch fill of one timed IMPALA run."""
    name = f"impala-pong-{device}"
    command = [sys.executable, "-m", "shoal", "train", "impala", "--env", PONG]
    command += ["--inference", "central", "--actors", str(actors), "--num-envs", str(envs)]
    command += ["--learner-device", device, "--max-time", str(seconds), "--runs-dir", str(runs)]
    command += ["--run-name", name, "--progress", "false", "--eval-episodes", "0"]
    command += [
        "--tensorboard",
        "false",
        "--log-interval",
        str(log_interval),
        "--total-steps",
        "10000000000",
    ]
    command += ["--torch-threads", str(min(8, os.cpu_count() or 1))]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    rows = [json.loads(line) for line in (runs / name / "metrics.jsonl").open()]
    if len(rows) < 2:
        raise RuntimeError(f"{name}: {len(rows)} metrics rows in {seconds} s; lower --log-interval")
    late = [row for row in rows if row["time"] >= seconds / 2] or rows[-2:]
    first, last = late[0], late[-1]
    span = max(last["time"] - first["time"], 1e-9)
    frames_per_step = last["frames"] / max(last["env_steps"], 1)
    fills = [row["inference_batch_fill"] for row in late if "inference_batch_fill" in row]
    return {
        "frames_per_second": frames_per_step
        * statistics.median(r["steps_per_second"] for r in late),
        "updates_per_second": (last["updates"] - first["updates"]) / span,
        "batch_fill": statistics.mean(fills) if fills else None,
        "env_steps": last["env_steps"],
        "frames": last["frames"],
    }


def sequence_batch(algo: str, batch_size: int, num_envs: int) -> tuple[Any, Any, Any, Any]:
    """(agent, config, spec, batch): one batch of the agent's Atari preset from its data path."""
    from shoal import experiment
    from shoal.envs.registry import make_vector_env
    from shoal.runtime.collector import UnrollCollector
    from shoal.runtime.rows import Acting

    resolved = experiment.resolve(
        algo, PONG, agent_overrides={"min_replay_size": batch_size, "batch_size": batch_size}
    )
    agent, config = resolved.agent, resolved.agent_config
    spec = experiment.spec_of(resolved)
    with tempfile.TemporaryDirectory() as tmp:
        program = experiment.program(resolved, Path(tmp), spec)
        acting_net = agent.make_networks(spec, config)
        acting = Acting(agent.make_policy(spec, config, acting_net, 0, program.layout), spec)
        data_path = agent.make_data_path(spec, config, program.layout)
        table = data_path.make_table(1, 0)
        adder = data_path.make_adder(acting.policy, 0)
        env = make_vector_env(resolved.source, spec, resolved.env_config, num_envs, 0)
        collector = UnrollCollector(env, acting, config.unroll_length)
        while not table.can_sample():
            items = adder.add(collector.collect())
            if items is not None:
                table.insert(items, 0, block=False)
        batch = table.sample(0.0, 0.0)
        env.close()
    assert batch is not None
    return agent, config, spec, batch.data


def updates_per_second(agent, config, spec, batch, device: str, seconds: float) -> dict:
    """Learner updates/s on `device`, learning from `batch` again and again (2 warm-ups)."""
    torch.manual_seed(0)
    learner = agent.make_learner(spec, config, agent.make_networks(spec, config).to(device))
    for _ in range(2 if device == "cuda" else 1):  # cuda kernels and the allocator warm up
        learner.update(batch, 0.0)
    count, started = 0, time.perf_counter()
    while count < 3 or time.perf_counter() - started < seconds:
        learner.update(batch, 0.0)
        if device == "cuda":
            torch.cuda.synchronize()
        count += 1
    elapsed = time.perf_counter() - started
    return {"updates_per_second": count / elapsed, "updates": count}


def table(rows: list[tuple[str, str, str]]) -> str:
    width = max(len(r[0]) for r in rows) + 2
    lines = [f"{'':<{width}}{'cuda':>16}{'cpu':>16}"]
    lines += [f"{name:<{width}}{gpu:>16}{cpu:>16}" for name, gpu, cpu in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="per IMPALA run")
    parser.add_argument("--update-seconds", type=float, default=20.0, help="per update timing")
    parser.add_argument("--cpu", action="store_true", help="CPU only (a smoke run)")
    parser.add_argument("--actors", type=int, default=4, help="IMPALA: env-only actor threads")
    parser.add_argument("--num-envs", type=int, default=16, help="IMPALA: envs per actor")
    parser.add_argument("--log-interval", type=int, default=4000, help="IMPALA: steps a row")
    parser.add_argument("--skip-pytest", action="store_true")
    parser.add_argument(
        "--batch-size", type=int, default=64, help="R2D2, Agent57: sequences a batch (papers: 64)"
    )
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    if not args.cpu and not torch.cuda.is_available():
        sys.exit("gpu_check: this process sees no CUDA device; pass --cpu for a CPU-only run.")
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    devices = ["cpu"] if args.cpu else ["cuda", "cpu"]
    started = time.perf_counter()
    report: dict[str, Any] = {"machine": machine(args.cpu), "torch": torch.__version__}
    print(f"machine: {report['machine']}, torch {torch.__version__}", flush=True)
    # A device lease is short: a part that fails is reported, and the others still measure.
    failures: list[str] = []
    if not args.cpu and not args.skip_pytest:
        report["pytest_gpu"] = gpu_tests()
        print(f"pytest -m gpu: {report['pytest_gpu']['summary']}", flush=True)
        if report["pytest_gpu"]["exit_code"] != 0:
            failures.append(f"pytest -m gpu: {report['pytest_gpu']['summary']}")
    report["impala_pong"] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for device in devices:
            try:
                figures = impala_pong(
                    device, args.seconds, Path(tmp), args.actors, args.num_envs, args.log_interval
                )
            except Exception as error:
                failures.append(f"IMPALA on {device}: {error}")
                print(failures[-1], flush=True)
                continue
            report["impala_pong"][device] = figures
            print(f"IMPALA Pong, learner and inference on {device}: {figures}", flush=True)
            if args.out:
                args.out.write_text(json.dumps(report, indent=2))
    for algo in ("r2d2", "agent57"):
        report[algo] = {}
        try:
            agent, config, spec, batch = sequence_batch(algo, args.batch_size, args.num_envs)
        except Exception as error:
            failures.append(f"{algo} batch: {error}")
            print(failures[-1], flush=True)
            continue
        report[algo] |= {"batch_size": config.batch_size, "sequence_length": config.sequence_length}
        for device in devices:
            try:
                figures = updates_per_second(
                    agent, config, spec, batch, device, args.update_seconds
                )
            except Exception as error:
                failures.append(f"{algo} on {device}: {error}")
                print(failures[-1], flush=True)
                continue
            report[algo][device] = figures
            print(f"{algo} updates on {device}: {figures}", flush=True)
            if args.out:  # what was measured survives a later part that runs out of time
                args.out.write_text(json.dumps(report, indent=2))
    report["seconds"] = time.perf_counter() - started

    def cell(part: dict, device: str, key: str, fmt: str) -> str:
        value = part.get(device, {}).get(key)
        return "-" if value is None else format(value, fmt)

    impala = report["impala_pong"]
    rows = [
        (
            "IMPALA Pong frames/s",
            cell(impala, "cuda", "frames_per_second", ",.0f"),
            cell(impala, "cpu", "frames_per_second", ",.0f"),
        ),
        (
            "IMPALA learner updates/s",
            cell(impala, "cuda", "updates_per_second", ".1f"),
            cell(impala, "cpu", "updates_per_second", ".1f"),
        ),
        (
            "IMPALA inference batch fill",
            cell(impala, "cuda", "batch_fill", ".2f"),
            cell(impala, "cpu", "batch_fill", ".2f"),
        ),
    ]
    for algo in ("r2d2", "agent57"):
        rows.append(
            (
                f"{algo} updates/s ({args.batch_size} x 120)",
                cell(report[algo], "cuda", "updates_per_second", ".2f"),
                cell(report[algo], "cpu", "updates_per_second", ".2f"),
            )
        )
    print(f"\n{report['machine']}; {report['seconds']:.0f} s in all\n{table(rows)}", flush=True)
    report["failures"] = failures
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    if failures:
        sys.exit("gpu_check: some parts failed:\n" + "\n".join(failures))


if __name__ == "__main__":
    main()
