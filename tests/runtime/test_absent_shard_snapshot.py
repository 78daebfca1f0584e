"""A checkpoint taken while a replay shard does not answer (its host is off the network) keeps
that shard's newest snapshot file and snapshots the others (`ReplaySnapshots`)."""

from __future__ import annotations

from pathlib import Path

from shoal.runtime.config import RunConfig
from shoal.runtime.snapshots import ReplaySnapshots

GONE = "its process did not answer (ActorUnavailableError)"


class _Shards:
    """Two shards that write their generation into their files; shard 1 can be away."""

    def __init__(self) -> None:
        self.generation, self.away = 0, False

    def sizes(self) -> list:
        return [10, GONE if self.away else 10]

    def write(self, paths) -> list:
        results = []
        for i, path in enumerate(paths):
            if i == 1 and self.away:
                results.append(GONE)
                continue
            path.write_text(f"shard {i} at generation {self.generation}")
            results.append(path.stat().st_size)
        return results

    def read(self, paths) -> list:
        return [len(Path(p).read_text()) for p in paths]


def test_an_absent_shard_keeps_its_newest_snapshot_and_the_others_are_written(tmp_path):
    shards, said = _Shards(), []
    snapshots = ReplaySnapshots(shards, RunConfig(), said.append)
    first = snapshots.save(tmp_path, 100)
    shards.generation, shards.away = 1, True
    second = snapshots.save(tmp_path, 200)
    third = snapshots.save(tmp_path, 300)
    assert first and second and third
    files = [[(tmp_path / f).read_text() for f in entry["files"]] for entry in (second, third)]
    # Shard 0 is new in each; shard 1 is what it held at generation 0, under new names.
    assert files == [["shard 0 at generation 1", "shard 1 at generation 0"]] * 2
    assert second["files"][1] != first["files"][1] != third["files"][1]
    # Said once while it lasts, not at every checkpoint.
    assert said == [
        "replay shard 1 is away (its process did not answer (ActorUnavailableError)): "
        "checkpoints keep its newest snapshot until it is back."
    ]
    # The first checkpoint's files may be pruned: the carried ones stand on their own.
    for name in first["files"]:
        (tmp_path / name).unlink()
    assert (tmp_path / third["files"][1]).read_text() == "shard 1 at generation 0"
    shards.generation, shards.away = 2, False
    back = snapshots.save(tmp_path, 400)
    assert (tmp_path / back["files"][1]).read_text() == "shard 1 at generation 2"


def test_an_absent_shard_with_no_snapshot_yet_skips_the_snapshot_as_before(tmp_path):
    shards, said = _Shards(), []
    shards.away = True
    assert ReplaySnapshots(shards, RunConfig(), said.append).save(tmp_path, 100) is None
    assert said and said[0].startswith("replay snapshot skipped: its size is unknown (shard 1:")
