"""`--resume auto`: the same command line starts a run, and continues it when requeued.

A scheduler that preempts a job (Slurm, Kubernetes) runs the same command again. With
`--resume auto` that command finds its run directory by `--runs-dir` and `--run-name` and:

- starts the run there if the directory does not exist (or is an empty one a kill left between
  creating it and writing its config);
- continues it from its newest checkpoint, with the stored config, if it exists; the settings
  the command names (algorithm, env, seed, agent and env settings, after presets and any
  --config file) must be the stored ones, and run settings given as flags override the stored
  ones as with `--resume RUN_DIR` (a requeue gives the same flags, so nothing changes);
- does nothing if the run already ended on its budget (`summary.json` names the newest
  checkpoint with a stop reason that still holds), so a requeued finished job exits 0.

`--runs-dir` may be a bucket URL: the run is then read from its staging copy (`shoal.run.storage`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoal import config as configs
from shoal import experiment
from shoal.errors import ConfigError
from shoal.run import storage
from shoal.run.checkpoints import checkpoint_path, list_checkpoints
from shoal.run.layout import CONFIG_FILE, SUMMARY_FILE, checkpoint_dir
from shoal.run.storage import RunStore
from shoal.run.summary import read_summary
from shoal.runtime.config import RunConfig
from shoal.runtime.counter import Counter

__all__ = ["SUMMARY_FILE", "Found", "find"]
# Stop reasons of a run that ended on its budget or by a callback's word (early stopping);
# "interrupted" (Ctrl-C) and "terminated" (SIGTERM) runs are continued.
_DONE = ("total_steps", "max_time", "stop_at_return", "callback")


@dataclass(frozen=True)
class Found:
    """What `--resume auto` does: start a new run (`store` None), continue the run in `store`,
    or nothing (`complete`: the run's summary)."""

    store: RunStore | None
    complete: dict[str, Any] | None = None
    # The command names the stored config's settings, so it imports the modules it names anyway.
    trusted: bool = False


def find(
    algo: str | None,
    env: Any,
    seed: Any,
    config_file: Any,
    agent: dict[str, Any] | None,
    run: dict[str, Any],
    env_config: dict[str, Any] | None,
) -> Found:
    """Where the command's run is and what to do with it; a ConfigError when the command has no
    --run-name or names other settings than the stored run's."""
    named = any(x is not None for x in (algo, env, seed, config_file, agent, env_config))
    # Resolving checks the command itself first: a mistake in it fails whether or not the
    # run exists, as it would when the job first started.
    wanted = (
        experiment.resolve(algo, env, seed, config_file, agent, run, env_config) if named else None
    )
    asked = wanted.run if wanted is not None else configs.build(RunConfig, run, "run")
    if asked.run_name is None:
        raise ConfigError(
            "--resume auto continues the run named by --run-name under --runs-dir, so a "
            "requeued job finds its run again; add --run-name NAME (e.g. the scheduler's job "
            "name; Python: run={'run_name': NAME}), or pass --resume RUN_DIR to continue a run "
            "by its path."
        )
    store = storage.open_run(storage.join(asked.runs_dir, asked.run_name), must_exist=False)
    try:
        return _found(store, wanted, asked, run)
    except BaseException:
        store.close()
        raise


def _found(store: RunStore, wanted: Any, asked: RunConfig, run: dict[str, Any]) -> Found:
    run_dir, where = store.local, store.where
    if not (run_dir / CONFIG_FILE).is_file():
        if wanted is None:
            raise ConfigError(
                f"--resume auto found no run at {where} and the command names no algorithm "
                "and env to start one; give them as when the job first started, e.g. "
                f"`shoal train ppo --env CartPole-v1 --run-name {asked.run_name} --resume auto`."
            )
        _clear_leftover(run_dir, where)
        store.close()  # a staging copy of nothing: the new run makes its own
        return Found(None)
    stored = configs.load_yaml(run_dir / CONFIG_FILE)
    if wanted is not None:
        differ = _contradictions(stored, wanted.as_dict())
        if differ:
            raise ConfigError(
                f"--resume auto found {where}, started with other settings than this command "
                f"names: {'; '.join(differ)}. Run the command the job was started with, "
                f"continue the run as stored with `shoal train --resume {where}`, or choose "
                "another --run-name for a new run."
            )
    summary = _final_summary(run_dir, {**(stored.get("run") or {}), **run})
    if summary is not None:
        store.close()  # nothing to do: the run stays as it is
    return Found(store, summary, trusted=wanted is not None)


def _contradictions(stored: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """Each setting of `wanted` (the command's) that the stored config holds otherwise. A field
    a run from an older shoal did not store is not compared: it ran with that version's default."""
    found = []
    for key in ("algo", "env"):
        if _plain(stored.get(key)) != _plain(wanted[key]):
            found.append(f"{key} {wanted[key]!r} (stored: {stored.get(key)!r})")
    if found:  # another algorithm or env: their settings are not comparable
        return found
    if stored.get("seed") != wanted["seed"]:
        found.append(f"seed {wanted['seed']} (stored: {stored.get('seed')!r})")
    for section in ("agent", "env_config"):
        saved = stored.get(section) or {}
        for name, value in wanted[section].items():
            if name in saved and _plain(saved[name]) != _plain(value):
                found.append(f"{section}.{name} {value!r} (stored: {saved[name]!r})")
    return found


def _plain(value: Any) -> Any:
    """As stored in YAML: tuples are lists."""
    return json.loads(json.dumps(value))


def _clear_leftover(run_dir: Path, where: Path | str) -> None:
    """Remove a directory a kill left between its creation and its config's rename (empty, or
    holding the config's temp file), so the run starts there; refuse anything else in the way."""
    if not run_dir.exists():
        return
    inside = list(run_dir.iterdir()) if run_dir.is_dir() else None
    if inside is None or any(not p.name.startswith(f".{CONFIG_FILE}.") for p in inside):
        raise ConfigError(
            f"--resume auto would start a run at {where}, but that path exists and is not a "
            f"shoal run directory (no {CONFIG_FILE}). Move it away or choose another "
            "--run-name."
        )
    for leftover in inside:
        leftover.unlink()
    run_dir.rmdir()


def _final_summary(run_dir: Path, run_values: dict[str, Any]) -> dict[str, Any] | None:
    """The run's summary if it ended on its budget at its newest checkpoint and that stop
    condition still holds with the command's run settings (a larger --total-steps continues)."""
    summary = read_summary(run_dir)  # None: none yet, or a kill cut it: the run is continued
    saved = list_checkpoints(checkpoint_dir(run_dir))
    if (
        summary is None
        or summary.get("stop_reason") not in _DONE
        or not saved
        or saved[-1] != checkpoint_path(saved[-1].parent, int(summary.get("env_steps", -1)))
    ):
        return None  # stopped early, or a later attempt went on past it
    if summary["stop_reason"] == "callback":
        return summary  # what a callback decided cannot be asked again here
    counter = Counter(configs.build(RunConfig, run_values, "run"))
    counter.env_steps = int(summary["env_steps"])
    counter.elapsed_before = float(summary.get("wall_time", 0.0))
    counter.target_reached_at = summary.get("target_reached_unix_time")
    return summary if counter.stop_reason() is not None else None
