"""`shoal eval RUN_DIR --protocol atari`: the no-op starts protocol and human-normalised scores.

The protocol of Mnih et al. (2015), which the Atari literature since (van Hasselt et al. 2016,
Ape-X, R2D2, Agent57) reports under "no-op starts": each episode begins with 1 to 30 no-op
actions (drawn per episode), is a whole game (a lost life does not end it; no sticky actions)
and is cut at 108,000 emulator frames (27,000 agent steps at frame skip 4). The agent acts as it
defines evaluation: `sample` mode by default (Q-learning agents: epsilon-greedy at their
`eval_epsilon`, 0.001 for R2D2 and Agent57; policy-gradient agents: sampled actions), greedy
with `--deterministic`. Episode k starts from seed `seed + k`, so every episode can be replayed
on its own. Scores are printed raw and human-normalised, (score - random) / (human - random),
with the random and human scores of `shoal/envs/atari_scores.csv`.
"""

from __future__ import annotations

import json
import statistics
import warnings
from collections import deque
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch

from shoal.api import load
from shoal.config import write_atomically
from shoal.envs.atari import atari_game
from shoal.envs.atari_ids import is_atari_id
from shoal.envs.atari_scores import game_scores, human_normalized
from shoal.envs.config import EnvConfig
from shoal.envs.registry import resolve_env
from shoal.envs.vector import in_process_vector_env
from shoal.errors import ConfigError, ShoalError, ShoalWarning
from shoal.run.buckets import is_url, write_text
from shoal.run.layout import CHECKPOINT_DIR, EVALUATIONS_DIR, protocol_record_name
from shoal.runtime.evaluate import run_episodes
from shoal.runtime.recording import ACTING_THREADS

__all__ = ["ATARI_EPISODES", "PROTOCOLS", "AtariEvaluation", "evaluate_atari"]

PROTOCOLS = ("atari",)
ATARI_EPISODES = 30  # as Mnih et al. (2015) and most papers since
NOOP_MAX = 30
MAX_FRAMES = 108_000
RECORD_DIR = EVALUATIONS_DIR  # in the run directory
_WIDTH = 8  # episodes played side by side (one batched forward pass for all of them)


@dataclass(frozen=True)
class ProtocolEpisode:
    seed: int
    score: float
    agent_steps: int
    frames: int  # agent steps x frame skip, the no-op start not counted
    capped: bool  # cut at 108,000 frames rather than ended by the game
    human_normalized: float | None


@dataclass(frozen=True)
class AtariEvaluation:
    """The protocol's result for one checkpoint; `episodes` are in seed order."""

    run_dir: str
    env_id: str
    game: str
    checkpoint_steps: int
    mode: str  # "greedy" or "sample"
    epsilon: float | None  # the agent's eval_epsilon in sample mode, where it has one
    settings: dict[str, Any]
    random_score: float | None
    human_score: float | None
    episodes: tuple[ProtocolEpisode, ...]

    @property
    def scores(self) -> list[float]:
        return [e.score for e in self.episodes]

    @property
    def mean_score(self) -> float:
        return statistics.fmean(self.scores)

    @property
    def human_normalized_mean(self) -> float | None:
        """The human-normalised score of the mean score (the mean of the episodes' own)."""
        return human_normalized(self.game, self.mean_score)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["episodes"] = [asdict(e) for e in self.episodes]
        out["mean_score"] = self.mean_score
        out["median_score"] = statistics.median(self.scores)
        out["human_normalized_mean"] = self.human_normalized_mean
        return out

    def lines(self) -> list[str]:
        """What `shoal eval --protocol atari` prints."""
        if self.mode == "greedy":
            acting = "greedy actions"
        elif self.epsilon is None:
            acting = "actions sampled from the policy"
        else:
            acting = f"epsilon-greedy at the agent's eval_epsilon {self.epsilon:g}"
        seeds = [e.seed for e in self.episodes]
        out = [
            f"Atari no-op starts protocol: {self.game} ({self.env_id}), checkpoint at "
            f"{self.checkpoint_steps} agent steps; {len(self.episodes)} episodes, seeds "
            f"{seeds[0]}..{seeds[-1]} (episode k: seed {seeds[0]} + k); up to {NOOP_MAX} no-op "
            f"starts, {MAX_FRAMES} frames at most (27000 agent steps), no sticky actions; "
            f"{acting}",
            f"{'seed':>8} {'score':>10} {'normalised':>10} {'steps':>7} {'frames':>7}",
        ]
        for e in self.episodes:
            norm = "n/a" if e.human_normalized is None else f"{e.human_normalized:.3f}"
            cap = "  (capped)" if e.capped else ""
            out.append(
                f"{e.seed:>8} {e.score:>10.1f} {norm:>10} {e.agent_steps:>7} {e.frames:>7}{cap}"
            )
        scores = self.scores
        std = statistics.pstdev(scores)
        out.append(
            f"raw score: mean {self.mean_score:.1f} ± {std:.1f} (median "
            f"{statistics.median(scores):.1f}, min {min(scores):.1f}, max {max(scores):.1f})"
        )
        if self.random_score is None or self.human_score is None:
            out.append(
                f"human-normalised: n/a ({self.game} is not one of the 57 games of the table)"
            )
        else:
            assert self.human_normalized_mean is not None
            out.append(
                f"human-normalised: {self.human_normalized_mean:.3f} "
                f"({100 * self.human_normalized_mean:.1f}% of human; random "
                f"{self.random_score:g}, human {self.human_score:g}: DQN Zoo / Agent57 table)"
            )
        return out


