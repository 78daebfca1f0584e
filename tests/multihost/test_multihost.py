"""Ray runs across hosts on a real network (network namespaces, `hosts.py`): a worker host cut
off mid-run and brought back, and a learner host lost. Each run is `shoal train` in the head's
namespace, joined to the cluster by `--address`, as on a cluster's head node.

The figures the README's cluster section quotes are printed (run with `-s`): frames/s before,
during and after the cut, from the run's own metrics rows."""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from multihost.hosts import Hosts
from shoal.run.checkpoints import list_checkpoints
from shoal.telemetry import read_metrics

pytestmark = [pytest.mark.distributed, pytest.mark.slow, pytest.mark.timeout(1200)]

QUIET = ["--progress", "false", "--tensorboard", "false", "--eval-episodes", "0"]
OUTAGE_S = 20.0  # how long a cut host stays off the network once Ray declared it dead


class Run:
    """`shoal train ARGV` in the head host's namespace, joined to its cluster."""

    def __init__(self, hosts: Hosts, tmp_path: Path, name: str, argv: list[str]) -> None:
        runs = tmp_path / "runs"
        self.run_dir, self.log = runs / name, tmp_path / f"{name}.log"
        command = [sys.executable, "-m", "shoal", "train", *argv, *QUIET]
        command += ["--runtime", "ray", "--address", hosts.address]
        command += ["--runs-dir", str(runs), "--run-name", name]
        self.process = hosts.popen(hosts.head.name, command, self.log)

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def rows(self) -> list[dict]:
        path = self.run_dir / "metrics.jsonl"
        return list(read_metrics(path)) if path.exists() else []

    def placement(self) -> dict:
        return json.loads((self.run_dir / "ray_actors.json").read_text())

    def wait_for(self, check, what: str, seconds: float = 300.0):
        """`check()`'s first truthy answer while the run goes on."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            found = check()
            if found:
                return found
            if self.process.poll() is not None:
                break
            time.sleep(0.5)
        self.stop()
        raise AssertionError(f"the run never {what}; its output:\n{self.output()[-4000:]}")

    def stop(self, timeout: float = 180.0) -> int:
        """SIGTERM, as a scheduler stops a job: the run checkpoints and exits 143."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def _rows_with(run: Run, key: str, value: int, after: int, count: int):
    """At least `count` rows past row `after` with `key == value`, else None."""
    found = [row for row in run.rows()[after:] if row.get(key) == value]
    return found if len(found) >= count else None


def _frames_per_second(rows: list[dict]) -> float:
    return statistics.median(row["steps_per_second"] for row in rows)


def _cut_and_restore(hosts: Hosts, run: Run, host: str, actors_on_it: int) -> dict:
    """Cut `host` off once the run has logged a few rows, keep it off for OUTAGE_S after Ray
    declared it dead, give it back, and wait until its actors are back. The rows of each
    phase and the seconds Ray took to declare the node dead."""
    total = 4
    run.wait_for(lambda: _rows_with(run, "actors_live", total, 0, 3), "logged 3 rows")
    cut_at_row, cut_at = len(run.rows()), time.monotonic()
    hosts.cut(host)
    try:
        return _while_cut(hosts, run, host, actors_on_it, cut_at_row, cut_at)
    finally:
        hosts.restore(host)  # for the module's next tests, whatever happened


