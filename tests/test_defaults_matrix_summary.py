"""benchmarks/defaults_matrix.py --summary: the README's table from a results file, worst seed
per agent and (runtime, load), a cell short of its seeds marked, one never run said so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "defaults_matrix.py"


def _record(algo: str, env: str, runtime: str, load: str, seed: int, value: float) -> str:
    fields = {"algo": algo, "env": env, "runtime": runtime, "load": load, "seed": seed}
    return json.dumps(fields | {"eval": value})


def test_the_summary_gives_each_cells_worst_seed_and_how_many_reached_the_target(tmp_path):
    results = tmp_path / "matrix.jsonl"
    lines = [_record("ppo", "CartPole-v1", "inline", "idle", s, 500.0) for s in range(5)]
    lines += [
        _record("ppo", "CartPole-v1", "ray", "idle", s, v) for s, v in enumerate([308.8, 500])
    ]
    lines += [_record("sac", "Pendulum-v1", "inline", "busy", 0, -140.5)]
    lines += [json.dumps({"algo": "ppo", "env": "CartPole-v1", "runtime": "ray", "load": "busy",
                          "seed": 0, "error": "it crashed"})]  # fmt: skip
    results.write_text("\n".join(lines) + "\n")
    command = [sys.executable, str(SCRIPT), "--summary", "--results", str(results)]
    done = subprocess.run([*command, "--algos", "ppo", "sac", "bc"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    header, rule, ppo, sac = done.stdout.strip().splitlines()  # bc has no task: no row
    assert rule == "|" + " --- |" * 6
    assert header.split(" | ")[2:] == ["inline, idle", "inline, busy", "ray, idle", "ray, busy |"]
    assert ppo.split(" | ")[1:] == [
        "CartPole-v1",
        "**500.0** (5/5)",  # every seed at the target: bold
        "not run",
        "308.8 (1/2) so far",  # the worst of two seeds, one below 475
        "not run |",  # a failed run is not a result
    ]
    assert sac.split(" | ")[1:3] == ["Pendulum-v1", "not run"]
    assert "**-140.5** (1/1) so far" in sac


def test_the_markdown_table_gives_each_cell_its_worst_seed_lowest_episode_and_times(tmp_path):
    results = tmp_path / "matrix.jsonl"
    run = {"load_before": 1.0, "load_after": 3.0, "seconds": 30.0, "replay_ratio": None}
    lines = [
        json.dumps(
            {"algo": "a2c", "env": "CartPole-v1", "runtime": "ray", "load": "idle", "seed": s}
            | run
            | {"eval": value, "eval_min": low}
        )
        for s, (value, low) in enumerate([(500.0, 500), (148.9, 112)])
    ]
    lines.append(
        json.dumps(
            {"algo": "dqn", "env": "CartPole-v1", "runtime": "inline", "load": "busy", "seed": 0}
            | run
            | {"eval": 500.0, "eval_min": 500, "replay_ratio": 15.84}
        )
    )
    results.write_text("\n".join(lines) + "\n")
    command = [sys.executable, str(SCRIPT), "--markdown", "--results", str(results)]
    done = subprocess.run([*command, "--algos", "a2c", "dqn"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    header, rule, a2c, dqn = done.stdout.strip().splitlines()
    assert header.startswith("| agent | task | runtime | load | seeds | worst seed")
    assert rule == "|" + " --- |" * 11
    assert a2c.split(" | ")[1:] == [
        "CartPole-v1",
        "ray, 2 actors",
        "idle",
        "0,1",
        "148.9 (s1); 112",  # a seed below 475: not bold
        "324.4",
        "1/2",
        "2.00",
        "30, 30",
        "- |",
    ]
    assert "**500.0 (s0); 500**" in dqn
    assert dqn.endswith("| 15.84-15.84 |")
