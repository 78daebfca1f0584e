"""The evaluator: run whole episodes with a fixed policy on fresh environments."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
from tqdm import tqdm

from shoal.envs.spec import EnvFactory, EnvSpec
from shoal.envs.vector import VectorEnv, in_process_vector_env
from shoal.runtime.rows import Acting


@dataclass(frozen=True)
class EvalResult:
    episodes: int
    mean_return: float
    std_return: float
    min_return: float
    max_return: float
    mean_length: float
    # Episodes still running when the evaluation's time bound passed, left out of the figures
    # above, unless no episode ended at all: then the figures are those episodes' returns so
    # far (`partial`), which is all there is to say of a policy that never ends an episode.
    unfinished: int = 0
    partial: bool = False
    # Ctrl-C ("interrupted") or SIGTERM ("terminated") stopped it early, as a time bound would.
    stopped_by: str | None = None

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def line(self, deterministic: bool) -> str:
        mode = "deterministic" if deterministic else "stochastic"
        what = f"{self.episodes} episodes"
        if self.stopped_by is not None:
            signal = "Ctrl-C" if self.stopped_by == "interrupted" else "SIGTERM"
            what += f", stopped early by {signal}"
        if self.partial:
            what = f"no episode ended in its time bound: returns so far of {self.episodes}"
        elif self.unfinished:
            what += f"; {self.unfinished} more still running at its time bound, left out"
        return (
            f"evaluation ({mode}, {what}): mean return {self.mean_return:.2f} "
            f"± {self.std_return:.2f} (min {self.min_return:.2f}, max {self.max_return:.2f}), "
            f"mean length {self.mean_length:.1f}"
        )


def evaluate_policy(
    acting: Acting,
    factory: EnvFactory,
    spec: EnvSpec,
    episodes: int,
    seed: int,
    max_time: float | None = None,
    progress: bool = False,
    env: VectorEnv | None = None,
    stopped: Callable[[], str | None] | None = None,
) -> EvalResult:
    """Mean return of `episodes` whole episodes, stepping up to 8 envs together.

    `acting` holds the policy in its evaluation mode and carries each env's recurrent state.
    `max_time`: seconds after which the episodes still running are cut (`EvalResult.unfinished`);
    `progress`: a bar of episodes on stderr; `env`: the vector env to step (of
    `eval_width(episodes)` envs, reset here and left open), else one made and closed here;
    `stopped`: asked after each step, why to stop now (the episodes running are then cut, as
    at `max_time`), or None to go on."""
    deadline = None if max_time is None else time.monotonic() + max_time
    owned = env is None
    if env is None:
        env = in_process_vector_env([factory] * eval_width(episodes), spec, seed)
    bar = (
        tqdm(total=episodes, desc="evaluating", unit="episode", leave=False, file=sys.stderr)
        if progress
        else None
    )
    ended: list[Ended] = []
    try:
        for episode in run_episodes(acting, env, episodes, deadline, stopped):
            ended.append(episode)
            if bar is not None and not episode.cut:
                bar.update(1)
    finally:
        if owned:
            env.close()
        if bar is not None:
            bar.close()
    whole = [e for e in ended if not e.cut]
    counted = whole or ended  # no episode ended: what the cut ones had so far
    values = np.array([e.episode_return for e in counted])
    return EvalResult(
        episodes=len(values),
        mean_return=float(values.mean()),
        std_return=float(values.std()),
        min_return=float(values.min()),
        max_return=float(values.max()),
        mean_length=float(np.mean([e.length for e in counted])),
        unfinished=len(ended) - len(whole) if whole else 0,
        partial=not whole,
        stopped_by=None if stopped is None else stopped(),
    )


def eval_width(episodes: int) -> int:
    """How many envs step together to play `episodes` episodes."""
    return max(1, min(episodes, 8))


class Ended(NamedTuple):
    env: int  # index of the env in the vector
    episode_return: float
    length: int
    truncated: bool  # cut by a time limit (Atari: the frame cap), not ended by the game
    cut: bool = False  # still running at the evaluation's deadline: a return so far


def run_episodes(
    acting: Acting,
    env: VectorEnv,
    episodes: int,
    deadline: float | None = None,
    stopped: Callable[[], str | None] | None = None,
) -> Iterator[Ended]:
    """Step `env` (freshly made, not yet reset) with `acting` until `episodes` episodes ended.

    Yields each counted episode as it ends. The first `episodes` episodes to start are counted:
    an env that ends an episode once that many have started stops counting, so long episodes
    are not left out in favour of short ones. Past `deadline` (`time.monotonic()`), the counted
    episodes still running are yielded as they stand, `cut`, and stepping stops; the same once
    `stopped()` gives a reason (Ctrl-C)."""
    width = env.num_envs
    obs = env.reset()
    started = width  # episodes begun
    active = np.ones(width, bool)
    running = np.zeros(width)  # each env's return and length so far
    lengths = np.zeros(width, np.int64)
    counted = 0
    while counted < episodes:
        late = deadline is not None and time.monotonic() >= deadline
        if late or (stopped is not None and stopped() is not None):
            for b in np.nonzero(active)[0]:
                yield Ended(int(b), float(running[b]), int(lengths[b]), False, cut=True)
            return
        step = env.step(acting.act(obs)[0])
        done = step.terminated | step.truncated
        running += step.reward
        lengths += 1
        acting.observe(step.reward, done)
        ended = np.nonzero(step.terminated | step.truncated)[0]
        for k, b in enumerate(ended):
            if active[b] and counted < episodes:
                counted += 1
                yield Ended(
                    int(b),
                    step.episode_returns[k],
                    step.episode_lengths[k],
                    bool(step.truncated[b]),
                )
                if started < episodes:
                    started += 1
                else:
                    active[b] = False
        running[done], lengths[done] = 0.0, 0
        obs = step.obs
