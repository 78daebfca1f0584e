"""A samples-per-insert rate limiter between the actors filling a replay and the learner.

The idea of Reverb's `SampleToInsertRatio` (Cassirer et al. 2021, "Reverb: A Framework for
Experience Replay"): the learner should replay each inserted item about `samples_per_insert` times
(the replay ratio), independently of how fast actors and learner happen to run. With `I` items
inserted and `S` items sampled so far, let

    diff = I · spi - S,    offset = min_size_to_sample · spi,
    min_diff = offset - sample_lead,    max_diff = offset + insert_lead,

where both leads are `error_buffer` unless given apart (Reverb's RateLimiter takes min_diff and
max_diff too).

- Sampling `n` is allowed once `I >= min_size_to_sample` and while `diff - n >= min_diff`: the
  learner may run at most `sample_lead` samples ahead of the ratio line through
  `(min_size_to_sample, 0)`. With `sample_lead = 0` it never samples more than
  `spi · (I - min_size_to_sample)`: the exact replay ratio of a learner that waits for data.
- Inserting `n` is allowed while `I < min_size_to_sample` (filling; the learner cannot sample yet,
  so blocking here would deadlock) and afterwards while `diff + n · spi <= max_diff`: actors may
  run at most `insert_lead` samples' worth ahead.

After filling, `min_diff <= diff <= max_diff` always holds (up to the last filling insert and up
to one batch per extra concurrent inserter, since waiting and recording are two calls). Both sides
can always move on only if `sample_lead + insert_lead >= n_insert · spi + n_sample` for the batch
sizes used; the limiter raises `ConfigError` on the first call that would break this instead of
deadlocking. `close()` wakes every waiter and makes all waits return False.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from shoal.errors import ConfigError

__all__ = ["RateLimiter"]


class RateLimiter:
    """Blocks inserts and samples to keep `samples / inserts` near `samples_per_insert`.

    Thread-safe. Usage: `if limiter.await_can_insert(n): replay.add(...); limiter.insert(n)`,
    and likewise `await_can_sample(n)` then `sample(n)` on the learner side.
    """

    def __init__(
        self,
        samples_per_insert: float,
        min_size_to_sample: int,
        error_buffer: float,
        *,
        sample_lead: float | None = None,
        insert_lead: float | None = None,
    ) -> None:
        if not samples_per_insert > 0:
            raise ValueError(f"samples_per_insert must be > 0, got {samples_per_insert}.")
        if min_size_to_sample < 1:
            raise ValueError(f"min_size_to_sample must be >= 1, got {min_size_to_sample}.")
        self.sample_lead = float(error_buffer if sample_lead is None else sample_lead)
        self.insert_lead = float(error_buffer if insert_lead is None else insert_lead)
        if not (self.sample_lead >= 0 and self.insert_lead >= 0):
            raise ValueError(
                f"error_buffer and the leads must be >= 0, got {self.sample_lead} and "
                f"{self.insert_lead}."
            )
        self.samples_per_insert = float(samples_per_insert)
        self.min_size_to_sample = int(min_size_to_sample)
        offset = self.min_size_to_sample * self.samples_per_insert
        self.min_diff = offset - self.sample_lead
        self.max_diff = offset + self.insert_lead
        self._inserts = 0
        self._samples = 0
        self._largest_insert = 0
        self._largest_sample = 0
        self._closed = False
        self._cond = threading.Condition()

    @property
    def inserts(self) -> int:
        """Items inserted so far."""
        return self._inserts

    @property
    def samples(self) -> int:
        """Items sampled so far."""
        return self._samples

    @property
    def closed(self) -> bool:
        return self._closed

    def snapshot(self) -> tuple[int, int]:
        """`(inserts, samples)` read together, for metrics and checks."""
        with self._cond:
            return self._inserts, self._samples

    def _diff(self) -> float:
        return self._inserts * self.samples_per_insert - self._samples

    def _can_insert(self, n: int) -> bool:
        if self._inserts < self.min_size_to_sample:
            return True
        return self._diff() + n * self.samples_per_insert <= self.max_diff

    def _can_sample(self, n: int) -> bool:
        if self._inserts < self.min_size_to_sample:
            return False
        return self._diff() - n >= self.min_diff

    def _check_sizes(self, n_insert: int, n_sample: int) -> None:
        if n_insert < 0 or n_sample < 0:
            raise ValueError(f"n must be >= 0, got {min(n_insert, n_sample)}.")
        self._largest_insert = max(self._largest_insert, n_insert)
        self._largest_sample = max(self._largest_sample, n_sample)
        need = self._largest_insert * self.samples_per_insert + self._largest_sample
        if self.sample_lead + self.insert_lead < need:
            raise ConfigError(
                f"RateLimiter(leads {self.sample_lead:g} + {self.insert_lead:g}) is too small for "
                f"inserts of {self._largest_insert} and samples of {self._largest_sample} items "
                f"at samples_per_insert={self.samples_per_insert:g}: actors and learner could "
                f"both block for ever. Set error_buffer >= {need / 2:g}, or insert smaller "
                "batches."
            )

    def can_sample(self, n: int = 1) -> bool:
        """Whether `n` items may be sampled now, without waiting."""
        with self._cond:
            return not self._closed and self._can_sample(n)

    def await_can_insert(self, n: int = 1, timeout: float | None = None) -> bool:
        """Wait until `n` items may be inserted. False on timeout or once closed."""
        with self._cond:
            self._check_sizes(n, 0)
            self._cond.wait_for(lambda: self._closed or self._can_insert(n), timeout)
            return not self._closed and self._can_insert(n)

    def await_can_sample(self, n: int = 1, timeout: float | None = None) -> bool:
        """Wait until `n` items may be sampled. False on timeout or once closed."""
        with self._cond:
            self._check_sizes(0, n)
            self._cond.wait_for(lambda: self._closed or self._can_sample(n), timeout)
            return not self._closed and self._can_sample(n)

    def insert(self, n: int = 1) -> None:
        """Record that `n` items were inserted."""
        with self._cond:
            self._inserts += int(n)
            self._cond.notify_all()

    def sample(self, n: int = 1) -> None:
        """Record that `n` items were sampled."""
        with self._cond:
            self._samples += int(n)
            self._cond.notify_all()

    def state_dict(self) -> dict[str, int]:
        """The counters, for a replay snapshot."""
        with self._cond:
            return {"inserts": self._inserts, "samples": self._samples}

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        """Continue from the counters of a restored replay, so the replay ratio goes on as if
        the run had not stopped (and learning does not wait to refill `min_size_to_sample`)."""
        with self._cond:
            self._inserts, self._samples = int(state["inserts"]), int(state["samples"])
            self._cond.notify_all()

    def close(self) -> None:
        """Release every waiter now and make later waits return False (for shutdown)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
