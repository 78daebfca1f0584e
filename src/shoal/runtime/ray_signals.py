"""Signals in the processes of a ray run's roles (learner, actors, replay shards).

Ray's workers turn SIGTERM into a graceful exit of the actor: it takes no new calls and waits
for the calls it is running to return. A role's calls may wait for each other (a shard's
insert waits for room that only the learner's samples make), so a role sent SIGTERM could wait
forever, its process alive, neither answering nor declared dead: the whole run hung with it.
A role therefore dies at once on SIGTERM, the same as on SIGKILL, whose handling (Ray starts
it again, the driver counts the restart and says what was lost) is the run's.
"""

from __future__ import annotations

import signal
import sys
import threading


def die_on_sigterm() -> None:
    """In a role's constructor: SIGTERM ends this process at once (the system's default),
    instead of Ray's graceful exit. Ray runs an actor's constructor in its main thread, where
    only a handler can be set; elsewhere (and outside a Ray actor) nothing changes."""
    ray = sys.modules.get("ray")  # not imported: no Ray actor, and none is imported for this
    if ray is None or not ray.is_initialized() or ray.get_runtime_context().get_actor_id() is None:
        return  # a driver's process: its SIGTERM asks the run to stop (`StopSignals`)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
