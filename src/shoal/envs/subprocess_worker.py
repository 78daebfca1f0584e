"""The worker side of `SubprocessVectorEnv`: the loop each worker process runs.

A worker makes its slice of envs, then serves reset/step/close messages, writing observations,
rewards and end flags into the shared block and sending only final observations, episode
statistics and errors through its pipe.
"""

from __future__ import annotations

import contextlib
import signal
import traceback
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory

import gymnasium as gym
import numpy as np

from shoal.envs.spec import EnvFactory
from shoal.errors import EnvError


class _Buffers:
    """Views on the shared block: obs [E, *obs_shape], reward [E] f32, terminated, truncated [E]."""

    def __init__(
        self, shm: SharedMemory, num_envs: int, obs_shape: tuple[int, ...], obs_dtype: np.dtype
    ) -> None:
        self.obs = np.ndarray((num_envs, *obs_shape), obs_dtype, shm.buf)
        offset = _align(self.obs.nbytes)
        self.reward = np.ndarray((num_envs,), np.float32, shm.buf, offset)
        offset += _align(4 * num_envs)
        self.terminated = np.ndarray((num_envs,), np.bool_, shm.buf, offset)
        self.truncated = np.ndarray((num_envs,), np.bool_, shm.buf, offset + _align(num_envs))

    @staticmethod
    def nbytes(num_envs: int, obs_shape: tuple[int, ...], obs_dtype: np.dtype) -> int:
        obs = num_envs * int(np.prod(obs_shape, dtype=np.int64)) * obs_dtype.itemsize
        return _align(obs) + _align(4 * num_envs) + 2 * _align(num_envs)


class _Failure:
    """A worker's report of an error; `fatal` when the worker exits after sending it."""

    def __init__(self, message: str, tb: str, fatal: bool = False) -> None:
        self.message, self.traceback, self.fatal = message, tb, fatal


class _RemoteTraceback(Exception):
    """The traceback of an error raised in a worker, chained as the EnvError's cause."""

    def __init__(self, tb: str) -> None:
        super().__init__(f"\n\nTraceback from the worker:\n{tb}")


def _worker(
    conn: Connection,
    factories: list[EnvFactory],
    first: int,
    seed: int,
    env_id: str,
    discrete: bool,
    shm_name: str,
    num_envs: int,
    obs_shape: tuple[int, ...],
    obs_dtype: str,
) -> None:
    """Make envs first.., then serve reset/step/close messages until closed or orphaned."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # The parent's terminate() runs the `finally` below, so envs that start processes of their
    # own (each ViZDoom game is an engine process) close them rather than leave them orphaned.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    shm = SharedMemory(shm_name)
    buffers = _Buffers(shm, num_envs, obs_shape, np.dtype(obs_dtype))
    space_shape, dtype = tuple(obs_shape), np.dtype(obs_dtype)
    envs: list[gym.Env] = []
    i, steps = first, 0

    def checked(obs: object) -> np.ndarray:
        array = np.asarray(obs, dtype=dtype)
        if array.shape != space_shape:
            raise EnvError(
                f"{env_id} (env {i}) returned an observation of shape {array.shape} "
                f"at step {steps}; its observation space says {space_shape}."
            )
        return array

    def store(obs: object) -> None:
        # Checked, not assigned directly: numpy would broadcast a (1,) observation into (3,).
        buffers.obs[i] = checked(obs)

    try:
        try:
            for i, make in enumerate(factories, first):  # `i` also names the env in errors
                envs.append(make())
                envs[-1].action_space.seed(seed + i)
            conn.send(None)
        except Exception as err:
            conn.send(_failure(err, f"{env_id} (env {i}) could not be made", fatal=True))
            return
        returns = np.zeros(len(envs), np.float64)
        lengths = np.zeros(len(envs), np.int64)
        while True:
            message = conn.recv()
            if message[0] == "close":
                break
            steps = message[1]
            try:
                if message[0] == "reset":
                    for i, env in enumerate(envs, first):
                        obs, _ = env.reset(seed=seed + i)
                        store(obs)
                    returns[:] = 0
                    lengths[:] = 0
                    conn.send(None)
                    continue
                actions = message[2]
                final_obs: dict[int, np.ndarray] = {}
                ended_returns: list[float] = []
                ended_lengths: list[int] = []
                for k, env in enumerate(envs):
                    i = first + k
                    obs, reward, term, trunc, _ = env.step(
                        int(actions[k]) if discrete else actions[k]
                    )
                    buffers.reward[i] = reward
                    buffers.terminated[i] = term
                    buffers.truncated[i] = trunc
                    if term or trunc:
                        final_obs[i] = checked(obs)
                        ended_returns.append(float(returns[k] + reward))
                        ended_lengths.append(int(lengths[k] + 1))
                        returns[k] = 0
                        lengths[k] = 0
                        obs, _ = env.reset()
                    else:
                        returns[k] += reward
                        lengths[k] += 1
                    store(obs)
                conn.send((final_obs, ended_returns, ended_lengths) if final_obs else None)
            except Exception as err:
                conn.send(_failure(err, f"{env_id} (env {i}) raised at step {steps}"))
    except (EOFError, OSError):
        pass  # the parent is gone: nothing left to serve
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the envs close: only a kill stops it
        for env in envs:
            with contextlib.suppress(Exception):
                env.close()
        buffers = None  # type: ignore[assignment]  # drop the views so the mapping can close
        shm.close()


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _failure(err: Exception, context: str, fatal: bool = False) -> _Failure:
    tb = "".join(traceback.format_exception(err))
    if isinstance(err, EnvError):
        return _Failure(str(err), tb, fatal)
    return _Failure(f"{context}: {type(err).__name__}: {err}", tb, fatal)


def _align(nbytes: int) -> int:
    return -(-nbytes // 64) * 64
