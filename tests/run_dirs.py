"""Synthetic run directories for the `shoal plot` and `shoal report` tests: what `shoal train`
writes (config.yaml, metrics.jsonl, summary.json), without training."""

from __future__ import annotations

import json
from pathlib import Path

import yaml


def write_run(
    root: Path,
    name: str,
    *,
    algo: str = "ppo",
    env: str = "CartPole-v1",
    seed: int = 0,
    rows: list[dict] | None = None,
    evaluation: float | None = None,
    agent: dict | None = None,
    run_settings: dict | None = None,
    finished: bool = True,
) -> Path:
    """A run directory `root/name`; `evaluation` is the final evaluation's mean return;
    `agent` and `run_settings` go into its config; an unfinished run has no summary.json."""
    run = root / name
    run.mkdir(parents=True)
    settings = {"total_steps": 1000, **(run_settings or {})}
    config = {"algo": algo, "env": env, "seed": seed, "run": settings, "agent": agent or {}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows or []))
    if not finished:
        return run
    summary = {"algo": algo, "env": env, "seed": seed, "evaluation": None}
    if evaluation is not None:
        summary["evaluation"] = {"episodes": 10, "mean_return": evaluation, "std_return": 1.0}
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def rows(steps: list[int], returns: list[float | None], frames_per_step: int = 1) -> list[dict]:
    """Metrics rows at `steps` with `return_mean` `returns` (time: 1 s per 100 steps)."""
    return [
        {
            "env_steps": s,
            "frames": s * frames_per_step,
            "return_mean": r,
            "loss": 1.0 / (1 + s),
            "time": s / 100,
        }
        for s, r in zip(steps, returns, strict=True)
    ]
