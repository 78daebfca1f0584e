"""The driver's supervision of a ray run's learner: a learner whose process died is started
again, with every other role, from the newest checkpoint (`restart_from_checkpoint`); one whose
node is gone, or past `--max-learner-restarts`, ends the run with one paragraph naming the
checkpoint `--resume` goes on from. `run_ray` loops over the attempts. `Outages` says which
actors and replay shards are down, since when and why (their process, or their whole node),
in the log and the metrics, and when each is back."""

from __future__ import annotations

import time
from typing import Any

from shoal.errors import ShoalError
from shoal.run.checkpoints import list_checkpoints, load_latest
from shoal.run.layout import CHECKPOINT_DIR
from shoal.runtime.driver import Driver
from shoal.runtime.program import Program


class Outages:
    """The actors and replay shards that are down: one line when a role goes down (or, for a
    node Ray declares dead, one line naming every role that ran there), one when it is back,
    and the metrics: `actors_live` and `replay_shards_live` in every row, and the counts
    `nodes_lost` and `actor_steps_lost` (the steps of the unrolls in flight to an actor when it
    went down, which never reach the driver: an upper bound, as one may have been half made).

    Ray restarts a role whose process or node died (`max_restarts=-1`) on a node with its
    resources: at once for a process, and for a node when it (or another offering them) joins
    again, until then the role is pending and the run goes on with the others."""

    def __init__(
        self,
        ray: Any,
        driver: Driver,
        placement: dict[str, Any],
        roles: list[str],
        unroll_steps: int,
    ) -> None:
        self.ray, self.driver, self.placement = ray, driver, placement
        self.roles, self.unroll_steps = roles, unroll_steps
        self.since: dict[str, float] = {}  # each down role, since when (monotonic)
        self.dead_nodes: set[str] = set()  # nodes already said to be dead
        self._update_gauges()

    def down(self, role: str, in_flight: int = 0) -> None:
        """`role`'s calls failed: its process, or its node, died. `in_flight`: the unrolls it
        was asked for that are lost with it."""
        self.since.setdefault(role, time.monotonic())
        lost = in_flight * self.unroll_steps
        if lost:
            self.driver.count("actor_steps_lost", lost)
        node = self.placement[role]["node_id"]
        if node in self.dead_nodes:
            self._update_gauges()
            return  # said with its node
        where = _describe(self.placement[role])
        if _node_alive(self.ray, node):
            self._update_gauges()
            self.driver.console.print(
                f"{role}'s process (pid {self.placement[role]['pid']}) on {where} died"
                + (f", with up to {lost} env steps in flight" if lost else "")
                + f"; Ray starts it again. {self._going_on()}"
            )
            return
        self.dead_nodes.add(node)
        self.driver.count("nodes_lost")
        there = [r for r in self.roles if self.placement[r]["node_id"] == node]
        for other in there:  # down with it, though their calls may not have failed yet
            self.since.setdefault(other, time.monotonic())
        self._update_gauges()
        self.driver.console.print(
            f"Ray reports {where} dead: {', '.join(there)} ran there and are down until it, "
            f"or another node with their resources, joins the cluster again. {self._going_on()}"
        )

    def back(self, role: str, pid: int, node: str) -> None:
        """`role` answered again, from process `pid` on `node`."""
        since = self.since.pop(role, None)
        self._update_gauges()
        after = "" if since is None else f" after {time.monotonic() - since:.0f} s"
        if self.placement[role]["pid"] == pid:  # unreachable for a while, not restarted
            self.driver.console.print(f"{role} answers again{after}. {self._going_on()}")
            return
        self.placement[role] = {"pid": pid, "node_id": node, "address": _address(self.ray, node)}
        self.driver.console.print(
            f"{role} is back{after}, as pid {pid} on {_describe(self.placement[role])}. "
            + self._going_on()
        )

    def _going_on(self) -> str:
        live, total = self._live("actor")
        return f"The run goes on with {live} of {total} actors."

    def _live(self, kind: str) -> tuple[int, int]:
        mine = [r for r in self.roles if r.rstrip("0123456789") == kind]
        return sum(r not in self.since for r in mine), len(mine)

    def _update_gauges(self) -> None:
        for kind, key in (("actor", "actors_live"), ("replay", "replay_shards_live")):
            live, total = self._live(kind)
            if total:
                self.driver.gauges[key] = live


def node_addresses(ray: Any) -> dict[str, str]:
    """Each node's address by its id, as Ray knows them (dead nodes included)."""
    try:
        return {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes()}
    except Exception:  # Ray's GCS unreachable: addresses are only for the log
        return {}


def _address(ray: Any, node: str) -> str | None:
    return node_addresses(ray).get(node)


def _describe(placed: dict[str, Any]) -> str:
    address = placed.get("address")
    node = f"node {placed['node_id'][:12]}"
    return f"{node} ({address})" if address else node


def _node_alive(ray: Any, node: str) -> bool:
    try:
        return any(n["NodeID"] == node and n["Alive"] for n in ray.nodes())
    except Exception:
        return False


class LearnerDied(Exception):
    """A call to the learner's process failed because the process is gone."""


def restart_from_checkpoint(
    ray: Any, driver: Driver, learner: Any, placement: dict[str, Any], restarts: int
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
        back = f"from {CHECKPOINT_DIR}/{list_checkpoints(program.checkpoint_dir)[-1].name}"
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
        f"{CHECKPOINT_DIR}/{saved[-1].name}; the steps since it are lost."
    )
