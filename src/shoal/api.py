"""The Python entry points: `train`, `evaluate` and `load`."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from shoal import experiment
from shoal.checkpoint import list_checkpoints, load_latest
from shoal.config import dump_yaml, write_atomically
from shoal.data import Layout
from shoal.envs.registry import resolve_env
from shoal.errors import (
    CheckpointError,
    ConfigError,
    ShoalError,
    ShoalWarning,
    StorageError,
    user_error,
)
from shoal.runtime.evaluate import EvalResult, evaluate_policy
from shoal.runtime.inline import run_inline
from shoal.runtime.rows import Acting
from shoal.tree import map_tree

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
    trust_run: bool = False,
) -> TrainResult:
    """Train `algo` on `env` (or continue the run in `resume`) and evaluate the result.

    `agent`, `run` and `env_config` override fields of the agent's config, `RunConfig` and
    `EnvConfig`, over the preset for `env` and the YAML `config` file. Continuing a run whose
    config names modules to import (a `module:function` env or torso) needs `trust_run=True`.
    A run stopped by Ctrl-C returns with `stop_reason` "interrupted" and is not evaluated.
    Example: `shoal.train("ppo", "CartPole-v1", seed=1)`.
    """
    _require("algo", algo, (str, _NONE), "an algorithm name such as 'ppo'")
    _require("env", env, (str, _NONE), "an environment id such as 'CartPole-v1'")
    _require("seed", seed, (int, float, str, _NONE), "an integer")
    _require("total_steps", total_steps, (int, float, str, _NONE), "an integer such as 100_000")
    _require("config", config, (*_PATH, _NONE), "the path of a YAML file")
    for name, value in (("agent", agent), ("run", run), ("env_config", env_config)):
        _require(name, value, (Mapping, _NONE), "a dict of settings, e.g. {'num_envs': 8}")
    _require("resume", resume, (*_PATH, _NONE), "the path of a run directory")
    _require("trust_run", trust_run, (bool,), "True or False")
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
        resolved = experiment.read_run_dir(run_dir, run, trust=trust_run)
        state = load_latest(run_dir / "checkpoints", resolved.algo, set_aside=True)
        if state is None:
            # Nothing was kept (killed before or while writing its first checkpoint): the
            # same run from step 0, with the rows and events of the lost attempt dropped.
            warnings.warn(
                f"{run_dir} has no complete checkpoint (it stopped before its first one was "
                "written), so it starts again from step 0; the metrics of the lost attempt are "
                "replaced.",
                ShoalWarning,
                stacklevel=2,
            )
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
    try:
        if resolved.run.runtime == "ray":
            from shoal.runtime.ray_launcher import run_ray  # Ray is imported only for ray runs

            counter = run_ray(program, state)
        else:
            counter = run_inline(program, state)
    except ShoalError as err:
        raise _failed(user_error(err), run_dir, fresh=resume is None) from None

    evaluation = None
    interrupted = counter.stop_reason() is None
    if resolved.run.eval_episodes > 0 and not interrupted:  # Ctrl-C: stop now
        evaluation = evaluate(
            run_dir, episodes=resolved.run.eval_episodes, deterministic=True, trust_run=True
        )
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


def _failed(err: ShoalError, run_dir: Path, fresh: bool) -> ShoalError:
    """What a run that stopped on `err` leaves: a new run with no checkpoint, nothing."""
    kept = list_checkpoints(run_dir / "checkpoints")
    if fresh and not kept:
        shutil.rmtree(run_dir, ignore_errors=True)
        where = f"Nothing was kept: {run_dir} had no checkpoint yet, so it was removed."
    elif kept and isinstance(err, StorageError):
        return err  # it names the newest checkpoint and how to continue
    elif kept:
        where = (
            f"{run_dir} keeps its checkpoints, the newest {kept[-1].name}; "
            f"`shoal eval {run_dir}` evaluates it."
        )
    else:
        where = f"{run_dir} has no checkpoint yet."
    return type(err)(f"{err} {where}")


_PATH = (str, os.PathLike)
_NONE = type(None)


def _require(name: str, value: Any, kinds: tuple[type, ...], what: str) -> None:
    """A ConfigError for an argument of the wrong type, rather than an AttributeError or a
    TypeError from deep inside (bool is not taken for an int)."""
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise ConfigError(f"{name} must be {what}, got {type(value).__name__} {value!r:.60}.")


class LoadedPolicy:
    """A trained policy: `act(obs)` takes one observation or a batch and returns actions.

    Recurrent policies (LSTM IMPALA, R2D2) carry state between calls: after each env step,
    call `step_result(reward, terminated | truncated)` (scalars for one env, arrays for a
    batch) so that the next `act` sees the reward and ended episodes start afresh.
    """

    def __init__(self, run_dir: Path, deterministic: bool = True, trust_run: bool = False) -> None:
        self.run_dir = Path(run_dir)
        resolved = experiment.read_run_dir(self.run_dir, trust=trust_run)
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
        """The action for one observation, or the actions `[n, ...]` for a batch `[n, ...]`.

        Observations that are not numeric, hold NaN or inf, or fit neither the observation
        space's shape nor a batch of it raise a ShoalError."""
        boxes = self.spec.obs_boxes
        if isinstance(boxes, dict) != isinstance(obs, Mapping) or (
            isinstance(boxes, dict) and set(obs) != set(boxes)
        ):
            wanted = f"dicts with keys {sorted(boxes)}" if isinstance(boxes, dict) else "arrays"
            got = (
                f"a dict with keys {sorted(obs)}"
                if isinstance(obs, Mapping)
                else type(obs).__name__
            )
            raise ShoalError(f"{self.env_id} observations are {wanted}; act got {got}.")
        batch = map_tree(self._checked, obs, boxes)
        pairs = [(batch[k], box) for k, box in boxes.items()] if isinstance(boxes, dict) else []
        sizes = {
            len(x) if x.ndim > len(box.shape) else None for x, box in pairs or [(batch, boxes)]
        }
        if len(sizes) > 1:
            raise ShoalError("act got observation keys with different batch sizes.")
        single = sizes == {None}
        actions = self.acting.act(map_tree(lambda x: x[None], batch) if single else batch)[0]
        return actions[0] if single else actions

    def _checked(self, obs: Any, box: Any) -> np.ndarray:
        try:
            array = np.asarray(obs)
        except ValueError:  # ragged nested lists
            array = np.asarray(None)
        if array.dtype.kind not in "biuf":
            raise ShoalError(
                f"act got a non-numeric observation ({type(obs).__name__}: {obs!r:.60}); "
                f"{self.env_id} observations are {box.dtype} arrays of shape {box.shape}."
            )
        batched = array.ndim == len(box.shape) + 1 and array.shape[1:] == box.shape
        if array.shape != box.shape and not (batched and len(array) > 0):
            raise ShoalError(
                f"act got an observation of shape {array.shape}; {self.env_id} observations "
                f"have shape {box.shape}, or {('n', *box.shape)} for a batch of n."
            )
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise ShoalError(
                "act got an observation holding NaN or inf; the policy's actions would be "
                "meaningless. Check the environment, or clip the observation first."
            )
        return array.astype(box.dtype, copy=False)

    def step_result(self, reward: Any, ended: Any) -> None:
        """Report what the last action led to: its reward(s) and which episodes ended."""
        self.acting.observe(
            np.atleast_1d(np.asarray(reward, np.float32)), np.atleast_1d(np.asarray(ended, bool))
        )


