"""`shoal tune`: a hyperparameter search or a population (PBT) of shoal runs on Ray Tune.

Tune is the engine (its schedulers, trial placement and experiment resume); shoal brings the
trainable (`trainable.py`), the checks made before anything starts, and the experiment
directory:

    RUNS_DIR/tune-<algo>-<env>-<time>/
      shoal-tune.yaml      what was asked (what --resume reads)
      runs/<algo>-<trial>  each trial's shoal run directory (config, metrics.jsonl, tb/, ...)
      ShoalTrainable_*/    Tune's own trial folders (results, Tune checkpoints)
      trials.md, .csv      the final table: settings, best and last metric of every trial
      best.yaml            the best trial's settings, for `shoal train --config best.yaml`
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from shoal import config as configs
from shoal import experiment
from shoal.errors import ConfigError, ShoalError
from shoal.runtime.program import run_layout
from shoal.tune.pbt import KeepInSpace, keep_actors, pbt_class
from shoal.tune.results import TuneResult, report
from shoal.tune.space import Space, load_space, parse_space

__all__ = ["TuneResult", "tune"]

Scheduler = Literal["fifo", "asha", "pbt"]
SCHEDULERS = ("fifo", "asha", "pbt")
STATE_FILE = "shoal-tune.yaml"
_MAX_CORNERS = 256  # every combination of the space's ends is checked up to this many


def tune(
    algo: str | None = None,
    env: str | None = None,
    *,
    space: str | Path | Mapping[str, Any] | None = None,
    scheduler: Scheduler = "fifo",
    samples: int = 8,
    population: int = 4,
    metric: str = "return_mean",
    mode: Literal["max", "min"] = "max",
    perturbation_interval: int | None = None,
    cpus_per_trial: float = 1.0,
    seed: int | None = None,
    config: str | Path | None = None,
    agent: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
    env_config: dict[str, Any] | None = None,
    resume: str | Path | None = None,
    trust_run: bool = False,
    verbose: int = 1,
) -> TuneResult:
    """Search `space` for `algo` on `env` (or continue the experiment in `resume`).

    `agent`, `run` and `env_config` are `shoal train`'s settings, applied to every trial;
    `run["address"]` names the Ray cluster (default: a Ray already initialised in this
    process, else a new local one). `scheduler`: fifo (every trial to its budget), asha
    (early stopping), pbt (a population of `population` whose worst members copy the best
    and perturb their settings every `perturbation_interval` env steps). Every mistake is a
    ConfigError raised before anything is written.

    Resuming unpickles Ray Tune's experiment state (`tuner.pkl`, which can run any code) and
    imports the modules the stored config names, so it needs `trust_run=True`."""
    if not isinstance(trust_run, bool):
        raise ConfigError(f"trust_run must be True or False, got {trust_run!r}.")
    if resume is not None:
        if algo or env or space is not None or agent or env_config or config or seed is not None:
            raise ConfigError(
                "--resume continues an experiment as it was asked; give only the experiment "
                "directory (and --address)."
            )
        return _resume(Path(resume), (run or {}).get("address"), trust_run, verbose)
    if space is None:
        raise ConfigError(
            "Name the search space with --space SPACE.yaml, e.g. "
            "examples/tune/ppo_cartpole_space.yaml."
        )
    asked = _Asked(
        algo=algo,
        env=env,
        seed=seed,
        config_file=str(Path(config).resolve()) if config is not None else None,
        agent=dict(agent or {}),
        run=dict(run or {}),
        env_config=dict(env_config or {}),
        space=space if isinstance(space, Mapping) else None,
        space_file=None if isinstance(space, Mapping) else str(space),
        scheduler=scheduler,
        samples=samples,
        population=population,
        metric=metric,
        mode=mode,
        perturbation_interval=perturbation_interval,
        cpus_per_trial=cpus_per_trial,
    )
    plan = _plan(asked)
    exp_dir = _new_experiment_dir(plan)
    configs.write_atomically(exp_dir / STATE_FILE, configs.dump_yaml(plan.stored()))
    return _fit(plan, exp_dir, restore=False, verbose=verbose)


@dataclass
class _Asked:
    algo: str | None
    env: str | None
    seed: int | None
    config_file: str | None
    agent: dict[str, Any]
    run: dict[str, Any]
    env_config: dict[str, Any]
    space: Mapping[str, Any] | None
    space_file: str | None
    scheduler: str
    samples: int
    population: int
    metric: str
    mode: str
    perturbation_interval: int | None
    cpus_per_trial: float


@dataclass
class _Plan:
    """A checked experiment: everything the trials and the scheduler need."""

    asked: _Asked
    resolved: experiment.Resolved
    space: Space
    address: str | None
    trials: int
    perturbation_interval: int

    def stored(self) -> dict[str, Any]:
        asked = self.asked
        return {
            "algo": self.resolved.algo,
            "env": self.resolved.env_id,
            "seed": self.resolved.seed,
            "config_file": asked.config_file,
            "agent": asked.agent,
            "run": asked.run,
            "env_config": asked.env_config,
            "space": self.space.as_yaml(),
            "scheduler": asked.scheduler,
            "samples": asked.samples,
            "population": asked.population,
            "metric": asked.metric,
            "mode": asked.mode,
            "perturbation_interval": self.perturbation_interval,
            "cpus_per_trial": asked.cpus_per_trial,
        }


def _plan(asked: _Asked) -> _Plan:
    """Check everything asked, before anything is written or Ray is started."""
    if asked.scheduler not in SCHEDULERS:
        raise ConfigError(
            f"--scheduler {asked.scheduler!r} is not one of {', '.join(SCHEDULERS)} (fifo: "
            "every trial to its budget; asha: stop the worst early; pbt: a population)."
        )
    if asked.mode not in ("max", "min"):
        raise ConfigError(f"--mode must be max or min, got {asked.mode!r}.")
    pbt = asked.scheduler == "pbt"
    trials = asked.population if pbt else asked.samples
    what = "--population" if pbt else "--samples"
    if not isinstance(trials, int) or trials < (2 if pbt else 1):
        raise ConfigError(
            f"{what} must be an integer of at least {2 if pbt else 1}, got {trials!r}."
        )
    if not asked.metric or not isinstance(asked.metric, str):
        raise ConfigError("--metric names a column of metrics.jsonl, e.g. return_mean.")
    _check_metric(asked.metric)
    if not asked.cpus_per_trial > 0:
        raise ConfigError(f"--cpus-per-trial must be > 0, got {asked.cpus_per_trial}.")
    run = dict(asked.run)
    address = run.pop("address", None)
    resolved = experiment.resolve(
        asked.algo, asked.env, asked.seed, asked.config_file, asked.agent, run, asked.env_config
    )
    source = "the space" if asked.space is not None else asked.space_file
    if asked.space is not None:
        space = parse_space(asked.space, resolved.agent.config_cls, resolved.algo, "the space")
    else:
        space = load_space(str(source), resolved.agent.config_cls, resolved.algo)
    _check_corners(resolved, space)
    if pbt:
        _check_mutable(resolved, space)
    interval = asked.perturbation_interval
    log_interval = resolved.run.log_interval
    if interval is None:
        interval = max(log_interval, resolved.run.total_steps // 8)
    if pbt and (not isinstance(interval, int) or interval < log_interval):
        raise ConfigError(
            f"--perturbation-interval must be at least --log-interval ({log_interval} env "
            f"steps: a trial reports once a row), got {interval!r}."
        )
    return _Plan(asked, resolved, space, address, trials, interval)


# Columns every run's metrics rows have (the learner's own figures come beside them).
ROW_COLUMNS = (
    *("env_steps", "frames", "episodes", "updates", "return_mean", "episode_length_mean"),
    *("policy_lag", "time", "steps_per_second"),
    *(
        f"{prefix}{name}"
        for prefix in ("eval_", "eval_sampled_")
        for name in ("return_mean", "return_std", "return_min", "return_max", "length_mean")
    ),
)


def _check_metric(metric: str) -> None:
    """A --metric a letter or two from a column every run writes is a typo, refused before
    the search runs (it would run every trial and rank none). Other names may be the
    learner's figures, which only a run shows: `_check_outcome` says if none reported it."""
    if metric in ROW_COLUMNS:
        return
    close = difflib.get_close_matches(metric, ROW_COLUMNS, n=1, cutoff=0.85)
    if close:
        raise ConfigError(
            f"--metric {metric} is not a column of metrics.jsonl; did you mean {close[0]}? "
            f"Every run writes {', '.join(ROW_COLUMNS[:9])} and eval_return_mean, plus its "
            "learner's figures (see a run's metrics.jsonl)."
        )


