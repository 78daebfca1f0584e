"""The Python entry points: `train`, `evaluate` and `load`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from shoal import experiment
from shoal.checkpoint import load_latest
from shoal.config import dump_yaml, write_atomically
from shoal.data import Layout
from shoal.envs.registry import resolve_env
from shoal.errors import CheckpointError, ConfigError
from shoal.runtime.evaluate import EvalResult, evaluate_policy
from shoal.runtime.inline import run_inline
from shoal.runtime.rows import Acting
from shoal.tree import leaves, map_tree

SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class TrainResult:
    run_dir: Path
    env_steps: int
    episodes: int
    stop_reason: str
    train_return_mean: float | None
    evaluation: EvalResult | None
    summary: dict[str, Any]


def train(
    algo: str | None = None,
    env: str | None = None,
    *,
    seed: int | None = None,
    total_steps: int | None = None,
    config: str | Path | None = None,
    agent: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
    env_config: dict[str, Any] | None = None,
    resume: str | Path | None = None,
) -> TrainResult:
    """Train `algo` on `env` (or continue the run in `resume`) and evaluate the result.

    `agent`, `run` and `env_config` override fields of the agent's config, `RunConfig` and
    `EnvConfig`, over the preset for `env` and the YAML `config` file.
    Example: `shoal.train("ppo", "CartPole-v1", seed=1)`.
    """
    run = dict(run or {})
    if total_steps is not None:
        run["total_steps"] = total_steps
    if resume is not None:
        if algo or env or config or agent or env_config or seed is not None:
            raise ConfigError(
                "--resume continues a run as configured; only run settings such as "
                "--total-steps or --max-time may be given with it."
            )
        run_dir = Path(resume)
        resolved = experiment.read_run_dir(run_dir, run)
        state = load_latest(run_dir / "checkpoints", resolved.algo)
        if state is not None and state["env_steps"] >= resolved.run.total_steps:
            raise ConfigError(
                f"{run_dir} already finished its budget of {resolved.run.total_steps} steps. "
                f"Pass a larger --total-steps to train it further."
            )
        spec = experiment.spec_of(resolved)
        if run:
            write_atomically(run_dir / experiment.CONFIG_FILE, dump_yaml(resolved.as_dict()))
    else:
        resolved = experiment.resolve(algo, env, seed, config, agent, run, env_config)
        spec = experiment.spec_of(resolved)
        resolved.agent.make_networks(spec, resolved.agent_config)  # a misfit fails before writing
        unwritten = experiment.program(resolved, Path(), spec)
        unwritten.data_path()  # so does data the agent's replay cannot store
        if resolved.run.runtime == "inline":  # and a learner device this machine lacks
            unwritten.learner_device()
        run_dir = experiment.new_run_dir(resolved)
        state = None
    program = experiment.program(resolved, run_dir, spec)
    if resolved.run.runtime == "ray":
        from shoal.runtime.ray_launcher import run_ray  # Ray is imported only for ray runs

        counter = run_ray(program, state)
    else:
        counter = run_inline(program, state)

    evaluation = None
    if resolved.run.eval_episodes > 0:
        evaluation = evaluate(run_dir, episodes=resolved.run.eval_episodes, deterministic=True)
    summary = {
        "algo": resolved.algo,
        "env": resolved.env_id,
        "seed": resolved.seed,
        "env_steps": counter.env_steps,
        "episodes": counter.episodes,
        "updates": counter.updates,
        "wall_time": round(counter.elapsed, 3),
        "stop_reason": counter.stop_reason() or "interrupted",
        **counter.counts,
        "train_return_mean": counter.mean_return,
        "target_reached_step": counter.target_reached_step,
        "target_reached_unix_time": counter.target_reached_at,
        "evaluation": evaluation.as_dict() if evaluation else None,
    }
    write_atomically(run_dir / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    return TrainResult(
        run_dir,
        counter.env_steps,
        counter.episodes,
        summary["stop_reason"],
        counter.mean_return,
        evaluation,
        summary,
    )


class LoadedPolicy:
    """A trained policy: `act(obs)` takes one observation or a batch and returns actions.

    Recurrent policies (LSTM IMPALA, R2D2) carry state between calls: after each env step,
    call `step_result(reward, terminated | truncated)` (scalars for one env, arrays for a
    batch) so that the next `act` sees the reward and ended episodes start afresh.
    """

    def __init__(self, run_dir: Path, deterministic: bool = True) -> None:
        self.run_dir = Path(run_dir)
        resolved = experiment.read_run_dir(self.run_dir)
        state = load_latest(self.run_dir / "checkpoints", resolved.algo)
        if state is None:
            raise CheckpointError(f"{run_dir} has no checkpoint yet; train it first.")
        self.algo, self.env_id, self.config = resolved.algo, resolved.env_id, resolved.agent_config
        self.env_config = resolved.env_config
        self.seed = resolved.seed
        self.spec = experiment.spec_of(resolved)
        self.env_steps = int(state["env_steps"])
        agent = resolved.agent
        self.net = agent.make_networks(self.spec, self.config)
        try:
            self.net.load_state_dict(state["learner"]["network"])
        except (RuntimeError, KeyError) as err:
            raise CheckpointError(
                f"The checkpoint in {run_dir} does not fit the network its config describes: {err}"
            ) from None
        self.net.eval()
        policy = agent.make_policy(self.spec, self.config, self.net, 0, Layout())
        policy.load_state_dict(state.get("policies", {}))  # e.g. Agent57's evaluator bandit
        self.acting = Acting(policy, self.spec, "greedy" if deterministic else "sample")

    def act(self, obs: Any) -> np.ndarray:
        boxes = self.spec.obs_boxes
        batch = map_tree(lambda x, box: np.asarray(x, dtype=box.dtype), obs, boxes)
        first, first_box = leaves(batch)[0], leaves(boxes)[0]
        single = first.shape == first_box.shape
        actions = self.acting.act(map_tree(lambda x: x[None], batch) if single else batch)[0]
        return actions[0] if single else actions

    def step_result(self, reward: Any, ended: Any) -> None:
        """Report what the last action led to: its reward(s) and which episodes ended."""
        self.acting.observe(
            np.atleast_1d(np.asarray(reward, np.float32)), np.atleast_1d(np.asarray(ended, bool))
        )


def load(run_dir: str | Path, deterministic: bool = True) -> LoadedPolicy:
    """The policy of the newest checkpoint in `run_dir`."""
    return LoadedPolicy(Path(run_dir), deterministic)


def evaluate(
    run_dir: str | Path, episodes: int = 10, deterministic: bool = True, seed: int | None = None
) -> EvalResult:
    """Mean return of the newest checkpoint in `run_dir` over `episodes` fresh episodes."""
    if episodes <= 0:
        raise ConfigError(f"episodes must be > 0, got {episodes}.")
    policy = load(run_dir, deterministic)
    torch.manual_seed(policy.seed)
    # Evaluation seeds differ from training seeds so the agent meets episodes it has not seen.
    eval_seed = policy.seed + 10_000 if seed is None else seed
    factory = resolve_env(policy.env_id, policy.env_config).factory
    return evaluate_policy(policy.acting, factory, policy.spec, episodes, eval_seed)
