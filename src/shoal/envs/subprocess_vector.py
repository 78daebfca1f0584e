"""A vector of environments stepped in worker processes, with results in shared memory.

W workers each step a contiguous slice of the E envs, so a vector step costs one small message
to each worker and one back, not one per env. Observations, rewards and the two end flags are
written by the workers straight into one shared-memory block; only the rare final observations,
episode statistics and errors travel through the pipes. Results are identical to
`InProcessVectorEnv` under the same seed (same-step autoreset, env i seeded `seed + i`).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import signal
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.shared_memory import SharedMemory
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from shoal.envs.spec import EnvFactory, EnvSpec
from shoal.envs.subprocess_worker import _Buffers, _Failure, _RemoteTraceback, _worker
from shoal.envs.vector import VectorStep
from shoal.errors import ConfigError, EnvError

__all__ = ["SubprocessVectorEnv"]

_LIVENESS_CHECK_S = 0.5  # how often a waiting parent checks that silent workers still live
_CLOSE_GRACE_S = 10.0  # how long closing waits for workers to close their envs and exit


class SubprocessVectorEnv:
    """Steps E environments in W worker processes; a drop-in `VectorEnv`.

    Args:
        factories: one zero-argument env factory per env. They are pickled to the workers, so
            they must be picklable: a lambda or a function defined inside another function is
            not; use a module-level function or `functools.partial(gym.make, env_id)`.
        spec: the spec of one env; observations must be a Box (use `InProcessVectorEnv` for
            other spaces).
        seed: env i is seeded with `seed + i` on `reset`.
        num_workers: W, default min(E, usable CPUs). Worker w steps a contiguous slice of the
            envs; the first E % W workers get one env more.
        context: how workers start. "spawn" (the default) starts a fresh interpreter, so a
            worker never inherits the parent's threads, CUDA state, locks or Ray connection
            (the hazards of fork) and it works on every platform. "forkserver" (Linux/macOS)
            is equally safe but starts workers from a long-lived server process.

    As with any spawned process, a script that creates one must guard its entry point with
    `if __name__ == "__main__":`. Call `close()` (or use `with`) when done; a finaliser closes
    a forgotten one. After an `EnvError` from an env, `reset()` before stepping again; after a
    worker dies, the vector env is closed and a new one must be made.
    """

    def __init__(
        self,
        factories: Sequence[EnvFactory],
        spec: EnvSpec,
        seed: int,
        num_workers: int | None = None,
        context: Literal["spawn", "forkserver"] = "spawn",
    ) -> None:
        self.spec = spec
        self.num_envs = len(factories)
        self.seed = seed
        self._steps = 0
        self._broken: str | None = None
        if not isinstance(spec.observation_space, gym.spaces.Box):
            raise EnvError(
                f"{spec.env_id}: SubprocessVectorEnv shares only Box observations, not "
                f"{spec.observation_space}; use InProcessVectorEnv for this env."
            )
        if self.num_envs == 0:
            raise ConfigError("SubprocessVectorEnv needs at least one env factory.")
        workers = min(self.num_envs, _usable_cpus()) if num_workers is None else num_workers
        if not 1 <= workers <= self.num_envs:
            raise ConfigError(
                f"num_workers={num_workers} cannot split {self.num_envs} envs; set it between "
                f"1 and {self.num_envs}."
            )
        if context not in ("spawn", "forkserver"):
            raise ConfigError(
                f"context={context!r} is not supported; use 'spawn' or 'forkserver' ('fork' "
                "is unsafe once torch threads, CUDA or Ray are running in the parent)."
            )
        _check_picklable(factories, spec.env_id, context)
        self.num_workers = workers
        sizes = [self.num_envs // workers + (w < self.num_envs % workers) for w in range(workers)]
        starts = np.cumsum([0, *sizes]).tolist()
        self._slices = [slice(starts[w], starts[w + 1]) for w in range(workers)]

        nbytes = _Buffers.nbytes(self.num_envs, spec.obs_shape, spec.obs_dtype)
        self._shm = SharedMemory(f"shoal_{os.getpid()}_{uuid.uuid4().hex[:12]}", True, nbytes)
        self._processes: list[Any] = []
        self._conns: list[Connection] = []
        self._finalizer = weakref.finalize(self, _shutdown, self._processes, self._conns, self._shm)
        self._buffers = _Buffers(self._shm, self.num_envs, spec.obs_shape, spec.obs_dtype)
        self._check_finite = np.issubdtype(spec.obs_dtype, np.floating)
        ctx = mp.get_context(context)
        try:
            for w, part in enumerate(self._slices):
                parent_end, child_end = ctx.Pipe()
                process = ctx.Process(
                    target=_worker,
                    name=f"shoal-vector-worker-{w}",
                    args=(
                        child_end,
                        list(factories[part]),
                        part.start,
                        seed,
                        spec.env_id,
                        spec.discrete,
                        self._shm.name,
                        self.num_envs,
                        spec.obs_shape,
                        spec.obs_dtype.str,
                    ),
                    daemon=True,
                )
                process.start()
                child_end.close()  # else a dead worker's pipe never reports EOF here
                self._processes.append(process)
                self._conns.append(parent_end)
            self.worker_pids: list[int] = [p.pid for p in self._processes]
            self._gather("making its envs")
        except BaseException:
            self.close()
            raise

    def reset(self) -> np.ndarray:
        """Reset all envs (env i seeded with seed + i) and return observations [E, ...]."""
        self._round_trip(lambda part: ("reset", self._steps), "resetting")
        self._validate()
        return self._buffers.obs.copy()

    def step(self, actions: np.ndarray) -> VectorStep:
        """Apply actions [E, ...] (each worker gets its slice) and return the batched result."""
        if len(actions) != self.num_envs:
            raise ValueError(f"Expected {self.num_envs} actions, got {len(actions)}.")
        self._steps += 1
        replies = self._round_trip(lambda part: ("step", self._steps, actions[part]), "stepping")
        final_obs: dict[int, np.ndarray] = {}
        returns: list[float] = []
        lengths: list[int] = []
        for reply in replies:
            if reply is not None:  # (final_obs, returns, lengths) of episodes that ended
                final_obs.update(reply[0])
                returns += reply[1]
                lengths += reply[2]
        self._validate(check_rewards=True)
        b = self._buffers
        return VectorStep(
            b.obs.copy(),
            b.reward.copy(),
            b.terminated.copy(),
            b.truncated.copy(),
            final_obs,
            returns,
            lengths,
        )

    def close(self) -> None:
        """Stop the workers and free the shared memory; safe to call more than once."""
        if self._broken is None:
            self._broken = "it was closed"
        self._buffers = None  # type: ignore[assignment]  # views on the block we free
        self._finalizer()

    def __enter__(self) -> SubprocessVectorEnv:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _round_trip(self, message: Callable[[slice], tuple], doing: str) -> list[Any]:
        """Send each worker its message, then gather one reply per worker."""
        if self._broken is not None:
            raise EnvError(
                f"{self.spec.env_id}: this SubprocessVectorEnv is unusable: {self._broken}."
            )
        try:
            for w, (conn, part) in enumerate(zip(self._conns, self._slices, strict=True)):
                try:
                    conn.send(message(part))
                except OSError:  # a broken pipe: the worker is gone
                    self._worker_died(w, doing)
            return self._gather(doing)
        except EnvError:
            raise
        except BaseException:
            # Interrupted (Ctrl-C) between a send and its reply: the pipes are out of step.
            self.close()
            raise

    def _gather(self, doing: str) -> list[Any]:
        """One reply per worker, in worker order; raises for errors and dead workers."""
        replies: dict[int, Any] = {}
        pending = {conn: w for w, conn in enumerate(self._conns)}
        while pending:
            sentinels = [self._processes[w].sentinel for w in pending.values()]
            ready = wait([*pending, *sentinels], timeout=_LIVENESS_CHECK_S)
            for conn in [r for r in ready if r in pending]:
                try:
                    replies[pending.pop(conn)] = conn.recv()
                except (EOFError, OSError):
                    self._worker_died(self._conns.index(conn), doing)
            if ready and not any(r in sentinels for r in ready):
                continue
            # A sentinel fired, or nothing did for a while: a worker that forked (a simulator,
            # say) can die while the fork keeps its pipe and sentinel open, so ask the OS.
            for conn, w in list(pending.items()):
                if not self._processes[w].is_alive() and not conn.poll():
                    self._worker_died(w, doing)
        errors = [r for w, r in sorted(replies.items()) if isinstance(r, _Failure)]
        if errors:  # the lowest env index first, as the in-process loop would raise
            if any(e.fatal for e in errors):
                self.close()
            raise EnvError(errors[0].message) from _RemoteTraceback(errors[0].traceback)
        return [replies[w] for w in range(self.num_workers)]

    def _worker_died(self, w: int, doing: str) -> None:
        process = self._processes[w]
        if process.exitcode is None:  # its pipe closed first: give it a moment to exit
            process.join(timeout=1.0)
        code = process.exitcode
        if code is None:
            how = "closed its pipe"
        elif code < 0:
            try:
                how = f"died with exit code {code} (signal {signal.Signals(-code).name})"
            except ValueError:
                how = f"died with exit code {code}"
        else:
            how = f"exited with exit code {code}"
        part = self._slices[w]
        last = part.stop - 1
        envs = f"env {last}" if part.start == last else f"envs {part.start}-{last}"
        message = (
            f"{self.spec.env_id}: worker {w} ({envs}, pid {process.pid}) {how} while {doing} "
            f"at step {self._steps}. A crash in the env's native code, running out of memory or "
            "an outside kill stops a worker. The vector env is now closed; make a new one."
        )
        self.close()
        self._broken = f"worker {w} died"
        raise EnvError(message)

    def _validate(self, check_rewards: bool = False) -> None:
        # Checked here, over all envs at once, so the error names the same env as in-process.
        obs, rewards = self._buffers.obs, self._buffers.reward
        if self._check_finite and not np.isfinite(obs).all():
            bad = int(np.nonzero(~np.isfinite(obs.reshape(self.num_envs, -1)).all(1))[0][0])
            raise EnvError(
                f"{self.spec.env_id} (env {bad}) returned a non-finite observation (NaN or inf) "
                f"at step {self._steps}. Check the environment's dynamics or clip its output."
            )
        if check_rewards and not np.isfinite(rewards).all():
            bad = int(np.nonzero(~np.isfinite(rewards))[0][0])
            raise EnvError(
                f"{self.spec.env_id} (env {bad}) returned a non-finite reward (NaN or inf) "
                f"at step {self._steps}."
            )


def _shutdown(processes: list[Any], conns: list[Connection], shm: SharedMemory) -> None:
    """Ask workers to exit, then terminate or kill stragglers; free the shared block."""
    for conn in conns:
        with contextlib.suppress(OSError, ValueError):
            conn.send(("close",))
    # Poll exit status rather than join: a process a worker forked can hold its sentinel open.
    # Healthy workers exit at once; the grace is for envs that close slowly (ViZDoom's engines
    # take seconds each on a loaded machine) before terminate() and then kill() cut them short.
    _wait_for_exit(processes, _CLOSE_GRACE_S)
    for process in processes:
        if process.is_alive():
            process.terminate()
    _wait_for_exit(processes, 1.0)
    for process in processes:
        if process.is_alive():
            process.kill()
        process.join()  # reaps it (dead or dying by now), so active_children() forgets it
    for conn in conns:
        conn.close()
    with contextlib.suppress(BufferError):  # a view still alive somewhere; unlink frees anyway
        shm.close()
    with contextlib.suppress(FileNotFoundError):
        shm.unlink()


def _wait_for_exit(processes: list[Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
        time.sleep(0.005)


def _check_picklable(factories: Sequence[EnvFactory], env_id: str, context: str) -> None:
    seen: set[int] = set()
    for i, factory in enumerate(factories):
        if id(factory) in seen:
            continue
        seen.add(id(factory))
        try:
            pickle.dumps(factory)
        except Exception as err:
            raise EnvError(
                f"{env_id}: the factory for env {i} ({factory!r}) cannot be pickled for a "
                f"{context} worker ({type(err).__name__}: {err}). A lambda or a function "
                "defined inside another function is not picklable; pass a module-level "
                "function or functools.partial(gym.make, env_id)."
            ) from None


def _usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
