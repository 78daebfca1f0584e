"""Issue 35, item 1: a saved policy file whose config names a module runs no code when loaded
(`shoal eval FILE`, `shoal play FILE`, `shoal.load(FILE)`) unless the user says they trust it."""

from __future__ import annotations

import sys

import gymnasium as gym
import pytest

import shoal
from shoal.cli import main
from shoal.errors import ShoalError

MODULE = "shoal_test_policy_file_module"
# Importing the module leaves a marker: the test's witness that code ran.
SOURCE = """\
import pathlib

import gymnasium as gym
import torch.nn as nn

with open({marker!r}, "a") as f:
    f.write("imported\\n")


def make():
    return gym.make("CartPole-v1")


def small(space):
    return nn.Sequential(nn.Linear(space.shape[0], 8), nn.Tanh())
"""

CASES = {
    "env": dict(env=f"{MODULE}:make"),
    "torso": dict(env="CartPole-v1", agent={"torso": f"{MODULE}:small"}),
    "import_module": dict(env="CartPole-v1", env_config={"import_module": MODULE}),
}


def _policy_file(tmp_path, monkeypatch, quiet_run, case):
    """A policy trained here on a module it names, saved to one file; then the module is
    forgotten and its marker removed, as on another user's machine."""
    marker = tmp_path / "imported"
    (tmp_path / f"{MODULE}.py").write_text(SOURCE.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)  # forgotten again at the end
    run = {**quiet_run, "eval_episodes": 0}
    result = shoal.train("ppo", total_steps=256, run=run, **CASES[case])
    path = shoal.load(result.run_dir, trust_run=True).save(tmp_path / "policy.pt")
    del sys.modules[MODULE]
    marker.unlink()
    return path, marker


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_policy_file_naming_a_module_is_not_imported_without_trust(
    capsys, tmp_path, monkeypatch, quiet_run, case
):
    path, marker = _policy_file(tmp_path, monkeypatch, quiet_run, case)
    for command in ("eval", "play"):
        assert main([command, str(path), "--episodes", "1"]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("\n") == 1, err
        assert "names code that loading the policy would import" in err and MODULE in err
        assert "--trust-run" in err
    with pytest.raises(ShoalError, match="trust_run=True"):
        shoal.load(path)
    assert not marker.exists() and MODULE not in sys.modules
    # Trusted, it loads and evaluates as before.
    assert main(["eval", str(path), "--episodes", "1", "--trust-run"]) == 0
    assert "evaluation (deterministic, 1 episodes)" in capsys.readouterr().out
    assert marker.exists()


def test_an_env_passed_again_needs_no_trust_for_the_recorded_factory(
    tmp_path, monkeypatch, quiet_run
):
    path, marker = _policy_file(tmp_path, monkeypatch, quiet_run, "env")
    policy = shoal.load(path, env=lambda: gym.make("CartPole-v1"))
    assert shoal.evaluate(path, episodes=1, env=lambda: gym.make("CartPole-v1")).episodes == 1
    assert policy.act([0.0, 0.0, 0.0, 0.0]) in (0, 1)
    assert not marker.exists() and MODULE not in sys.modules
