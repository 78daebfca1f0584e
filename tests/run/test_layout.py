"""The run directory's names (`shoal.run.layout`): what a run writes is where the layout says,
and the names stay the ones runs of earlier versions wrote."""

from __future__ import annotations

from pathlib import Path

from shoal.run import layout
from shoal.run.checkpoints import checkpoint_path, list_checkpoints, snapshot_paths


def test_the_names_are_the_format_that_older_runs_have():
    # Renaming any of these makes older run directories unreadable: they are the format.
    assert layout.CONFIG_FILE == "config.yaml"
    assert layout.METRICS_FILE == "metrics.jsonl"
    assert layout.METRICS_CSV == "metrics.csv"
    assert layout.SUMMARY_FILE == "summary.json"
    assert layout.TRACKER_IDS_FILE == "trackers.json"
    assert layout.PLACEMENT_FILE == "ray_actors.json"
    assert layout.BEST_POLICY == "best.pt"
    assert layout.TENSORBOARD_DIR == "tb"
    assert layout.VIDEO_DIR == "videos"
    assert layout.EVALUATIONS_DIR == "evaluations"
    assert layout.CHECKPOINT_DIR == "checkpoints"
    assert layout.checkpoint_name(1234) == "step-000000001234.pt"
    assert layout.protocol_record_name(50) == "atari-step-000000000050.json"


def test_checkpoint_names_round_trip_and_temp_files_are_never_checkpoints():
    assert layout.checkpoint_steps(layout.checkpoint_name(987_654_321)) == 987_654_321
    for name in (
        ".step-000000000009.pt.abc.tmp",
        "step-000000000009.pt.damaged",
        "step-9.pt",
        "step-000000000009-0a1b2c3d.replay0",
    ):
        assert layout.checkpoint_steps(name) is None, name
    (snapshot,) = snapshot_paths(Path("c"), 9, 1)
    assert layout.SNAPSHOT_NAME.match(snapshot.name)
    assert not layout.SNAPSHOT_NAME.match(layout.checkpoint_name(9))


def test_a_run_writes_its_files_under_the_layout_names(trained):
    run_dir = Path(trained.run_dir)
    for name in (layout.CONFIG_FILE, layout.METRICS_FILE, layout.SUMMARY_FILE):
        assert (run_dir / name).is_file(), name
    assert (run_dir / layout.BEST_POLICY).is_file()  # --eval-every keeps the best policy
    assert any((run_dir / layout.TENSORBOARD_DIR).iterdir())
    checkpoints = layout.checkpoint_dir(run_dir)
    assert checkpoints == run_dir / layout.CHECKPOINT_DIR
    saved = list_checkpoints(checkpoints)
    assert saved and saved[-1] == checkpoint_path(checkpoints, trained.env_steps)
    # Nothing else: a file a run writes that the layout does not name is a format change.
    named = {
        layout.CONFIG_FILE,
        layout.METRICS_FILE,
        layout.SUMMARY_FILE,
        layout.BEST_POLICY,
        layout.TENSORBOARD_DIR,
        layout.CHECKPOINT_DIR,
    }
    assert {p.name for p in run_dir.iterdir()} == named
