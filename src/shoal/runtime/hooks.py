"""Hooks: what code that drives a run from inside its own process is handed by the driver.

`shoal tune`'s trials advance a run one metrics row at a time and, between two rows, checkpoint
it, copy another member's learner into it or give it new settings. For that they need what a
user's `Callback` is never given: the driver and the learner. A launcher passes its `hooks` to
the `Driver`, which calls them at these points; the runtime knows nothing of who they are
(it never imports `shoal.tune`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shoal.runtime.driver import Driver

__all__ = ["RunHook"]


class RunHook:
    """Override what you need; every method runs in the driver's thread."""

    def on_driver(self, driver: Driver) -> None:
        """The run's driver, once made (before the run starts)."""

    def on_learner(self, learner: Any) -> None:
        """Inline runs: the learner, restored from the checkpoint resumed, before its first
        update."""

    def on_remote_learner(self, handle: Any) -> None:
        """`--runtime ray`: the learner's Ray actor, before the first learn call."""

    def on_finish(self) -> None:
        """The run's loop has ended: its final checkpoint, evaluations and row follow."""