def protocol_env_config(trained: EnvConfig) -> EnvConfig:
    """The run's env settings with the protocol's: no-op starts, frame cap, whole games, no
    sticky actions, one env stepped by ale-py. The action set stays the one the agent knows."""
    return replace(
        trained,
        noop_max=NOOP_MAX,
        max_frames=MAX_FRAMES,
        sticky_actions=False,
        terminal_on_life_loss=False,
        backend="gymnasium",
        vector="inline",
    )


def evaluate_atari(
    run_dir: str | Path,
    episodes: int = ATARI_EPISODES,
    deterministic: bool = False,
    seed: int | None = None,
    trust_run: bool = False,
) -> AtariEvaluation:
    """The newest checkpoint of `run_dir` under the no-op starts protocol (module docstring)."""
    if episodes <= 0:
        raise ConfigError(f"--episodes must be > 0, got {episodes}.")
    policy = load(run_dir, deterministic, trust_run)
    if not is_atari_id(policy.env_id):
        raise ConfigError(
            f"--protocol atari evaluates Atari games; {run_dir} trained on {policy.env_id}. "
            f"Evaluate it with `shoal eval {run_dir}`."
        )
    torch.set_num_threads(ACTING_THREADS)
    torch.manual_seed(policy.seed)
    first_seed = policy.seed + 10_000 if seed is None else seed
    config = protocol_env_config(policy.env_config)
    factory = resolve_env(policy.env_id, config).factory
    seeds = deque(range(first_seed, first_seed + episodes))
    wrappers: list[_EpisodeSeeds] = []

    def make() -> gym.Env:
        wrappers.append(_EpisodeSeeds(factory(), seeds))
        return wrappers[-1]

    env = in_process_vector_env([make] * min(episodes, _WIDTH), policy.spec, first_seed)
    finished = [0] * env.num_envs
    played = []
    game = atari_game(policy.env_id)
    try:
        for ended in run_episodes(policy.acting, env, episodes):
            episode_seed = wrappers[ended.env].used[finished[ended.env]]
            finished[ended.env] += 1
            played.append(
                ProtocolEpisode(
                    seed=episode_seed,
                    score=float(ended.episode_return),
                    agent_steps=ended.length,
                    frames=ended.length * policy.spec.frames_per_step,
                    capped=ended.truncated,
                    human_normalized=human_normalized(game, float(ended.episode_return)),
                )
            )
    finally:
        env.close()
    table = game_scores(game)
    mode = "greedy" if deterministic else "sample"
    epsilon = getattr(policy.config, "eval_epsilon", None) if mode == "sample" else None
    return AtariEvaluation(
        run_dir=str(run_dir),
        env_id=policy.env_id,
        game=game,
        checkpoint_steps=policy.env_steps,
        mode=mode,
        epsilon=epsilon,
        settings=_differences(policy.env_config, config),
        random_score=None if table is None else table.random,
        human_score=None if table is None else table.human,
        episodes=tuple(sorted(played, key=lambda e: e.seed)),
    )


def _differences(trained: EnvConfig, protocol: EnvConfig) -> dict[str, Any]:
    """Env settings the run trained with that the protocol changes: {name: [trained, now]}."""
    names = ("noop_max", "max_frames", "sticky_actions", "terminal_on_life_loss")
    return {
        n: [getattr(trained, n), getattr(protocol, n)]
        for n in names
        if getattr(trained, n) != getattr(protocol, n)
    }


def save_record(result: AtariEvaluation) -> Path | str | None:
    """Keep the result in `RUN_DIR/evaluations/` (a run directory that cannot be written only
    loses the record, with a warning: the scores were printed)."""
    name = protocol_record_name(result.checkpoint_steps)
    text = json.dumps(result.as_dict(), indent=2) + "\n"
    if is_url(result.run_dir):  # a run in a bucket: the record goes there, in one put
        url = f"{result.run_dir.rstrip('/')}/{RECORD_DIR}/{name}"
        try:
            write_text(url, text)
        except ShoalError as err:
            warnings.warn(f"the result was not kept: {err}", ShoalWarning, stacklevel=2)
            return None
        return url
    folder = _run_directory(Path(result.run_dir)) / RECORD_DIR
    path = folder / name
    try:
        folder.mkdir(exist_ok=True)
        write_atomically(path, text)
    except (OSError, ShoalError) as err:
        warnings.warn(f"the result was not kept: {err}", ShoalWarning, stacklevel=2)
        return None
    return path


def _run_directory(path: Path) -> Path:
    """The run directory of `path`: itself, or the run a checkpoint file
    (`RUN_DIR/checkpoints/step-*.pt`) belongs to, so that scoring one checkpoint keeps its
    record beside the run's others."""
    if not path.is_file():
        return path
    return path.parent.parent if path.parent.name == CHECKPOINT_DIR else path.parent


def main(args: Any) -> None:
    """`shoal eval RUN_DIR --protocol atari [--episodes N] [--deterministic] [--seed N]`."""
    result = evaluate_atari(
        args.run_dir,
        ATARI_EPISODES if args.episodes is None else args.episodes,
        args.deterministic,
        args.seed,
        trust_run=args.trust_run,
    )
    for name, (trained, now) in result.settings.items():
        print(f"note: the run trained with {name} {trained}; the protocol uses {now}")
    print("\n".join(result.lines()))
    path = save_record(result)
    if path is not None:
        print(f"kept in {path}")


class _EpisodeSeeds(gym.Wrapper):
    """Starts each episode with the next seed of a queue shared by the evaluation's envs (the
    vector env's own seeds are ignored), and remembers the seeds it used, in order."""

    def __init__(self, env: gym.Env, seeds: deque[int]) -> None:
        super().__init__(env)
        self.seeds = seeds
        self.used: list[int | None] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):  # type: ignore[override]
        seed = self.seeds.popleft() if self.seeds else None  # None: an episode not counted
        self.used.append(seed)
        return self.env.reset(seed=seed, options=options)