def _while_cut(
    hosts: Hosts, run: Run, host: str, actors_on_it: int, cut_at_row: int, cut_at: float
) -> dict:
    total = 4
    address = hosts.hosts[host].address
    dead = re.compile(rf"Ray reports node \w+ \({re.escape(address)}\) dead: ([\w, ]+) ran there")
    said = run.wait_for(lambda: dead.search(run.output()), "said the node is dead", 120)
    detected = time.monotonic() - cut_at
    assert len(said.group(1).split(", ")) >= actors_on_it, said.group(0)
    live = total - actors_on_it
    # The run goes on without the host: rows keep coming, with fewer actors live.
    during = run.wait_for(
        lambda: _rows_with(run, "actors_live", live, cut_at_row, 3), "went on without the host"
    )
    time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - cut_at - detected)))
    hosts.restore(host)
    restored_at_row = len(run.rows())
    back = re.compile(rf"(actor\d+) is back after \d+ s, as pid \d+ on node \w+ \({address}\)")
    run.wait_for(lambda: len(back.findall(run.output())) >= actors_on_it, "took the host back", 300)
    after = run.wait_for(
        lambda: _rows_with(run, "actors_live", total, restored_at_row, 3), "logged rows after"
    )
    return {
        "during": during,
        "after": after,
        "detected_s": detected,
        "cut_at_row": cut_at_row,
        "live": live,
    }


def _report(name: str, run: Run, phases: dict, summary: dict) -> None:
    """The README's figures, printed (pytest -s): the median frames/s of the rows before the
    cut (the first row, which counts the start-up, left out), of those with fewer actors live,
    and of those after they were back, from the whole metrics file."""
    rows, cut = run.rows(), phases["cut_at_row"]
    away = [i for i, row in enumerate(rows) if i >= cut and row["actors_live"] == phases["live"]]
    split = {
        "before": rows[1:cut] or rows[:cut],
        "during": [rows[i] for i in away],
        "after": [row for row in rows[away[-1] + 1 :] if row["actors_live"] == 4],
    }
    rates = {k: _frames_per_second(v) for k, v in split.items()}
    counts = {k: len(v) for k, v in split.items()}
    events = {k: v for k, v in summary.items() if k.endswith(("_lost", "_restarts"))}
    print(
        f"\n{name}: frames/s before {rates['before']:.0f}, during {rates['during']:.0f}, "
        f"after {rates['after']:.0f} (rows {counts}); node declared dead "
        f"{phases['detected_s']:.1f} s after the cut; summary {events}",
        flush=True,
    )


def test_impala_goes_on_without_a_cut_off_host_and_takes_it_back(hosts, tmp_path):
    argv = ["impala", "--env", "CartPole-v1", "--actors", "4", "--num-envs", "4"]
    argv += ["--actor-resources", "actor_host=1", "--learner-resources", "learner_host=1"]
    argv += ["--total-steps", "100000000", "--max-time", "1000", "--log-interval", "4000"]
    run = Run(hosts, tmp_path, "impala", argv)
    try:
        run.wait_for(lambda: (run.run_dir / "ray_actors.json").exists(), "placed its roles")
        first = run.placement()
        on_b = sorted(r for r, p in first.items() if p["address"] == hosts.hosts["b"].address)
        assert len(on_b) == 2 and all(r.startswith("actor") for r in on_b), first
        phases = _cut_and_restore(hosts, run, "b", actors_on_it=2)
    finally:
        code = run.stop()
    output = run.output()
    assert code == 143, output[-4000:]
    assert "Traceback" not in output, output[-4000:]
    summary = json.loads((run.run_dir / "summary.json").read_text())
    assert summary["nodes_lost"] == 1 and summary["actor_restarts"] == 2, summary
    # Each actor on b had its one unroll in flight (--max-inflight 1): 4 envs x 20 steps.
    assert summary["actor_steps_lost"] > 0, summary
    # Steps went on while b was away, and the actors came back on b as new processes.
    during = phases["during"]
    assert during[-1]["env_steps"] > during[0]["env_steps"]
    placed = run.placement()
    for role in on_b:
        assert placed[role]["address"] == hosts.hosts["b"].address
        assert placed[role]["node_id"] != first[role]["node_id"]  # b joined as a new node
    _report("IMPALA", run, phases, summary)


