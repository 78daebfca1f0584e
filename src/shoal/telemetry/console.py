"""Console output: a progress bar with steps/s, mean return and time left, and plain lines."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from tqdm import tqdm

# A run estimated to outlast this gets one line saying so while it is young: a CPU run of an
# Atari example can take days, and the bar's own estimate is easy to miss.
LONG_RUN_S = 3600.0
ESTIMATE_AFTER_S = 30.0  # the rate over the first half minute is a fair guess of the rest


class Console:
    def __init__(
        self,
        total: int,
        initial: int,
        enabled: bool,
        title: str,
        max_time: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bar = (
            tqdm(
                total=total,
                initial=initial,
                unit="step",
                unit_scale=True,
                desc=title,
                dynamic_ncols=True,
                mininterval=0.5,
                file=sys.stderr,
            )
            if enabled
            else None
        )
        self._shown = initial
        self._total, self._initial = total, initial
        self._clock, self._started = clock, clock()
        # A run bounded by --max-time under an hour ends in time whatever its rate.
        self._estimated = max_time is not None and max_time <= LONG_RUN_S

    def update(self, env_steps: int, mean_return: float | None) -> None:
        if self.bar is None:
            return
        self.bar.update(env_steps - self._shown)
        self._shown = env_steps
        self._warn_if_long(env_steps)
        if mean_return is not None:
            self.bar.set_postfix_str(f"return={mean_return:.1f}", refresh=False)

    def _warn_if_long(self, env_steps: int) -> None:
        """Once, after the first half minute: say so if the run would take over an hour at
        the rate so far."""
        elapsed = self._clock() - self._started
        if self._estimated or elapsed < ESTIMATE_AFTER_S or env_steps <= self._initial:
            return
        self._estimated = True
        rate = (env_steps - self._initial) / elapsed
        left = (self._total - env_steps) / rate
        if left > LONG_RUN_S:
            self.print(
                f"At {rate:,.0f} steps/s the remaining {self._total - env_steps:,} steps take "
                f"about {left / 3600:,.1f} hours. Lower --total-steps or bound the run with "
                "--max-time SECONDS (it ends with a checkpoint; --resume continues it)."
            )

    def print(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
