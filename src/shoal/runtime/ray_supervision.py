"""The driver's supervision of a ray run's learner: a learner whose process died is started
again, with every other role, from the newest checkpoint (`restart_from_checkpoint`); one whose
node is gone, or past `--max-learner-restarts`, ends the run with one paragraph naming the
checkpoint `--resume` goes on from. `run_ray` loops over the attempts."""

from __future__ import annotations

import time
from typing import Any

from shoal.checkpoint import list_checkpoints, load_latest
from shoal.errors import ShoalError
from shoal.runtime.driver import Driver
from shoal.runtime.program import Program


class LearnerDied(Exception):
    """A call to the learner's process failed because the process is gone."""


def restart_from_checkpoint(
    ray: Any, driver: Driver, learner: Any, placement: dict, restarts: int
) -> tuple[dict[str, Any] | None, float, dict[str, int]]:
    """After the learner's process died: what the next attempt starts from (the newest
    checkpoint, the command's start, the event counts), said in one line with the steps lost;
    or a `ShoalError` when the learner's node is gone, the run was stopping, or the restarts
    are used up.

    Decision: every role starts again rather than the learner alone. A learner restored from
    the checkpoint rewinds its version, updates and optimiser while the driver's counters, the
    actors' weight versions (they skip versions older than theirs) and the replay's rate
    limiter would go on, and the on-policy queue and the central server live in its process;
    what `--resume` does rewinds all of them together, so this is that, in the same process."""
    program, run = driver.program, driver.program.run
    pid, node = placement["learner"]["pid"], placement["learner"]["node_id"]
    died_at = driver.counter.env_steps
    why = None
    if driver.stop_requested:
        why = "while the run was stopping"
    elif _node_gone(ray, learner, node):
        why = f"with its node ({node[:12]}), which Ray reports dead"
    elif restarts >= run.max_learner_restarts:
        why = (
            f"after {restarts} restarts of the learner, as many as --max-learner-restarts "
            f"({run.max_learner_restarts}) allows"
        )
    if why is not None:
        raise ShoalError(_learner_lost(program, pid, died_at, why)) from None
    state = load_latest(program.checkpoint_dir, program.agent.name, set_aside=True)
    saved = 0 if state is None else int(state["env_steps"])
    carried = dict(driver.counts)
    carried["learner_restarts"] = carried.get("learner_restarts", 0) + 1
    carried["learner_steps_lost"] = carried.get("learner_steps_lost", 0) + died_at - saved
    if state is None:
        back = "from step 0 (no checkpoint was written before)"
    else:
        back = f"from checkpoints/{list_checkpoints(program.checkpoint_dir)[-1].name}"
        # Wall time goes on from this command's start, as if the learner had not died.
        state = {**state, "elapsed": driver.counter.elapsed_before}
    driver.console.print(
        f"The learner's process (pid {pid}) died at {died_at} steps; the run starts its roles "
        f"again {back} (learner restart {restarts + 1} of {run.max_learner_restarts}): the "
        f"{died_at - saved} steps since are lost."
    )
    return state, driver.counter.started, carried


def _node_gone(ray: Any, learner: Any, node: str) -> bool:
    """Whether the learner's node is dead, asked once Ray has declared the learner dead (a call
    to it then fails at once, and a dead node's actors are declared dead after it)."""
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        try:
            ray.get(learner.where.remote(), timeout=5.0)
            break  # it answers after all: a call failed, so it starts again all the same
        except (ray.exceptions.ActorUnavailableError, ray.exceptions.GetTimeoutError):
            time.sleep(0.5)  # not yet declared dead, or unreachable
        except ray.exceptions.RayActorError:
            break
    try:
        nodes = ray.nodes()
    except Exception:  # Ray itself is gone with the node
        return True
    return not any(n["NodeID"] == node and n["Alive"] for n in nodes)


def _learner_lost(program: Program, pid: int, steps: int, why: str) -> str:
    """The one paragraph of a run stopped by its learner's death, naming what goes on."""
    run_dir, saved = program.run_dir, list_checkpoints(program.checkpoint_dir)
    died_at = f"The learner's process (pid {pid}) died at {steps} steps {why}, so the run stopped."
    if not saved:
        return (
            f"{died_at} No checkpoint was written before: `shoal train --resume {run_dir}` "
            "starts the run again from step 0."
        )
    return (
        f"{died_at} Continue with `shoal train --resume {run_dir}`: it goes on from "
        f"checkpoints/{saved[-1].name}; the steps since it are lost."
    )