def test_apex_goes_on_without_a_host_holding_a_replay_shard(hosts, tmp_path):
    argv = ["apex", "--env", "CartPole-v1", "--actors", "4", "--num-envs", "4"]
    argv += ["--actor-resources", "actor_host=1", "--learner-resources", "learner_host=1"]
    argv += ["--replay-shards", "2", "--replay-resources", "replay_host=1"]
    argv += ["--total-steps", "100000000", "--max-time", "1000", "--log-interval", "2000"]
    argv += ["--checkpoint-interval", "4000"]
    run = Run(hosts, tmp_path, "apex", argv)
    try:
        run.wait_for(lambda: (run.run_dir / "ray_actors.json").exists(), "placed its roles")
        first = run.placement()
        on_b = sorted(r for r, p in first.items() if p["address"] == hosts.hosts["b"].address)
        assert sum(r.startswith("replay") for r in on_b) == 1, first
        run.wait_for(lambda: list_checkpoints(run.run_dir / "checkpoints"), "checkpointed")
        phases = _cut_and_restore(hosts, run, "b", actors_on_it=2)
        shard = re.compile(r"replay shard \d+ was restarted after its process died: (\d+) items")
        restored = run.wait_for(lambda: shard.search(run.output()), "restored the shard")
        run.wait_for(
            lambda: _rows_with(run, "replay_shards_live", 2, 0, 1), "logged the shard back"
        )
    finally:
        code = run.stop()
    output = run.output()
    assert code == 143, output[-4000:]
    assert "Traceback" not in output, output[-4000:]
    assert int(restored.group(1)) > 0  # the shard came back with its snapshot
    assert {row.get("replay_shards_live") for row in phases["during"]} == {1}
    summary = json.loads((run.run_dir / "summary.json").read_text())
    assert summary["nodes_lost"] == 1, summary
    assert summary["actor_restarts"] == 2 and summary["replay_restarts"] == 1, summary
    # The learner learned from the shard left while b was away.
    during = phases["during"]
    assert during[-1]["updates"] > during[0]["updates"]
    _report("Ape-X", run, phases, summary)


def test_a_lost_learner_host_ends_the_run_with_a_checkpoint_to_resume_from(hosts, tmp_path):
    argv = ["ppo", "--env", "CartPole-v1", "--actors", "2", "--num-envs", "4"]
    argv += ["--actor-resources", "actor_host=1", "--learner-cpus", "0"]
    argv += ["--learner-resources", "spare_learner_host=1", "--checkpoint-interval", "2048"]
    argv += ["--total-steps", "100000000", "--max-time", "1000"]
    run = Run(hosts, tmp_path, "learner", argv)
    try:
        run.wait_for(lambda: (run.run_dir / "ray_actors.json").exists(), "placed its roles")
        learner = run.placement()["learner"]
        assert learner["address"] == hosts.hosts["c"].address
        run.wait_for(lambda: list_checkpoints(run.run_dir / "checkpoints"), "checkpointed")
        hosts.cut("c")
        code = run.process.wait(timeout=300)
    finally:
        run.stop()
        hosts.restore("c")
    output = run.output()
    assert code == 2, output[-4000:]
    assert "Traceback" not in output, output[-4000:]
    assert "died at" in output and "which Ray reports dead" in output, output[-4000:]
    said = re.search(r"Continue with `shoal train --resume (\S+)`: it goes on from (\S+);", output)
    assert said and Path(said.group(1)) == run.run_dir, output[-4000:]
    saved = run.run_dir / said.group(2)
    assert saved.exists()
    # Once the host is back, the run goes on from that checkpoint, on the cluster.
    hosts.wait_for_nodes({host.address for host in hosts.hosts.values()})
    steps = int(re.search(r"\d+", saved.name).group())
    resumed = Run(
        hosts,
        tmp_path,
        "learner",
        ["--resume", str(run.run_dir), "--total-steps", str(steps + 4096), "--max-time", "600"],
    )
    assert resumed.process.wait(timeout=600) == 0, resumed.output()[-4000:]
    summary = json.loads((run.run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "total_steps" and summary["env_steps"] >= steps + 4096