def _check_corners(resolved: experiment.Resolved, space: Space) -> None:
    """Every value the space can draw (at its ends, and their combinations) must make a
    config the agent accepts, as `shoal train` would check it."""
    options = [[(d, v) for v in d.corners()] for d in space.dimensions]
    combos: Sequence[Sequence[tuple[Any, Any]]]
    if math.prod(len(o) for o in options) <= _MAX_CORNERS:
        combos = list(itertools.product(*options))
    else:
        combos = [[pair] for option in options for pair in option]
    for combo in combos:
        values: dict[str, dict[str, Any]] = {"agent": {}, "run": {}}
        for dimension, value in combo:
            values[dimension.section][dimension.name] = value
        drawn = ", ".join(f"{d.key}={v!r}" for d, v in combo)
        try:
            agent_config = configs.replace(resolved.agent_config, values["agent"], "agent")
            run = configs.replace(resolved.run, values["run"], "run")
            resolved.agent.validate(agent_config, run_layout(run))
        except ConfigError as err:
            raise ConfigError(
                f"{space.source}: the space can draw {drawn}, which is refused: {err}"
            ) from None
        except ValueError as err:
            raise ConfigError(
                f"{space.source}: the space can draw {drawn}, which is refused: {err}"
            ) from None


def _check_mutable(resolved: experiment.Resolved, space: Space) -> None:
    """PBT changes settings of live learners: only those the agent can take in place."""
    mutable = resolved.agent.mutable
    for dimension in space.dimensions:
        if dimension.section == "agent" and dimension.name in mutable:
            continue
        if not mutable:
            why = f"{resolved.algo}'s learner takes no new settings while it runs"
        elif dimension.section == "run":
            why = "run settings shape the envs and actors, which an exploit does not rebuild"
        else:
            why = (
                f"{resolved.algo}'s learner cannot take it while it runs; it takes "
                f"{', '.join(sorted(mutable))}"
            )
        raise ConfigError(
            f"{space.source}: --scheduler pbt cannot mutate {dimension.key}: {why}. Remove it "
            "from the space (and set it with a flag), or search it with --scheduler asha or fifo."
        )


