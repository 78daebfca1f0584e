"""`shoal plot`: learning curves of seeds with a mean line and a 95% bootstrap band."""

from __future__ import annotations

import numpy as np
import pytest
from run_dirs import rows, write_run

from shoal.analysis.plots import GRID_POINTS, group_curve
from shoal.cli import main
from shoal.run.runs import group_runs, read_runs

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def three_seeds(tmp_path):
    """Three seeds of one run logging at different steps; seed s's return is s + step/100."""
    runs = tmp_path / "runs"
    for seed, steps in enumerate([[100, 300, 500, 700], [0, 200, 400, 600, 800], [50, 650]]):
        returns = [seed + s / 100 for s in steps]
        write_run(runs, f"ppo-s{seed}", seed=seed, rows=rows(steps, returns, frames_per_step=4))
    return runs


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_plot_three_seeds_writes_a_png(three_seeds, tmp_path, capsys):
    out = tmp_path / "curves.png"
    dirs = [str(p) for p in sorted(three_seeds.iterdir())]
    assert main(["plot", *dirs, "-o", str(out)]) == 0
    width, height = png_size(out)
    assert width > 300 and height > 200
    assert "ppo on CartPole-v1, 3 seed(s)" in capsys.readouterr().out


def test_a_folder_of_runs_is_the_same_as_its_runs(three_seeds, tmp_path):
    by_folder, by_dirs = tmp_path / "a.png", tmp_path / "b.png"
    assert main(["plot", str(three_seeds), "-o", str(by_folder)]) == 0
    assert main(["plot", *map(str, sorted(three_seeds.iterdir())), "-o", str(by_dirs)]) == 0
    assert by_folder.read_bytes() == by_dirs.read_bytes()


@pytest.mark.parametrize("key, scale", [("env_steps", 1), ("frames", 4)])
def test_the_mean_curve_interpolates_seeds_on_the_common_range(three_seeds, key, scale):
    (runs,) = group_runs(read_runs([three_seeds])).values()
    curve = group_curve(runs, key, "return_mean")
    # Every seed covers steps 100..650 (the latest start, the earliest end).
    assert curve.grid[0] == 100 * scale and curve.grid[-1] == 650 * scale
    assert len(curve.grid) == GRID_POINTS
    # Each seed is linear in steps, so interpolation is exact: mean = mean(seed) + step/100.
    np.testing.assert_allclose(curve.mean, 1.0 + curve.grid / scale / 100)
    low, high = curve.band
    assert np.all(low <= curve.mean + 1e-12) and np.all(curve.mean <= high + 1e-12)
    # Seeds 0, 1, 2 apart by 1 everywhere: the band of a mean of three is about that wide.
    assert np.all(high - low > 0.5) and np.all(high - low <= 2 + 1e-12)


def test_one_seed_has_no_band(three_seeds):
    (runs,) = group_runs(read_runs([three_seeds / "ppo-s0"])).values()
    curve = group_curve(runs, "time", "loss")
    assert curve.band is None and curve.seeds == 1
    assert curve.grid[0] == 1 and curve.grid[-1] == 7  # time: 1 s per 100 steps


def test_groups_by_algorithm_and_env(tmp_path):
    runs = tmp_path / "runs"
    for algo, env, seed in [("ppo", "A-v0", 0), ("dqn", "A-v0", 0), ("ppo", "B-v0", 1)]:
        curve = rows([0, 100], [0.0, 1.0])
        write_run(runs, f"{algo}-{env}-{seed}", algo=algo, env=env, seed=seed, rows=curve)
    write_run(runs, "ppo-A-1", env="A-v0", seed=1, rows=rows([0, 100], [2.0, 3.0]))
    groups = group_runs(read_runs([runs]))
    assert {k: [r.seed for r in v] for k, v in groups.items()} == {
        ("dqn", "A-v0"): [0],
        ("ppo", "A-v0"): [0, 1],
        ("ppo", "B-v0"): [1],
    }
    out = tmp_path / "curves.svg"
    assert main(["plot", str(runs), "-o", str(out), "--x", "steps"]) == 0
    assert out.read_text().lstrip().startswith("<?xml")


def _refused(capsys, argv, *phrases):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("shoal: error: ") and "Traceback" not in err
    for phrase in phrases:
        assert phrase in err
    return err


