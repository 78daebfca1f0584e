"""The evaluator: run whole episodes with a fixed policy on fresh environments."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np

from shoal.envs.registry import EnvFactory
from shoal.envs.spec import EnvSpec
from shoal.envs.vector import InProcessVectorEnv, VectorEnv
from shoal.runtime.rows import Acting


@dataclass(frozen=True)
class EvalResult:
    episodes: int
    mean_return: float
    std_return: float
    min_return: float
    max_return: float
    mean_length: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def line(self, deterministic: bool) -> str:
        mode = "deterministic" if deterministic else "stochastic"
        return (
            f"evaluation ({mode}, {self.episodes} episodes): mean return {self.mean_return:.2f} "
            f"± {self.std_return:.2f} (min {self.min_return:.2f}, max {self.max_return:.2f}), "
            f"mean length {self.mean_length:.1f}"
        )


def evaluate_policy(
    acting: Acting, factory: EnvFactory, spec: EnvSpec, episodes: int, seed: int
) -> EvalResult:
    """Mean return of `episodes` whole episodes, stepping up to 8 envs together.

    `acting` holds the policy in its evaluation mode and carries each env's recurrent state."""
    width = max(1, min(episodes, 8))
    env = InProcessVectorEnv([factory] * width, spec, seed)
    try:
        ended = list(run_episodes(acting, env, episodes))
    finally:
        env.close()
    values = np.array([e.episode_return for e in ended])
    return EvalResult(
        episodes=len(values),
        mean_return=float(values.mean()),
        std_return=float(values.std()),
        min_return=float(values.min()),
        max_return=float(values.max()),
        mean_length=float(np.mean([e.length for e in ended])),
    )


class Ended(NamedTuple):
    env: int  # index of the env in the vector
    episode_return: float
    length: int
    truncated: bool  # cut by a time limit (Atari: the frame cap), not ended by the game


def run_episodes(acting: Acting, env: VectorEnv, episodes: int) -> Iterator[Ended]:
    """Step `env` (freshly made, not yet reset) with `acting` until `episodes` episodes ended.

    Yields each counted episode as it ends. The first `episodes` episodes to start are counted:
    an env that ends an episode once that many have started stops counting, so long episodes
    are not left out in favour of short ones."""
    width = env.num_envs
    obs = env.reset()
    started = width  # episodes begun
    active = np.ones(width, bool)
    counted = 0
    while counted < episodes:
        step = env.step(acting.act(obs)[0])
        acting.observe(step.reward, step.terminated | step.truncated)
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
        obs = step.obs
