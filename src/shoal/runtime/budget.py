"""What a run asks of this machine, checked before anything is written.

Two settings can each make a run outgrow the machine or its `--max-time` before its first
step: the unroll length and the number of envs. One unroll buffers T + 1 observations of every
env a process steps, so an unroll that cannot fit in memory is refused; and a process builds and
resets its envs one after another before acting, so a build that would by itself outlast
`--max-time` is refused too. (Once acting, an unroll stops at the deadline: `UnrollCollector`.)
"""

from __future__ import annotations

import math
import os
import time

from shoal.errors import ConfigError
from shoal.runtime.program import Program
from shoal.tree import leaves

MANY_ENVS = 1_000  # fewer envs build within seconds, so their build is not timed
BUILD_SAMPLE = 8  # envs made and reset to time one


def check_budget(program: Program) -> None:
    """Refuse an unroll larger than this machine's memory, or envs that take longer to build
    than `--max-time`, with a ConfigError that says which setting to lower."""
    run = program.run
    # Inline every env, and with central inference every unroll, lives in one process.
    one_process = run.runtime == "inline" or run.inference == "central"
    if run.runtime == "inline" or not run.address:  # a cluster's nodes have memory of their own
        _check_memory(program, program.layout.total_envs if one_process else run.num_envs)
    built_together = run.num_envs if run.runtime == "ray" else program.layout.total_envs
    timed = built_together >= MANY_ENVS and program.env_source.backend != "envpool"
    if run.max_time is not None and timed:  # envpool builds its envs in threads of its own
        _check_build_time(program, built_together, run.max_time)


def first_update_steps(program: Program) -> int:
    """Env steps the run takes before the learner's first update, at least: one unroll of an
    actor's envs, or the replay's warm-up (`DataPath.warmup_steps`) if longer."""
    run, path = program.run, program.data_path()
    one_process = run.runtime == "inline" or run.inference == "central"
    envs = program.layout.total_envs if one_process else run.num_envs
    return max(path.unroll_length * envs, path.warmup_steps)


def never_learns(program: Program, steps_done: int) -> str | None:
    """What to say, before the run starts, of a step budget that ends before the learner's
    first update (it would train nothing, yet end as if it had); None if it does not."""
    run, path = program.run, program.data_path()
    needed = first_update_steps(program)
    if steps_done + needed <= run.total_steps:
        return None
    if path.warmup_steps >= path.unroll_length:
        why = f"its replay's warm-up holds {path.warmup_steps:,} steps before learning starts"
        fix = "Lower the agent's min_replay_size / learning_starts"
    else:
        why = f"one unroll is {needed:,} env steps (T = {path.unroll_length:,} x the envs)"
        fix = "Lower the agent's unroll length or --num-envs"
    return (
        f"warning: the learner will not update before --total-steps {run.total_steps:,} ends "
        f"this run ({steps_done:,} steps done): {why}. {fix}, or raise --total-steps."
    )


def _machine_memory() -> int | None:
    """Bytes of physical memory, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _check_memory(program: Program, envs: int) -> None:
    total = _machine_memory()
    length = program.data_path().unroll_length
    obs_bytes = sum(leaf.nbytes for leaf in leaves(program.spec.allocate_obs(1)))
    needed = envs * (length + 1) * obs_bytes
    if total is not None and needed > total:
        raise ConfigError(
            f"One unroll of {program.env_id} holds {envs:,} envs x {length + 1:,} observations "
            f"of {obs_bytes:,} bytes: {needed / 1e9:,.1f} GB, more than this machine's "
            f"{total / 1e9:.1f} GB of memory. Lower --num-envs or the agent's unroll length "
            f"(T = {length:,})."
        )


def _check_build_time(program: Program, envs: int, max_time: float) -> None:
    each = _seconds_per_env(program)
    needed = envs * each
    if needed > max_time:
        raise ConfigError(
            f"Building {envs:,} {program.env_id} environments in one process takes about "
            f"{needed:,.0f} s here ({each * 1e3:.2f} ms each, timed on {BUILD_SAMPLE}), longer "
            f"than --max-time {max_time:g} s, which counts from the start of the run. Lower "
            "--num-envs or raise --max-time."
        )


def _seconds_per_env(program: Program) -> float:
    """The fastest of BUILD_SAMPLE makes and resets of one env: a lower bound, so a refusal
    is never caused by a slow moment of a busy machine."""
    fastest = math.inf
    for seed in range(BUILD_SAMPLE):
        start = time.perf_counter()
        env = program.env_source.factory()
        try:
            env.reset(seed=seed)
            fastest = min(fastest, time.perf_counter() - start)
        finally:
            env.close()
    return fastest