def test_user_mistakes_are_one_paragraph_and_write_nothing(three_seeds, tmp_path, capsys):
    out = tmp_path / "curves.png"
    runs = str(three_seeds)
    typo = ["plot", runs, "-o", str(out), "--metric", "retrun_mean"]
    _refused(capsys, typo, "no 'retrun_mean'", "Did you mean 'return_mean'", "Metrics of this run:")
    _refused(capsys, ["plot", runs, "-o", str(tmp_path / "curves.txt")], ".png", ".svg")
    _refused(capsys, ["plot", runs, "-o", str(tmp_path / "no" / "c.png")], "does not exist")
    _refused(capsys, ["plot", str(tmp_path / "missing"), "-o", str(out)], "does not exist")
    _refused(capsys, ["plot", str(tmp_path), "-o", str(out)], "not a run directory")
    assert not out.exists() and not (tmp_path / "curves.txt").exists()
    with pytest.raises(SystemExit) as exit_info:  # argparse's choices: usage and exit code 2
        main(["plot", runs, "-o", str(out), "--x", "episodes"])
    assert exit_info.value.code == 2 and not out.exists()


def test_runs_without_points_or_overlap_are_refused(tmp_path, capsys):
    out = str(tmp_path / "c.png")
    write_run(tmp_path / "empty", "ppo-0")
    _refused(capsys, ["plot", str(tmp_path / "empty"), "-o", out], "no metrics rows")
    write_run(tmp_path / "nan", "ppo-0", rows=rows([100, 200], [None, None]))
    _refused(
        capsys, ["plot", str(tmp_path / "nan"), "-o", out], "no metrics row with numbers for both"
    )
    write_run(tmp_path / "apart", "ppo-0", rows=rows([0, 100], [1.0, 2.0]))
    write_run(tmp_path / "apart", "ppo-1", seed=1, rows=rows([200, 300], [1.0, 2.0]))
    _refused(capsys, ["plot", str(tmp_path / "apart"), "-o", out], "cover no common range")
    assert not (tmp_path / "c.png").exists()


def test_runs_with_other_settings_are_other_curves(tmp_path, capsys):
    # Issue 35, item 10: runs with different learning rates and one seed were "2 seeds".
    runs = tmp_path / "runs"
    for name, lr in [("a", 0.001), ("b", 0.002)]:
        write_run(runs, name, agent={"learning_rate": lr}, rows=rows([0, 100], [0.0, 1.0]))
    groups = group_runs(read_runs([runs]))
    assert list(groups) == [
        ("ppo", "CartPole-v1", "agent.learning_rate=0.001"),
        ("ppo", "CartPole-v1", "agent.learning_rate=0.002"),
    ]
    assert main(["plot", str(runs), "-o", str(tmp_path / "c.png")]) == 0
    out = capsys.readouterr().out
    assert "ppo on CartPole-v1 [agent.learning_rate=0.002], 1 seed(s)" in out


def test_runs_lacking_the_metric_or_unfinished_are_noted_not_fatal(tmp_path, capsys):
    # Issue 35, item 10: `--metric value_loss` exited 2 when a DQN run was among the runs,
    # and one run without a point aborted the plot.
    runs = tmp_path / "runs"

    def ppo_rows(steps):
        return [{**r, "value_loss": 2.0 - r["env_steps"] / 100} for r in rows(steps, [0, 1])]

    write_run(runs, "ppo-0", rows=ppo_rows([0, 100]))
    write_run(runs, "ppo-1", seed=1, rows=ppo_rows([0, 50]), finished=False)
    write_run(runs, "dqn-0", algo="dqn", rows=rows([0, 100], [0.0, 1.0]))
    write_run(runs, "ppo-new", seed=2, finished=False)
    out_file = tmp_path / "c.png"
    assert main(["plot", str(runs), "-o", str(out_file), "--metric", "value_loss"]) == 0
    out = capsys.readouterr().out
    assert "ppo on CartPole-v1, 2 seed(s)" in out and "dqn" not in out.splitlines()[0]
    assert f"note: left out {runs / 'dqn-0'}: " in out and "no 'value_loss'" in out
    assert f"note: left out {runs / 'ppo-new'}: " in out and "no metrics rows" in out
    assert "seed 1 is unfinished" in out and "drawn up to frames 50" in out
    assert "cover different ranges of frames (seed 0: 0 to 100, seed 1: 0 to 50)" in out
    assert "drawn over the range all cover, 0 to 50" in out
    assert out_file.read_bytes()[:8] == PNG_MAGIC
