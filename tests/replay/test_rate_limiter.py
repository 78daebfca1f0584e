"""RateLimiter: Reverb-style samples-per-insert bounds, blocking, threads, shutdown."""

from __future__ import annotations

import threading
import time

import pytest

from shoal.errors import ConfigError
from shoal.replay import RateLimiter

NOW = 0.01  # timeout for "would block right now"


def test_sampler_blocks_below_the_minimum_size() -> None:
    limiter = RateLimiter(samples_per_insert=2.0, min_size_to_sample=10, error_buffer=20.0)
    assert not limiter.await_can_sample(1, timeout=NOW)
    limiter.insert(9)
    assert not limiter.await_can_sample(1, timeout=NOW)
    limiter.insert(1)
    assert limiter.await_can_sample(1, timeout=NOW)


def test_sampler_blocks_when_ahead_of_the_ratio() -> None:
    # offset = 10 * 2 = 20; min_diff = 0: at most 20 samples before the next insert.
    limiter = RateLimiter(samples_per_insert=2.0, min_size_to_sample=10, error_buffer=20.0)
    limiter.insert(10)
    assert limiter.await_can_sample(20, timeout=NOW)
    assert not limiter.await_can_sample(21, timeout=NOW)
    limiter.sample(20)
    assert not limiter.await_can_sample(1, timeout=NOW)
    limiter.insert(1)  # one insert buys two samples
    assert limiter.await_can_sample(2, timeout=NOW)
    assert not limiter.await_can_sample(3, timeout=NOW)


def test_inserter_blocks_when_too_far_ahead() -> None:
    # max_diff = 20 + 20 = 40: after filling (diff 20), at most 10 more inserts without samples.
    limiter = RateLimiter(samples_per_insert=2.0, min_size_to_sample=10, error_buffer=20.0)
    assert limiter.await_can_insert(10, timeout=NOW)  # filling is never blocked
    limiter.insert(10)
    assert limiter.await_can_insert(10, timeout=NOW)
    assert not limiter.await_can_insert(11, timeout=NOW)
    limiter.insert(10)
    assert not limiter.await_can_insert(1, timeout=NOW)
    limiter.sample(2)
    assert limiter.await_can_insert(1, timeout=NOW)
    assert not limiter.await_can_insert(2, timeout=NOW)


def test_a_blocked_sampler_wakes_when_an_insert_allows_it() -> None:
    limiter = RateLimiter(samples_per_insert=1.0, min_size_to_sample=5, error_buffer=5.0)
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(limiter.await_can_sample(1, 5.0)))
    waiter.start()
    time.sleep(0.05)
    assert waiter.is_alive()  # really blocked
    start = time.monotonic()
    limiter.insert(5)
    waiter.join(timeout=2.0)
    assert result == [True] and time.monotonic() - start < 1.0


def test_producer_and_consumer_threads_keep_the_ratio_within_tolerance() -> None:
    spi, min_size, error_buffer, insert_batch, sample_batch = 4.0, 100, 60.0, 10, 32
    limiter = RateLimiter(spi, min_size, error_buffer)
    offset = min_size * spi
    diffs: list[float] = []
    done = threading.Event()

    def record() -> None:
        inserts, samples = limiter.snapshot()
        if inserts >= min_size:
            diffs.append(inserts * spi - samples - offset)

    def produce() -> None:
        for _ in range(300):
            assert limiter.await_can_insert(insert_batch, timeout=5.0)
            limiter.insert(insert_batch)
            record()
        done.set()

    def consume() -> None:
        while True:
            if limiter.await_can_sample(sample_batch, timeout=0.05):
                limiter.sample(sample_batch)
                record()
            elif done.is_set() and not limiter.await_can_sample(sample_batch, timeout=0.05):
                return

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=15.0)
    assert not any(thread.is_alive() for thread in threads)  # no deadlock
    inserts, samples = limiter.snapshot()
    assert inserts == 3000
    assert len(diffs) > 300
    # diff = I * spi - S stays within error_buffer of the ratio line through the minimum size,
    assert max(abs(d) for d in diffs) <= error_buffer
    # so the realised ratio is spi up to (offset + error_buffer) / I.
    assert abs(samples / inserts - spi) <= (offset + error_buffer) / inserts
    assert samples / inserts > 3.8


def test_close_releases_blocked_threads_which_return_false() -> None:
    limiter = RateLimiter(samples_per_insert=1.0, min_size_to_sample=10, error_buffer=5.0)
    limiter.insert(15)  # diff 15 = max_diff: inserts are blocked
    assert not limiter.await_can_insert(1, timeout=NOW)
    sampler_limiter = RateLimiter(samples_per_insert=1.0, min_size_to_sample=10, error_buffer=5.0)
    results: dict[str, bool] = {}
    threads = [
        threading.Thread(target=lambda: results.update(insert=limiter.await_can_insert(1))),
        threading.Thread(target=lambda: results.update(sample=sampler_limiter.await_can_sample(1))),
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.05)
    assert all(thread.is_alive() for thread in threads)  # both wait with no timeout
    start = time.monotonic()
    limiter.close()
    sampler_limiter.close()
    for thread in threads:
        thread.join(timeout=2.0)
    assert not any(thread.is_alive() for thread in threads)
    assert time.monotonic() - start < 1.0
    assert results == {"insert": False, "sample": False}
    assert not limiter.await_can_sample(1)  # later waits return at once, False
    assert not sampler_limiter.await_can_insert(1)


def test_an_error_buffer_too_small_for_the_batches_is_a_config_error() -> None:
    limiter = RateLimiter(samples_per_insert=8.0, min_size_to_sample=100, error_buffer=100.0)
    assert limiter.await_can_insert(10, timeout=NOW)  # 10 * 8 <= 200
    with pytest.raises(ConfigError, match=r"error_buffer >= 168"):
        limiter.await_can_sample(256, timeout=NOW)  # 10 * 8 + 256 > 200: could deadlock
    with pytest.raises(ValueError, match="samples_per_insert"):
        RateLimiter(samples_per_insert=0.0, min_size_to_sample=1, error_buffer=1.0)
