"""The inline launcher: the whole program in this process, acting and learning in turn.

Deterministic under a seed: torch's generator, the policy's sampler and env i's seed (seed + i)
are all derived from it, and metrics rows are written at fixed step counts, not on a clock.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import torch

from shoal.checkpoint import save_checkpoint
from shoal.envs.registry import make_vector_env
from shoal.runtime.collector import UnrollCollector
from shoal.runtime.counter import Counter
from shoal.runtime.program import Program
from shoal.telemetry import Console, MetricsWriter

# Only these fields of a metrics row depend on the clock; everything else is reproducible.
TIMING_KEYS = ("time", "steps_per_second")


class _StopFlag:
    """First Ctrl-C asks the loop to stop after the current step and checkpoint; a second aborts."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def __enter__(self) -> _StopFlag:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def run_inline(program: Program, resume: dict[str, Any] | None = None) -> Counter:
    """Train until a stop condition holds; write metrics and checkpoints to the run directory."""
    agent, config, run = program.agent, program.agent_config, program.run
    torch.set_num_threads(run.torch_threads)
    torch.manual_seed(program.seed)
    resume_count = 0 if resume is None else int(resume["resume_count"]) + 1
    # A resumed run starts new episodes with new seeds rather than replaying the first ones.
    env_seed = program.seed + 1_000_003 * resume_count

    net = agent.make_networks(program.spec, config)
    learner = agent.make_learner(program.spec, config, net)
    policy = agent.make_policy(program.spec, config, net, env_seed)
    counter = Counter(run)
    if resume is not None:
        learner.load_state_dict(resume["learner"])
        torch.set_rng_state(resume["torch_rng"])
        counter.env_steps = int(resume["env_steps"])
        counter.episodes = int(resume["episodes"])
        counter.updates = int(resume["updates"])
        counter.elapsed_before = float(resume["elapsed"])
        counter.recent_returns.extend(resume["recent_returns"])
        counter.recent_lengths.extend(resume["recent_lengths"])

    env = make_vector_env(
        program.env_source, program.spec, program.env_config, run.num_envs, env_seed
    )
    collector = UnrollCollector(env, policy, agent.unroll_length(config))
    writer = MetricsWriter(
        program.run_dir, run.tensorboard, counter.env_steps if resume is not None else None
    )
    console = Console(run.total_steps, counter.env_steps, run.progress, program.run_dir.name)

    def checkpoint() -> None:
        payload = {
            "algo": agent.name,
            "env": program.env_id,
            "env_steps": counter.env_steps,
            "episodes": counter.episodes,
            "updates": counter.updates,
            "elapsed": counter.elapsed,
            "recent_returns": list(counter.recent_returns),
            "recent_lengths": list(counter.recent_lengths),
            "resume_count": resume_count,
            "torch_rng": torch.get_rng_state(),
            "learner": learner.state_dict(),
        }
        save_checkpoint(program.checkpoint_dir, counter.env_steps, payload, run.keep_checkpoints)

    next_log = _next_multiple(counter.env_steps, run.log_interval)
    next_checkpoint = _next_multiple(counter.env_steps, run.checkpoint_interval)
    last_log_time, last_log_steps = time.time(), counter.env_steps
    stop = _StopFlag()
    with stop:
        try:
            while counter.stop_reason() is None and not stop.requested:
                unroll = collector.collect()
                counter.env_steps += unroll.length * unroll.batch_size
                counter.add_episodes(*collector.drain_episodes())
                metrics = learner.update(unroll, counter.progress())
                counter.updates += 1
                # Inline, actor and learner share one network: only the version moves.
                policy.version = learner.version
                console.update(counter.env_steps, counter.mean_return)
                if counter.env_steps >= next_log:
                    now = time.time()
                    steps = counter.env_steps - last_log_steps
                    writer.write(
                        _row(
                            program,
                            counter,
                            metrics,
                            unroll.behaviour_version,
                            learner.version,
                            steps / max(now - last_log_time, 1e-9),
                        )
                    )
                    last_log_time, last_log_steps = now, counter.env_steps
                    next_log = _next_multiple(counter.env_steps, run.log_interval)
                if counter.env_steps >= next_checkpoint:
                    checkpoint()
                    next_checkpoint = _next_multiple(counter.env_steps, run.checkpoint_interval)
            checkpoint()
        finally:
            console.close()
            writer.close()
            env.close()
    if stop.requested:
        console.print(f"interrupted at {counter.env_steps} steps; a checkpoint was written.")
    return counter


def _next_multiple(value: int, interval: int) -> int:
    return (value // interval + 1) * interval


def _row(
    program: Program,
    counter: Counter,
    metrics: dict[str, float],
    behaviour_version: int,
    learner_version: int,
    steps_per_second: float,
) -> dict[str, Any]:
    mean_length = (
        sum(counter.recent_lengths) / len(counter.recent_lengths)
        if counter.recent_lengths
        else None
    )
    return {
        "env_steps": counter.env_steps,
        "frames": counter.env_steps * program.spec.frames_per_step,
        "episodes": counter.episodes,
        "updates": counter.updates,
        "return_mean": counter.mean_return,
        "episode_length_mean": mean_length,
        "policy_lag": learner_version - 1 - behaviour_version,
        **metrics,
        "time": round(counter.elapsed, 3),
        "steps_per_second": round(steps_per_second, 1),
    }