def _new_experiment_dir(plan: _Plan) -> Path:
    run = plan.resolved.run
    root = Path(run.runs_dir).resolve()
    name = run.run_name
    if name is None:
        env = re.sub(r"[^A-Za-z0-9._-]+", "_", plan.resolved.env_id)
        name = f"tune-{plan.resolved.algo}-{env}-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        exp_dir = root / name
        suffix = 1
        while True:
            try:
                exp_dir.mkdir()
                return exp_dir
            except FileExistsError:
                if run.run_name is not None:
                    raise ConfigError(
                        f"Experiment directory {exp_dir} already exists. Continue it with "
                        f"`shoal tune --resume {exp_dir} --trust-run` or choose another --run-name."
                    ) from None
                suffix += 1
                exp_dir = root / f"{name}-{suffix}"
    except OSError as err:
        raise ConfigError(
            f"Cannot create the experiment directory in --runs-dir {root}: "
            f"{err.strerror or err}. Pass a --runs-dir you can write to."
        ) from None


def _resume(exp_dir: Path, address: str | None, trust_run: bool, verbose: int) -> TuneResult:
    state_file = exp_dir / STATE_FILE
    if not state_file.is_file():
        raise ConfigError(
            f"{exp_dir} is not a shoal tune experiment directory (no {STATE_FILE}). Pass the "
            "directory `shoal tune` printed when it started."
        )
    if not trust_run:
        # Tune's state is a pickle: reading it runs whatever code it holds. No file tells an
        # experiment this user made from one they downloaded, so resuming is always an opt-in.
        raise ConfigError(
            f"Resuming {exp_dir} unpickles its Ray Tune state (tuner.pkl), which can run any "
            f"code, imports the modules its {STATE_FILE} names and joins the Ray cluster it "
            "records: pass --trust-run (Python: trust_run=True) if you made this experiment "
            "or trust whoever did."
        )
    stored = configs.load_yaml(state_file)
    run = dict(stored["run"])
    if address is not None:
        run["address"] = address
    asked = _Asked(
        algo=stored["algo"],
        env=stored["env"],
        seed=stored["seed"],
        config_file=stored.get("config_file"),
        agent=stored["agent"],
        run=run,
        env_config=stored["env_config"],
        space=stored["space"],
        space_file=None,
        scheduler=stored["scheduler"],
        samples=stored["samples"],
        population=stored["population"],
        metric=stored["metric"],
        mode=stored["mode"],
        perturbation_interval=stored["perturbation_interval"],
        cpus_per_trial=stored["cpus_per_trial"],
    )
    plan = _plan(asked)
    return _fit(plan, exp_dir, restore=True, verbose=verbose)


