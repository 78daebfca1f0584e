"""Console output: a progress bar with steps/s, mean return and time left, and plain lines."""

from __future__ import annotations

import sys

from tqdm import tqdm


class Console:
    def __init__(self, total: int, initial: int, enabled: bool, title: str) -> None:
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

    def update(self, env_steps: int, mean_return: float | None) -> None:
        if self.bar is None:
            return
        self.bar.update(env_steps - self._shown)
        self._shown = env_steps
        if mean_return is not None:
            self.bar.set_postfix_str(f"return={mean_return:.1f}", refresh=False)

    def print(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