def load(run_dir: str | Path, deterministic: bool = True, trust_run: bool = False) -> LoadedPolicy:
    """The policy of the newest checkpoint in `run_dir`.

    A run whose config names modules to import (a `module:function` env or torso, an
    `import_module`) is loaded only with `trust_run=True`: importing runs the module's code."""
    _require("run_dir", run_dir, _PATH, "the path of a run directory")
    _require("deterministic", deterministic, (bool,), "True or False")
    _require("trust_run", trust_run, (bool,), "True or False")
    return LoadedPolicy(Path(run_dir), deterministic, trust_run)


def evaluate(
    run_dir: str | Path,
    episodes: int = 10,
    deterministic: bool = True,
    seed: int | None = None,
    trust_run: bool = False,
) -> EvalResult:
    """Mean return of the newest checkpoint in `run_dir` over `episodes` fresh episodes
    (`trust_run` as for `load`)."""
    _require("episodes", episodes, (int,), "a whole number of episodes")
    _require("seed", seed, (int, _NONE), "an integer")
    if episodes <= 0:
        raise ConfigError(f"episodes must be > 0, got {episodes}.")
    policy = load(run_dir, deterministic, trust_run)
    torch.manual_seed(policy.seed)
    # Evaluation seeds differ from training seeds so the agent meets episodes it has not seen.
    eval_seed = policy.seed + 10_000 if seed is None else seed
    factory = resolve_env(policy.env_id, policy.env_config).factory
    return evaluate_policy(policy.acting, factory, policy.spec, episodes, eval_seed)
