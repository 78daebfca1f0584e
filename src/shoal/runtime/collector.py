"""The actor loop: step a vector env T times with an `Acting` policy and assemble an Unroll."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shoal.data import Unroll
from shoal.envs.split_vector import SplitVectorEnv
from shoal.envs.vector import VectorEnv, VectorStep
from shoal.runtime.rows import Acting
from shoal.runtime.trajectory import Steps
from shoal.tree import assign


class UnrollCollector:
    """Collects `[T, E]` unrolls from one vector env, carrying the last observation over.

    `stop` (the run's stop conditions, e.g. `--max-time`) is asked before every step, so a
    long unroll does not outlast the run: the unroll is then dropped and `collect` returns None.
    """

    def __init__(
        self,
        env: VectorEnv,
        acting: Acting,
        length: int,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        self.env, self.acting, self.length = env, acting, length
        self.stop = stop or (lambda: False)
        self.obs = env.reset()
        self.finished_returns: list[float] = []
        self.finished_lengths: list[int] = []
        self.finished_metrics: dict[str, list[float]] = {}

    def collect(self) -> Unroll | None:
        """T steps of every env, or None if `stop` said so first. Episode statistics
        accumulate in `finished_*` until drained."""
        if isinstance(self.env, SplitVectorEnv):
            return self._collect_double_buffered(self.env)
        env, acting = self.env, self.acting
        steps = Steps(env.spec, self.length, env.num_envs)
        version = acting.version
        for t in range(self.length):
            if self.stop():
                return None
            assign(steps.obs, t, self.obs)
            active = getattr(env, "active", None)  # rows that can be empty say which are not
            env_actions, actions, record = acting.act(self.obs)
            if active is not None:
                record["active"] = active.copy()
            step = env.step(env_actions)
            acting.observe(step.reward, step.terminated | step.truncated)
            steps.acted(t, actions, record)
            _result(steps, t, step)
            self._episodes(step)
            self.obs = step.obs
        assign(steps.obs, self.length, self.obs)
        return steps.unroll(version, acting.slot_offset)

    def _collect_double_buffered(self, env: SplitVectorEnv) -> Unroll | None:
        """`collect` for a split env: each half steps while the policy acts on the other.

        Rows are independent in `Acting`, so the policy sees each half as a batch of its rows.
        """
        acting, length = self.acting, self.length
        steps = Steps(env.spec, length, env.num_envs)
        frames = steps.obs
        assert isinstance(frames, np.ndarray)  # a split env's observations are one array
        version = acting.version
        rows = [np.arange(part.start, part.stop) for part in env.slices]

        def record(t: int, half: int) -> None:
            step, part = env.halves[half].recv(), env.slices[half]
            acting.observe(step.reward, step.terminated | step.truncated, rows[half])
            _result(steps, t, step, env.offsets[half])
            self._episodes(step)
            self.obs[part] = step.obs

        for t in range(length):
            if self.stop():
                if t > 0:  # receive the steps in flight: the env stays in step with self.obs
                    for half in range(len(env.halves)):
                        record(t - 1, half)
                return None
            for half, part in enumerate(env.slices):
                if t > 0:
                    record(t - 1, half)
                frames[t, part] = self.obs[part]
                env_actions, actions, extras = acting.act(self.obs[part], rows[half])
                env.halves[half].send(env_actions)
                steps.acted(t, actions, extras)
        for half in range(len(env.halves)):
            record(length - 1, half)
        frames[length] = self.obs
        return steps.unroll(version, acting.slot_offset)

    def _episodes(self, step: VectorStep) -> None:
        self.finished_returns += step.episode_returns
        self.finished_lengths += step.episode_lengths
        for name, values in step.episode_metrics.items():
            self.finished_metrics.setdefault(name, []).extend(values)

    def drain_episodes(self) -> tuple[list[float], list[int]]:
        returns, lengths = self.finished_returns, self.finished_lengths
        self.finished_returns, self.finished_lengths = [], []
        return returns, lengths

    def drain_episode_metrics(self) -> dict[str, list[float]]:
        """The env's named episode figures (`VectorStep.episode_metrics`) since the last call."""
        metrics, self.finished_metrics = self.finished_metrics, {}
        return metrics


def _result(steps: Steps, t: int, step: VectorStep, offset: int = 0) -> None:
    steps.result(t, step.reward, step.terminated, step.truncated, step.final_obs, offset)
