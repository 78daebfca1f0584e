"""`shoal record RUN_DIR --episodes N --out DATASET`: a trained policy's episodes as a Minari
dataset.

The policy is loaded as `shoal eval` and `shoal.load` load it (the newest checkpoint of a run
directory, one of its checkpoints, or a saved policy file) and plays whole episodes, one at a
time, on one env made as in training (the same wrappers: what the dataset holds is what the
policy saw). Episode k is reset with seed `seed + k` (by default the run's seed + 10,000, as
`shoal eval`'s), which the dataset records per episode. Each step's observation, the action
the env got, its reward, termination, truncation and info (the numeric entries every step of
the episode has) are kept, with the episode's last observation, and written through Minari's
`create_dataset_from_buffers` (`shoal.data.datasets`): `minari.load_dataset(ID)` reads them
back as they were played, bit for bit.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tqdm import tqdm

from shoal.api import load
from shoal.data.datasets import Episode, check_dataset_id, datasets_root, write_dataset
from shoal.envs.config import EnvConfig
from shoal.envs.registry import env_spec, source_of
from shoal.envs.spec import EnvSpec
from shoal.envs.vector import check_finite, checked_obs, env_failure
from shoal.errors import ConfigError, ShoalError
from shoal.runtime.recording import ACTING_THREADS, EVAL_SEED_OFFSET
from shoal.runtime.rows import Acting
from shoal.tree import map_tree

__all__ = ["RecordResult", "record", "record_scripted"]


@dataclass(frozen=True)
class RecordResult:
    dataset_id: str
    env_id: str  # the env the episodes were played on: bc's --env
    folder: Path  # the dataset's folder: `shoal train bc --dataset FOLDER` reads it
    episodes: list[Episode]
    steps: int

    @property
    def mean_return(self) -> float:
        return float(np.mean([e.episode_return for e in self.episodes]))


def record(
    run_dir: str | os.PathLike[str],
    episodes: int,
    out: str,
    deterministic: bool = True,
    seed: int | None = None,
    trust_run: bool = False,
    datasets_dir: str | os.PathLike[str] | None = None,
    progress: bool = False,
    on_episode: Callable[[int, Episode], None] | None = None,
) -> RecordResult:
    """Play `episodes` episodes with the policy in `run_dir` and write them as the Minari
    dataset `out` (an id such as `cartpole/ppo-v0`) in `datasets_dir` (default: Minari's
    datasets folder, `$MINARI_DATASETS_PATH` or `~/.minari/datasets`).

    `deterministic` takes the most likely action (the default, as `shoal eval`'s; False samples
    actions); `progress`: a bar of steps and episodes on stderr; `on_episode(k, episode)` is
    called as each episode ends. Everything that can be checked is checked before playing."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes <= 0:
        raise ConfigError(f"--episodes must be a whole number > 0, got {episodes!r}.")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ConfigError(f"--seed must be an integer, got {seed!r}.")
    check_dataset_id(out)
    root = Path(datasets_dir).expanduser() if datasets_dir is not None else datasets_root()
    if (root / out).exists():
        raise ConfigError(
            f"{root / out} already exists, and a dataset is never overwritten: pass another "
            "--out (a higher version -vN), or remove it first."
        )
    if not Path(run_dir).exists():
        raise ConfigError(
            f"No such run directory: {run_dir}. Pass a directory created by `shoal train` (or "
            "one of its checkpoints, or a file written by policy.save)."
        )
    policy = load(run_dir, deterministic, trust_run)
    spec = policy.spec
    if spec.num_agents:
        raise ConfigError(
            f"{policy.env_id} is a multi-agent env ({spec.num_agents} agents); Minari datasets "
            "hold one agent's episodes, so shoal records single-agent envs only."
        )
    env = policy.env_source.factory()
    torch.set_num_threads(ACTING_THREADS)
    torch.manual_seed(policy.seed)
    first = policy.seed + EVAL_SEED_OFFSET if seed is None else seed
    played: list[Episode] = []
    bar = (
        tqdm(total=episodes, desc="recording", unit="episode", file=sys.stderr)
        if progress
        else None
    )
    try:
        with torch.no_grad():
            for k in range(episodes):
                episode = _play(policy.acting, env, spec, first + k)
                played.append(episode)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(steps=sum(len(e) for e in played), refresh=False)
                if on_episode is not None:
                    on_episode(k, episode)
        mode = "greedy" if deterministic else "sampled"
        folder = write_dataset(
            out,
            played,
            spec,
            env_spec=_registered_spec(env),
            algorithm_name=f"shoal {policy.algo}",
            description=(
                f"{episodes} episodes of the {mode} actions of shoal's {policy.algo} policy "
                f"trained on {policy.env_id} for {policy.env_steps} steps (from {run_dir}), "
                f"episode k reset with seed {first} + k."
            ),
            root=datasets_dir,
        )
    finally:
        if bar is not None:
            bar.close()
        env.close()
    return RecordResult(out, policy.env_id, folder, played, sum(len(e) for e in played))