def _fit(plan: _Plan, exp_dir: Path, restore: bool, verbose: int) -> TuneResult:
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "2")  # what --resume finds after a kill
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "1")
    _connect(plan)
    from ray import tune as ray_tune

    from shoal.tune.trainable import ShoalTrainable

    trainable = ray_tune.with_resources(ShoalTrainable, _trial_resources(plan))
    param_space = {"shoal": _fixed(plan, exp_dir), **plan.space.to_tune()}
    if restore:
        if not ray_tune.Tuner.can_restore(str(exp_dir)):
            raise ConfigError(
                f"{exp_dir} holds no Tune experiment state yet (it was stopped within seconds "
                "of starting); start it again with the same shoal tune command."
            )
        tuner = ray_tune.Tuner.restore(
            str(exp_dir),
            trainable,
            resume_unfinished=True,
            resume_errored=True,
            param_space=param_space,
        )
    else:
        tuner = ray_tune.Tuner(
            trainable,
            param_space=param_space,
            tune_config=_tune_config(plan),
            run_config=ray_tune.RunConfig(
                name=exp_dir.name,
                storage_path=str(exp_dir.parent),
                checkpoint_config=ray_tune.CheckpointConfig(
                    checkpoint_frequency=1, num_to_keep=4, checkpoint_at_end=False
                ),
                verbose=verbose,
            ),
        )
    print(f"experiment directory: {exp_dir}", flush=True)
    grid = tuner.fit()
    keys = [d.key for d in plan.space.dimensions]
    return report(
        exp_dir, grid, metric=plan.asked.metric, mode=plan.asked.mode, keys=keys,
        algo=plan.resolved.algo,
    )  # fmt: skip


