"""Issue 35, item 4: a YAML alias bomb of a few hundred bytes, as `--config` or as a downloaded
run directory's `config.yaml`, is refused at once with a short error, not expanded."""

from __future__ import annotations

import time

import pytest

from shoal.cli import main


def _bomb(levels: int = 7) -> str:
    """Each anchor a list of nine aliases of the one before: 9**levels values in ~300 bytes."""
    text = "[&a [l,l,l,l,l,l,l,l,l]"
    for prev, name in zip("abcdefgh"[: levels - 1], "bcdefghi"[: levels - 1], strict=True):
        text += f", &{name} [" + ",".join([f"*{prev}"] * 9) + "]"
    return text + "]"


BOMBS = {
    "list": f"agent: {{learning_rate: {_bomb()}}}\n",
    # Merge keys copy the mapping they merge: the expansion happens while constructing.
    "merge": "agent: {learning_rate: [&a {x0: 1, x1: 1, x2: 1, x3: 1, x4: 1, x5: 1}"
    + "".join(
        f", &{n} [" + ", ".join(f"{{<<: *{p}, y{j}: 1}}" for j in range(8)) + "]"
        for p, n in zip("abcde", "bcdef", strict=True)
    )
    + "]}\n",
    "recursive": "agent: &a {learning_rate: *a}\n",
}


def _refused(capsys, argv):
    start = time.perf_counter()
    assert main(argv) == 2
    elapsed = time.perf_counter() - start
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and len(err) < 1000, err[:1000]
    assert "alias" in err
    assert elapsed < 5, f"refusing took {elapsed:.1f} s"


@pytest.mark.parametrize("kind", sorted(BOMBS))
def test_an_alias_bomb_as_config_is_refused_at_once(capsys, tmp_path, kind):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMBS[kind])
    assert len(path.read_bytes()) < 1100
    _refused(capsys, ["train", "ppo", "--env", "CartPole-v1", "--config", str(path)])


def test_an_alias_bomb_in_a_downloaded_run_directory_is_refused_at_once(capsys, tmp_path):
    run_dir = tmp_path / "downloaded-run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(
        f"algo: ppo\nenv: CartPole-v1\nseed: 0\nagent: {{learning_rate: {_bomb()}}}\n"
    )
    for argv in (["eval", str(run_dir)], ["train", "--resume", str(run_dir)]):
        _refused(capsys, argv)


def test_a_config_nested_too_deeply_is_refused(capsys, tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("agent: " + "[" * 50_000 + "]" * 50_000 + "\n")
    assert main(["train", "ppo", "--env", "CartPole-v1", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "nested too deeply" in err


def test_ordinary_anchors_and_merge_keys_still_load(tmp_path):
    path = tmp_path / "anchors.yaml"
    path.write_text(
        "algo: ppo\nenv: CartPole-v1\nrun: &run {total_steps: 64, progress: false}\n"
        "agent: {learning_rate: 0.001}\nenv_config: {<<: {}}\n"
    )
    from shoal.experiment import read_config_file

    assert read_config_file(path)["run"] == {"total_steps": 64, "progress": False}