class _Scripted:
    """A scripted policy `act(obs) -> action` as `_play` calls a loaded one."""

    def __init__(self, act: Callable[[Any], Any]) -> None:
        self.script = act

    def act(self, batch: Any) -> tuple[np.ndarray]:
        return (np.asarray([self.script(map_tree(lambda x: x[0], batch))]),)

    def observe(self, reward: np.ndarray, done: np.ndarray) -> None:
        return None


def record_scripted(
    env_id: str,
    act: Callable[[Any], Any],
    episodes: int,
    out: str,
    *,
    seed: int = 0,
    name: str = "scripted",
    datasets_dir: str | os.PathLike[str] | None = None,
    env_config: EnvConfig | None = None,
) -> RecordResult:
    """`record`, with the actions of `act(obs) -> action` (a scripted policy, e.g.
    `shoal.envs.maze.shortest_path_policy`) instead of a trained one, on `env_id` made as
    `shoal train --env ENV_ID` makes it (with `env_config`, default the defaults); episode k
    is reset with seed `seed + k`. `name` says in the dataset's metadata who played."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes <= 0:
        raise ConfigError(f"episodes must be a whole number > 0, got {episodes!r}.")
    check_dataset_id(out)
    config = env_config if env_config is not None else EnvConfig()
    spec = env_spec(env_id, config)
    if spec.num_agents:
        raise ConfigError(f"{env_id} is a multi-agent env; shoal records single-agent envs only.")
    env = source_of(env_id, config).factory()
    try:
        played = [_play(_Scripted(act), env, spec, seed + k) for k in range(episodes)]  # type: ignore[arg-type]
        folder = write_dataset(
            out,
            played,
            spec,
            env_spec=_registered_spec(env),
            algorithm_name=name,
            description=(
                f"{episodes} episodes of {name} on {env_id}, episode k reset with seed {seed} + k."
            ),
            root=datasets_dir,
        )
    finally:
        env.close()
    return RecordResult(out, env_id, folder, played, sum(len(e) for e in played))


def _play(acting: Acting, env: gym.Env, spec: EnvSpec, seed: int) -> Episode:
    """One episode from `env.reset(seed=seed)`, every step kept."""
    obs, info = _call(spec, "reset", 0, lambda: env.reset(seed=seed))
    obs = checked_obs(spec, obs, 0, 0)
    episode = Episode(seed=seed, observations=[obs], infos=[dict(info)])
    ended = False
    while not ended:
        step = len(episode)
        batch = map_tree(lambda x: x[None], obs)
        check_finite(spec, batch, None, step)
        action = acting.act(batch)[0][0]
        env_action = int(action) if spec.discrete else np.asarray(action)
        obs, reward, terminated, truncated, info = _call(
            spec, "step", step, functools.partial(env.step, env_action)
        )
        obs = checked_obs(spec, obs, 0, step + 1)
        check_finite(spec, batch, np.array([reward], np.float32), step)
        ended = bool(terminated or truncated)
        acting.observe(np.array([reward], np.float32), np.array([ended]))
        episode.observations.append(obs)
        episode.actions.append(np.asarray(env_action, spec.action_space.dtype))
        episode.rewards.append(float(reward))
        episode.terminations.append(bool(terminated))
        episode.truncations.append(bool(truncated))
        episode.infos.append(dict(info))
    return episode


def _call(spec: EnvSpec, name: str, step: int, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ShoalError:
        raise
    except Exception as err:
        raise env_failure(spec, 0, step, name, err) from err


def _registered_spec(env: gym.Env) -> Any:
    """The gymnasium spec Minari records (so `recover_environment` can make the env), or None
    for an env gymnasium's registry cannot make again."""
    spec = getattr(env, "spec", None)
    if spec is None or spec.id not in gym.registry:
        return None
    try:
        spec.to_json()  # Minari stores it as JSON: a callable entry point or kwargs cannot be
    except Exception:
        return None
    return spec


def main(args: Any) -> None:
    """`shoal record RUN_DIR --episodes N --out ID [--stochastic] [--seed N] [--datasets-dir]`."""

    def said(k: int, episode: Episode) -> None:
        tqdm.write(
            f"episode {k + 1} (seed {episode.seed}): return {episode.episode_return:g}, "
            f"{len(episode)} steps",
            file=sys.stderr,
        )

    result = record(
        args.run_dir,
        args.episodes,
        args.out,
        deterministic=not args.stochastic,
        seed=args.seed,
        trust_run=args.trust_run,
        datasets_dir=args.datasets_dir,
        progress=True,
        on_episode=said,
    )
    print(
        f"dataset: {result.dataset_id} in {result.folder} ({len(result.episodes)} episodes, "
        f"{result.steps} steps, mean return {result.mean_return:g}); Minari reads it with "
        f"minari.load_dataset({result.dataset_id!r})"
        + (
            f" when MINARI_DATASETS_PATH={args.datasets_dir}"
            if args.datasets_dir is not None
            else ""
        )
        + f"; clone it with `shoal train bc --env {result.env_id} --dataset {result.folder}`."
    )