def _trial_resources(plan: _Plan) -> Any:
    """What Tune reserves for a trial before starting it. Inline: its one process. With
    --runtime ray, also a bundle per role, as `shoal train` asks for each (CPUs, GPUs, the
    --*-resources); Tune's placement group captures the roles the trial starts, so a trial
    starts only once all its roles fit, and they go where their resources are."""
    from ray import tune as ray_tune

    from shoal.runtime.config import parse_resources

    run, cpus = plan.resolved.run, plan.asked.cpus_per_trial
    if run.runtime != "ray":
        return {"cpu": cpus}
    learner = {"CPU": run.learner_cpus, "GPU": run.learner_gpus}
    learner.update(parse_resources(run.learner_resources, "--learner-resources"))
    actor = {"CPU": run.actor_cpus, **parse_resources(run.actor_resources, "--actor-resources")}
    bundles = [{"CPU": cpus}, learner, *(dict(actor) for _ in range(run.actors))]
    resolved = plan.resolved
    spec = experiment.spec_of(resolved)
    if resolved.agent.make_data_path(spec, resolved.agent_config, run_layout(run)).sharded:
        replay = {"CPU": run.replay_cpus}
        replay.update(parse_resources(run.replay_resources, "--replay-resources"))
        bundles += [dict(replay) for _ in range(run.replay_shards)]
    return ray_tune.PlacementGroupFactory([{k: v for k, v in b.items() if v} for b in bundles])


def _fixed(plan: _Plan, exp_dir: Path) -> dict[str, Any]:
    """What every trial shares: the experiment's settings, as plain values."""
    asked, resolved = plan.asked, plan.resolved
    run = {k: v for k, v in asked.run.items() if k not in ("address", "runs_dir", "run_name")}
    return {
        "algo": resolved.algo,
        "env": resolved.env_id,
        "seed": resolved.seed,
        "config_file": asked.config_file,
        "agent": asked.agent,
        "run": run,
        "env_config": asked.env_config,
        "runs_dir": str(exp_dir / "runs"),
        "metric": asked.metric,
    }


def _tune_config(plan: _Plan) -> Any:
    from ray import tune as ray_tune
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    asked, run = plan.asked, plan.resolved.run
    search_alg = None
    if asked.scheduler == "pbt":
        scheduler: Any = pbt_class()(
            time_attr="env_steps",
            perturbation_interval=plan.perturbation_interval,
            hyperparam_mutations={"agent": plan.space.to_tune()["agent"]},
            # The worst quarter copies the best quarter; a small population: one member each.
            quantile_fraction=min(0.5, max(0.25, 1 / plan.trials)),
            custom_explore_fn=KeepInSpace(plan.space),
            resample_probability=0.25,
        )
        search_alg = keep_actors()
    elif asked.scheduler == "asha":
        scheduler = ASHAScheduler(
            time_attr="env_steps",
            max_t=run.total_steps,
            grace_period=min(run.total_steps, max(run.log_interval, run.total_steps // 8)),
            reduction_factor=3,
        )
    else:
        scheduler = FIFOScheduler()
    return ray_tune.TuneConfig(
        metric=asked.metric,
        mode=asked.mode,
        scheduler=scheduler,
        search_alg=search_alg,
        num_samples=plan.trials,
        reuse_actors=True,
    )


def _connect(plan: _Plan) -> None:
    import ray

    from shoal.runtime import ray_connect

    if ray.is_initialized():
        return
    if plan.address:
        ray_connect.check_address(plan.address)
        ray_connect.connect(plan.address)
        return
    # Every trial at once, as shoal's ray launcher reserves every role.
    resources = _trial_resources(plan)
    per_trial = (
        sum(b.get("CPU", 0) for b in resources.bundles)
        if hasattr(resources, "bundles")
        else resources["cpu"]
    )
    need = math.ceil(plan.trials * per_trial)
    failure: Exception | None = None
    for _ in range(3):  # Ray gives a new node a fixed 30 s to register; a busy machine misses it
        try:
            ray_connect.start_local(max(os.cpu_count() or 1, need))
            return
        except Exception as err:
            failure = err
            ray.shutdown()
    raise ShoalError(
        f"A local Ray did not start, three times ({str(failure).splitlines()[0]}): the machine "
        "may be too busy for Ray's 30 s start-up. Try again, or start one with `ray start "
        "--head` and pass its address with --address."
    )
