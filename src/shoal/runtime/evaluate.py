"""The evaluator: run whole episodes with a fixed policy on fresh environments."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from shoal.envs.registry import EnvFactory
from shoal.envs.spec import EnvSpec
from shoal.envs.vector import InProcessVectorEnv
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
    returns: list[float] = []
    lengths: list[int] = []
    obs = env.reset()
    started = width  # episodes begun; an env whose episode would exceed the count stops counting
    active = np.ones(width, bool)
    try:
        while len(returns) < episodes:
            step = env.step(acting.act(obs)[0])
            acting.observe(step.reward, step.terminated | step.truncated)
            ended = np.nonzero(step.terminated | step.truncated)[0]
            for k, b in enumerate(ended):
                if active[b]:
                    returns.append(step.episode_returns[k])
                    lengths.append(step.episode_lengths[k])
                    if started < episodes:
                        started += 1
                    else:
                        active[b] = False
            obs = step.obs
    finally:
        env.close()
    values = np.array(returns[:episodes])
    return EvalResult(
        episodes=len(values),
        mean_return=float(values.mean()),
        std_return=float(values.std()),
        min_return=float(values.min()),
        max_return=float(values.max()),
        mean_length=float(np.mean(lengths[:episodes])),
    )
