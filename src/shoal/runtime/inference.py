"""The inference server of central inference (SEED RL, Espeholt et al. 2020).

Env-only actors send a whole vector of observations per call; the server batches the calls of
many actors into one forward pass of the agent's policy and hands each caller its own actions.
It serves a batch as soon as `max_batch` observations are waiting, or when the oldest waiting
call is `timeout_s` old, whatever is ready then: a slow or dead actor delays the others by at
most the timeout, never stalls them.

Each environment owns a fixed row of the runtime's per-row store (`shoal.runtime.rows.Acting`:
recurrent state, previous action and reward): actor i's E envs are rows `[i E, (i + 1) E)`.
A call carries what happened since the last one (rewards, which episodes ended, whether the
actor (re)connected), and the serving thread applies it to those rows before acting, so the
policy and its rows are only ever touched by one thread. Between batches the serving thread
takes newer weights from the learner's board, if any.

A call may also ask for the policy's network itself (`forward`): inputs `[n, ...]` in, the
network's outputs `[n, ...]` out, with no row of the store. That is how actors that run the
policy themselves (a tree search, `central.ServedNetwork`) have their network's evaluations
batched here with the other actors': such calls fill the same batches, counted by their rows,
and go through the network together.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

from shoal.runtime.rows import Acting
from shoal.tree import leaves, map_tree


class ServerStopped(Exception):
    """Raised in callers waiting on a server that was stopped."""


class Served(NamedTuple):
    """The answer to one call."""

    env_actions: np.ndarray  # [n, ...] for the envs
    actions: np.ndarray  # [n, ...] as the policy chose them, to record
    extras: dict[str, np.ndarray]  # [n, ...] to record with the step
    version: int  # learner version of the weights that acted


@dataclass
class _Call:
    rows: np.ndarray | None  # [n] int; None: a call of the network (`forward`)
    obs: Any  # [n, ...]; for `forward`, the network's inputs: a tuple of such
    rewards: np.ndarray | None  # [n] rewards of the step that led to `obs`, None on (re)connect
    ended: np.ndarray | None  # [n] bool: these rows start a new episode at `obs`
    size: int  # n
    arrived: float = field(default_factory=time.perf_counter)
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None  # `Served`, or for `forward` the network's outputs as numpy
    error: BaseException | None = None


class ServeStats:
    """Batch fill and latency since the last `report`, for metrics rows."""

    def __init__(self, max_batch: int) -> None:
        self.max_batch = max_batch
        self.batches = self.observations = 0
        self.latency_sum = self.compute_sum = 0.0
        self.calls = 0
        self._since = time.perf_counter()

    def add(self, calls: list[_Call], started: float, finished: float) -> None:
        self.batches += 1
        self.observations += sum(call.size for call in calls)
        self.compute_sum += finished - started
        self.calls += len(calls)
        self.latency_sum += sum(finished - call.arrived for call in calls)

    def report(self) -> dict[str, float]:
        now = time.perf_counter()
        seconds, self._since = max(now - self._since, 1e-9), now
        batches = max(self.batches, 1)
        row = {
            "inference_batch_fill": self.observations / batches / self.max_batch,
            "inference_batch_size": self.observations / batches,
            "inference_calls_per_batch": self.calls / batches,
            "inference_latency_ms": 1e3 * self.latency_sum / max(self.calls, 1),
            "inference_compute_ms": 1e3 * self.compute_sum / batches,
            "inference_batches_per_s": self.batches / seconds,
        }
        self.batches = self.observations = self.calls = 0
        self.latency_sum = self.compute_sum = 0.0
        return row


class InferenceServer:
    """Dynamic batching over one `Acting` (a policy and its rows); thread-safe `infer` and
    `forward`.

    `weights` (a `WeightsBoard` or anything with its `take`) is asked for newer weights before
    each batch."""

    def __init__(
        self, acting: Acting, max_batch: int, timeout_s: float, weights: Any = None
    ) -> None:
        if max_batch < 1 or timeout_s < 0:
            raise ValueError(f"need max_batch >= 1, timeout_s >= 0; got {max_batch}, {timeout_s}")
        self.acting, self.weights = acting, weights
        self.max_batch, self.timeout_s = max_batch, timeout_s
        self.stats = ServeStats(max_batch)
        self._waiting: list[_Call] = []
        self._cv = threading.Condition()
        self._policy_lock = threading.Lock()  # the serving thread, weight loads and `locked`
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, name="shoal-inference", daemon=True)
        self._thread.start()

    @property
    def version(self) -> int:
        return int(self.acting.version)

    def infer(
        self,
        rows: np.ndarray,
        obs: Any,
        rewards: np.ndarray | None = None,
        ended: np.ndarray | None = None,
    ) -> Served:
        """Actions for `obs` `[n, ...]` of `rows`, what to record, and the weights' version.

        `rewards` are those of the step that led to `obs` (None when the caller just connected:
        its rows start afresh); `ended` marks rows whose episode ended there.
        """
        rows = np.asarray(rows, np.int64)
        n = rows.shape[0]
        if any(leaf.shape[0] != n for leaf in leaves(obs)):
            raise ValueError(f"infer got {n} rows but observations for a different count")
        fresh = np.ones(n, bool) if rewards is None else np.zeros(n, bool)
        ended = fresh if ended is None else np.asarray(ended, bool) | fresh
        call = _Call(rows, obs, None if rewards is None else np.asarray(rewards), ended, n)
        result: Served = self._wait(call)
        return result

    def forward(self, inputs: Any) -> tuple[Any, int]:
        """The policy's network (`Policy.net`, in eval mode, without gradients) on `inputs`: an
        array `[n, ...]` or a tuple of them (its positional arguments), batched with other
        calls. Returns its outputs as numpy (an array, or a tuple of them) and the version of
        the weights that computed them."""
        inputs = tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)
        sizes = {int(np.shape(x)[0]) for x in inputs}
        if len(sizes) != 1:
            raise ValueError(f"forward got inputs of different lengths {sorted(sizes)}")
        result: tuple[Any, int] = self._wait(_Call(None, inputs, None, None, sizes.pop()))
        return result

    def _wait(self, call: _Call) -> Any:
        with self._cv:
            if self._stopping:
                raise ServerStopped
            self._waiting.append(call)
            self._cv.notify_all()
        call.done.wait()
        if call.error is not None:
            raise call.error
        assert call.result is not None
        return call.result

    def load_weights(self, weights: Any, version: int) -> None:
        """New weights, taken between two batches."""
        with self._policy_lock:
            self.acting.load_weights(weights, version)

    def locked(self) -> threading.Lock:
        """Hold this to use the policy's network from another thread (e.g. for priorities)."""
        return self._policy_lock

    def stop(self) -> None:
        """Fail every waiting and later call with `ServerStopped`; end the serving thread."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        self._thread.join(timeout=10)

    def _take_batch(self) -> list[_Call] | None:
        """Wait for a full batch or the oldest call's timeout; None once stopping."""
        with self._cv:
            while True:
                if self._stopping:
                    for call in self._waiting:
                        call.error = ServerStopped()
                        call.done.set()
                    self._waiting.clear()
                    return None
                if self._waiting:
                    waited = time.perf_counter() - self._waiting[0].arrived
                    count = sum(call.size for call in self._waiting)
                    if count >= self.max_batch or waited >= self.timeout_s:
                        break
                    self._cv.wait(self.timeout_s - waited)
                else:
                    self._cv.wait()
            # Whole calls, oldest first, up to max_batch observations (at least one call).
            taken: list[_Call] = []
            count = 0
            while self._waiting and (not taken or count + self._waiting[0].size <= self.max_batch):
                call = self._waiting.pop(0)
                taken.append(call)
                count += call.size
            return taken

    def _serve(self) -> None:
        while (calls := self._take_batch()) is not None:
            started = time.perf_counter()
            try:
                with self._policy_lock:
                    if self.weights is not None:
                        published = self.weights.take(self.acting.version)
                        if published is not None:
                            self.acting.load_weights(published[1], published[0])
                    version = self.version
                    acts = [call for call in calls if call.rows is not None]
                    forwards = [call for call in calls if call.rows is None]
                    results: list[Any] = (
                        [Served(*result, version) for result in self._act(acts)] if acts else []
                    )
                    if forwards:
                        results += [(out, version) for out in self._forward(forwards)]
            except BaseException as err:  # the callers see it, the server keeps serving
                for call in calls:
                    call.error = err
                    call.done.set()
                continue
            self.stats.add(calls, started, time.perf_counter())
            for call, result in zip([*acts, *forwards], results, strict=True):
                call.result = result
                call.done.set()

    def _act(
        self, calls: list[_Call]
    ) -> list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]]:
        acting = self.acting
        for call in calls:
            assert call.rows is not None and call.ended is not None
            if call.rewards is None:  # (re)connected: these rows start afresh
                acting.restart(call.rows)
            else:
                acting.observe(call.rewards, call.ended, call.rows)
        rows = np.concatenate([call.rows for call in calls if call.rows is not None])
        obs = map_tree(lambda *xs: np.concatenate(xs), *[call.obs for call in calls])
        env_actions, actions, extras = acting.act(obs, rows)
        out, start = [], 0
        for call in calls:
            part = slice(start, start + call.size)
            out.append((env_actions[part], actions[part], {k: v[part] for k, v in extras.items()}))
            start += call.size
        return out

    def _forward(self, calls: list[_Call]) -> list[Any]:
        """The network on the calls' inputs concatenated; each call's share of its outputs."""
        net = self.acting.policy.net
        device = next(iter(net.parameters()), torch.empty(0)).device
        inputs = [
            torch.from_numpy(np.concatenate([np.asarray(call.obs[i]) for call in calls])).to(device)
            for i in range(len(calls[0].obs))
        ]
        net.eval()
        with torch.inference_mode():
            outputs = net(*inputs)
        several = isinstance(outputs, tuple | list)
        arrays = [out.cpu().numpy() for out in (outputs if several else (outputs,))]
        out, start = [], 0
        for call in calls:
            part = [array[start : start + call.size] for array in arrays]
            out.append(tuple(part) if several else part[0])
            start += call.size
        return out
